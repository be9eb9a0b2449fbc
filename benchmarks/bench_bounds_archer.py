"""Archer et al.'s max-throughput bounds: lower bound / best partition.

For k in {2, 4, 8, 16}, on the real inference workloads (every operator
allowed on the accelerators, no CPUs) and on seeded random DAGs of 50-200
nodes, prints per instance the ratio lower bound / best partition known for
the simple bound, the three-superblock MIP, the bottleneck-guess MIP and
the exact MIP (each MIP time-limited; a MIP that does not finish counts
with its dual bound), and the geometric means per k beside Archer et al.'s
(production models: exact 0.990 at k=2, 0.945 at k=16, 0.787 at k=64;
simple 0.834, 0.460, 0.440; bottleneck 0.577 at k=16).

The best partition is the better of SliceGraph / BRKGA and the exact
MIP's incumbent.

Run: ``python -m benchmarks bounds_archer`` or this module with
``--quick`` (k in {2, 4}, two random graphs, short limits).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from pathlib import Path

import attrs

from benchmarks._common import print_table, write_results
from schedsearch.loaders.opgraph import read_dnn_partitioning
from schedsearch.partition.opgraph import Operator, OperatorGraph
from schedsearch.partition.throughput_ip import (
    bottleneck_guess_mip,
    exact_mip,
    simple_bound,
    slicegraph_incumbent,
    three_superblock_mip,
)

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dnn-partitioning" / "throughput-inputs"
REAL = [
    "LayerGraphs/bert24_inference",
    "LayerGraphs/gnmt_inference",
    "LayerGraphs/resnet50_inference",
    "OperatorGraphs/bert_l-3_inference",
    "OperatorGraphs/bert_l-6_inference",
]
PAPER = {2: {"exact": 0.990, "simple": 0.834}, 16: {"exact": 0.945, "simple": 0.460, "bottleneck-guess": 0.577}}


def random_dag(n: int, seed: int) -> OperatorGraph:
    """A layered-looking DAG: node i takes 1-3 inputs among the previous 8 nodes."""
    rng = random.Random(seed)
    ops = []
    edges = set()
    for i in range(n):
        work = rng.lognormvariate(0.0, 0.8)
        ops.append(Operator(id=i, name=f"n{i}", accel_latency=round(work, 4), cpu_latency=round(10 * work, 4),
                            output_cost=round(rng.uniform(0.0, 0.6), 4)))
        if i:
            for _ in range(rng.randint(1, 3)):
                edges.add((rng.randint(max(0, i - 8), i - 1), i))
    return OperatorGraph(operators=ops, edges=sorted(edges), name=f"random{n}-s{seed}")


def accel_only(graph: OperatorGraph) -> OperatorGraph:
    return OperatorGraph(operators=[attrs.evolve(o, supported_on_accel=True) for o in graph.operators],
                         edges=graph.edges, name=graph.name)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="2,4,8,16")
    parser.add_argument("--random", type=int, default=6, help="number of random DAGs (default: 6)")
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per MIP (default: 20)")
    parser.add_argument("--solver", default="highs")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--real", default=",".join(REAL), help="comma-separated workloads ('' for none)")
    parser.add_argument("--name", default=None, help="results file name (default: bounds_archer)")
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    n_random = args.random
    limit = args.time_limit
    real = [w for w in args.real.split(",") if w]
    if args.quick:
        ks, n_random, limit, real = [2, 4], 2, 5.0, real[:1]
    graphs = []
    for w in real:
        path = DATA / f"{w}.json"
        if path.is_file():
            graphs.append(("real", accel_only(read_dnn_partitioning(path).graph)))
    rng = random.Random(2024)
    for s in range(n_random):
        graphs.append(("random", random_dag(rng.randint(50, 200), seed=s)))
    rows = []
    for kind, g in graphs:
        for k in ks:
            t0 = time.perf_counter()
            inc = slicegraph_incumbent(g, k, seed=0)
            t_sg = time.perf_counter() - t0
            ex = exact_mip(g, k, incumbent=inc, solver=args.solver, time_limit_s=limit)
            best = ex.best_value
            split = ex.best_split
            three = three_superblock_mip(g, k, incumbent=split, solver=args.solver, time_limit_s=limit)
            guess = bottleneck_guess_mip(g, k, incumbent=split, solver=args.solver,
                                         time_limit_s=max(1.0, limit / k * 2))
            simple = simple_bound(g, k)
            row = {
                "set": kind, "graph": g.name, "n": g.num_operators, "k": k, "best": best,
                "slicegraph_s": round(t_sg, 2),
                "simple": simple / best if best else None,
                "three-superblock": three.lower_bound / best if best else None,
                "bottleneck-guess": guess.lower_bound / best if best else None,
                "exact": ex.lower_bound / best if best else None,
                "exact_status": ex.status.value,
                "exact_s": round(ex.wall_time_s, 1), "guess_s": round(guess.wall_time_s, 1),
            }
            row["best_bound"] = max(row["simple"] or 0, row["three-superblock"] or 0, row["bottleneck-guess"] or 0,
                                    row["exact"] or 0)
            rows.append(row)
            print_table([row], list(row))
    methods = ["simple", "three-superblock", "bottleneck-guess", "exact", "best_bound"]
    summary = []
    for kind in ("real", "random"):
        for k in ks:
            sel = [r for r in rows if r["set"] == kind and r["k"] == k]
            if not sel:
                continue
            s = {"set": kind, "k": k, "instances": len(sel)}
            for m in methods:
                s[m] = geomean([r[m] for r in sel])
            for m in ("simple", "bottleneck-guess", "exact"):
                s[f"paper_{m}"] = PAPER.get(k, {}).get(m)
            summary.append(s)
    print("\ngeometric means of lower bound / best partition")
    print_table(summary, list(summary[0]) if summary else None)
    name = args.name or ("bounds_archer" if not args.quick else "bounds_archer_quick")
    write_results(name, rows, summary=summary,
                  time_limit_s=limit, solver=args.solver)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
