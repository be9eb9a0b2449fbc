"""``schedsearch search``: build a placement (or load a problem) and search it.

Every placement the library builds is a ``--placement``; durations take one
value for every stage or a per-stage list (``--forward 2,2,3,3`` on 4 stages;
a placement has one stage per device, two with ``dualpipev``, and
``--chunks`` per device with ``interleaved`` and ``zb-v``; ``tessel-m``,
``-nn`` and ``-k`` take one value), and
``--memory`` is the activation capacity per device (a forward holds one
activation until its backward frees it). A flag the placement does not take
is an error naming it.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable

from schedsearch.cli._common import (
    ProgressPrinter,
    add_output_arguments,
    add_solver_arguments,
    no_plan_reason,
    print_result,
    write_plan,
)
from schedsearch.cli._inputs import InputKind, open_input
from schedsearch.errors import InvalidOptionsError, InvalidProblemError
from schedsearch.handcrafted.families import SCHEDULES
from schedsearch.placements import (
    bidirectional,
    tessel_k,
    tessel_m,
    tessel_nn,
    tessel_v,
    tessel_x,
    vshape,
)
from schedsearch.problem import Problem


def placements() -> dict[str, Callable[..., Problem]]:
    """Placement name -> builder(num_devices, num_microbatches, **durations and memory).

    The generic placements, the families' (under their schedules' names, read
    from :mod:`schedsearch.handcrafted.families` at each call) and Tessel's shapes.
    """
    return {
        "vshape": vshape,
        "bidirectional": bidirectional,
        **{name: spec.placement for name, spec in SCHEDULES.items() if spec.placement is not None},
        "tessel-v": tessel_v,
        "tessel-x": tessel_x,
        "tessel-m": tessel_m,
        "tessel-nn": tessel_nn,
        "tessel-k": tessel_k,
    }


#: :func:`placements` when the module was loaded
PLACEMENTS: dict[str, Callable[..., Problem]] = placements()

#: flag -> keyword of the placement builders
_FLAGS: dict[str, str] = {
    "--forward": "forward",
    "--backward": "backward",
    "--input-grad": "input_grad",
    "--weight-grad": "weight_grad",
    "--overlap": "overlap",
    "--chunks": "num_chunks",
    "--memory": "memory",
}

#: strategy name -> "module:function" of the search, imported when used; every one takes the
#: common options (SearchOptions) as keywords
STRATEGIES: dict[str, str] = {
    "solve": "schedsearch.search.portfolio:solve",
    "optimal": "schedsearch.search.exact:optimal",
    "repetend": "schedsearch.search.repetend_search:repetend",
}


def per_stage(text: str) -> int | tuple[int, ...]:
    """``"2"`` -> ``2``; ``"2,2,3,3"`` -> ``(2, 2, 3, 3)``, one value per stage (argparse type)."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected an integer or comma-separated integers, got {text!r}")
    return values[0] if len(values) == 1 else values


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
        description=__doc__ + "\nPrints the timeline and metrics and writes the plan (--out, --format).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--placement", choices=sorted(placements()), default="vshape", help="placement (default: vshape)")
    p.add_argument("--problem", metavar="FILE", help="problem JSON (instead of --placement)")
    p.add_argument("--devices", type=int, default=4, help="number of devices (default: 4)")
    p.add_argument("--microbatches", type=int, default=8, help="number of micro-batches (default: 8)")
    p.add_argument("--memory", type=int, default=None, metavar="ACTIVATIONS",
                   help="activation capacity per device, in activations (default: unbounded)")
    p.add_argument("--forward", type=per_stage, metavar="T[,T...]",
                   help="forward time, one for every stage or one per stage (default: 1)")
    p.add_argument("--backward", type=per_stage, metavar="T[,T...]",
                   help="full backward time per stage (default: 2; 0 = inference for vshape and bidirectional)")
    p.add_argument("--input-grad", type=per_stage, metavar="T[,T...]", help="input-gradient (I) time per stage")
    p.add_argument("--weight-grad", type=per_stage, metavar="T[,T...]", help="weight-gradient (W) time per stage")
    p.add_argument("--overlap", type=int, help="overlapped forward-and-backward (F&B) time (dualpipe, dualpipev)")
    p.add_argument("--chunks", type=int, help="stages per device (interleaved, zb-v; default 2)")
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="solve",
                   help="search strategy (default: solve, the portfolio that picks the engines)")
    add_output_arguments(p)
    add_solver_arguments(p)
    p.set_defaults(func=run)


def build_problem(args: argparse.Namespace) -> Problem:
    """The problem file, or the placement built from the flags given (a flag it does not take is an error)."""
    given = {flag: getattr(args, kw.replace("num_", "")) for flag, kw in _FLAGS.items()}
    given = {flag: v for flag, v in given.items() if v is not None}
    if args.problem:
        extra = sorted(given)
        if extra:
            raise InvalidOptionsError(f"{', '.join(extra)} apply to --placement, not to --problem")
        return Problem.from_json(open_input(args.problem, "search --problem", (InputKind.PROBLEM,)).text)
    builder = placements()[args.placement]
    params = inspect.signature(builder).parameters
    kwargs = {}
    for flag, value in given.items():
        kw = _FLAGS[flag]
        if kw not in params:
            takes = [f for f, k in _FLAGS.items() if k in params]
            raise InvalidOptionsError(f"placement {args.placement!r} takes no {flag} "
                                      f"(it takes {', '.join(takes)})")
        kwargs[kw] = value
    if kwargs.get("backward") == 0 and builder in (vshape, bidirectional):
        kwargs["backward"] = None  # inference: forward blocks only (the builders of whole pipelines take it)
    try:
        return builder(args.devices, args.microbatches, **kwargs)
    except InvalidProblemError as exc:
        lists = [flag for flag, value in given.items() if isinstance(value, tuple)]
        if not lists:
            raise
        # the builder names its keywords; the reader typed flags
        message = str(exc).removeprefix("placement: ")
        for flag in lists:
            message = message.replace(repr(_FLAGS[flag]), flag)
        shape = f"{args.devices} devices" + (f" x {kwargs.get('num_chunks', 2)} chunks" if "num_chunks" in params else "")
        raise InvalidOptionsError(f"placement {args.placement!r} ({shape}): {message}") from None


def run(args: argparse.Namespace) -> int:
    problem = build_problem(args)
    print(f"problem: {problem}")
    if args.quiet:
        result = _search(args.strategy, problem, args, None)
    else:
        with ProgressPrinter() as printer:
            result = _search(args.strategy, problem, args, printer)
    print_result(problem, result)
    if result.schedule is None:
        print(f"schedsearch search: {no_plan_reason(problem, result, args.time_limit)}")
        return 1
    for path in write_plan(problem, result.schedule, args.out, problem.name or "problem", args.formats,
                           result=result):
        print(f"wrote {path}")
    return 0
