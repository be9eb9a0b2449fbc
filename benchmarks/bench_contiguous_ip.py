"""The contiguous IP on the three largest dnn-partitioning workloads, DP beside it.

ResNet50 operator-graph training, bert_l-12 inference and bert_L-12
training (more than about 1,200 operators), on each workload's own devices
and memory limit. Per workload: the DP optimum and its time, then the
contiguous IP *before* (``strengthen=False``: the plain slot model with the
DPL hint) and *after* (``strengthen=True``: block bounds in the unit rows
and on ``T``, ``T`` capped at the DPL incumbent, units kept out of slots
their ancestors or descendants cannot fit around), measured in the same
run, HiGHS on one thread: value (recomputed from the split), proven lower
bound, gap, status, wall seconds. Goal: the IP proves the DP optimum (or
comes within 2%) within 600 s.

Run: ``python -m benchmarks contiguous_ip`` (``--time-limit`` seconds per
IP, default 600; ``--before-limit`` for the plain model, default the same;
``--quick``: ResNet50 training only, 120 s).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks._common import print_table, write_results

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dnn-partitioning" / "throughput-inputs"
WORKLOADS = [
    "OperatorGraphs/resnet50_training",
    "OperatorGraphs/bert_l-12_inference",
    "OperatorGraphs/bert_L-12_training",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per strengthened IP (default: 600)")
    parser.add_argument("--before-limit", type=float, default=None, help="seconds per plain IP (default: same)")
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--skip-before", action="store_true", help="run the strengthened IP only")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found")
        return 0
    from schedsearch.loaders.opgraph import read_dnn_partitioning
    from schedsearch.partition import contiguous_ip, partition_dp

    names = WORKLOADS
    limit = args.time_limit
    before_limit = args.before_limit if args.before_limit is not None else limit
    if args.quick:
        names, limit, before_limit = WORKLOADS[:1], 120.0, 120.0
    wanted = [w for w in args.only.split(",") if w]
    if wanted:
        names = [n for n in names if any(w in n for w in wanted)]
    rows = []
    for name in names:
        w = read_dnn_partitioning(DATA / f"{name}.json")
        t0 = time.perf_counter()
        dp = partition_dp(w)
        dp_s = time.perf_counter() - t0
        row = {"workload": name, "operators": w.graph.num_operators, "dp": round(dp.max_load, 4), "dp_s": round(dp_s, 2)}
        sides = [("after", True, limit)]
        if not args.skip_before:
            sides.insert(0, ("before", False, before_limit))
        for side, strengthen, lim in sides:
            res = contiguous_ip(w, strengthen=strengthen, time_limit_s=lim, threads=1, seed=0)
            row[f"{side}_value"] = None if res.value is None else round(res.value, 4)
            row[f"{side}_bound"] = None if res.lower_bound is None else round(res.lower_bound, 4)
            row[f"{side}_gap"] = None if res.gap is None else round(res.gap, 4)
            row[f"{side}_status"] = res.status.value
            row[f"{side}_s"] = round(res.wall_time_s, 1)
            row[f"{side}_limit_s"] = lim
            if res.lower_bound is not None and res.lower_bound > dp.max_load * (1 + 1e-6) + 1e-9:
                row[f"{side}_WRONG_BOUND"] = True  # above the DP optimum: a wrong proof
        rows.append(row)
        print_table([row], list(row))
    print("\ncontiguous IP before (plain) and after (strengthened), DP optimum beside")
    print_table(rows)
    write_results("contiguous_ip_quick" if args.quick else "contiguous_ip", rows, time_limit_s=limit,
                  before_limit_s=before_limit)
    return 1 if any(k.endswith("WRONG_BOUND") for r in rows for k in r) else 0


if __name__ == "__main__":
    raise SystemExit(main())
