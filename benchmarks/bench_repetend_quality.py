"""Repetend search against the exact time-optimal search.

V-shape (1F1B placement), bidirectional (two opposite V's) and interleaved
(2 chunks per device) on 4 devices, F = 1, B = 2 per stage, memory 4, with
N in {8, 16, 32}: the repetend's unrolled makespan and search time beside
the makespan, proven bound and time of ``optimal()`` (``--optimal-limit``
seconds each). Reference optima at N = 16: V 57, bidirectional 52,
interleaved 167.

Target: within 2% of the optimum everywhere, equal on V, at a small
fraction of the optimal search's time.

Run: ``python -m benchmarks bench_repetend_quality`` (or
``python benchmarks/bench_repetend_quality.py [--optimal-limit 300] [--sizes 8 16 32]``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, write_results
from schedsearch.placements import bidirectional, interleaved, vshape
from schedsearch.search import optimal
from schedsearch.search.repetend_search import repetend
from schedsearch.validate import validate

PLACEMENTS = {
    "V": lambda n: vshape(4, n, memory=4),
    "bidirectional": lambda n: bidirectional(4, n, memory=4),
    "interleaved": lambda n: interleaved(4, 2, n, memory=4),
}
#: reference optima (N = 16)
REFERENCE_16 = {"V": 57, "bidirectional": 52, "interleaved": 167}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--optimal-limit", type=float, default=300.0, help="time limit of each optimal() run")
    parser.add_argument("--repetend-limit", type=float, default=120.0)
    parser.add_argument("--placements", nargs="*", default=list(PLACEMENTS), choices=list(PLACEMENTS))
    args = parser.parse_args(argv)

    rows = []
    for name in args.placements:
        for n in args.sizes:
            problem = PLACEMENTS[name](n)
            t0 = time.perf_counter()
            rep = repetend(problem, time_limit_s=args.repetend_limit)
            rep_s = time.perf_counter() - t0
            assert validate(problem, rep.schedule) == ()
            t0 = time.perf_counter()
            opt = optimal(problem, time_limit_s=args.optimal_limit, warm_start=None)
            opt_s = time.perf_counter() - t0
            best = opt.objective
            row = {
                "placement": name,
                "N": n,
                "repetend": rep.objective,
                "period": f"{rep.period}/{rep.fold}" if rep.fold > 1 else rep.period,
                "repetend_s": rep_s,
                "optimal": best,
                "optimal_status": opt.status.value,
                "optimal_bound": opt.lower_bound,
                "optimal_s": opt_s,
                "reference": REFERENCE_16.get(name) if n == 16 else None,
                "excess_%": None if best is None else 100.0 * (rep.objective - best) / best,
                "over_bound_%": None if opt.lower_bound is None else 100.0 * (rep.objective - opt.lower_bound) / opt.lower_bound,
                "time_ratio": rep_s / opt_s if opt_s else None,
            }
            rows.append(row)
            print(f"  {name} N={n}: repetend {rep.objective} in {rep_s:.1f} s; optimal {best} "
                  f"({opt.status.value}, bound {opt.lower_bound}) in {opt_s:.1f} s", flush=True)
    print("\nRepetend vs optimal (CP-SAT, 2 workers; excess_% = (repetend - optimal) / optimal, "
          "negative when optimal() did not finish)")
    print_table(rows)
    write_results("repetend_quality", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
