#!/usr/bin/env bash
# A llama.rn context's members in one share group, on llama.rn 0.12.9's llama.cpp and mtmd as
# galloc-rn patches them, at real dimensions (text models written by llama_real_dims, weights
# all zero: a file that is a hole on disk; the rest random weights):
#   target-draft   a target at Qwen2.5-0.5B's and an MTP-style draft, a second context on the
#                  model (llama_share_bench.cpp);
#   target-vision  LLaVA-1.5-7B: Llama-2-7B (Q4_0) and mtmd's encoder, CLIP ViT-L/14 at 336
#                  pixels with an MLP projector (llama_mtmd_share_bench.cpp);
#   target-audio   GLM-ASR-Nano-2512: its Llama-style text model (Q4_0) and mtmd's encoder,
#                  Whisper large-v3's with GLM-ASR's projector (llama_mtmd_share_bench.cpp);
#   target-mtp     Qwen3.5-0.8B's text model and its MTP head, the draft an MTP context, run
#                  as llama.cpp's draft-mtp speculative decoding runs it
#                  (llama_mtp_share_bench.cpp).
# Builds the programs once against stock ggml and once against galloc's with galloc-rn's
# llama-context.cpp and helper, as tests/amalgamation/packages_test.sh built them, and runs them.
# ggml itself (its CPU backend does the arithmetic) is built again here with -march=native, as
# the packages build it for their phones' SIMD: on make test's baseline x86-64 build one CLIP
# ViT-L/14 image took 180 s, and the audio case's first run had not finished after 12 minutes.
# Ends with one line per case:
#   SHARE <case> stock=<bytes> shared=<bytes> largest=<bytes> identical=<0|1>
# stock: the compute memory held at the peak without galloc; shared: with the group; largest:
# the largest member's own buffer (galloc, unshared); identical: every output (logits, image
# embeddings) as stock's, in every run.
# Before them, the peak RSS (GNU time) of one realistic run per mode, each in a process of its
# own: for target-draft a 512-token prompt for each context, then 64 tokens taking turns; for
# target-vision an image, a 512-token prompt and 64 generated tokens; for target-audio 30 seconds
# of sound, then the same; for target-mtp a 512-token prompt and 64 generated tokens, by steps of
# up to 3 drafted tokens.
#
# usage: llama_share.sh [ROUNDS [TOKENS [CASE...]]]   (default 3 rounds of 16 tokens, all cases;
#        CASE: target-draft, target-vision, target-audio or target-mtp)
# Needs `make test` (its packages test builds llama.rn 0.12.9 as shipped and as patched),
# `make build` (llama_real_dims writes the text models) and GNU time (Debian: time).
set -euo pipefail
ROUNDS=${1:-3} TOKENS=${2:-16}
CASES=("${@:3}")
[[ ${#CASES[@]} -gt 0 ]] || CASES=(target-draft target-vision target-audio target-mtp)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKG=${GALLOC_CACHE_DIR:-$HOME/.cache/galloc}/ggml/as-shipped/llama.rn-0.12.9
PATCHED=$PKG/llama_share
REAL_DIMS=$ROOT/build/tests/dropin/galloc_llama_real_dims_llama-rn-0.12.9_stock
OUT=$ROOT/build/bench/llama_share
die() { echo "llama_share.sh: $*" >&2; exit 1; }
for c in "${CASES[@]}"; do
    [[ $c =~ ^target-(draft|vision|audio|mtp)$ ]] || die "no case $c (target-draft, target-vision, target-audio, target-mtp)"
done
# wanted CASE: the case was asked for
wanted() { [[ " ${CASES[*]} " == *" $1 "* ]]; }
[[ -s $PATCHED/rn_llama_group.hpp && -s $PATCHED/llama-context-patched.o && -s $PKG/llama/libllama.a &&
   -s $PKG/mtmd/libmtmd.a ]] ||
    die "no llama.rn 0.12.9 as galloc-rn patches it in $PKG: run make test first (its packages test builds it)"
[[ -x $REAL_DIMS ]] || die "no $REAL_DIMS: run make build first"
[[ -x /usr/bin/time ]] || die "needs GNU time (Debian: time)"
mkdir -p "$OUT"
NATIVE=$OUT/ggml-native   # build.sh keeps it while the package and the drop-in stay the same
GALLOC_GGML_AS_SHIPPED=1 GALLOC_GGML_EXTRA_CFLAGS=-march=native CC=clang CXX=clang++ \
    "$ROOT/integrations/ggml/build.sh" llama.rn@0.12.9 "$NATIVE" >"$OUT/ggml-native.log" 2>&1 ||
    { tail -n 20 "$OUT/ggml-native.log" >&2; die "could not build ggml with -march=native (log: $OUT/ggml-native.log)"; }

(
    NPM_SPEC=llama.rn@0.12.9 GALLOC_GGML_AS_SHIPPED=1
    # shellcheck source=../integrations/ggml/package.sh
    source "$ROOT/integrations/ggml/package.sh"
    for f in bench/llama_share_bench.cpp bench/llama_mtmd_share_bench.cpp bench/median.hpp tests/dropin/test_support.hpp \
             tests/dropin/llama_model.hpp tests/dropin/compute_memory.hpp tests/dropin/llama_share_group.hpp \
             tests/dropin/mmproj_model.hpp tests/dropin/model_writer.hpp bench/llama_mtp_share_bench.cpp \
             tests/dropin/mtp_model.hpp tests/dropin/mtp_speculation.hpp; do
        package_rename "$ROOT/$f" "$OUT/$(basename "$f")"
    done
    cp "$PATCHED/rn_llama_group.hpp" "$OUT/"
    memory_link=()   # compute_memory.hpp's wrappers
    for w in ggml_backend_buft_alloc_buffer ggml_backend_buffer_set_usage ggml_backend_buffer_free; do
        memory_link+=("-Wl,--wrap=lm_$w")
    done
    link=("${memory_link[@]}" -Wl,--wrap=lm_ggml_gallocr_alloc_graph)   # and llama_share_bench's timer
    for kind in stock galloc; do
        helper=() context=()
        [[ $kind == galloc ]] && helper=(-DGALLOC_RN_LLAMA_GROUP='"rn_llama_group.hpp"') \
                                 context=("$PATCHED/llama-context-patched.o")
        clang++ -std=c++17 -O2 "${helper[@]}" -I"$OUT" -isystem "$PKG/llama/include" -isystem "$PKG/include" \
            -c "$OUT/llama_share_bench.cpp" -o "$OUT/llama_share_bench_$kind.o"
        clang++ "$OUT/llama_share_bench_$kind.o" "${context[@]}" "$PKG/llama/libllama.a" "$NATIVE/libggml-$kind.a" \
            -lpthread -lm -ldl "${link[@]}" -o "$OUT/llama_share_bench_$kind"
        clang++ -std=c++17 -O2 "${helper[@]}" -I"$OUT" -isystem "$PKG/mtmd/include" -isystem "$PKG/llama/include" \
            -isystem "$PKG/include" -c "$OUT/llama_mtmd_share_bench.cpp" -o "$OUT/llama_mtmd_share_bench_$kind.o"
        clang++ "$OUT/llama_mtmd_share_bench_$kind.o" "${context[@]}" "$PKG/mtmd/libmtmd.a" "$PKG/llama/libllama.a" \
            "$NATIVE/libggml-$kind.a" -lpthread -lm -ldl "${memory_link[@]}" -o "$OUT/llama_mtmd_share_bench_$kind"
        clang++ -std=c++17 -O2 "${helper[@]}" -I"$OUT" -isystem "$PKG/llama/include" -isystem "$PKG/include" \
            -c "$OUT/llama_mtp_share_bench.cpp" -o "$OUT/llama_mtp_share_bench_$kind.o"
        clang++ "$OUT/llama_mtp_share_bench_$kind.o" "${context[@]}" "$PKG/llama/libllama.a" "$NATIVE/libggml-$kind.a" \
            -lpthread -lm -ldl "${memory_link[@]}" -o "$OUT/llama_mtp_share_bench_$kind"
    done
) >"$OUT/build.log" 2>&1 || { tail -n 20 "$OUT/build.log" >&2; die "build failed (log: $OUT/build.log)"; }

# field MODE KEY FILE: the value after KEY on the line "MODE: ..." of $OUT/FILE.txt
field() { sed -n "s/^$1: .*$2 \([0-9a-f]*\).*/\1/p" "$OUT/$3.txt"; }
# realistic_runs CASE TITLE PROGRAM ARG...: one realistic run per mode (stock, galloc unshared,
# galloc shared), each in a process of its own under GNU time, output in $OUT/CASE-MODE.txt (the
# program prints "CASE MODE: compute peak N bytes ..."); prints their peak RSS and compute peak
realistic_runs() {
    local case=$1 title=$2 program=$3 name kb mode build
    shift 3
    local -a rss=() held=()
    for name in unshared-stock unshared shared; do
        mode=${name%-stock} build=galloc
        [[ $name == *-stock ]] && build=stock
        /usr/bin/time -f '%M' -o "$OUT/$case-$name.kb" "$OUT/${program}_$build" "$@" "$mode" \
            >"$OUT/$case-$name.txt" || die "the realistic run ($case, $name) failed"
        kb=$(cat "$OUT/$case-$name.kb")
        rss+=("$(( kb / 1000 ))")
        held+=("$(( $(field "$case $mode" 'compute peak' "$case-$name") / 1000000 ))")
    done
    printf '%-44s %10s %10s %10s\n' "$title" stock unshared shared "peak RSS (MB)" "${rss[@]}" \
        "compute memory held at the peak (MB)" "${held[@]}"
}
# text_model NAME WEIGHTS: writes the text model NAME (llama_real_dims) and prints its path
text_model() {
    "$REAL_DIMS" "$1" 512 128 attn "$OUT" "$2" >/dev/null || die "could not write the model $1"
    if [[ $2 == f16 ]]; then echo "$OUT/$1.gguf"; else echo "$OUT/$1.$2.gguf"; fi
}
# media_case KIND TITLE TEXT_MODEL: target-KIND's realistic runs (llama_mtmd_share_bench)
media_case() {
    local mmproj=$OUT/$1-mmproj.gguf
    "$OUT/llama_mtmd_share_bench_stock" write "$1" "$mmproj" || die "could not write the $1 projector"
    echo
    realistic_runs "$1" "$2" llama_mtmd_share_bench "$3" "$mmproj"
    for v in unshared-stock unshared shared; do sed 's/^/  /' "$OUT/$1-$v.txt"; done
}

if wanted target-draft; then
    MODEL=$(text_model qwen2.5-0.5b f16)
    realistic_runs rss "realistic run (512-token prompts, 64 turns)" llama_share_bench "$MODEL" rss
    "$OUT/llama_share_bench_stock" "$MODEL" 1 "$TOKENS" | tee "$OUT/stock.txt"
    GALLOC_STRATEGY=best "$OUT/llama_share_bench_galloc" "$MODEL" "$ROUNDS" "$TOKENS" | tee "$OUT/galloc.txt"
fi
if wanted target-vision; then
    MODEL=$(text_model llama-2-7b q4_0)
    media_case vision "image, 512-token prompt, 64 tokens" "$MODEL"
fi
if wanted target-audio; then
    MODEL=$(text_model glm-asr-nano-text q4_0)
    media_case audio "30 s of sound, 512-token prompt, 64 tokens" "$MODEL"
fi
if wanted target-mtp; then   # its realistic runs only
    MTP_MODEL=$OUT/qwen3.5-0.8b-mtp.gguf
    "$OUT/llama_mtp_share_bench_stock" write "$MTP_MODEL" || die "could not write the MTP model"
    echo
    realistic_runs mtp "512-token prompt, 64 tokens by MTP steps" llama_mtp_share_bench "$MTP_MODEL"
    for v in unshared-stock unshared shared; do sed 's/^/  /' "$OUT/mtp-$v.txt"; done
fi

# same CASE KEY: KEY's value is the same in CASE's three realistic runs (stock, unshared, shared)
same() {
    local first
    first=$(field "$1 unshared" "$2" "$1-unshared-stock")
    [[ -n $first && $first == "$(field "$1 unshared" "$2" "$1-unshared")" &&
       $first == "$(field "$1 shared" "$2" "$1-shared")" ]]
}
# share_line NAME CASE IDENTICAL: the SHARE line of a case measured by its realistic runs
share_line() {
    echo "SHARE $1 stock=$(field "$2 unshared" 'compute peak' "$2-unshared-stock")" \
         "shared=$(field "$2 shared" 'compute peak' "$2-shared")" \
         "largest=$(field "$2 unshared" 'largest member' "$2-unshared") identical=$3"
}
if wanted target-draft; then
    identical=0
    [[ $(field stock logits stock) == "$(field shared logits galloc)" ]] && same rss logits && identical=1
    echo "SHARE target-draft stock=$(field stock 'compute peak' stock) shared=$(field shared 'compute peak' galloc)" \
         "largest=$(field unshared 'larger member' galloc) identical=$identical"
fi
for kind in vision audio; do
    wanted "target-$kind" || continue
    identical=0
    same "$kind" embeddings && same "$kind" logits && identical=1
    share_line "target-$kind" "$kind" "$identical"
done
if wanted target-mtp; then
    identical=0
    same mtp outputs && identical=1
    share_line target-mtp mtp "$identical"
fi
