"""``schedsearch jobshop``: plan a DAG, a job shop or a problem file on machines.

Inputs (``--input-format``, default ``auto``):

* ``dag``: an operation DAG document (``"format": "schedsearch.dag"``),
  placed on ``--machines`` identical machines with ``--channels`` channels
  per pair of machines (``--channel-mode duplex``: they alternate direction,
  so 2 = one each way; ``shared``: undirected);
* ``problem``: a problem document (``"format": "schedsearch.problem"``),
  used as it is;
* ``jsp`` / ``fjsp``: a job-shop or flexible job-shop instance file.

``auto`` reads JSON documents by their ``format`` field and text files as
job shop first, flexible job shop second.

Outputs: the result, each phase's makespan, the bound, per-machine busy time
and peak memory, the share of transfer time hidden under compute. Like
every command that writes, it writes the plan to ``--out DIR`` (default
``out``; ``''`` writes nothing) in each ``--format`` (default json and
trace: plan, problem, schedule and result JSON, and a Chrome/Perfetto trace
with one row per machine and one per channel, task events named after
their block). A search that finds no plan exits 1 with the reason.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedsearch.cli._common import (
    ProgressPrinter,
    add_output_arguments,
    add_solver_arguments,
    no_plan_reason,
    plain_name,
    write_plan,
)
from schedsearch._io import read_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError
from schedsearch.export.chrome import chrome_trace
from schedsearch.graphs import OperationDag, machine_cluster
from schedsearch.loaders import detect_format, parse_flexible_jobshop, parse_jobshop
from schedsearch.problem import Problem
from schedsearch.result import SearchResult
from schedsearch.schedule import Schedule, metrics
from schedsearch.search import jobshop, transfer_overlap

FORMATS = ("auto", "dag", "problem", "jsp", "fjsp")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "jobshop",
        help="plan an operation DAG or a (flexible) job shop on machines joined by channels",
        description="Choose a machine for every operation, order operations and transfers, respect memory "
        "levels and minimise the makespan (list-scheduling baseline, optional coarsening, exact search).",
    )
    p.add_argument("input", metavar="GRAPH", help="DAG JSON, problem JSON, or job-shop / flexible job-shop file")
    p.add_argument("--input-format", choices=FORMATS, default="auto", help="input format (default: auto)")
    p.add_argument("--machines", type=int, default=2, help="identical machines for a DAG (default: 2)")
    p.add_argument("--channels", type=int, default=2, help="channels per pair of machines for a DAG (default: 2)")
    p.add_argument(
        "--channel-mode", choices=("duplex", "shared"), default="duplex",
        help="duplex: channels alternate direction (needs an even count); shared: undirected (default: duplex)",
    )
    p.add_argument("--time-per-unit", type=int, default=1, help="channel time per unit of transfer size (default: 1)")
    p.add_argument("--latency", type=int, default=0, help="channel latency per transfer (default: 0)")
    p.add_argument("--memory", type=int, default=None, metavar="UNITS",
                   help="memory capacity per machine for a DAG, in the DAG's memory units (default: none)")
    p.add_argument("--coarsen", type=int, default=None, metavar="N", help="coarsen graphs larger than N blocks first")
    p.add_argument("--no-refine", action="store_true", help="after coarsening, keep the expanded plan as it is")
    p.add_argument("--baseline-only", "--heuristic-only", dest="baseline_only", action="store_true",
                   help="only the list-scheduling (HEFT) baseline, no exact search")
    add_output_arguments(p)
    add_solver_arguments(p)
    p.set_defaults(func=run)


def load_problem(args: argparse.Namespace) -> Problem:
    """The problem the arguments describe."""
    path = Path(args.input)
    text = read_text(path, f"input file {str(path)!r}")
    fmt = args.input_format
    if fmt == "auto":
        fmt = _detect(text, path)
    if fmt == "problem":
        return Problem.from_json(text)
    if fmt == "dag":
        dag = OperationDag.from_json(text)
        cluster = machine_cluster(
            args.machines,
            channels=args.channels,
            directed=args.channel_mode == "duplex",
            time_per_unit=args.time_per_unit,
            latency=args.latency,
            memory=args.memory,
        )
        return dag.on_machines(cluster, name=dag.name or path.stem)
    source = f"input file {str(path)!r}"
    if fmt == "jsp":
        return parse_jobshop(text, name=path.stem, source=source).problem
    return parse_flexible_jobshop(text, name=path.stem, source=source).problem


def _detect(text: str, path: Path) -> str:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        data = load_document(text, f"input file {str(path)!r}")
        kind = data.get("format")
        if kind == "schedsearch.problem":
            return "problem"
        if kind == "schedsearch.dag":
            return "dag"
        raise FormatError(
            f"input file {str(path)!r}: 'format' must be 'schedsearch.dag' or 'schedsearch.problem', got {kind!r}"
        )
    try:
        return detect_format(text, source=f"input file {str(path)!r}")
    except FormatError as exc:
        raise FormatError(f"{exc}; name the format with --input-format") from None


def jobshop_trace(problem: Problem, schedule: Schedule, name: str) -> dict:
    """Chrome trace with one row per machine and per channel, task events named by block."""
    trace = chrome_trace(problem, schedule, name=name)
    for ev in trace["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("cat") != "transfer":
            block, mb = ev["args"]["block"], ev["args"]["microbatch"]
            ev["name"] = block if problem.num_microbatches == 1 else f"{block}#{mb}"
    return trace


def _print_result(problem: Problem, result: SearchResult) -> None:
    print(f"result: {result}")
    stats = result.stats
    print(f"analytic lower bound: {stats.get('analytic_bound')}")
    for phase in ("baseline", "coarse", "expanded", "exact"):
        if phase in stats:
            entry = stats[phase]
            extra = f" ({entry['status']})" if "status" in entry else ""
            print(f"  {phase:9s} makespan {entry.get('makespan')}{extra}, {entry.get('time_s', 0.0):.2f} s")
    if "coarsening" in stats:
        c = stats["coarsening"]
        print(f"  coarsening: {c['blocks_in']} -> {c['blocks']} blocks ({c['blocks_after_safe']} after safe merges)")
    if result.schedule is None:
        return
    m = metrics(problem, result.schedule)
    print(f"plan from: {result.engine}")
    for d in problem.cluster.device_names:
        cap = problem.capacity(d)
        print(f"  {d}: busy {m.busy.get(d, 0)}, peak memory {m.peak_memory.get(d, 0)}"
              f"{'' if cap is None else f' of {cap}'}")
    overlap = transfer_overlap(problem, result.schedule)
    if overlap["total"]:
        print(
            f"transfers: {len(result.schedule.transfers)}, {overlap['total']} time units, "
            f"{100 * overlap['hidden_any']:.1f}% under compute, {100 * overlap['hidden_both']:.1f}% with both "
            "machines computing"
        )


def run(args: argparse.Namespace) -> int:
    problem = load_problem(args)
    print(f"problem: {problem}")
    kwargs = dict(
        backend=args.backend,
        time_limit_s=args.time_limit,
        seed=args.seed,
        workers=args.workers,
        deterministic=args.deterministic,
        list_baseline_only=args.baseline_only,
        coarsen_to=args.coarsen,
        refine=not args.no_refine,
    )
    if args.quiet:
        result = jobshop(problem, **kwargs)
    else:
        with ProgressPrinter() as printer:
            result = jobshop(problem, progress=printer, **kwargs)
    _print_result(problem, result)
    if result.schedule is None:
        print(f"schedsearch jobshop: {no_plan_reason(problem, result, args.time_limit)}")
        return 1
    stem = problem.name or "jobshop"
    formats = tuple(f for f in args.formats if f != "trace")
    written = write_plan(problem, result.schedule, args.out, stem, formats, result=result)
    if args.out and "trace" in args.formats:  # rows per machine and channel, tasks named by block
        path = Path(args.out) / f"{plain_name(stem)}.trace.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(jobshop_trace(problem, result.schedule, stem)))
        written.append(path)
    for path in written:
        print(f"wrote {path}")
    return 0
