"""``schedsearch search``: build a placement (or load a problem) and search it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from schedsearch._io import read_text
from schedsearch.cli._common import ProgressPrinter, add_solver_arguments, print_result, write_outputs
from schedsearch.placements import bidirectional, vshape
from schedsearch.problem import Problem

#: placement name -> builder(num_devices, num_microbatches, forward=, backward=, memory=)
PLACEMENTS: dict[str, Callable[..., Problem]] = {
    "vshape": vshape,
    "bidirectional": bidirectional,
}

#: strategy name -> "module:function" of the search, imported when used; every one takes the
#: common options (SearchOptions) as keywords
STRATEGIES: dict[str, str] = {
    "solve": "schedsearch.search.solve:solve",
    "optimal": "schedsearch.search.optimal:optimal",
    "repetend": "schedsearch.search.repetend:repetend",
}


def _search(name: str, problem: Problem, args: argparse.Namespace, progress: Callable | None):
    """Run strategy ``name`` on ``problem`` with the command line's common options."""
    import importlib

    module, attr = STRATEGIES[name].split(":")
    strategy = getattr(importlib.import_module(module), attr)
    return strategy(problem, backend=args.backend, time_limit_s=args.time_limit, seed=args.seed,
                    workers=args.workers, deterministic=args.deterministic, progress=progress)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help="search a schedule for a pipeline placement or a problem file",
        description="Build a placement (or read --problem FILE.json), search it, print the timeline and "
        "metrics, and write the schedule JSON and a Chrome/Perfetto trace.",
    )
    p.add_argument("--placement", choices=sorted(PLACEMENTS), default="vshape", help="placement (default: vshape)")
    p.add_argument("--problem", metavar="FILE", help="problem JSON (instead of --placement)")
    p.add_argument("--devices", type=int, default=4, help="number of devices (default: 4)")
    p.add_argument("--microbatches", type=int, default=8, help="number of micro-batches (default: 8)")
    p.add_argument("--memory", type=int, default=None, help="memory capacity per device (default: unbounded)")
    p.add_argument("--forward", type=int, default=1, help="forward duration per stage (default: 1)")
    p.add_argument("--backward", type=int, default=2, help="backward duration per stage (default: 2; 0 = inference)")
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="solve",
                   help="search strategy (default: solve, the portfolio that picks the engines)")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="write schedule JSON, Chrome trace, problem and result here (default: out; '' = write nothing)")
    add_solver_arguments(p)
    p.set_defaults(func=run)


def build_problem(args: argparse.Namespace) -> Problem:
    if args.problem:
        return Problem.from_json(read_text(args.problem, f"problem file {str(args.problem)!r}"))
    return PLACEMENTS[args.placement](
        args.devices,
        args.microbatches,
        forward=args.forward,
        backward=args.backward or None,
        memory=args.memory,
    )


def run(args: argparse.Namespace) -> int:
    problem = build_problem(args)
    print(f"problem: {problem}")
    if args.quiet:
        result = _search(args.strategy, problem, args, None)
    else:
        with ProgressPrinter() as printer:
            result = _search(args.strategy, problem, args, printer)
    print_result(problem, result)
    stem = problem.name or "problem"
    for path in write_outputs(problem, result, args.out or None, stem):
        print(f"wrote {path}")
    return 0 if result.status.has_schedule or result.status.value == "INFEASIBLE" else 1
