"""Helpers shared by the CLI subcommands (argument groups, progress, output)."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from schedsearch.options import ProgressEvent
from schedsearch.problem import Problem
from schedsearch.result import SearchResult
from schedsearch.schedule import metrics


def add_solver_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend, --time-limit, --seed, --workers, --deterministic."""
    group = parser.add_argument_group("solver")
    group.add_argument("--backend", choices=("cpsat", "z3"), default="cpsat", help="solver backend (default: cpsat)")
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


def write_outputs(problem: Problem, result: SearchResult, out_dir: str | None, stem: str) -> list[Path]:
    """Write schedule JSON, Chrome trace and the result summary to ``out_dir``."""
    if out_dir is None or result.schedule is None:
        return []
    import json

    from schedsearch.export.chrome import write_chrome_trace

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    p = out / f"{stem}.schedule.json"
    p.write_text(result.schedule.to_json())
    paths.append(p)
    periodic = getattr(result, "periodic", None)
    if periodic is not None:  # repetend search: tasks name their part, one row per instance
        from schedsearch.export.repetend import write_periodic_trace

        paths.append(write_periodic_trace(periodic, problem.num_microbatches, out / f"{stem}.trace.json", name=stem))
    else:
        paths.append(write_chrome_trace(problem, result.schedule, out / f"{stem}.trace.json", name=stem))
    p = out / f"{stem}.problem.json"
    p.write_text(problem.to_json())
    paths.append(p)
    summary = result.to_dict()
    summary.pop("schedule", None)
    summary["metrics"] = metrics(problem, result.schedule).to_dict()
    p = out / f"{stem}.result.json"
    p.write_text(json.dumps(summary, indent=2, default=str))
    paths.append(p)
    return paths
