"""Time-optimal search: time to a proven optimum, both backends.

V-shape (1F1B placement), 4 devices, F=1, B=2, memory 4 and unbounded,
N in {4, 8, 16, 32}; bidirectional placement (even micro-batches down, odd
up), 4 devices, memory 4, N = 16 (CP-SAT) and 8 (both).

Targets on 2 cores: CP-SAT proves N=16 (57) and N=32 (105) in under 3 s
each; Z3 proves N=16 in under 30 s; CP-SAT proves bidirectional N=16 (52)
in under 5 s. Each time is the median of ``--repeats`` runs.
Run: ``python -m benchmarks optimal`` (or this module with ``--quick``).
"""

from __future__ import annotations

import argparse

from benchmarks._common import print_table, timed, write_results
from schedsearch.placements import bidirectional, vshape
from schedsearch.search import optimal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="N in {4, 8} only, one repeat")
    args = parser.parse_args(argv)
    sizes = [4, 8] if args.quick else [4, 8, 16, 32]
    repeats = 1 if args.quick else args.repeats
    cases = []
    for n in sizes:
        for mem in (None, 4):
            for backend in ("cpsat", "z3"):
                if backend == "z3" and n > 16:
                    continue
                cases.append(("vshape", n, mem, backend))
    for backend in ("cpsat", "z3"):
        cases.append(("bidirectional", 8, 4, backend))
    if not args.quick:
        cases.append(("bidirectional", 16, 4, "cpsat"))
    rows = []
    for placement, n, mem, backend in cases:
        build = vshape if placement == "vshape" else bidirectional
        problem = build(4, n, forward=1, backward=2, memory=mem)
        result, median, times = timed(
            lambda: optimal(problem, backend=backend, time_limit_s=args.time_limit, workers=2, seed=0), repeats
        )
        rows.append({
            "placement": placement,
            "N": n,
            "memory": "inf" if mem is None else mem,
            "backend": backend,
            "status": result.status.value,
            "makespan": result.objective,
            "bound": result.lower_bound,
            "median_s": round(median, 3),
            "runs_s": [round(t, 3) for t in times],
        })
        print_table([rows[-1]], list(rows[-1])[:-1])
    print()
    print_table(rows, [c for c in rows[0] if c != "runs_s"])
    write_results("optimal", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
