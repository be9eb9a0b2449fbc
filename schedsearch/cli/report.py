"""``schedsearch report PLAN --out DIR``: one self-contained HTML report of a plan, ``DIR/report.html``.

PLAN is a plan document (``schedsearch.plan`` JSON: ``plan``'s
``plan.json``, ``result.export("json", ...)``, ``export --format json``)
or a search's result file (``NAME.result.json``: holding its problem and
schedule, or read with the ``NAME.problem.json`` and
``NAME.schedule.json`` beside it). The report leads with the plan in
milliseconds and GiB, ranks named rank0, rank1...: status (and which proof
is still open), makespan, bound and gap, then peak memory, budget, busy and
idle time per rank. Then the Gantt chart (each task's rank, kind,
micro-batch, chunk and times in ms on hover), memory per rank, the
comparison table a planner's plan carries, and the solver's own units in a
details section. ``--front FILE`` adds a Pareto front (``pareto --out``
JSON) as a plot.
``--out`` is a folder, as for every other command (default ``out``); a
name ending in ``.html`` is the file itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from schedsearch._io import read_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError, InvalidScheduleError, ValidationFailedError
from schedsearch.export.html import write_report
from schedsearch.export.json import PLAN_FORMAT, from_document
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule
from schedsearch.validate import assert_valid

__all__ = ["add_parser", "run", "load_plan"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a plan's HTML report (ms and GiB per rank, Gantt chart, memory, bound, engines)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plan", metavar="PLAN", type=Path, help="plan document or NAME.result.json")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="folder to write report.html into (default: out; '' checks the plan and writes nothing; a "
                   "name ending in .html is the file itself)")
    p.add_argument("--front", type=Path, default=None, help="Pareto front JSON to plot beside the plan")
    p.add_argument("--title", default=None, help="report title (default: the problem's name)")
    p.set_defaults(func=run)


def load_plan(path: Path) -> tuple[Problem, Schedule, dict[str, Any]]:
    """``(problem, schedule, meta)`` of a plan document or of a result summary and its sibling files."""
    doc = load_document(read_text(path, f"report: {path}"), f"report: {path}")
    if isinstance(doc, dict) and doc.get("format") == PLAN_FORMAT:
        return from_document(doc)
    if isinstance(doc, dict) and "status" in doc and isinstance(doc.get("problem"), dict) \
            and isinstance(doc.get("schedule"), dict):  # a search result holding its problem and plan
        problem = Problem.from_dict(doc["problem"])
        schedule = Schedule.from_dict(doc["schedule"])
        try:
            assert_valid(problem, schedule, "schedule")
        except ValidationFailedError as exc:
            raise InvalidScheduleError(str(exc)) from None
        return problem, schedule, {"result": {k: v for k, v in doc.items() if k not in ("problem", "schedule")}}
    if isinstance(doc, dict) and "status" in doc and path.name.endswith(".result.json"):
        stem = path.name[: -len(".result.json")]
        problem_path, schedule_path = path.with_name(f"{stem}.problem.json"), path.with_name(f"{stem}.schedule.json")
        if not problem_path.is_file() or not schedule_path.is_file():
            raise FormatError(f"report: {path} is a result summary; it needs {problem_path.name} and "
                              f"{schedule_path.name} beside it")
        problem = Problem.from_json(read_text(problem_path, f"report: {problem_path}"))
        schedule = Schedule.from_json(read_text(schedule_path, f"report: {schedule_path}"))
        try:
            assert_valid(problem, schedule, "schedule")
        except ValidationFailedError as exc:
            raise InvalidScheduleError(str(exc)) from None
        return problem, schedule, {"result": doc}
    raise FormatError(f"report: {path} is neither a plan document ('format': {PLAN_FORMAT!r}) nor a result summary "
                      f"(NAME.result.json)")


def run(args: argparse.Namespace) -> int:
    problem, schedule, meta = load_plan(args.plan)
    front = None
    if args.front is not None:
        doc = load_document(read_text(args.front, f"report: {args.front}"), f"report: {args.front}")
        front = doc.get("points") if isinstance(doc, dict) else doc
        if not isinstance(front, list):
            raise FormatError(f"report: {args.front}: 'points' must be a list of front points")
    if not args.out:
        print(f"{args.plan}: a valid plan; nothing written (--out '')")
        return 0
    out = Path(args.out)
    out = out if out.suffix.lower() == ".html" else out / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    path = write_report(out, problem, schedule, meta=meta, front=front, title=args.title)
    print(f"wrote {path}")
    return 0
