"""Repetend search cost against the number of micro-batches.

For Tessel's V and X (4 devices, memory 4) and the interleaved pipeline
(2 chunks, memory 4): the search time for N in 8 .. 1024 (it includes the
final unroll to N and its validation, the only parts that grow with N),
and, once the repetend is found, the time to unroll to 1024 micro-batches
(median of 5; target under 1 s) and to validate that schedule.

Run: ``python -m benchmarks bench_repetend_scaling`` (or
``python benchmarks/bench_repetend_scaling.py [--sizes 8 16 32 64 128 256 1024]``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, timed, write_results
from schedsearch.placements import interleaved, tessel_shape
from schedsearch.search.repetend_search import repetend
from schedsearch.validate import validate

PLACEMENTS = {
    "V": lambda n: tessel_shape("V", 4, n, memory=4),
    "X": lambda n: tessel_shape("X", 4, n, memory=4),
    "interleaved": lambda n: interleaved(4, 2, n, memory=4),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[8, 16, 32, 64, 128, 256, 1024])
    parser.add_argument("--placements", nargs="*", default=list(PLACEMENTS), choices=list(PLACEMENTS))
    parser.add_argument("--unroll", type=int, default=1024)
    args = parser.parse_args(argv)

    rows, unroll_rows = [], []
    for name in args.placements:
        last = None
        for n in args.sizes:
            problem = PLACEMENTS[name](n)
            t0 = time.perf_counter()
            result = repetend(problem, time_limit_s=120)
            rows.append({"placement": name, "N": n, "search_s": time.perf_counter() - t0, "period": result.period,
                         "fold": result.fold, "makespan": result.objective,
                         "per_microbatch": result.objective / n if result.objective else None})
            last = result
            print(f"  {name} N={n}: {rows[-1]['search_s']:.2f} s, makespan {result.objective}", flush=True)
        periodic = last.periodic
        schedule, unroll_s, all_s = timed(lambda: periodic.unroll(args.unroll), repeats=5)
        t0 = time.perf_counter()
        violations = validate(periodic.problem_for(args.unroll), schedule)
        validate_s = time.perf_counter() - t0
        unroll_rows.append({"placement": name, "n": args.unroll, "tasks": len(schedule.tasks), "unroll_s": unroll_s,
                            "unroll_s_all": all_s, "target_s": 1.0, "ok": unroll_s < 1.0, "valid": not violations,
                            "validate_s": validate_s, "makespan": schedule.makespan})
    print("\nSearch time against N (includes the final unroll to N and its validation)")
    print_table(rows)
    print(f"\nUnrolling a found repetend to {args.unroll} micro-batches (median of 5)")
    print_table([{k: v for k, v in r.items() if k != "unroll_s_all"} for r in unroll_rows])
    write_results("repetend_scaling", rows, unroll=unroll_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
