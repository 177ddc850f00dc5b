#!/usr/bin/env bash
# The one-file drop-in compiles warning-free (-Werror) as C++17 and C++20, under g++ and
# clang++, optimised with hidden visibility and LTO as the apps build it and unoptimised with
# assertions, against every ggml tree given; and it defines no global symbol but ggml's API.
# The --with-dump variant (graph file code, nlohmann-json) is compiled against the first tree.
#
# usage: compile_matrix_test.sh GALLOC_ROOT WORK_DIR GGML_INCLUDE_DIR...
#   each GGML_INCLUDE_DIR is a build.sh OUT_DIR/include (with internal/ below it)
set -euo pipefail

ROOT=$1 WORK=$2
shift 2
[[ $# -gt 0 ]] || { echo "usage: $0 GALLOC_ROOT WORK_DIR GGML_INCLUDE_DIR..." >&2; exit 2; }
mkdir -p "$WORK"
FILE=$WORK/ggml-alloc.cpp
"$ROOT/integrations/ggml/amalgamate.sh" "$FILE"
"$ROOT/integrations/ggml/amalgamate.sh" --with-dump "$WORK/ggml-alloc-with-dump.cpp"

WARNINGS=(-Wall -Wextra -Wpedantic -Wshadow -Werror)
FLAG_SETS=("-O3 -DNDEBUG -fvisibility=hidden -fvisibility-inlines-hidden -flto"
           "-O0")
passed=0 failed=0
# compile NAME FILE INCLUDE COMPILER STD FLAGS: one build, then its global symbols
compile() {
    local name=$1 file=$2 include=$3 compiler=$4 std=$5 flags=$6 obj=$WORK/check.o
    # ggml's own headers as system headers: their warnings are not ours to fix
    # shellcheck disable=SC2086
    if ! "$compiler" -std="$std" $flags "${WARNINGS[@]}" -isystem "$include" \
            -isystem "$include/internal" -c "$file" -o "$obj" 2>"$WORK/log"; then
        echo "FAIL: $name"; head -n 20 "$WORK/log"; failed=$((failed + 1)); return
    fi
    passed=$((passed + 1))
    # LTO objects carry no symbol table that nm reads without a plugin: check the plain
    # builds' symbols only. Strong global definitions (T D B R) must all contain ggml_, which
    # the package renaming prefixes wherever it occurs (ggml's own, and galloc-ggml.h's
    # galloc_ggml_*); weak ones (W, V, u) are the standard library's and ggml-typed template
    # instances, which the renaming makes unique too.
    [[ $flags == *-flto* ]] && return
    local extra
    extra=$(nm -g --defined-only "$obj" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v 'ggml_' || true)
    if [[ -n $extra ]]; then
        echo "FAIL: $name defines non-ggml global symbols:"; echo "$extra" | head; failed=$((failed + 1))
    fi
}
for compiler in g++ clang++; do
    for std in c++17 c++20; do
        compile "with dump: $compiler -std=$std" "$WORK/ggml-alloc-with-dump.cpp" "$1" "$compiler" "$std" "-O0"
    done
done
for include in "$@"; do
    [[ -f $include/ggml.h ]] || { echo "FAIL: no ggml.h in $include" >&2; exit 1; }
    for compiler in g++ clang++; do
        for std in c++17 c++20; do
            for flags in "${FLAG_SETS[@]}"; do
                compile "$(basename "$(dirname "$include")") $compiler -std=$std $flags" "$FILE" "$include" \
                    "$compiler" "$std" "$flags"
            done
        done
    done
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
