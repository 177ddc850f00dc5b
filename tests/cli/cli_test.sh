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
    failed=$((failed + 1)); echo "FAIL: $name"; tail -n 5 "$work/out" "$work/err"; fi
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
# a strategy other than best plans regardless of the capacity and says whether it fits
check "plan with capacity" "$galloc" plan "$work/g.json" --strategy ggml --capacity 1 --json
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

# A gzip'd graph file (as bench/graphs keeps captures) plans as the plain one does.
gzip -c "$work/g.json" >"$work/g.json.gz"
check "same plan from .json.gz" bash -c "'$galloc' plan '$work/g.json.gz' --strategy ggml --json | python3 -c \"import json,sys; a=json.load(sys.stdin); b=json.load(open('$work/plan-ggml.json')); sys.exit(0 if a['peak_bytes']==b['peak_bytes'] and a['buffers'][0]['chunks']==b['buffers'][0]['chunks'] else 1)\""

# best with a capacity its heuristics miss: the exact search finds a fit, and --output writes
# the solution as MiniMalloc CSV (checked here independently: no two rows live at once share
# bytes); a capacity below the bound is an error, and then no file is written.
printf 'id,lower,upper,size\n0,4,10,3\n1,1,3,5\n2,11,15,5\n3,2,5,4\n4,8,11,4\n5,10,13,5\n6,6,8,4\n' >"$work/tight.csv"
check "heuristics alone" "$galloc" plan "$work/tight.csv" --json
keep tight.json
check "the heuristics miss the bound here" json_has "$work/tight.json" "j['peak_bytes']>10 and j['lower_bound_bytes']==10"
check "best meets the capacity" "$galloc" plan "$work/tight.csv" --capacity 10 --time-limit 5 --output "$work/sol.csv" --json
keep tight-capacity.json
check "it fits" json_has "$work/tight-capacity.json" "j['fits'] and j['peak_bytes']==10 and j['valid']"
check "the solution file is a valid placement" python3 -c "
import csv
rows = [(int(r['lower']), int(r['upper']), int(r['size']), int(r['offset'])) for r in csv.DictReader(open('$work/sol.csv'))]
assert len(rows) == 7 and max(o + s for _, _, s, o in rows) <= 10
for i, (l1, u1, s1, o1) in enumerate(rows):
    for l2, u2, s2, o2 in rows[i + 1:]:
        assert not (l1 < u2 and l2 < u1 and o1 < o2 + s2 and o2 < o1 + s1), 'overlap'
"
if "$galloc" plan "$work/tight.csv" --capacity 9 --time-limit 5 --output "$work/none.csv" >"$work/out" 2>"$work/err"; then
  failed=$((failed + 1)); echo "FAIL: a capacity below the bound accepted"
elif grep -q "9 bytes" "$work/err" && [ ! -e "$work/none.csv" ] && [ ! -e "$work/none.csv.partial" ]; then passed=$((passed + 1))
else failed=$((failed + 1)); echo "FAIL: capacity below the bound: message or a file left"; cat "$work/err"; fi

# Under a device's max buffer size, best reaches the smallest placement the chunks allow on
# the captured graphs where only greedy-late-first finds it (docs/PERFORMANCE.md, "Under a
# device's max buffer size", says why none is smaller): graph, max size in MiB, the most bytes.
while read -r graph max_mib most; do
  python3 -c "import gzip, json, sys
g = json.load(gzip.open(sys.argv[1], 'rt'))
for t in g['buffer_types']: t['max_size'] = int(sys.argv[2]) << 20
json.dump(g, open(sys.argv[3], 'w'))" "$source_dir/bench/graphs/$graph.json.gz" "$max_mib" "$work/max.json"
  check "best on $graph at $max_mib MiB" "$galloc" plan "$work/max.json" --strategy best --json
  keep max-plan.json
  check "best on $graph at $max_mib MiB needs at most $most bytes" json_has "$work/max-plan.json" \
    "j['valid'] and j['peak_bytes'] <= $most"
done <<'CASES'
llama-rn-0.12.9-llama-2-7b-ctx4096-pp512-flash 32 96468992
llama-rn-0.12.9-llama-2-7b-ctx8192-pp2048-flash 32 385875968
llama-rn-0.12.9-llama-2-7b-ctx8192-pp2048-flash 256 385875968
llama-rn-0.12.9-mistral-7b-v0.3-ctx4096-pp512-flash 32 109064192
CASES

# Bad input: non-zero exit and a message that names the line or field.
printf 'id,lower,upper,size\n0,0,10,4\n1,5,x,4\n' >"$work/bad.csv"
if "$galloc" plan "$work/bad.csv" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad csv accepted"; \
elif grep -q "line 3" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad csv message"; cat "$work/err"; fi
printf '{"format": "galloc-graph", "version": 1, "buffer_types": [{"name": "cpu", "alignment": 32}], "buffers": [0], "tensors": [{"id": 0, "type": "f32", "ne": [1,1,1], "op": "NONE"}], "nodes": [], "leafs": [0]}' >"$work/bad.json"
if "$galloc" plan "$work/bad.json" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad json accepted"; \
elif grep -q "ne" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad json message"; cat "$work/err"; fi
if "$galloc" plan "$work/missing.json" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: missing file accepted"; \
else passed=$((passed + 1)); fi
head -c 200 "$work/g.json.gz" >"$work/cut.json.gz"  # a gzip stream cut short
if "$galloc" plan "$work/cut.json.gz" >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: cut .json.gz accepted"; \
elif grep -q "cut.json.gz: not a readable gzip file" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: cut .json.gz message"; cat "$work/err"; fi
if "$galloc" plan "$work/g.json" --strategy fastest >"$work/out" 2>"$work/err"; then failed=$((failed + 1)); echo "FAIL: bad strategy accepted"; \
elif grep -q "fastest" "$work/err"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: bad strategy message"; fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
