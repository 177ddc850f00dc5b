#!/usr/bin/env bash
# Shared compute buffers on real whisper.cpp (GALLOC_SHARE): the drop-in tests' whisper client
# at real dimensions with random weights, run three times: on stock ggml, on galloc (best),
# and on galloc with each whisper state's four graphs sharing one buffer (a share group,
# galloc-ggml.h). Prints, per attention kind, the compute memory the process really held at
# its peak (counted through ggml_backend_buft_alloc_buffer / ggml_backend_buffer_free by the
# client) next to the largest graph's own need, each graph's need (what ggml_gallocr_get_buffer_size
# reports, shared or not), and the process's peak RSS (GNU time).
#
# usage: whisper_share.sh STOCK_CLIENT GALLOC_CLIENT SIZE [OUT_DIR]
#   SIZE: tiny, base or small. The clients are built by `make build`:
#   build/tests/dropin/galloc_whisper_client_whisper-rn-0.4.0-rc.10_{stock,galloc} (whisper.rn 0.4.0-rc.10), or
#   by the packages test for whisper.rn 0.7.4 (as shipped, see tests/amalgamation).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 STOCK_CLIENT GALLOC_CLIENT SIZE [OUT_DIR]" >&2; exit 2; }
STOCK=$1 GALLOC=$2 SIZE=$3 OUT=${4:-$(mktemp -d)}
mkdir -p "$OUT"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (Debian: time)" >&2; exit 1; }

run() {  # NAME EXE ARGS...
    local name=$1; shift
    GALLOC_STRATEGY=best /usr/bin/time -f '%M' -o "$OUT/$name.rss" "$@" >"$OUT/$name.txt" 2>"$OUT/$name.err" \
        || { echo "$name failed:" >&2; tail -n 5 "$OUT/$name.err" >&2; exit 1; }
}
run stock "$STOCK" "$OUT/model.bin" "$SIZE"
run best "$GALLOC" "$OUT/model.bin" "$SIZE"
run shared "$GALLOC" "$OUT/model.bin" "$SIZE" share
for v in best shared; do
    if ! diff <(grep '^exact' "$OUT/stock.txt") <(grep '^exact' "$OUT/$v.txt") >/dev/null; then
        echo "$v: results differ from stock" >&2; exit 1
    fi
done

value() { sed -n "s/^size whisper\.$2 //p" "$OUT/$1.txt"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
echo "whisper $SIZE, results bit-identical to stock in every run (MB = 10^6 bytes)"
printf '%-11s %-7s %10s %10s %10s %10s\n' attention what stock best shared 'largest graph'
for config in attn flash_attn; do
    largest=0
    for g in conv encode cross decode; do
        n=$(value best "$config.compute_$g")
        (( n > largest )) && largest=$n
    done
    printf '%-11s %-7s %10s %10s %10s %10s\n' "$config" "held" \
        "$(mb "$(value stock "$config.compute_allocated_peak")")" \
        "$(mb "$(value best "$config.compute_allocated_peak")")" \
        "$(mb "$(value shared "$config.compute_allocated_peak")")" "$(mb "$largest")"
    for g in conv encode cross decode; do
        printf '%-11s %-7s %10s %10s %10s\n' "" "$g" "$(mb "$(value stock "$config.compute_$g")")" \
            "$(mb "$(value best "$config.compute_$g")")" "$(mb "$(value shared "$config.compute_$g")")"
    done
done
printf '%-19s %10s %10s %10s\n' "peak RSS (MB)" "$(( $(cat "$OUT/stock.rss") / 1000 ))" \
    "$(( $(cat "$OUT/best.rss") / 1000 ))" "$(( $(cat "$OUT/shared.rss") / 1000 ))"
