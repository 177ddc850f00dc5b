#!/usr/bin/env bash
# Build llama.cpp's library (libllama) from the sources an npm package vendors next to ggml
# (llama.rn), against the ggml that build.sh prepared for the same package, so that a real
# llama.cpp client can be linked once with libggml-stock.a and once with libggml-galloc.a.
#
# usage: build-llama.sh NPM_SPEC OUT_DIR     e.g. build-llama.sh llama.rn@0.12.9 ~/.cache/galloc/ggml/upstream
#
# Run build.sh NPM_SPEC OUT_DIR first. Produces
#   OUT_DIR/llama/libllama.a    llama*.cpp, models/*.cpp, unicode*.cpp and ggml-opt.cpp (which
#                               llama.cpp needs and build.sh does not build); no ggml
#   OUT_DIR/llama/include/      llama.h, llama-cpp.h, ggml-opt.h
# Link a client with: libllama.a OUT_DIR/libggml-{stock,galloc}.a -lstdc++ -lpthread -lm -ldl.
# The sources are renamed like ggml's (lm_ggml_ -> ggml_) and cached next to ggml's under
# ${GALLOC_CACHE_DIR:-~/.cache/galloc}/ggml-src/<name>-<version>/llama-src. The build is
# skipped when libllama.a is newer than this script and the stamp matches. About 160 s of CPU
# (-O1; the code only builds graphs, ggml computes them), 85 s on 2 idle cores.
set -euo pipefail

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SCRIPT_PATH")
die()  { echo "llama-build: error: $*" >&2; exit 1; }
step() { echo "llama-build: $*"; }

