#!/usr/bin/env bash
# Build llama.cpp's library (libllama) from the sources an npm package vendors next to ggml
# (llama.rn), against the ggml that build.sh prepared for the same package, so that a real
# llama.cpp client can be linked once with libggml-stock.a and once with libggml-galloc.a.
#
# usage: build-llama.sh NPM_SPEC OUT_DIR     e.g. build-llama.sh llama.rn@0.12.9 ~/.cache/galloc/ggml/llama-rn-0.12.9
#
# Run build.sh NPM_SPEC OUT_DIR first. Produces
#   OUT_DIR/llama/libllama.a    llama*.cpp, models/*.cpp, unicode*.cpp and ggml-opt.cpp (which
#                               llama.cpp needs and build.sh does not build); no ggml
#   OUT_DIR/llama/include/      llama.h, llama-cpp.h, ggml-opt.h, and llama-ext.h where it exists
# Link a client with: libllama.a OUT_DIR/libggml-{stock,galloc}.a -lstdc++ -lpthread -lm -ldl.
# The sources are renamed like ggml's (lm_ggml_ -> ggml_) and cached next to ggml's under
# ${GALLOC_CACHE_DIR:-~/.cache/galloc}/ggml-src/<name>-<version>/llama-src. The build is
# skipped when libllama.a is newer than this script and the stamp matches. -O1: the code only
# builds graphs, ggml computes them. Under a minute on 2 idle cores (README.md).
set -euo pipefail

# shellcheck source=client.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/client.sh" llama "$@"

prepare_llama_sources() {
    [[ -f $CLIENT_SRC/.prepared ]] && return 0
    client_extract
    local cpp=$CLIENT_TMP/package/cpp stage=$CLIENT_TMP/llama-src headers
    headers=$cpp
    # llama.rn 0.13 on: llama.cpp's own tree under package/vendor/ (headers in include/)
    local vendor=package/vendor/llama.cpp
    if [[ ! -f $cpp/llama.cpp ]] && tar -xzf "$TARBALL" -C "$CLIENT_TMP" "$vendor/src" "$vendor/include" 2>/dev/null; then
        cpp=$CLIENT_TMP/$vendor/src headers=$CLIENT_TMP/$vendor/include
    fi
    [[ -f $cpp/llama.cpp && -f $headers/llama.h ]] || { rm -rf "$CLIENT_TMP"; die "$NPM_SPEC does not vendor llama.cpp"; }
    mkdir -p "$stage/models"
    cp -p "$cpp"/llama*.cpp "$cpp"/llama*.h "$cpp"/unicode*.cpp "$cpp"/unicode*.h "$stage/"
    if [[ $headers != "$cpp" ]]; then cp -p "$headers"/llama*.h "$stage/"; fi
    # quantizing model files (llama.rn's own builds leave it out too; it needs more of ggml)
    rm -f "$stage/llama-quant.cpp"
    # llama.cpp's per-architecture graph builders (none before mid 2025: cui-llama.rn 1.6.0)
    if [[ -d $cpp/models ]]; then cp -p "$cpp"/models/*.cpp "$cpp"/models/*.h "$stage/models/"; fi
    # in llama's own code only ggml's and gguf's names carry the prefix (a wider rule would
    # also rename llama's lm_head)
    client_install "$stage" "spec=$NPM_SPEC" "PREFIX_ggml|PREFIX_gguf|UPPER_GGML|UPPER_GGUF"
}

prepare_llama_sources
client_flags "$CLIENT_SRC" "$CLIENT_SRC/models"
# llama-context.cpp is compiled on its own: galloc-rn edits it, and tests link the edited file
# in its place (tests/amalgamation/packages_test.sh)
mapfile -t SOURCES < <(cd "$CLIENT_SRC" && shopt -s nullglob && printf '%s\n' llama*.cpp unicode*.cpp |
                       grep -vx llama-context.cpp | LC_ALL=C sort)
# none before mid 2025 (printf would print one empty name for an empty list)
mapfile -t BUILDERS < <(cd "$CLIENT_SRC" && shopt -s nullglob && for f in models/*.cpp; do echo "$f"; done | LC_ALL=C sort)
if client_is_fresh "llama-context.cpp grouped: ${SOURCES[*]} ${BUILDERS[*]}" "$SRC/ggml-opt.cpp"; then
    step "libllama.a is up to date ($NPM_SPEC)"
    exit 0
fi
# llama.cpp's own files and its graph builders (models/*.cpp) compile a group per translation
# unit: a third less compile time than file by file, and every package's compile as groups
HEADERS=("$CLIENT_SRC/llama.h" "$CLIENT_SRC/llama-cpp.h" "$SRC/ggml-opt.h")
# llama.cpp's staging API (MTP's hidden states, among others), where this llama.cpp has it
[[ -f $CLIENT_SRC/llama-ext.h ]] && HEADERS+=("$CLIENT_SRC/llama-ext.h")
client_build "${HEADERS[@]}" -- \
    "$SRC/ggml-opt.cpp" "$CLIENT_SRC/llama-context.cpp" -- "${SOURCES[@]/#/$CLIENT_SRC/}" "${BUILDERS[@]/#/$CLIENT_SRC/}"
