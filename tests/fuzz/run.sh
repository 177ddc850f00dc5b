#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 10) on its seed corpus, after building them
# (build.sh, incremental) into FUZZ_OUT (default build-fuzz/ at the repository root).
#
#   tests/fuzz/run.sh                 every target, 10 s each
#   tests/fuzz/run.sh 600             the long run
#   tests/fuzz/run.sh 30 fuzz_planner one target
#
# New inputs that add coverage go to FUZZ_OUT/corpus/<target>/ (the seed corpus in
# tests/fuzz/corpus/ is only read), crashes to FUZZ_OUT/crashes/<target>/. The run fails when
# a target crashes, leaks or breaks an invariant; the last lines of its log say which input.
# A crash reproduces with: FUZZ_OUT/<target> FUZZ_OUT/crashes/<target>/crash-...
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SECONDS_PER_TARGET="${1:-10}"
shift || true
OUT="${FUZZ_OUT:-$ROOT/build-fuzz}"

if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  "$HERE/build.sh" "$OUT"
  built=$?
  [ $built -eq 0 ] || exit $built   # 77: no libFuzzer here, skipped
fi

if [ $# -gt 0 ]; then
  TARGETS="$*"
else
  TARGETS=$(cd "$HERE" && ls fuzz_*.cpp | sed 's/\.cpp$//' | sort)
fi

# Big allocations are the C API target's business (CPU buffers of fuzzed sizes): they must come
# back as out-of-memory statuses, not stop the run.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

status=0
for target in $TARGETS; do
  if [ ! -x "$OUT/$target" ]; then
    echo "skip $target: not built (tests/fuzz/build.sh $OUT)"
    [ "$status" -eq 0 ] && status=77
    continue
  fi
  name="${target#fuzz_}"
  corpus="$OUT/corpus/$target"
  crashes="$OUT/crashes/$target"
  mkdir -p "$corpus" "$crashes"
  log="$OUT/$target.log"
  "$OUT/$target" "$corpus" "$HERE/corpus/$name" \
    -seed="${GALLOC_FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1048576 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ $rc -ne 0 ]; then
    echo "FAIL $target (exit $rc, ${runs:-?} runs): see $log"
    tail -n 40 "$log"
    status=1
  else
    echo "ok   $target: ${runs:-?} runs in ${SECONDS_PER_TARGET}s, $cov, corpus $(ls "$corpus" | wc -l) new + $(ls "$HERE/corpus/$name" | wc -l) seeds"
  fi
done
exit $status
