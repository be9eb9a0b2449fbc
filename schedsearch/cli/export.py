"""``schedsearch export``: write a schedule as a PyTorch CSV, a trace, JSON, text or a picture.

Input: a plan document (``schedsearch.plan`` JSON, as written by
``schedsearch reproduce --out-dir`` or ``--format json``), or a problem
document (``--problem``) with a schedule document or search result
(``--schedule``). The schedule is validated against the problem first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schedsearch._io import read_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError, InvalidScheduleError, ValidationFailedError
from schedsearch.export import EXPORT_FORMATS, export
from schedsearch.export.json import read_json
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule
from schedsearch.validate import assert_valid

__all__ = ["add_parser", "run", "load_inputs"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export",
        help="export a schedule (torch-csv, chrome, json, ascii, png, svg)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", nargs="?", type=Path, help="plan document (problem + schedule JSON)")
    p.add_argument("--problem", type=Path, help="problem document (with --schedule)")
    p.add_argument("--schedule", type=Path, help="schedule document or search result (with --problem)")
    p.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="output format")
    p.add_argument("-o", "--output", type=Path, help="output file (default: standard output; pictures need one)")
    p.add_argument("--time-unit-us", type=float, default=1000.0, help="chrome: microseconds per time unit")
    p.add_argument("--labels", choices=("kind", "stage", "block"), default="kind", help="ascii: label style")
    p.add_argument("--time-scale", type=int, default=1, help="pictures: problem time units per axis unit")
    p.set_defaults(func=run)
    return p


def load_inputs(args: argparse.Namespace) -> tuple[Problem, Schedule]:
    if args.plan is not None:
        if args.problem is not None or args.schedule is not None:
            raise FormatError("export: give a plan document or --problem and --schedule, not both")
        problem, schedule, _ = read_json(args.plan)
        return problem, schedule
    if args.problem is None or args.schedule is None:
        raise FormatError("export: give a plan document, or both --problem and --schedule")
    problem = Problem.from_json(read_text(args.problem, f"export: {args.problem}"))
    doc = load_document(read_text(args.schedule, f"export: {args.schedule}"), f"export: {args.schedule}")
    if isinstance(doc, dict) and doc.get("format") != "schedsearch.schedule" and isinstance(doc.get("schedule"), dict):
        doc = doc["schedule"]  # a search result
    if doc is None:
        raise FormatError(f"export: {args.schedule} holds no schedule")
    schedule = Schedule.from_dict(doc)
    try:
        assert_valid(problem, schedule, "schedule")
    except ValidationFailedError as exc:
        raise InvalidScheduleError(str(exc)) from None
    return problem, schedule


def run(args: argparse.Namespace) -> int:
    problem, schedule = load_inputs(args)
    options: dict = {}
    if args.format == "chrome":
        options["time_unit_us"] = args.time_unit_us
    elif args.format == "ascii":
        options["labels"] = args.labels
    elif args.format in ("png", "svg"):
        options["time_scale"] = args.time_scale
    result = export(problem, schedule, args.format, args.output, **options)
    if args.output is None:
        sys.stdout.write(str(result))
    else:
        print(f"wrote {result}", file=sys.stderr)
    return 0
