#!/usr/bin/env bash
# Makes the tables of docs/PERFORMANCE.md again, from the programs the page names, or checks the
# page's byte figures against them.
#
# usage: bench/report.sh [--check] [--whisper] [BUILD_DIR]      (BUILD_DIR defaults to build)
#   bench/report.sh            runs each benchmark once (about a minute on two cores) and prints
#                              every table it can make in the page's Markdown, each under the
#                              marker (<!-- report: NAME -->) the page has above it, for pasting
#                              together with the printed "Last run" line. Sizes and times.
#   bench/report.sh --check    only the deterministic figures (compute buffers, lower bounds,
#                              at-bound counts, chunks), one repetition each (about a minute): fails
#                              with a diff when the page's differ from what the build gives.
#   --whisper                  also bench/whisper_share.sh at whisper base (about 7 minutes).
# Needs `make build` and `make bench` (the ggml benchmarks need `make ggml` first). Not part of
# `make test`. Tables without a program here (llama.cpp's own log, RPC, build times, callgrind
# counts, by-turn whisper timings) keep the "Last run" the page gives them.
set -euo pipefail
shopt -s lastpipe  # table() at the end of a pipeline records into CHECKED
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(readlink -f "$HERE/..")
CHECK=0 WHISPER=0 BUILD=build
for arg in "$@"; do
    case $arg in
        --check) CHECK=1 ;;
        --whisper) WHISPER=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "report.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
        *) BUILD=$arg ;;
    esac
done
BUILD=$(readlink -f "$BUILD")

# The programs and inputs; each may be set from the environment instead.
: "${PAGE:=$ROOT/docs/PERFORMANCE.md}"
: "${GALLOC:=$BUILD/bin/galloc}"
: "${ALLOC_BENCH_STOCK:=$BUILD/bench/galloc_ggml_alloc_bench_stock}"    # [N] [--files F...]
: "${ALLOC_BENCH_GALLOC:=$BUILD/bench/galloc_ggml_alloc_bench_galloc}"
: "${PAIRED_BENCH:=$BUILD/bench/galloc_ggml_paired_bench}"
: "${PLANNING_BENCH:=$BUILD/bench/galloc_planning_bench}"
: "${MINIMALLOC_BENCH:=$BUILD/bench/galloc_minimalloc_challenging}"
: "${WHISPER_CLIENT:=$BUILD/tests/dropin/galloc_whisper_client_whisper-rn-0.4.0-rc.10}"  # _stock, _galloc
: "${ZOO_BENCH_CMAKE:=$ROOT/bench/zoo_bench.cmake}"
: "${GRAPHS:=$ROOT/bench/graphs}"
: "${MINIMALLOC_DIR:=$ROOT/../shared/benchmarks/minimalloc-challenging}"

need() {  # PATH WHAT-TO-DO
    [[ -e $1 ]] || { echo "report.sh: no $1; $2" >&2; exit 1; }
}
need "$GALLOC" "run make build first (or give the build folder: bench/report.sh [--check] BUILD_DIR)"
need "$PLANNING_BENCH" "run make bench first (its ggml benchmarks need make ggml)"
need "$MINIMALLOC_BENCH" "run make bench first"
need "$ALLOC_BENCH_STOCK" "run make ggml, then make bench"
need "$ALLOC_BENCH_GALLOC" "run make ggml, then make bench"
need "$ZOO_BENCH_CMAKE" "this checkout lacks it"
[[ $CHECK == 1 ]] || need "$PAIRED_BENCH" "run make ggml, then make bench"
if [[ $WHISPER == 1 ]]; then
    need "${WHISPER_CLIENT}_stock" "run make test first (it builds the whisper clients)"
    need "${WHISPER_CLIENT}_galloc" "run make test first (it builds the whisper clients)"
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tables"
if [[ $CHECK == 1 ]]; then REPETITIONS=1 ROUNDS=1; else REPETITIONS=15 ROUNDS=5; fi
log() { echo "report.sh: $*" >&2; }

# A table is a file $WORK/tables/NAME.md; CHECKED[NAME] lists the columns (1-based) whose
# figures are deterministic, which --check compares.
declare -A CHECKED
table() {  # NAME COLUMNS: the table from stdin
    cat >"$WORK/tables/$1.md"
    CHECKED[$1]=$2
}

