"""``schedsearch report PLAN --out DIR``: one self-contained HTML report of a plan, ``DIR/report.html``.

PLAN is what ``run`` reads but a CSV: a folder ``schedsearch plan --out``
wrote (its ``plan.json``), a plan document (``schedsearch.plan`` JSON:
``plan``'s ``plan.json``, ``result.export("json", ...)``, ``export --format
json``) or a search's result file (``NAME.result.json``: holding its problem and
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
from schedsearch.cli._inputs import PLAN_INPUTS, open_input, plan_of
from schedsearch.errors import FormatError
from schedsearch.export.html import write_report
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["add_parser", "run", "load_plan"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a plan's HTML report (ms and GiB per rank, Gantt chart, memory, bound, engines)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plan", metavar="PLAN", type=Path, help="plan folder, plan document or NAME.result.json")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="folder to write report.html into (default: out; '' checks the plan and writes nothing; a "
                   "name ending in .html is the file itself)")
    p.add_argument("--front", type=Path, default=None, help="Pareto front JSON to plot beside the plan")
    p.add_argument("--title", default=None, help="report title (default: the problem's name)")
    p.set_defaults(func=run)


def load_plan(path: Path) -> tuple[Problem, Schedule, dict[str, Any]]:
    """``(problem, schedule, meta)`` of a plan folder, a plan document or a search result (what ``run`` reads
    but a CSV, which holds no times)."""
    return plan_of(open_input(path, "report", PLAN_INPUTS))


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
