#!/usr/bin/env bash
# Build whisper.cpp's library (libwhisper) from the sources an npm package vendors next to
# ggml (whisper.rn), against the ggml that build.sh prepared for the same package, so that a
# real whisper.cpp client can be linked once with libggml-stock.a and once with
# libggml-galloc.a.
#
# usage: build-whisper.sh NPM_SPEC OUT_DIR   e.g. build-whisper.sh whisper.rn@0.4.0-rc.10 ~/.cache/galloc/ggml/seed
#
# Run build.sh NPM_SPEC OUT_DIR first. Produces
#   OUT_DIR/whisper/libwhisper.a    whisper.cpp only (no examples, no Core ML / OpenVINO); no ggml
#   OUT_DIR/whisper/include/        whisper.h
# Link a client with: libwhisper.a OUT_DIR/libggml-{stock,galloc}.a -lstdc++ -lpthread -lm -ldl.
# The sources are renamed like ggml's (wsp_ggml_ -> ggml_; in whisper.cpp and whisper.h only
# ggml's names carry the prefix, and whisper_bench_wsp_ggml_mul_mat gets its upstream name
# whisper_bench_ggml_mul_mat) and cached next to ggml's under
# ${GALLOC_CACHE_DIR:-~/.cache/galloc}/ggml-src/<name>-<version>/whisper-src. The build is
# skipped when libwhisper.a is newer than this script and the stamp matches. One file at -O1
# (the code only builds graphs and the mel spectrogram; ggml computes the graphs).
set -euo pipefail

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SCRIPT_PATH")
die()  { echo "whisper-build: error: $*" >&2; exit 1; }
step() { echo "whisper-build: $*"; }

[[ $# -eq 2 ]] || die "usage: $0 NPM_SPEC OUT_DIR   (e.g. whisper.rn@0.4.0-rc.10 out/ggml)"
NPM_SPEC=$1
OUT_DIR=$(readlink -f "$2")
CXX=${CXX:-$(command -v g++-12 || command -v g++ || echo c++)}
# shellcheck source=package.sh
source "$SCRIPT_DIR/package.sh"
WSRC=$PKG_CACHE/whisper-src$SOURCES_SUFFIX

[[ -f $PREPARED && -f $OUT_DIR/libggml-stock.a ]] \
    || die "run integrations/ggml/build.sh $NPM_SPEC $OUT_DIR first"
grep -qx "spec=$NPM_SPEC" "$OUT_DIR/.libggml-stock.stamp" 2>/dev/null \
    || die "$OUT_DIR holds ggml for another package (see $OUT_DIR/.libggml-stock.stamp)"

exec 9>"$PKG_CACHE/.whisper.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

# ---------------------------------------------------------------- extract and rename
prepare_whisper_sources() {
    # the stamp names what was taken, so that a cache from an older rule is prepared again
    [[ -f $WSRC/.prepared && $(cat "$WSRC/.prepared") == "spec=$NPM_SPEC files=whisper.cpp whisper*.h" ]] && return 0
    fetch_tarball
    step "extracting whisper.cpp's sources from $(basename "$TARBALL")"
    local tmp
    tmp=$(mktemp -d "$PKG_CACHE/.extract-whisper.XXXXXX")
    tar -xzf "$TARBALL" -C "$tmp" package/cpp || { rm -rf "$tmp"; die "cannot extract package/cpp"; }
    local cpp=$tmp/package/cpp stage=$tmp/whisper-src
    [[ -f $cpp/whisper.cpp && -f $cpp/whisper.h ]] || { rm -rf "$tmp"; die "$NPM_SPEC does not vendor whisper.cpp"; }
    mkdir -p "$stage"
    cp -p "$cpp/whisper.cpp" "$cpp"/whisper*.h "$stage/"   # whisper-arch.h from 0.7 on
    local P
    P=$(sed -n 's/^prefix=//p' "$PREPARED")
    if [[ -n $P && $AS_SHIPPED != 1 ]]; then
        local U=${P^^}
        find "$stage" -type f -print0 | xargs -0 sed -i -E \
            -e "s/${P}_ggml/ggml/g" -e "s/${U}_GGML/GGML/g" -e "s/${P}_gguf/gguf/g" -e "s/${U}_GGUF/GGUF/g"
        # any other use of the prefix would be a name build.sh renamed differently in ggml
        local left
        left=$(grep -rlE "(^|[^A-Za-z0-9])(${P}|${U})_|_(${P}|${U})_" "$stage" || true)
        [[ -z $left ]] || { rm -rf "$tmp"; die "prefix '$P' still present in: $left"; }
    fi
    rm -rf "$WSRC"
    mv "$stage" "$WSRC"
    rm -rf "$tmp"
    echo "spec=$NPM_SPEC files=whisper.cpp whisper*.h" >"$WSRC/.prepared"
}

# ---------------------------------------------------------------- build
FLAGS=(-std=gnu++17 -O1 -g0 -w -fPIC -pthread -DNDEBUG -D_GNU_SOURCE -D_XOPEN_SOURCE=600
       -I"$WSRC" -I"$SRC")
[[ -d $SRC/ggml-cpu ]] && FLAGS+=(-I"$SRC/ggml-cpu")

prepare_whisper_sources
LIB_DIR=$OUT_DIR/whisper
LIB=$LIB_DIR/libwhisper.a
STAMP=$LIB_DIR/.libwhisper.stamp
config=$(printf '%s\n' "script=$SCRIPT_PATH" "spec=$NPM_SPEC" "cxx=$CXX $("$CXX" --version 2>/dev/null | head -n1)" \
    "flags=${FLAGS[*]}" "sources=whisper.cpp")
# the ggml headers whisper.cpp includes come from build.sh's cache
if [[ -f $LIB && -f $STAMP && $(cat "$STAMP") == "$config" && $LIB -nt $SCRIPT_PATH \
      && -z $(find "$SRC" -name '*.h' -newer "$LIB" -print -quit) ]]; then
    step "libwhisper.a is up to date ($NPM_SPEC)"
    exit 0
fi

rm -rf "$LIB_DIR"
mkdir -p "$LIB_DIR/obj" "$LIB_DIR/include"
log=$LIB_DIR/build.log
step "compiling whisper.cpp ($NPM_SPEC; log: $log)"
"$CXX" "${FLAGS[@]}" -c "$WSRC/whisper.cpp" -o "$LIB_DIR/obj/whisper.cpp.o" >"$log" 2>&1 \
    || { tail -n 40 "$log" >&2; die "compilation failed; full log: $log"; }
ar rcs "$LIB.tmp" "$LIB_DIR/obj/whisper.cpp.o"
mv "$LIB.tmp" "$LIB"
cp "$WSRC/whisper.h" "$LIB_DIR/include/"
printf '%s\n' "$config" >"$STAMP"
step "built $LIB"
