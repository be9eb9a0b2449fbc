"""``schedsearch validate PROBLEM SCHEDULE``: check a schedule independently."""

from __future__ import annotations

import argparse

from schedsearch.cli._inputs import InputKind, open_input, schedule_in
from schedsearch.problem import Problem
from schedsearch.schedule import metrics
from schedsearch.validate import validate


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a schedule against its problem",
        description="Print every violation of SCHEDULE (schedule JSON) against PROBLEM (problem JSON); "
        "exit status 1 when there is any.",
    )
    p.add_argument("problem", metavar="PROBLEM", help="problem JSON file")
    p.add_argument("schedule", metavar="SCHEDULE", help="schedule JSON file, or a search result holding one")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = Problem.from_json(open_input(args.problem, "validate's PROBLEM", (InputKind.PROBLEM,)).text)
    inp = open_input(args.schedule, "validate's SCHEDULE", (InputKind.SCHEDULE, InputKind.RESULT))
    schedule = schedule_in(inp)
    violations = validate(problem, schedule)
    if violations:
        print(f"INVALID: {len(violations)} violation(s)")
        for v in violations:
            print(f"  {v}")
        return 1
    print(f"VALID: {metrics(problem, schedule)}")
    return 0
