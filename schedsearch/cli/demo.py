"""``schedsearch demo``: a real schedule search, shown end to end."""

from __future__ import annotations

import argparse

from schedsearch.bounds import analytic_lower_bound
from schedsearch.cli._common import ProgressPrinter, print_result
from schedsearch.placements import vshape
from schedsearch.schedule import metrics
from schedsearch.search import optimal


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="search a 1F1B-placement schedule with both backends and show it",
        description="Builds a V-shape (1F1B placement) problem, searches it time-optimally with CP-SAT and "
        "Z3 under a memory limit, and prints the schedule, its metrics and the proof.",
    )
    p.add_argument("--devices", type=int, default=4, metavar="N",
                   help="devices, one pipeline stage each (default: 4)")
    p.add_argument("--microbatches", type=int, default=8, metavar="N", help="micro-batches (default: 8)")
    p.add_argument("--memory", type=int, default=4, metavar="ACTIVATIONS",
                   help="activation capacity per device: a forward holds one until its backward (default: 4)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS",
                   help="wall-clock limit of each backend's search (default: 60)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    d, n = args.devices, args.microbatches
    problem = vshape(d, n, forward=1, backward=2, memory=args.memory)
    print(f"problem: {problem}")
    print("  forward 1 unit (+1 activation), backward 2 units (-1), stage i on device d{i}")
    bound = analytic_lower_bound(problem)
    print(f"analytic lower bound: {bound.value} (from {bound.tight_part})")
    print(f"1F1B closed form (m+p-1)(F+B) = {(n + d - 1) * 3}")
    with ProgressPrinter() as printer:
        result = optimal(problem, backend="cpsat", time_limit_s=args.time_limit, progress=printer)
    print("\n== CP-SAT")
    print_result(problem, result)
    z3_result = optimal(problem, backend="z3", time_limit_s=args.time_limit)
    print("\n== Z3")
    print(f"result: {z3_result}")
    if z3_result.schedule is not None:
        print(f"metrics: {metrics(problem, z3_result.schedule)}")
    agree = result.objective == z3_result.objective
    print(f"\nboth backends {'agree' if agree else 'DISAGREE'}: makespan {result.objective} vs {z3_result.objective}")
    print("every schedule shown passed the independent validator")
    return 0 if agree and result.status.has_schedule else 1
