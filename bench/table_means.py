#!/usr/bin/env python3
"""Geometric means of a zoo_bench.cmake table (galloc_captured_bench, galloc_zoo_ggml_bench).

usage: bench/table_means.py TABLE.md

Groups the rows by program: the graph name up to the model (llama-rn-0.12.9,
whisper-rn-0.4.0-rc.10, ...), or "zoo" for names without a version. Per group and over all
rows it prints the geometric mean and the worst of galloc over stock: the compute buffer of
`best`, the reserve time of `ggml` and `best`, the alloc_graph time of `best`; and how many
rows `best` is at the live lower bound. Rows where stock took under 10 us are left out of the
time means (a microsecond of noise is 10% there).
"""
import math
import re
import sys


def groups_of(name):
    match = re.match(r"^([a-z]+-rn-[0-9][0-9a-z.\-]*?\.[0-9]+(?:-rc\.[0-9]+)?)-", name)
    return match.group(1) if match else "zoo"


def main(path):
    with open(path, encoding="utf-8") as table:
        lines = [line for line in table if line.startswith("| ") and not line.startswith("| graph")]
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0]
        stock, best, bound = float(cells[3]), float(cells[5]), float(cells[2])
        reserve = [float(c) for c in cells[8:11]]
        alloc = [float(c) for c in cells[11:14]]
        row = {"buffer": best / stock, "at_bound": best <= bound}
        if reserve[0] >= 10:
            row["reserve_ggml"] = reserve[1] / reserve[0]
            row["reserve_best"] = reserve[2] / reserve[0]
            row["alloc_best"] = alloc[2] / alloc[0]
        for key in (groups_of(name), "all"):
            rows.setdefault(key, []).append(row)

    def mean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")

    print(f"{'graphs':24} {'n':>4} {'best buffer':>12} {'worst':>6} {'at bound':>9}"
          f" {'ggml reserve':>13} {'best reserve':>13} {'worst':>6} {'best alloc':>11} {'worst':>6}")
    for key, group in rows.items():
        timed = [r for r in group if "reserve_best" in r]
        print(f"{key:24} {len(group):4} {mean([r['buffer'] for r in group]):12.3f}"
              f" {max(r['buffer'] for r in group):6.3f} {sum(r['at_bound'] for r in group):4}/{len(group):<4}"
              f" {mean([r['reserve_ggml'] for r in timed]):13.2f} {mean([r['reserve_best'] for r in timed]):13.2f}"
              f" {max((r['reserve_best'] for r in timed), default=float('nan')):6.2f}"
              f" {mean([r['alloc_best'] for r in timed]):11.2f}"
              f" {max((r['alloc_best'] for r in timed), default=float('nan')):6.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
