"""Every partitioner on every dnn-partitioning throughput workload, same cost.

Max-load (time per sample, the cost of :mod:`schedsearch.partition.cost`) and
wall time of: the exact contiguous DP (reference point), module splitting
(single- and multi-channel DP across modules), SliceGraph with BRKGA, DPL,
and the baselines MET, Greedy, HEFT, simulated annealing and the biased
(1+1) EA. ``ratio`` columns are max-load / DP optimum (1 = optimal;
splits that break the memory limit or the pipeline order are marked).
Randomised methods use seed 0 and fixed budgets, so runs are repeatable.
Run: ``python -m benchmarks partition_methods`` (``--quick``: four workloads).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks._common import print_table, write_results

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "dnn-partitioning" / "throughput-inputs"

WORKLOADS = [
    "LayerGraphs/bert24_training", "LayerGraphs/gnmt_inference", "LayerGraphs/gnmt_training",
    "LayerGraphs/inceptionv3_inference", "LayerGraphs/inceptionv3_training",
    "LayerGraphs/resnet50_inference", "LayerGraphs/resnet50_training",
    "OperatorGraphs/bert_l-3_inference", "OperatorGraphs/bert_l-3_training",
    "OperatorGraphs/bert_l-6_inference", "OperatorGraphs/bert_l-12_inference",
    "OperatorGraphs/bert_L-12_training", "OperatorGraphs/resnet50_training",
]
QUICK = ["LayerGraphs/bert24_training", "LayerGraphs/gnmt_inference", "LayerGraphs/resnet50_training",
         "OperatorGraphs/bert_l-3_inference"]


def methods(quick: bool):
    """(column, method name, options)."""
    sa = 5_000 if quick else 20_000
    ea = 2_000 if quick else 5_000
    return [
        ("dp", "dp", {}),
        ("modules1", "modules", {"channels": 1}),
        ("modules2", "modules", {"channels": 2}),
        ("slicegraph", "slicegraph", {"search": "brkga", "population": 20, "generations": 10 if quick else 25}),
        ("dpl", "dpl", {}),
        ("greedy", "greedy", {}),
        ("met", "met", {}),
        ("heft", "heft", {}),
        ("annealing", "annealing", {"iterations": sa, "seed": 0}),
        ("evolutionary", "evolutionary", {"generations": ea, "seed": 0}),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="four workloads, smaller budgets")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of workload names")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found")
        return 0
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import partition

    names = QUICK if args.quick else WORKLOADS
    if args.only:
        names = [n for n in names if any(o in n for o in args.only)]
    rows, time_rows = [], []
    for name in names:
        w = read_dnn_partitioning(DATA / f"{name}.json")
        row = {"workload": name}
        trow = {"workload": name}
        best = None
        for column, method, options in methods(args.quick):
            t0 = time.perf_counter()
            result = partition(w, method=method, **options)
            elapsed = time.perf_counter() - t0
            if column == "dp":
                best = result.max_load
                row["dp"] = round(best, 4)
            else:
                mark = ""
                if result.cost.violations:
                    mark = "!"  # infeasible: memory or unsupported operators
                elif result.acyclic is False:
                    mark = "~"  # not a pipeline order (stages feed each other both ways)
                row[column] = f"{result.max_load / best:.3f}{mark}"
            trow[column] = round(elapsed, 2)
        rows.append(row)
        time_rows.append(trow)
        print_table([row])
    print("\nmax-load / DP optimum ('!' infeasible, '~' not acyclic); dp column: the optimum")
    print_table(rows)
    print("\nwall time (s)")
    print_table(time_rows)
    write_results("partition_methods_quick" if args.quick else "partition_methods", rows,
                  times=time_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
