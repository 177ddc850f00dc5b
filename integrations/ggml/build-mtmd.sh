#!/usr/bin/env bash
# Build llama.cpp's multimodal library (libmtmd: the clip encoders and the mtmd API that
# llama.rn's initMultimodal uses) from the sources an npm package vendors, against the ggml
# that build.sh and the llama.cpp that build-llama.sh prepared for the same package.
#
# usage: build-mtmd.sh NPM_SPEC OUT_DIR     e.g. build-mtmd.sh llama.rn@0.12.9 ~/.cache/galloc/ggml/llama-rn-0.12.9
#
# Run build.sh and build-llama.sh NPM_SPEC OUT_DIR first. Produces
#   OUT_DIR/mtmd/libmtmd.a      tools/mtmd's clip.cpp, mtmd*.cpp and models/*.cpp (every
#                               encoder's graph builder: clip.cpp names them all); not
#                               debug/mtmd-debug.cpp, which has a main (mtmd.cpp includes its header)
#   OUT_DIR/mtmd/include/       mtmd.h, mtmd-helper.h
# Link a client with: libmtmd.a OUT_DIR/llama/libllama.a OUT_DIR/libggml-{stock,galloc}.a.
# Sources are prepared and cached as build-llama.sh's are, under .../ggml-src/<name>-<version>/mtmd-src.
set -euo pipefail

# shellcheck source=client.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/client.sh" mtmd "$@"

LLAMA_SRC=$PKG_CACHE/llama-src$SOURCES_SUFFIX
[[ -f $LLAMA_SRC/llama.h ]] || die "run integrations/ggml/build-llama.sh $NPM_SPEC $OUT_DIR first"

prepare_mtmd_sources() {
    [[ -f $CLIENT_SRC/.prepared ]] && return 0
    client_extract
    local mtmd=$CLIENT_TMP/package/cpp/tools/mtmd stage=$CLIENT_TMP/mtmd-src
    # llama.rn 0.13 on: llama.cpp's own tree under package/vendor/, whose third-party code
    # (stb, miniaudio, hash) is in its vendor/ folder
    local tree=package/vendor/llama.cpp
    if [[ ! -f $mtmd/mtmd.cpp ]] && tar -xzf "$TARBALL" -C "$CLIENT_TMP" "$tree/tools/mtmd" "$tree/vendor" 2>/dev/null; then
        mtmd=$CLIENT_TMP/$tree/tools/mtmd
    fi
    [[ -f $mtmd/mtmd.cpp && -f $mtmd/clip.cpp ]] || { rm -rf "$CLIENT_TMP"; die "$NPM_SPEC does not vendor tools/mtmd"; }
    mkdir -p "$stage"
    cp -pr "$mtmd"/. "$stage/"
    if [[ -d $CLIENT_TMP/$tree/vendor ]]; then cp -pr "$CLIENT_TMP/$tree/vendor"/. "$stage/"; fi
    rm -f "$stage"/debug/*.cpp
    # llama.cpp's llama-ext.h, included by a path relative to the package's tree, is in the
    # prepared llama sources
    find "$stage" -name '*.cpp' -print0 |
        xargs -0 sed -i -E 's@^#include "(\.\./)+(src/)?llama-ext\.h"@#include "llama-ext.h"@'
    client_install "$stage" "spec=$NPM_SPEC" "PREFIX_ggml|PREFIX_gguf|UPPER_GGML|UPPER_GGUF"
}

prepare_mtmd_sources
client_flags "$CLIENT_SRC" "$CLIENT_SRC/models" "$LLAMA_SRC"
# and the hash functions mtmd-helper uses (llama.rn 0.13: llama.cpp's vendor/hash)
mapfile -t SOURCES < <(cd "$CLIENT_SRC" && shopt -s nullglob && printf '%s\n' clip.cpp mtmd*.cpp hash/*.cpp | LC_ALL=C sort)
mapfile -t C_SOURCES < <(cd "$CLIENT_SRC" && shopt -s nullglob && for f in hash/sha256/*.c; do echo "$f"; done | LC_ALL=C sort)
mapfile -t BUILDERS < <(cd "$CLIENT_SRC" && shopt -s nullglob && for f in models/*.cpp; do echo "$f"; done | LC_ALL=C sort)
if client_is_fresh "${SOURCES[*]} ${C_SOURCES[*]} ${BUILDERS[*]}" "$LLAMA_SRC/llama.h"; then
    step "libmtmd.a is up to date ($NPM_SPEC)"
    exit 0
fi
# the graph builders share clip-graph.h, so they compile a group per translation unit as
# llama.cpp's do (client.sh)
client_build "$CLIENT_SRC/mtmd.h" "$CLIENT_SRC/mtmd-helper.h" -- \
    "${SOURCES[@]/#/$CLIENT_SRC/}" -- "${BUILDERS[@]/#/$CLIENT_SRC/}"
# hash.cpp includes sha256.h as extern "C": sha256.c compiles as C, into the same library. The
# stamp client_build wrote waits for them: a failure here must leave the library stale.
rm -f "$STAMP"
for c in "${C_SOURCES[@]}"; do
    obj=$LIB_DIR/obj/$(echo "$c" | tr / _).o
    "${CC:-cc}" -O1 -g0 -w -fPIC -I"$CLIENT_SRC/hash" -c "$CLIENT_SRC/$c" -o "$obj" || die "cannot compile $c"
    ar rcs "$LIB" "$obj"
done
printf '%s\n' "$CLIENT_CONFIG" >"$STAMP"