[[ $# -eq 2 ]] || die "usage: $0 NPM_SPEC OUT_DIR   (e.g. llama.rn@0.12.9 out/ggml)"
NPM_SPEC=$1
OUT_DIR=$(readlink -f "$2")
CXX=${CXX:-$(command -v g++-12 || command -v g++ || echo c++)}
JOBS=${GALLOC_JOBS:-2}
# shellcheck source=package.sh
source "$SCRIPT_DIR/package.sh"
LSRC=$PKG_CACHE/llama-src$SOURCES_SUFFIX

[[ -f $PREPARED && -f $OUT_DIR/libggml-stock.a ]] \
    || die "run integrations/ggml/build.sh $NPM_SPEC $OUT_DIR first"
grep -qx "spec=$NPM_SPEC" "$OUT_DIR/.libggml-stock.stamp" 2>/dev/null \
    || die "$OUT_DIR holds ggml for another package (see $OUT_DIR/.libggml-stock.stamp)"

exec 9>"$PKG_CACHE/.llama.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

# ---------------------------------------------------------------- extract and rename
prepare_llama_sources() {
    [[ -f $LSRC/.prepared ]] && return 0
    fetch_tarball
    step "extracting llama.cpp's sources from $(basename "$TARBALL")"
    local tmp
    tmp=$(mktemp -d "$PKG_CACHE/.extract-llama.XXXXXX")
    tar -xzf "$TARBALL" -C "$tmp" package/cpp || { rm -rf "$tmp"; die "cannot extract package/cpp"; }
    local cpp=$tmp/package/cpp stage=$tmp/llama-src headers
    headers=$cpp
    # llama.rn 0.13 on: llama.cpp's own tree under package/vendor/ (headers in include/)
    local vendor=package/vendor/llama.cpp
    if [[ ! -f $cpp/llama.cpp ]] && tar -xzf "$TARBALL" -C "$tmp" "$vendor/src" "$vendor/include" 2>/dev/null; then
        cpp=$tmp/$vendor/src headers=$tmp/$vendor/include
    fi
    [[ -f $cpp/llama.cpp && -f $headers/llama.h ]] || { rm -rf "$tmp"; die "$NPM_SPEC does not vendor llama.cpp"; }
    mkdir -p "$stage/models"
    cp -p "$cpp"/llama*.cpp "$cpp"/llama*.h "$headers"/llama*.h "$cpp"/unicode*.cpp "$cpp"/unicode*.h "$stage/"
    # quantizing model files (llama.rn's own builds leave it out too; it needs more of ggml)
    rm -f "$stage/llama-quant.cpp"
    # llama.cpp's per-architecture graph builders (none before mid 2025: cui-llama.rn 1.6.0)
    if [[ -d $cpp/models ]]; then cp -p "$cpp"/models/*.cpp "$cpp"/models/*.h "$stage/models/"; fi
    # the prefix build.sh removed from ggml; in llama's own code only ggml's and gguf's names
    # carry it (a wider rule would also rename llama's lm_head)
    local P
    P=$(sed -n 's/^prefix=//p' "$PREPARED")
    if [[ -n $P && $AS_SHIPPED != 1 ]]; then
        local U=${P^^}
        find "$stage" -type f -print0 | xargs -0 sed -i -E \
            -e "s/${P}_ggml/ggml/g" -e "s/${U}_GGML/GGML/g" -e "s/${P}_gguf/gguf/g" -e "s/${U}_GGUF/GGUF/g"
        local left
        left=$(grep -rlE "${P}_ggml|${P}_gguf|${U}_GGML|${U}_GGUF" "$stage" || true)
        [[ -z $left ]] || { rm -rf "$tmp"; die "prefix '$P' still present in: $left"; }
    fi
    rm -rf "$LSRC"
    mv "$stage" "$LSRC"
    rm -rf "$tmp"
    echo "spec=$NPM_SPEC" >"$LSRC/.prepared"
}

# ---------------------------------------------------------------- build
FLAGS=(-std=gnu++17 -O1 -g0 -w -fPIC -pthread -DNDEBUG -D_GNU_SOURCE -D_XOPEN_SOURCE=600
       -I"$LSRC" -I"$LSRC/models" -I"$SRC")
[[ -d $SRC/ggml-cpu ]] && FLAGS+=(-I"$SRC/ggml-cpu")

prepare_llama_sources
LIB_DIR=$OUT_DIR/llama
LIB=$LIB_DIR/libllama.a
STAMP=$LIB_DIR/.libllama.stamp
mapfile -t SOURCES < <(cd "$LSRC" && shopt -s nullglob && printf '%s\n' llama*.cpp unicode*.cpp models/*.cpp | LC_ALL=C sort)
config=$(printf '%s\n' "script=$SCRIPT_PATH" "spec=$NPM_SPEC" "cxx=$CXX $("$CXX" --version 2>/dev/null | head -n1)" \
    "flags=${FLAGS[*]}" "sources=${SOURCES[*]}")
if [[ -f $LIB && -f $STAMP && $(cat "$STAMP") == "$config" && $LIB -nt $SCRIPT_PATH && ! $SRC/ggml-opt.cpp -nt $LIB ]]; then
    step "libllama.a is up to date ($NPM_SPEC)"
    exit 0
fi

rm -rf "$LIB_DIR"
mkdir -p "$LIB_DIR/obj" "$LIB_DIR/include"
log=$LIB_DIR/build.log
step "compiling ${#SOURCES[@]} llama.cpp sources and ggml-opt.cpp ($NPM_SPEC, -j$JOBS; log: $log)"
export LB_CXX=$CXX LB_FLAGS="${FLAGS[*]}" LB_OBJ=$LIB_DIR/obj LB_LSRC=$LSRC
compile_one() {
    local src=$1 rel obj
    rel=${src#"$LB_LSRC"/}
    [[ $rel == "$src" ]] && rel=${src##*/}     # ggml-opt.cpp
    obj=$LB_OBJ/${rel//\//_}.o
    # shellcheck disable=SC2086
    "$LB_CXX" $LB_FLAGS -c "$src" -o "$obj" >"$obj.log" 2>&1 || { echo "---- $src"; tail -n 20 "$obj.log"; return 1; }
}
export -f compile_one
rc=0
{ for s in "${SOURCES[@]}"; do printf '%s\0' "$LSRC/$s"; done; printf '%s\0' "$SRC/ggml-opt.cpp"; } \
    | xargs -0 -n1 -P "$JOBS" bash -c 'compile_one "$@"' _ >"$log" 2>&1 || rc=$?
if [[ $rc -ne 0 ]]; then
    tail -n 40 "$log" >&2
    die "compilation failed; full log: $log"
fi
ar rcs "$LIB.tmp" "$LIB_DIR"/obj/*.o
mv "$LIB.tmp" "$LIB"
cp "$LSRC/llama.h" "$LSRC/llama-cpp.h" "$SRC/ggml-opt.h" "$LIB_DIR/include/"
printf '%s\n' "$config" >"$STAMP"
step "built $LIB"
