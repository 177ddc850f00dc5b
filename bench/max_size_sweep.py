#!/usr/bin/env python3
"""Every zoo graph under a device's max buffer size (32 MiB, 256 MiB, 1 GiB): the compute
buffer of galloc's `ggml` strategy (stock ggml-alloc's placement, chunks and all) and of
`best`, against the live lower bound, and the chunks each needs.

usage: bench/max_size_sweep.py [build/bin/galloc]
"""
import json
import math
import os
import subprocess
import sys
import tempfile

GALLOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "bin", "galloc")
MIB = 1 << 20


def run(*args):
    return subprocess.run([GALLOC, *args], check=True, capture_output=True, text=True).stdout


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


names = [line.split()[0] for line in run("zoo", "list").splitlines() if line.strip()]
with tempfile.TemporaryDirectory() as work:
    print(f"{'max size':>9} {'graph':<28} {'bound MiB':>10} {'ggml/bound':>10} {'best/bound':>10} {'chunks ggml':>11} {'best':>5}")
    for max_mib in (32, 256, 1024):
        ratios = {"ggml": [], "best": []}
        for name in names:
            path = os.path.join(work, f"{name}.json")
            run("zoo", name, "-o", path)
            with open(path) as f:
                graph = json.load(f)
            for buffer_type in graph["buffer_types"]:
                buffer_type["max_size"] = max_mib * MIB
            with open(path, "w") as f:
                json.dump(graph, f)
            plans = {s: json.loads(run("plan", path, "--strategy", s, "--json")) for s in ("ggml", "best")}
            bound = plans["best"]["lower_bound_bytes"]
            for s, plan in plans.items():
                ratios[s].append(plan["peak_bytes"] / bound)
            chunks = {s: sum(len(b["chunks"]) for b in plan["buffers"]) for s, plan in plans.items()}
            print(f"{max_mib:>5} MiB {name:<28} {bound / MIB:>10.1f} {ratios['ggml'][-1]:>10.4f} "
                  f"{ratios['best'][-1]:>10.4f} {chunks['ggml']:>11} {chunks['best']:>5}")
        print(f"{max_mib:>5} MiB {'geometric mean':<28} {'':>10} {geomean(ratios['ggml']):>10.4f} "
              f"{geomean(ratios['best']):>10.4f}   worst best/bound {max(ratios['best']):.4f}")
