#!/usr/bin/env python3
"""How often each strategy reaches the live lower bound, over graph files and zoo graphs.

usage: bench/at_bound.py [GALLOC] [GRAPH...]

Runs `galloc compare --json` (GALLOC, default build/bin/galloc) on each graph (default: every
bench/graphs/*.json.gz and every zoo graph) and prints, per strategy, on how many graphs its
placement is exactly the lower bound, and the median of its planning time (lifetimes included).
This is what orders `best`'s candidates (src/placement_internal.hpp, best_order).
"""
import glob
import json
import os
import statistics
import subprocess
import sys


def main(argv):
    galloc = argv[1] if len(argv) > 1 else "build/bin/galloc"
    graphs = argv[2:]
    if not graphs:
        graphs = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "graphs", "*.json.gz")))
        listing = subprocess.run([galloc, "zoo", "list"], capture_output=True, text=True, check=True).stdout
        graphs += ["zoo:" + line.split()[0] for line in listing.splitlines() if line[:1].isalpha()]
    per_group = {}
    for graph in graphs:
        group = "zoo" if graph.startswith("zoo:") else "files"
        out = subprocess.run([galloc, "compare", "--json", graph], capture_output=True, text=True, check=True).stdout
        for row in json.loads(out):
            entry = per_group.setdefault(group, {}).setdefault(row["strategy"], {"at": 0, "n": 0, "ms": []})
            entry["n"] += 1
            entry["at"] += row["peak_bytes"] == row["lower_bound_bytes"]
            entry["ms"].append(row["plan_seconds"] * 1e3)
    for group, strategies in per_group.items():
        print(f"{group}:")
        for name, entry in strategies.items():
            print(f"  {name:34s} at the bound on {entry['at']:3d} of {entry['n']:3d}"
                  f"   median plan {statistics.median(entry['ms']):.3f} ms")


if __name__ == "__main__":
    main(sys.argv)
