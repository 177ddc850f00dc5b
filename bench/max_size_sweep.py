#!/usr/bin/env python3
"""Every zoo graph and every graph captured in bench/graphs under a device's max buffer size
(32 MiB, 256 MiB, 1 GiB): the compute buffer of galloc's `ggml` strategy (stock ggml-alloc's
placement, chunks and all) and of `best`, against the live lower bound, and the chunks each
needs.

usage: bench/max_size_sweep.py [build/bin/galloc]
"""
import glob
import gzip
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


HERE = os.path.dirname(os.path.abspath(__file__))
zoo_names = [line.split()[0] for line in run("zoo", "list").splitlines() if line.strip() and not line[0].isspace()]
captured = sorted(glob.glob(os.path.join(HERE, "graphs", "*.json.gz")))


def load(graph, work):
    """The graph file of a zoo name or a captured file, as parsed JSON."""
    if graph in zoo_names:
        path = os.path.join(work, "zoo.json")
        run("zoo", graph, "-o", path)
        with open(path) as f:
            return json.load(f)
    with gzip.open(graph, "rt") as f:
        return json.load(f)


with tempfile.TemporaryDirectory() as work:
    print(f"{'max size':>9} {'graph':<52} {'bound MiB':>10} {'ggml/bound':>10} {'best/bound':>10} {'chunks ggml':>11} {'best':>5}")
    for max_mib in (32, 256, 1024):
        for group, graphs in (("zoo", zoo_names), ("captured", captured)):
            ratios = {"ggml": [], "best": []}
            chunk_totals = {"ggml": 0, "best": 0}
            for graph_name in graphs:
                graph = load(graph_name, work)
                for buffer_type in graph["buffer_types"]:
                    buffer_type["max_size"] = max_mib * MIB
                path = os.path.join(work, "graph.json")
                with open(path, "w") as f:
                    json.dump(graph, f)
                plans = {s: json.loads(run("plan", path, "--strategy", s, "--json")) for s in ("ggml", "best")}
                bound = plans["best"]["lower_bound_bytes"]
                for s, plan in plans.items():
                    ratios[s].append(plan["peak_bytes"] / bound)
                chunks = {s: sum(len(b["chunks"]) for b in plan["buffers"]) for s, plan in plans.items()}
                for s in chunks:
                    chunk_totals[s] += chunks[s]
                label = os.path.basename(graph_name).removesuffix(".json.gz")
                print(f"{max_mib:>5} MiB {label:<52} {bound / MIB:>10.1f} {ratios['ggml'][-1]:>10.4f} "
                      f"{ratios['best'][-1]:>10.4f} {chunks['ggml']:>11} {chunks['best']:>5}")
            print(f"{max_mib:>5} MiB {'geometric mean, ' + group + f' ({len(graphs)})':<52} {'':>10} "
                  f"{geomean(ratios['ggml']):>10.4f} {geomean(ratios['best']):>10.4f} {chunk_totals['ggml']:>11} "
                  f"{chunk_totals['best']:>5}   worst best/bound {max(ratios['best']):.4f}")
