#!/usr/bin/env bash
# Captures the graphs whisper.cpp measures its compute buffers with, as gzip'd galloc graph
# files in this folder, at OpenAI's model dimensions, from two whisper.rn versions:
#   whisper-rn-0.4.0-rc.8-SIZE-{conv,encode,cross,decode}.json.gz     tiny, base (2023 ggml_allocr API)
#   whisper-rn-0.4.0-rc.10-SIZE-{attn,flash}-{conv,encode,cross,decode}.json.gz
#                                                                     tiny, base, small, large-v3
# They come from the drop-in's GALLOC_DUMP while the test clients (tests/api_2023 and
# tests/dropin's whisper_client) run the package's whisper.cpp on a random-weight model; the
# weights do not change the graphs. whisper_init_state reserves conv, encode, cross and decode
# in that order (rc.10: once without flash attention, once with), before any graph runs; for
# small and large-v3 the rc.10 client stops there ("reserve").
#
# usage: bench/graphs/capture-whisper.sh [BUILD_DIR]   (default: build, after `make test`)
set -euo pipefail
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
BUILD=${1:-$HERE/../../build}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# capture CLIENT NAME SIZE MODE GRAPH...: runs CLIENT at SIZE (MODE: "" or reserve) and names
# the first dumps GRAPH...
capture() {
    local client=$1 name=$2 size=$3 mode=$4
    shift 4
    [[ -x $client ]] || { echo "capture: no $client; build the tests first (make test)" >&2; exit 1; }
    local dir=$WORK/$name-$size
    GALLOC_DUMP=$dir "$client" "$WORK/model.bin" "$size" $mode >"$dir.txt" 2>"$dir.err" || { cat "$dir.err" >&2; exit 1; }
    local -a files
    mapfile -t files < <(find "$dir" -name '*.json' | sort | head -n $#)
    [[ ${#files[@]} -eq $# ]] || { echo "capture: expected $# graphs for $name $size, got ${#files[@]}" >&2; exit 1; }
    local i=0 graph
    for graph in "$@"; do
        gzip -9 -n -c "${files[$i]}" >"$HERE/whisper-rn-$name-$size-$graph.json.gz"
        i=$((i + 1))
    done
    echo "capture: whisper-rn-$name-$size: $*"
}

rc10=(attn-conv attn-encode attn-cross attn-decode flash-conv flash-encode flash-cross flash-decode)
for size in tiny base; do
    capture "$BUILD/tests/api_2023/galloc_api_2023_whisper_client_galloc" 0.4.0-rc.8 "$size" "" conv encode cross decode
    capture "$BUILD/tests/dropin/galloc_whisper_client_whisper-rn-0.4.0-rc.10_galloc" 0.4.0-rc.10 "$size" "" "${rc10[@]}"
done
for size in small large-v3; do
    capture "$BUILD/tests/dropin/galloc_whisper_client_whisper-rn-0.4.0-rc.10_galloc" 0.4.0-rc.10 "$size" reserve "${rc10[@]}"
done