# --- every captured graph, and every zoo graph, replayed through stock ggml-alloc and the drop-in
zoo_bench() {  # OUT [-DGRAPHS=...]
    local out=$1; shift
    cmake -DSTOCK="$ALLOC_BENCH_STOCK" -DGALLOC="$ALLOC_BENCH_GALLOC" -DOUT="$out" \
        -DREPETITIONS=$REPETITIONS -DROUNDS=$ROUNDS "$@" -P "$ZOO_BENCH_CMAKE" >"$out.log" 2>&1 \
        || { cat "$out.log" >&2; exit 1; }
}
log "captured graphs ($ALLOC_BENCH_STOCK, $ALLOC_BENCH_GALLOC)"
zoo_bench "$WORK/captured" -DGRAPHS="$GRAPHS"
python3 "$HERE/table_means.py" "$WORK/captured/table.md" | awk '
    NR == 1 { print "| graphs | n | best / stock buffer | worst | at the bound | ggml reserve | best reserve | worst | best alloc | worst |"
              print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"; next }
    { line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line }' | table captured-means "1 2 3 4 5"

# llama.cpp's compute buffer is the larger of its micro-batch and one-token graphs (capture-llama.sh
# prints the same bytes from llama.cpp itself); whisper's four graphs added up per configuration.
python3 - "$WORK/captured" "$WORK/tables" <<'EOF'
import math, re, sys
out, tables = sys.argv[1], sys.argv[2]
def sizes(variant):
    found = {}
    for line in open(f"{out}/{variant}.txt"):
        m = re.match(r"^bench (\S+) nodes=\d+ buffer=(\d+) .* bound=(\d+)$", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found
stock, best = sizes("stock"), sizes("best")
def mib(b):  # two decimals, halves up, as zoo_bench.cmake rounds
    h = (b * 100 + 524288) // 1048576
    return f"{h // 100}.{h % 100:02d}"
with open(f"{tables}/llama-cpp.md", "w") as t:
    columns = [("4096", "attn"), ("4096", "flash"), ("8192", "attn"), ("8192", "flash")]
    t.write("| model, stock / `best` MiB (best / stock) | ctx 4096, ubatch 512 | 4096, 512, flash | 8192, 2048 | 8192, 2048, flash |\n"
            "|---|---:|---:|---:|---:|\n")
    logs = []
    models = sorted({re.match(r"^llama-rn-[0-9.]+-(.+)-ctx\d+-", n).group(1) for n in stock if n.startswith("llama-rn-")})
    for model in models:
        cells = []
        for ctx, attention in columns:
            names = [n for n in stock if re.match(rf"^llama-rn-[0-9.]+-{re.escape(model)}-ctx{ctx}-(pp\d+|tg)-{attention}$", n)]
            s, b = max(stock[n] for n in names), max(best[n] for n in names)
            logs.append(math.log(b / s))
            cells.append(f"{mib(s)} / {mib(b)} ({b / s:.3f})")
        t.write(f"| {model} | " + " | ".join(cells) + " |\n")
    t.write(f"| geometric mean of best / stock, {len(logs)} cases | {math.exp(sum(logs) / len(logs)):.3f} | | | |\n")
with open(f"{tables}/whisper-sums.md", "w") as t:
    t.write("| whisper (rc.10) | attention | four buffers, stock MiB | `best` MiB | best / stock | largest graph, stock MiB | `best` MiB |\n"
            "|---|---|---:|---:|---:|---:|---:|\n")
    order = ["tiny", "base", "small", "large-v3"]
    configs = sorted({re.sub(r"-(conv|encode|cross|decode)$", "", n) for n in stock if n.startswith("whisper-rn-0.4.0-rc.10-")},
                     key=lambda c: (c.endswith("flash"), next(i for i, size in enumerate(order) if f"-{size}-" in c)))
    for config in configs:
        names = [n for n in stock if n.startswith(config + "-")]
        m = re.match(r"^whisper-rn-[0-9.]+-rc\.\d+-(.+)-(attn|flash)$", config)
        s, b = sum(stock[n] for n in names), sum(best[n] for n in names)
        t.write(f"| {m.group(1)} | {m.group(2)} | {mib(s)} | {mib(b)} | {b / s:.3f} |"
                f" {mib(max(stock[n] for n in names))} | {mib(max(best[n] for n in names))} |\n")
EOF
CHECKED[llama-cpp]="1 2 3 4 5"
CHECKED[whisper-sums]="1 2 3 4 5 6 7"

log "zoo graphs"
zoo_bench "$WORK/zoo"
table zoo "1 2 3 4 5 6 7 8" <"$WORK/zoo/table.md"

# --- galloc's library against stock on the zoo (planning_bench), and which strategy reaches the bound
log "planning bench ($PLANNING_BENCH)"
"$PLANNING_BENCH" --repetitions $((CHECK ? 1 : 9)) >"$WORK/planning.txt"
awk '/^geometric means over/ { n = $4; what = ($5 == "zoo") ? "shipped zoo graphs" : "all"; next }
     what != "" && NF == 9 { printf "| %s (%s) | %s | %s | %s | %s |\n", what, n, $1, $3, $6, $9 }' \
    "$WORK/planning.txt" | { echo "| graphs | strategy | buffer / stock | reserve time / stock | alloc time / stock |"
                               echo "|---|---|---:|---:|---:|"; cat; } | table planning-means "1 2 3"

log "at_bound.py"
python3 "$HERE/at_bound.py" "$GALLOC" >"$WORK/at_bound.txt"
awk '/^[a-z]+:$/ { group = $1; next }
     { at[group, $1] = $6 " of " $8; ms[group, $1] = $11; if (!seen[$1]++) order[++n] = $1 }
     END { print "| strategy | captured graphs at the bound | zoo graphs | median plan ms, captured | zoo |"
           print "|---|---:|---:|---:|---:|"
           for (i = 1; i <= n; i++) { s = order[i]
               printf "| %s | %s | %s | %s | %s |\n", s, at["files:", s], at["zoo:", s], ms["files:", s], ms["zoo:", s] } }' \
    "$WORK/at_bound.txt" | table at-bound "1 2 3"

log "max_size_sweep.py"
python3 "$HERE/max_size_sweep.py" "$GALLOC" >"$WORK/max_size.txt"
awk '/geometric mean,/ { size = ($1 == 1024) ? "1 GiB" : $1 " MiB"; group = $5 " " $6
         printf "| %s | %s | %s | %s | %s | %s | %s |\n", size, group, $7, $8, $13, $9, $10 }' "$WORK/max_size.txt" \
    | { echo "| max size | graphs | \`ggml\` / bound | \`best\` / bound | \`best\` / bound, worst | chunks, \`ggml\` | chunks, \`best\` |"
        echo "|---|---|---:|---:|---:|---:|---:|"; cat; } | table max-size "1 2 3 4 5 6 7"

