"""Helpers shared by the CLI subcommands (argument groups, progress, output)."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from schedsearch.options import ProgressEvent
from schedsearch.problem import Problem
from schedsearch.registry import available_backends
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import metrics


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend, --time-limit, --seed, --workers, --deterministic."""
    group = parser.add_argument_group("solver")
    group.add_argument("--backend", choices=available_backends(), default="cpsat",
                       help="solver backend (default: cpsat)")
    group.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS", help="wall-clock limit (default: 60)")
    group.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    group.add_argument("--workers", type=int, default=2, help="parallel workers for CP-SAT (default: 2)")
    group.add_argument("--deterministic", action="store_true", help="reproducible search (CP-SAT interleaved search)")
    group.add_argument("--quiet", action="store_true", help="no progress lines")


class ProgressPrinter:
    """Prints a search's progress once it has run for ``after_s`` seconds:
    one line each time the phase, the incumbent or the bound changes.

    It receives :class:`~schedsearch.options.ProgressEvent` events; the
    bound shown is the best one reported so far (every strategy reports its
    analytic bound first, as phase ``"bound"``), the incumbent the latest.
    A change that arrives before ``after_s`` is printed by a check every
    ``every_s`` seconds once ``after_s`` has passed; nothing is printed
    twice.
    """

    def __init__(self, stream: TextIO | None = None, after_s: float = 2.0, every_s: float = 2.0) -> None:
        self.stream = stream or sys.stderr
        self.after_s = after_s
        self.every_s = every_s
        self.t0 = time.perf_counter()
        self.phase = ""
        self.incumbent: int | None = None
        self.bound: int | None = None
        self.source: str | None = None  # what found the incumbent, when the events say
        self._shown: tuple[str, int | None, int | None] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self.printed = 0

    def __enter__(self) -> ProgressPrinter:
        self.t0 = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            self.phase = event.phase or self.phase
            if event.incumbent is not None:
                if event.incumbent != self.incumbent or event.source is not None:
                    self.source = event.source
                self.incumbent = event.incumbent
            if event.bound is not None:
                self.bound = max(self.bound or 0, event.bound)
            self._print_if_changed()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                self._print_if_changed()

    def _print_if_changed(self) -> None:
        state = (self.phase, self.incumbent, self.bound)
        if state == self._shown or time.perf_counter() - self.t0 < self.after_s:
            return
        self._shown = state
        elapsed = time.perf_counter() - self.t0
        inc = "-" if self.incumbent is None else str(self.incumbent)
        if self.incumbent is not None and self.source:
            inc += f" ({self.source})"
        bnd = "-" if self.bound is None else str(self.bound)
        gap = ""
        if self.incumbent and self.bound is not None:
            gap = f"  gap {100 * max(0, self.incumbent - self.bound) / self.incumbent:.1f}%"
        phase = f"{self.phase}: " if self.phase else ""
        print(f"[{elapsed:7.1f}s] {phase}incumbent {inc}  bound {bnd}{gap}", file=self.stream, flush=True)
        self.printed += 1


def print_result(problem: Problem, result: SearchResult, stream: TextIO | None = None) -> None:
    """Status line and, with a schedule, the timeline and metrics."""
    from schedsearch.export.ascii import render_ascii

    stream = stream or sys.stdout
    print(f"result: {result}", file=stream)
    periodic = getattr(result, "periodic", None)
    if periodic is not None:
        from schedsearch.export.repetend import render_periodic_ascii

        print(render_periodic_ascii(periodic, problem.num_microbatches), file=stream)
        print(f"metrics: {metrics(problem, result.schedule)}", file=stream)
    elif result.schedule is not None:
        print(render_ascii(problem, result.schedule), file=stream)
        print(f"metrics: {metrics(problem, result.schedule)}", file=stream)


