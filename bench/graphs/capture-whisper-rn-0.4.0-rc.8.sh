#!/usr/bin/env bash
# Captures the four graphs whisper.cpp of whisper.rn 0.4.0-rc.8 measures its compute buffers
# with (conv, encode, cross, decode: the worst-case graphs of whisper_init_state), at whisper
# tiny's and base's dimensions, as galloc graph files in this folder. They come from the
# drop-in's GALLOC_DUMP while tests/legacy's whisper client runs rc.8's whisper.cpp on a
# random-weight model (the weights do not change the graphs).
#
# usage: bench/graphs/capture-whisper-rn-0.4.0-rc.8.sh [BUILD_DIR]   (default: build; after `make test`)
set -euo pipefail
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
BUILD=${1:-$HERE/../../build}
CLIENT=$BUILD/tests/legacy/galloc_legacy_whisper_client_galloc
[[ -x $CLIENT ]] || { echo "capture: no $CLIENT; build the tests first (make test)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for size in tiny base; do
    GALLOC_DUMP=$WORK/$size "$CLIENT" "$WORK/$size.bin" "$size" >"$WORK/$size.txt" 2>"$WORK/$size.err" \
        || { cat "$WORK/$size.err" >&2; exit 1; }
    # whisper_init_state measures conv, encode, cross and decode in that order: the first four
    mapfile -t files < <(find "$WORK/$size" -name 'ggml-2023-*.json' | sort | head -n 4)
    [[ ${#files[@]} -eq 4 ]] || { echo "capture: expected 4 graphs for $size, got ${#files[@]}" >&2; exit 1; }
    i=0
    for graph in conv encode cross decode; do
        cp "${files[$i]}" "$HERE/whisper-rn-0.4.0-rc.8-$size-$graph.json"
        i=$((i + 1))
    done
    echo "capture: wrote $HERE/whisper-rn-0.4.0-rc.8-$size-{conv,encode,cross,decode}.json"
done
