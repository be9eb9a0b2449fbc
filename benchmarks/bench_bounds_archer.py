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

``--certified`` (``python -m benchmarks.bench_bounds_archer --certified``)
compares, per instance at k = 16 (``--ks``) and 60 s (``--time-limit``),
the same total budget spent two ways, interleaved instance by instance:
*before*, SliceGraph then the plain exact MIP for the time left (its dual
bound / the better of the two partitions); *after*,
:func:`~schedsearch.partition.throughput_ip.certified_bound` (block
bounds, the exact DP where the DAG has few ideals, the sub-poset DP,
DP-over-sampled-ideals incumbents, the strengthened MIP). Every bound is
checked against the other side's best partition (a bound above a known
partition would be a wrong proof). Results: ``bounds_archer_certified``
(``--quick``: two real and two random graphs, 20 s).
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
    certified_bound,
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
    parser.add_argument("--certified", action="store_true",
                        help="before/after at k=16, 60 s per instance and side (see the module docstring)")
    args = parser.parse_args(argv)
    if args.certified:
        return certified_main(args)
    ks = [int(k) for k in args.ks.split(",")]
    n_random = args.random
    limit = args.time_limit
    real = [w for w in args.real.split(",") if w]
    if args.quick:
        ks, n_random, limit, real = [2, 4], 2, 5.0, real[:1]
    graphs = _graphs(real, n_random)
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


def _graphs(real: list[str], n_random: int) -> list[tuple[str, OperatorGraph]]:
    graphs = []
    for w in real:
        path = DATA / f"{w}.json"
        if path.is_file():
            graphs.append(("real", accel_only(read_dnn_partitioning(path).graph)))
    rng = random.Random(2024)
    for s in range(n_random):
        graphs.append(("random", random_dag(rng.randint(50, 200), seed=s)))
    return graphs


def certified_main(args: argparse.Namespace) -> int:
    """Before (SliceGraph + plain exact MIP) and after (certified_bound), same budget per instance."""
    from schedsearch.partition.cost import evaluate_split
    from schedsearch.partition.opgraph import DeviceLimits

    ks = [int(k) for k in args.ks.split(",")] if args.ks != "2,4,8,16" else [16]
    limit = args.time_limit if args.time_limit != 20.0 else 60.0
    real = [w for w in args.real.split(",") if w]
    n_random = args.random
    if args.quick:
        real, n_random, limit = [REAL[0], REAL[3]], 2, 20.0
    graphs = _graphs(real, n_random)
    rows, wrong = [], []
    for kind, g in graphs:
        for k in ks:
            devices = DeviceLimits(num_accelerators=k, num_cpus=0)
            t0 = time.perf_counter()
            inc = slicegraph_incumbent(g, k, seed=0)
            left = max(1.0, limit - (time.perf_counter() - t0))
            before = exact_mip(g, k, incumbent=inc, solver=args.solver, time_limit_s=left, threads=1)
            t_before = time.perf_counter() - t0
            after = certified_bound(g, k, time_limit_s=limit, solver=args.solver, threads=1)
            # independent re-evaluation of both partitions, and the cross check of every bound
            vb = evaluate_split(g, before.best_split, devices).max_load if before.best_split else None
            va = evaluate_split(g, after.best_split, devices).max_load if after.best_split else None
            best_known = min(v for v in (vb, va) if v is not None)
            for side, b in (("before", before), ("after", after)):
                if b.lower_bound > best_known * (1 + 1e-6) + 1e-9:
                    wrong.append((g.name, k, side, b.lower_bound, best_known))
            row = {
                "set": kind, "graph": g.name, "n": g.num_operators, "k": k,
                "before_lower": before.lower_bound, "before_best": vb,
                "before": before.lower_bound / vb if vb else None, "before_s": round(t_before, 1),
                "after_lower": after.lower_bound, "after_best": va,
                "after": after.lower_bound / va if va else None, "after_s": round(after.wall_time_s, 1),
                "after_status": after.status.value,
                "lower_from": after.stats["sources"]["lower"], "best_from": after.stats["sources"]["best"],
            }
            rows.append(row)
            print_table([row], list(row))
    summary = []
    for kind in ("real", "random"):
        for k in ks:
            sel = [r for r in rows if r["set"] == kind and r["k"] == k]
            if sel:
                summary.append({"set": kind, "k": k, "instances": len(sel),
                                "before": geomean([r["before"] for r in sel]),
                                "after": geomean([r["after"] for r in sel]),
                                "paper_exact": PAPER.get(k, {}).get("exact")})
    print(f"\ngeometric means of lower bound / best partition, {limit:g} s per instance and side")
    print_table(summary, list(summary[0]) if summary else None)
    if wrong:
        print("BOUND ABOVE A KNOWN PARTITION:", wrong)
    name = args.name or ("bounds_archer_certified" if not args.quick else "bounds_archer_certified_quick")
    write_results(name, rows, summary=summary, time_limit_s=limit, solver=args.solver, wrong_bounds=wrong)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