# --- MiniMalloc's challenging instances: the exact search, and best given the capacity
if [[ -d $MINIMALLOC_DIR ]]; then
    log "MiniMalloc's instances ($MINIMALLOC_DIR)"
    "$MINIMALLOC_BENCH" "$MINIMALLOC_DIR" >"$WORK/minimalloc.txt"
    for f in "$MINIMALLOC_DIR"/*.csv; do
        printf '%s ' "$(basename "$f")"
        "$GALLOC" plan "$f" --strategy best --capacity 1048576 --time-limit 60 --output "$WORK/solution.csv" --json \
            | python3 -c 'import json, sys; d = json.load(sys.stdin); print("yes" if d["fits"] else "no", "valid" if d["valid"] else "INVALID", "%.3f" % d["plan_seconds"])'
    done >"$WORK/best_capacity.txt"
    awk 'NR == FNR { best[$1] = $2 " | " $3 " | " $4; next }
         $1 ~ /\.csv$/ { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, best[$1] }' \
        "$WORK/best_capacity.txt" "$WORK/minimalloc.txt" \
        | { echo "| instance | buffers | peak | greedy | greedy over | exact search | fits | validator | seconds | \`best\` with the capacity fits | validator | seconds |"
            echo "|---|---:|---:|---:|---:|---:|---|---|---:|---|---|---:|"; cat; } | table minimalloc "1 2 3 4 5 6 7 8 10 11"
else
    log "skipped MiniMalloc's instances: no $MINIMALLOC_DIR (set MINIMALLOC_DIR)"
fi

# --- times only: stock and the drop-in by turns in one process
if [[ $CHECK == 0 ]]; then
    log "paired bench ($PAIRED_BENCH, 51 turns)"
    "$PAIRED_BENCH" 51 --files "$GRAPHS"/*.json.gz >"$WORK/paired.txt"
    awk '/^family/ { on = 1
                     print "| family | graphs | `ggml` reserve | `best` reserve | `ggml` alloc | `best` alloc | `best` alloc again | lone shared `best` / `best` |"
                     print "|---|---:|---:|---:|---:|---:|---:|---:|"; next }
         on && NF == 16 { printf "| %s | %s | %s %s | %s %s | %s %s | %s %s | %s %s | %s %s |\n",
                          $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $13, $14, $15, $16 }' "$WORK/paired.txt" \
        | table paired ""
fi
if [[ $WHISPER == 1 ]]; then
    log "whisper_share.sh base (minutes)"
    "$HERE/whisper_share.sh" "${WHISPER_CLIENT}_stock" "${WHISPER_CLIENT}_galloc" base "$WORK/whisper" >"$WORK/whisper.txt"
    awk '$1 == "attn" || $1 == "flash_attn" { attention = ($1 == "attn") ? "attn" : "flash"
             printf "| %s | held | %s | %s | **%s** |\n", attention, $3, $4, $5; row = ""; next }
         NF == 4 && $1 != "peak" { row = row (row == "" ? "" : " / ") $1; s = s (s == "" ? "" : " / ") $2
             b = b (b == "" ? "" : " / ") $3; sh = sh (sh == "" ? "" : " / ") $4
             if ($1 == "decode") { printf "| | %s | %s | %s | %s |\n", row, s, b, sh; row = s = b = sh = "" } }
         ' "$WORK/whisper.txt" \
        | { echo "| attention | what (MB) | stock | best | best, shared |"; echo "|---|---|---:|---:|---:|"; cat; } \
        | table whisper-base "1 2 3 4 5"
    awk '$1 == "peak" { print "| peak RSS of the process (MB) | " $4 " | " $5 " | " $6 " |" }' "$WORK/whisper.txt" \
        | { echo "| | stock | best | best, shared |"; echo "|---|---:|---:|---:|"; cat; } | table whisper-base-rss ""
fi

# --- print, or check
columns() {  # COLUMNS: the given columns of each table row on stdin, trimmed
    awk -F'|' -v cols="$1" 'BEGIN { n = split(cols, c, " ") }
        { line = ""; for (i = 1; i <= n; i++) { v = $(c[i] + 1); gsub(/^ +| +$/, "", v); line = line (i > 1 ? " | " : "") v }
          print line }'
}
page_table() {  # NAME: the table under <!-- report: NAME --> on the page
    awk -v marker="<!-- report: $1 -->" '$0 == marker { on = 1; next }
        on && /^\|/ { print; seen = 1; next } on && seen { exit } on && !/^ *$/ { exit }' "$PAGE"
}
if [[ $CHECK == 0 ]]; then
    stamp="Last run: $(date -u +%F), commit $(git -C "$ROOT" rev-parse --short HEAD), $(nproc) cores."
    for f in "$WORK"/tables/*.md; do
        name=$(basename "$f" .md)
        printf '%s\n\n<!-- report: %s -->\n' "$stamp" "$name"
        cat "$f"
        echo
    done
    exit 0
fi
failed=0 checked=0
for name in "${!CHECKED[@]}"; do
    [[ -n ${CHECKED[$name]} ]] || continue
    checked=$((checked + 1))
    if [[ -z $(page_table "$name") ]]; then
        echo "report.sh: $PAGE has no table under <!-- report: $name -->" >&2
        failed=1; continue
    fi
    if ! diff -u --label "page: $name" --label "build: $name" \
            <(page_table "$name" | columns "${CHECKED[$name]}") \
            <(columns "${CHECKED[$name]}" <"$WORK/tables/$name.md") >"$WORK/$name.diff"; then
        cat "$WORK/$name.diff"
        failed=1
    fi
done
if [[ $failed == 1 ]]; then
    echo "report.sh --check: the page's sizes differ from what $BUILD gives (diff above, - page, + build)." >&2
    echo "If the change is meant, run bench/report.sh $BUILD and paste its tables, with their" >&2
    echo "\"Last run\" line, into $PAGE; otherwise the build has changed what galloc places." >&2
    exit 1
fi
echo "report.sh --check: the sizes in $checked tables match $PAGE" >&2
