"""``schedsearch export``: write a plan as a PyTorch CSV, a trace, JSON, a text timeline or a picture.

Input: what ``run`` and ``report`` read but a CSV: a plan folder (what
``plan --out`` writes), a plan document (``{stem}.plan.json``, written by
``--format json`` of ``search``, ``reproduce``, ``pareto`` and ``jobshop``),
a search result (``{stem}.result.json``, which holds its problem and
schedule, or with the problem and schedule documents beside it), or a problem
document (``--problem``) with a schedule document or search result
(``--schedule``). The schedule is validated against the problem first.

Output: ``--out DIR`` (default ``out``) receives ``{stem}.{format}`` for
each ``--format``; ``--out -`` prints a text format instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedsearch.cli._common import CLI_FORMATS, format_list, output_formats, plain_name, write_plan
from schedsearch.cli._inputs import PLAN_INPUTS, InputKind, open_input, plan_of, schedule_in
from schedsearch.errors import FormatError, InvalidScheduleError, ValidationFailedError
from schedsearch.export import export
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule
from schedsearch.validate import assert_valid

__all__ = ["add_parser", "run", "load_inputs"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export",
        help=f"export a plan ({', '.join(output_formats())})",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", nargs="?", type=Path, help="plan folder, plan document or search result (JSON)")
    p.add_argument("--problem", type=Path, help="problem document (with --schedule)")
    p.add_argument("--schedule", type=Path, help="schedule document or search result (with --problem)")
    p.add_argument("--format", dest="formats", required=True, type=format_list, metavar="FMT[,FMT...]",
                   help=f"what to write: {', '.join(output_formats())}")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="folder to write into (default: out; '' writes nothing; '-' prints a text format)")
    p.add_argument("--time-unit-us", type=float, default=None,
                   help="trace: microseconds per time unit (default: the problem's unit, else 1000)")
    p.add_argument("--labels", choices=("kind", "stage", "block"), default="kind", help="txt: label style")
    p.add_argument("--time-scale", type=int, default=1, help="pictures: problem time units per axis unit")
    p.set_defaults(func=run)
    return p


def load_inputs(args: argparse.Namespace) -> tuple[Problem, Schedule]:
    """The problem and the validated schedule the arguments name."""
    if args.plan is not None:
        if args.problem is not None or args.schedule is not None:
            raise FormatError("give a plan document or --problem and --schedule, not both")
        problem, schedule, _ = plan_of(open_input(args.plan, "export", PLAN_INPUTS))
        return problem, schedule
    if args.problem is None or args.schedule is None:
        raise FormatError("give a plan document or search result, or both --problem and --schedule")
    problem = Problem.from_json(open_input(args.problem, "export --problem", (InputKind.PROBLEM,)).text)
    inp = open_input(args.schedule, "export --schedule", (InputKind.SCHEDULE, InputKind.RESULT, InputKind.RESULT_SUMMARY))
    schedule = schedule_in(inp)
    try:
        assert_valid(problem, schedule, "schedule")
    except ValidationFailedError as exc:
        raise InvalidScheduleError(str(exc)) from None
    return problem, schedule


def run(args: argparse.Namespace) -> int:
    problem, schedule = load_inputs(args)
    if args.out == "-":
        for name in args.formats:
            fmt = CLI_FORMATS[name][0]
            options: dict = {}
            if name == "trace" and args.time_unit_us is not None:
                options["time_unit_us"] = args.time_unit_us
            elif name == "txt":
                options["labels"] = args.labels
            elif name in ("png", "svg", "html"):
                raise FormatError(f"format {name!r} is not text; give a folder with --out DIR")
            sys.stdout.write(str(export(problem, schedule, fmt, None, **options)))
        return 0
    stem = plain_name(args.plan.stem if args.plan is not None else args.schedule.stem)
    for suffix in (".plan", ".result", ".schedule"):
        stem = stem.removesuffix(suffix)
    written = write_plan(problem, schedule, args.out, stem, args.formats, time_scale=args.time_scale,
                         labels=args.labels, time_unit_us=args.time_unit_us)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0 if written or not args.out else 2
