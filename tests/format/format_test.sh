#!/usr/bin/env bash
# The C and C++ sources follow .clang-format: clang-format (Debian's, which `make deps`
# installs) would change nothing. Fix a failure with: clang-format -i FILE...
set -euo pipefail
ROOT=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/../..")
command -v clang-format >/dev/null || { echo "format_test: clang-format is not installed (make deps)" >&2; exit 1; }
cd "$ROOT"
mapfile -t FILES < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' | grep -v '^tests/fuzz/corpus/')
[[ ${#FILES[@]} -gt 0 ]] || { echo "format_test: no sources found under $ROOT" >&2; exit 1; }
REPORT=$(mktemp)
trap 'rm -f "$REPORT"' EXIT
if ! clang-format --dry-run --Werror "${FILES[@]}" 2>"$REPORT"; then
    grep -E '^[^ ].*: error:' "$REPORT" | cut -d: -f1 | sort | uniq -c \
        | sed 's/^ *\([0-9]*\) \(.*\)/format_test: \2: \1 places to reformat/' >&2
    echo "format_test: run clang-format -i on the files above" >&2
    exit 1
fi
echo "format_test: ${#FILES[@]} files follow .clang-format"
