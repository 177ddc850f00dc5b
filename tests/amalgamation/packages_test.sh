#!/usr/bin/env bash
# The one-file drop-in inside the packages' ggml as they ship it: for each npm package, its
# ggml sources keep their prefix (lm_ggml_, wsp_ggml_), the package's own renaming runs over
# the amalgamated file, and clang builds ggml with it in place of ggml-alloc.c (C++17, hidden
# visibility); build.sh's smoke test then computes a graph with each. Last, a whisper.rn and
# a llama.rn build link into one program and both run in it.
#
# usage: packages_test.sh GALLOC_ROOT OUT_ROOT NPM_SPEC...
#   the first whisper.rn and the first llama.rn spec make the two-package program
set -euo pipefail

ROOT=$1 OUT_ROOT=$2
shift 2
mkdir -p "$OUT_ROOT"
FILE=$OUT_ROOT/ggml-alloc.cpp
"$ROOT/integrations/ggml/amalgamate.sh" "$FILE.new"
if cmp -s "$FILE.new" "$FILE"; then rm "$FILE.new"; else mv "$FILE.new" "$FILE"; fi

passed=0 failed=0
whisper_dir="" llama_dir=""
for spec in "$@"; do
    out=$OUT_ROOT/${spec//@/-}
    if CC=clang CXX=clang++ GALLOC_GGML_AS_SHIPPED=1 GALLOC_DROPIN_SOURCE="$FILE" GALLOC_DROPIN_WITH_GALLOC=0 \
            GALLOC_DROPIN_CFLAGS="-std=c++17 -fvisibility=hidden -Werror -Wall -Wextra" \
            "$ROOT/integrations/ggml/build.sh" "$spec" "$out" >"$OUT_ROOT/build-${spec//@/-}.log" 2>&1; then
        echo "ok: $spec: $(grep 'smoke test (galloc)' "$OUT_ROOT/build-${spec//@/-}.log")"
        passed=$((passed + 1))
        case $spec in
            whisper.rn@*) [[ -n $whisper_dir ]] || whisper_dir=$out ;;
            llama.rn@*)   [[ -n $llama_dir ]] || llama_dir=$out ;;
        esac
    else
        echo "FAIL: $spec"; tail -n 20 "$OUT_ROOT/build-${spec//@/-}.log"; failed=$((failed + 1))
    fi
done

# Two renamed copies in one program: each package's smoke test under its own name.
if [[ -n $whisper_dir && -n $llama_dir ]]; then
    two=$OUT_ROOT/two-packages
    mkdir -p "$two"
    printf '%s\n' 'int smoke_whisper(void);' 'int smoke_llama(void);' \
        'int main(void) { int a = smoke_whisper(); int b = smoke_llama(); return a != 0 || b != 0; }' >"$two/main.c"
    if clang -std=c11 -O1 -c "$whisper_dir/smoke_test.c" -I "$whisper_dir/include" -Dmain=smoke_whisper -o "$two/whisper.o" &&
       clang -std=c11 -O1 -c "$llama_dir/smoke_test.c" -I "$llama_dir/include" -Dmain=smoke_llama -o "$two/llama.o" &&
       clang -std=c11 -c "$two/main.c" -o "$two/main.o" &&
       clang++ "$two/main.o" "$two/whisper.o" "$two/llama.o" "$whisper_dir/libggml-galloc.a" "$llama_dir/libggml-galloc.a" \
           -lpthread -lm -ldl -o "$two/two-packages" >"$two/link.log" 2>&1 &&
       "$two/two-packages" >"$two/run.log" 2>&1 && [[ $(grep -c '^ok:' "$two/run.log") -eq 2 ]]; then
        echo "ok: $(basename "$whisper_dir") and $(basename "$llama_dir") in one program"
        passed=$((passed + 1))
    else
        echo "FAIL: two packages in one program"; cat "$two/link.log" "$two/run.log" 2>/dev/null | tail -n 20
        failed=$((failed + 1))
    fi
else
    echo "FAIL: the two-package program needs a whisper.rn and a llama.rn spec that build"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