def byte_amount(text: str) -> int:
    """``"6GiB"``, ``"512 MB"``, ``"1e9"`` -> bytes (argparse type of the ``--memory-bytes`` flags)."""
    from schedsearch.errors import InvalidPipelineError
    from schedsearch.plan.pipeline import parse_bytes

    try:
        return parse_bytes(float(text) if text.strip().replace(".", "", 1).replace("e", "", 1).isdigit() else text,
                           "--memory-bytes", "bytes")
    except (InvalidPipelineError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# --- the one output grammar: --out DIR and --format FMT,FMT ---------------------------------

#: ``--format`` name -> the export format of :func:`schedsearch.export.export` it writes, and the
#: file-name suffix; ``json`` writes the plan, problem, schedule and (after a search) result documents
CLI_FORMATS: dict[str, tuple[str, str]] = {
    "json": ("json", ".plan.json"),
    "trace": ("chrome", ".trace.json"),
    "csv": ("torch-csv", ".csv"),
    "txt": ("ascii", ".txt"),
    "png": ("png", ".png"),
    "svg": ("svg", ".svg"),
    "html": ("html", ".html"),
}


def output_formats() -> tuple[str, ...]:
    """The ``--format`` names this installation can write (``html`` once :mod:`schedsearch.export` knows it)."""
    from schedsearch.export import EXPORT_FORMATS

    return tuple(name for name, (fmt, _) in CLI_FORMATS.items() if fmt in EXPORT_FORMATS)


def format_list(text: str) -> tuple[str, ...]:
    """``"json,trace"`` -> ``("json", "trace")``, each checked against :func:`output_formats` (argparse type)."""
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    known = output_formats()
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(f"unknown format {name!r}; choose from {', '.join(known)}")
    if not names:
        raise argparse.ArgumentTypeError(f"no format given; choose from {', '.join(known)}")
    return names


def add_output_arguments(parser: argparse.ArgumentParser, formats: tuple[str, ...] = ("json", "trace"),
                         what: str = "the plan") -> None:
    """``--out DIR`` (default ``out``; ``''`` writes nothing) and ``--format FMT[,FMT...]``."""
    group = parser.add_argument_group("output")
    group.add_argument("--out", metavar="DIR", default="out",
                       help=f"folder to write {what} into (default: out; '' writes nothing)")
    group.add_argument("--format", dest="formats", type=format_list, default=formats, metavar="FMT[,FMT...]",
                       help=f"what to write: {', '.join(output_formats())} (default: {','.join(formats)}); "
                       "json = plan, problem, schedule and result documents, trace = Chrome/Perfetto trace, "
                       "csv = PyTorch compute-only CSV, txt = text timeline")


def add_out_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR`` alone (default ``out``; ``''`` writes nothing), for commands that write one fixed file."""
    parser.add_argument("--out", metavar="DIR", default="out",
                        help=f"folder to write {what} into (default: out; '' writes nothing)")


class _RetiredFlag(argparse.Action):
    """A flag the grammar replaced: using it is an error (exit 2) naming what replaced it."""

    def __init__(self, option_strings: list[str], dest: str, instead: str = "", **kwargs: Any) -> None:
        self.instead = instead
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is replaced by {self.instead}")


def add_retired_flag(parser: argparse.ArgumentParser, flag: str, instead: str) -> None:
    """Keep ``flag`` only to say, when used, that ``instead`` replaced it (hidden from ``--help``)."""
    parser.add_argument(flag, action=_RetiredFlag, instead=instead, dest=f"retired_{flag.lstrip('-')}")


def plain_name(text: str) -> str:
    """A file-name stem of letters, digits, ``.``, ``_`` and ``-`` only (no spaces or brackets).

    >>> plain_name("profiled-4st (time unit 0.0001 s, memory unit 1024 B)")
    'profiled-4st-time-unit-0.0001-s-memory-unit-1024-B'
    """
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return stem or "plan"


def write_plan(problem: Problem, schedule, out_dir: str | None, stem: str, formats: tuple[str, ...], *,
               result: SearchResult | None = None, time_scale: int = 1, meta: dict | None = None,
               labels: str = "kind", time_unit_us: float | None = None, stream: TextIO | None = None,
               front: Any = None) -> list[Path]:
    """Write ``schedule`` in each of ``formats`` under ``out_dir`` as ``{stem}.*``; return the paths.

    Nothing is written when ``out_dir`` is empty or None or there is no
    schedule. ``json`` writes the plan document (what ``export`` and
    ``run`` read), the problem and schedule documents (what ``validate``
    reads) and, after a search, ``{stem}.result.json``: the result with its
    schedule and problem, which ``export`` also reads. A format that cannot
    express the plan (``csv`` of two pipelines, a picture without
    matplotlib) is skipped with a note on ``stream``. ``labels`` is the
    text timeline's label style, ``time_unit_us`` the trace's microseconds
    per time unit (None: the exporter's default). The ``html`` report gets
    the result (status, bound, gap, engines), ``meta`` (its ``table``: a
    comparison) and ``front`` (a Pareto front, drawn as a plot).
    """
    import json

    from schedsearch.errors import FormatError, UnsupportedFeatureError
    from schedsearch.export import export

    if not out_dir or schedule is None:
        return []
    stream = stream or sys.stderr
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = out / plain_name(stem)
    paths: list[Path] = []
    for name in formats:
        fmt, suffix = CLI_FORMATS[name]
        target = Path(f"{base}{suffix}")
        try:
            if name == "json":
                paths.append(export(problem, schedule, "json", target, meta={"time_scale": time_scale, **(meta or {})}))
                for kind, text in (("problem", problem.to_json()), ("schedule", schedule.to_json())):
                    path = Path(f"{base}.{kind}.json")
                    path.write_text(text)
                    paths.append(path)
                if result is not None:
                    path = Path(f"{base}.result.json")
                    path.write_text(json.dumps(result_document(problem, result), indent=2, default=str))
                    paths.append(path)
            elif name == "trace" and getattr(result, "periodic", None) is not None:
                from schedsearch.export.repetend import write_periodic_trace

                paths.append(write_periodic_trace(result.periodic, problem.num_microbatches, target, name=stem))
            elif name in ("png", "svg"):
                paths.append(export(problem, schedule, fmt, target, time_scale=time_scale))
            elif name == "txt":
                paths.append(export(problem, schedule, fmt, target, labels=labels))
            elif name == "html":
                paths.append(export(problem, schedule, fmt, target, result=result, meta=meta, front=front))
            elif name == "trace" and time_unit_us is not None:
                paths.append(export(problem, schedule, fmt, target, time_unit_us=time_unit_us))
            else:
                paths.append(export(problem, schedule, fmt, target))
        except (FormatError, UnsupportedFeatureError) as exc:
            print(f"{name}: not written: {exc}", file=stream)
    return [Path(p) for p in paths]


def result_document(problem: Problem, result: SearchResult) -> dict:
    """The result as JSON data with its metrics, schedule and problem (what ``export`` reads back)."""
    doc = result.to_dict()
    if result.schedule is not None:
        doc["metrics"] = metrics(problem, result.schedule).to_dict()
    doc["problem"] = problem.to_dict()
    return doc


def no_plan_reason(problem: Problem, result: SearchResult, time_limit_s: float | None = None) -> str:
    """Why a search returned no plan, in the problem's terms (the bound or proof behind it)."""
    from schedsearch.bounds import analytic_lower_bound

    if result.status is Status.INFEASIBLE:
        caps = {d: problem.capacity(d) for d in problem.cluster.device_names}
        limited = {d: c for d, c in caps.items() if c is not None}
        detail = (f"; memory capacities {limited}" if limited else "")
        how = result.bound_engine or result.backend or "the exact search"
        return (f"no plan exists: {how} proved that no schedule of the {problem.num_microbatches} micro-batches "
                f"meets the constraints{detail}")
    bound = result.lower_bound
    tight = "the search"
    if bound is None:
        analytic = analytic_lower_bound(problem)
        bound, tight = analytic.value, f"analytic bound, {analytic.tight_part}"
    limit = "" if time_limit_s is None else f" within the time limit of {time_limit_s:g} s"
    return (f"no plan found{limit} ({result.status.value}); any plan takes at least {bound} time units "
            f"({tight}); raise --time-limit or relax the memory")
