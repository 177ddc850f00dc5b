#!/usr/bin/env bash
# Captures the graphs llama.cpp (llama.rn 0.12.9) reserves its compute buffer with, at the
# real dimensions of nine models, as gzip'd galloc graph files in this folder:
#   llama-rn-0.12.9-MODEL-ctx4096-pp512-{attn,flash}.json.gz    a micro-batch of 512 tokens
#   llama-rn-0.12.9-MODEL-ctx4096-tg-{attn,flash}.json.gz       one token against 4096 positions
#   llama-rn-0.12.9-MODEL-ctx8192-pp2048-{attn,flash}.json.gz
#   llama-rn-0.12.9-MODEL-ctx8192-tg-{attn,flash}.json.gz
# tests/dropin/llama_real_dims.cpp writes each model (every layer, weights a hole in the file)
# and creates the context; the drop-in's GALLOC_DUMP writes what llama.cpp reserves (the
# micro-batch graph, the one-token graph, the micro-batch graph again). The same program
# linked against stock ggml-alloc gives stock's compute buffer, printed beside galloc's.
#
# usage: bench/graphs/capture-llama.sh [BUILD_DIR] [MODEL...]   (default: build, the models whose
#        graphs are here; llama_real_dims --list names more)
# Needs about 20 GB of free memory for the 8B models (the mapped file and the KV cache); the
# model files are written to a temporary folder as sparse files and removed at the end.
set -euo pipefail
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
BUILD=${1:-$HERE/../../build}
shift || true
PROGRAM=$BUILD/tests/dropin/galloc_llama_real_dims_llama-rn-0.12.9
for kind in galloc stock; do
    [[ -x ${PROGRAM}_$kind ]] || { echo "capture: no ${PROGRAM}_$kind; build the tests first (make test)" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then   # the models whose graphs are here
    for f in "$HERE"/llama-rn-0.12.9-*-ctx4096-tg-attn.json.gz; do
        m=${f##*/llama-rn-0.12.9-}
        models+=("${m%-ctx4096-tg-attn.json.gz}")
    done
fi

# the compute buffer a run printed (llama.cpp's one CPU buffer)
size_of() { sed -n 's/^size .*\.CPU \([0-9]*\)$/\1/p' "$1"; }

printf '%-16s %-16s %14s %14s\n' model case stock galloc
for model in "${models[@]}"; do
    for config in "4096 512" "8192 2048"; do
        read -r ctx ubatch <<<"$config"
        for attention in attn flash; do
            dir=$WORK/$model-$ctx-$attention
            GALLOC_DUMP=$dir "${PROGRAM}_galloc" "$model" "$ctx" "$ubatch" "$attention" "$WORK" >"$dir.galloc" \
                || { echo "capture: $model $ctx $ubatch $attention failed" >&2; exit 1; }
            "${PROGRAM}_stock" "$model" "$ctx" "$ubatch" "$attention" "$WORK" >"$dir.stock"
            mapfile -t files < <(find "$dir" -name '*.json' | sort)
            [[ ${#files[@]} -ge 2 ]] || { echo "capture: $model: expected the reserved graphs, got ${#files[@]}" >&2; exit 1; }
            base=$HERE/llama-rn-0.12.9-$model-ctx$ctx
            gzip -9 -n -c "${files[0]}" >"$base-pp$ubatch-$attention.json.gz"
            gzip -9 -n -c "${files[1]}" >"$base-tg-$attention.json.gz"
            printf '%-16s %-16s %14s %14s\n' "$model" "ctx$ctx-ub$ubatch-$attention" "$(size_of "$dir.stock")" \
                "$(size_of "$dir.galloc")"
        done
    done
    rm -f "$WORK/$model.gguf"
done
