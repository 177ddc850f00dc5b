#!/usr/bin/env bash
# The CLI's contract: plan --json fields, compare, convert round trips, zoo, and errors that
# name the problem with a non-zero exit. Usage: cli_test.sh BUILD/bin/galloc SOURCE_DIR
set -uo pipefail
galloc=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {  # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@" >"$work/out" 2>"$work/err"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $name"; tail -5 "$work/out" "$work/err"; fi
}
json_has() {  # json_has FILE PYTHON-EXPRESSION-ON-j (check's redirect truncates out: copy first)
  python3 -c "import json,sys; j=json.load(open('$1')); sys.exit(0 if ($2) else 1)"
}
keep() { cp "$work/out" "$work/$1"; }

# plan --json on a zoo graph: the fields other tools rely on.
check "zoo list" "$galloc" zoo list
grep -q "llama" "$work/out" || { failed=$((failed + 1)); echo "FAIL: zoo list has no llama graph"; }
first=$(awk 'NR==1 {print $1}' "$work/out")
check "strategies" "$galloc" strategies
strategies=$(awk '{print $1}' "$work/out")  # the registry, in its order
for strategy in ggml greedy exact best; do
  echo "$strategies" | grep -qx "$strategy" || { failed=$((failed + 1)); echo "FAIL: strategies lacks $strategy"; }
done
check "zoo write" "$galloc" zoo "$first" --scale 0.05 -o "$work/g.json"
for strategy in $strategies; do
  check "plan $strategy" "$galloc" plan "$work/g.json" --strategy $strategy --time-limit 0.2 --json
  cp "$work/out" "$work/plan-$strategy.json"
  check "plan $strategy fields" json_has "$work/plan-$strategy.json" \
    "j['strategy']=='$strategy' and j['valid'] and j['peak_bytes']>=j['lower_bound_bytes']>0 and 'plan_seconds' in j and all('name' in b and 'size' in b and 'chunks' in b for b in j['buffers'])"
done
check "best never above ggml" python3 -c "import json; a=json.load(open('$work/plan-best.json')); b=json.load(open('$work/plan-ggml.json')); exit(0 if a['peak_bytes']<=b['peak_bytes'] else 1)"
check "plan with capacity" "$galloc" plan "$work/g.json" --capacity 1 --json
keep capacity.json
check "fits is false" json_has "$work/capacity.json" "j['fits'] is False"
check "compare" "$galloc" compare "$work/g.json"
for strategy in $strategies; do grep -q "^$strategy " "$work/out" || { failed=$((failed + 1)); echo "FAIL: compare lacks $strategy"; }; done

# MiniMalloc CSV in and out.
printf 'id,lower,upper,size\n0,0,10,4\n1,5,15,4\n2,10,20,4\n' >"$work/p.csv"
check "plan csv" "$galloc" plan "$work/p.csv" --capacity 8 --json
keep csv.json
check "csv fits" json_has "$work/csv.json" "j['fits'] and j['peak_bytes']==8 and j['lower_bound_bytes']==8"
check "graph to csv" "$galloc" convert "$work/g.json" "$work/g.csv"
check "csv of graph plans" "$galloc" plan "$work/g.csv" --json
check "json round trip" "$galloc" convert "$work/g.json" "$work/g2.json"
check "same plan after round trip" bash -c "'$galloc' plan '$work/g2.json' --strategy ggml --json | python3 -c \"import json,sys; a=json.load(sys.stdin); b=json.load(open('$work/plan-ggml.json')); sys.exit(0 if a['peak_bytes']==b['peak_bytes'] and a['buffers'][0]['chunks']==b['buffers'][0]['chunks'] else 1)\""

# Bad input: non-zero exit and a message that names the line or field.
printf 'id,lower,upper,size\n0,0,10,4\n1,5,x,4\n' >"$work/bad.csv"
if "$galloc" plan "$work/bad.csv" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad csv accepted"; \
elif grep -q "line 3" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad csv message"; cat "$work/err"; fi
printf '{"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "cpu", "alignment": 32}], "buffers": [0], "tensors": [{"id": 0, "type": "f32", "ne": [1,1,1], "op": "NONE"}], "nodes": [], "leafs": [0]}' >"$work/bad.json"
if "$galloc" plan "$work/bad.json" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad json accepted"; \
elif grep -q "ne" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad json message"; cat "$work/err"; fi
if "$galloc" plan "$work/missing.json" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: missing file accepted"; \
else passed=$((passed + 1)); fi
if "$galloc" plan "$work/g.json" --strategy fastest >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad strategy accepted"; \
elif grep -q "fastest" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad strategy message"; fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
