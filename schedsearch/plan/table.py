"""The plan table: its rows (:class:`PlanRow`), the planner's result (:class:`PlanResult`) and a sweep's.

A row's status is the library's :class:`~schedsearch.result.Status` plus a
:class:`~schedsearch.plan.outcome.Reason` (see there); :meth:`PlanResult.table`
prints the ranked table, the notes under their rows, and ``_per_family``
the bounded per-family list a "no plan" error gives.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from schedsearch.errors import NoFittingPlanError
from schedsearch.plan.pipeline import Pipeline, Stage
from schedsearch.problem import Problem
from schedsearch.plan.outcome import Reason
from schedsearch.result import Status
from schedsearch.schedule import Schedule
from schedsearch.units import GIB, Units
from schedsearch.plan.candidates import Candidate

__all__ = ["MAX_ERROR_CHARS", "MAX_ERROR_FAMILIES", "MAX_ERROR_HEADLINE", "MAX_ERROR_LINE", "PEAK_NOT_PROVEN",
           "PlanResult", "PlanRow", "SweepPoint", "SweepResult"]


@attrs.frozen(kw_only=True)
class PlanRow:
    """One line of the plan table (times in ms, memory in GiB per rank, peak including parameters).

    ``status`` is the library's :class:`~schedsearch.result.Status` and
    ``reason`` a :class:`~schedsearch.plan.outcome.Reason` when the status
    alone does not say what happened (left out before any search, no answer
    from the executor, a plan the runtime cannot execute); ``note`` says it
    in words and :attr:`mark` is the table's status cell. A row with a plan
    is ``OPTIMAL`` only when both levels are proven: the makespan meets
    ``bound_ms`` (``makespan_proven``) and the worst rank's peak is the
    least among plans of that makespan (``peak_proven``); it is
    ``FEASIBLE`` otherwise. ``makespan_ms``,
    ``handcrafted_ms`` and ``bound_ms`` are of the pipeline's unrounded
    times (:mod:`schedsearch.plan.times`). The plan is the search's, or the
    handcrafted one when that fits and the search had nothing better in
    time (``note`` says so). ``bubble_pct`` is the
    global bubble (makespan minus busy time, worst rank) over the makespan,
    in the integer problem. ``handcrafted_*`` are the published schedule of
    the same family on the same problem; ``handcrafted_fits`` says whether
    it stays within the budget. ``engine`` names what found the plan (as a
    search result's :attr:`~schedsearch.result.SearchResult.engine`).
    """

    candidate: Candidate
    status: Status = attrs.field(validator=attrs.validators.instance_of(Status))
    reason: Reason | None = attrs.field(default=None,
                                        validator=attrs.validators.optional(attrs.validators.instance_of(Reason)))
    makespan_ms: float | None = None
    bubble_pct: float | None = None
    peak_gib: tuple[float, ...] = ()
    bound_ms: float | None = None
    gap: float | None = None
    makespan_proven: bool = False
    peak_proven: bool = False
    handcrafted: str | None = None
    handcrafted_ms: float | None = None
    handcrafted_peak_gib: tuple[float, ...] = ()
    handcrafted_fits: bool | None = None
    engine: str = ""
    wall_time_s: float = 0.0
    note: str = ""

    @property
    def family(self) -> str:
        return self.candidate.label

    @property
    def mark(self) -> str:
        """The table's status cell: the status, or ``skipped``/``timeout``/``failed`` for a row without a plan
        left out or stopped (:attr:`Reason.mark <schedsearch.plan.outcome.Reason.mark>`)."""
        if self.reason is not None and self.reason.mark and self.makespan_ms is None:
            return self.reason.mark
        return self.status.value

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        out["candidate"] = attrs.asdict(self.candidate)
        out["family"] = self.family
        out["status"] = self.status.value
        out["reason"] = None if self.reason is None else self.reason.value
        out["mark"] = self.mark
        out["peak_gib"] = list(self.peak_gib)
        out["handcrafted_peak_gib"] = list(self.handcrafted_peak_gib)
        return out


def _row_without_plan(candidate: Candidate, reason: Reason, note: str) -> PlanRow:
    """The row of a candidate that has no plan for ``reason``."""
    return PlanRow(candidate=candidate, status=reason.status, reason=reason, note=note,
                   handcrafted=candidate.handcrafted_name())


@attrs.frozen(kw_only=True)
class PlanResult:
    """What :func:`plan` found: the ranked table, the best plan and how to export it.

    ``rows`` are ranked: plans first by makespan then worst-rank peak memory,
    then the candidates without a plan. ``best`` is the first row with a
    plan that ``runtime`` (a key of :data:`RUNTIMES`) can execute (None when
    none fitted in time); a better plan it cannot execute stays in ``rows``
    with the reason in its note. ``problem`` and
    ``schedule`` are its integer problem and validated schedule, ``stages``
    its stages and ``layers`` the layers (or given stages) each holds;
    ``units`` say how the integers read in milliseconds and bytes.
    """

    pipeline: Pipeline
    units: Units
    rows: tuple[PlanRow, ...]
    best: PlanRow | None
    problem: Problem | None
    schedule: Schedule | None
    stages: tuple[Stage, ...] = ()
    layers: tuple[tuple[int, ...], ...] = ()
    executor: str = "local"
    wall_time_s: float = 0.0
    runtime: str = "torch"

    @property
    def engine(self) -> str:
        """Deprecated name of :attr:`executor` (the executor that ran the candidates)."""
        warnings.warn("PlanResult.engine is deprecated: use PlanResult.executor", DeprecationWarning, stacklevel=2)
        return self.executor

    def table(self) -> str:
        """The ranked table as text: makespan in ms, peak memory in GiB on ``rank0`` .. ``rankN``, then the rest.

        Every line of the table proper has its columns at the same offsets,
        whatever the number of ranks; the notes go under their row, indented,
        and the solver's units in a details section at the end.
        """
        ranks = [f"rank{d}" for d in range(self.pipeline.num_ranks)]

        def num(x: float | None, fmt: str) -> str:
            return "-" if x is None else format(x, fmt)

        # (header, alignment); a space-only header is a gap of two spaces between column groups
        columns = [("#", ">"), ("family", "<"), ("makespan ms", ">"), *((r, ">") for r in ranks), ("status", "<"),
                   ("bound ms", ">"), ("gap", ">"), ("bubble %", ">"), ("handcrafted", "<"), ("its ms", ">"),
                   ("fits", ">")]
        cells = []
        for i, r in enumerate(self.rows, 1):
            fits = "-" if r.handcrafted_fits is None else ("yes" if r.handcrafted_fits else "no")
            peaks = [format(g, ".2f") for g in r.peak_gib] if r.peak_gib else ["-"] * len(ranks)
            cells.append([str(i), r.family, num(r.makespan_ms, ".3f"), *peaks, r.mark, num(r.bound_ms, ".3f"),
                          "-" if r.gap is None else f"{100 * r.gap:.1f}%", num(r.bubble_pct, ".1f"),
                          r.handcrafted or "-", num(r.handcrafted_ms, ".3f"), fits])
        widths = [max(len(h), *(len(c[k]) for c in cells)) if cells else len(h) for k, (h, _) in enumerate(columns)]
        wide_after = {0, 2, 2 + len(ranks), 6 + len(ranks)}  # two spaces after #, makespan, the peaks, bubble

        def line(values: Sequence[str]) -> str:
            out = ""
            for k, (value, (_, align)) in enumerate(zip(values, columns)):
                out += format(value, f"{align}{widths[k]}")
                if k < len(columns) - 1:
                    out += "  " if k in wide_after else " "
            return out

        head = line([h for h, _ in columns])
        lines = [f"{self.pipeline}",
                 "makespan in ms; peak memory in GiB on each rank (parameters included); the solver's units below",
                 head, "-" * len(head)]
        for r, row_cells in zip(self.rows, cells):
            lines.append(line(row_cells))
            for note in _row_notes(r):
                lines.append(f"    {note}")
        lines += ["", "details:", f"  units: {self.units}",
                  "  makespan, bound and handcrafted ms are of your times, unrounded; bubble % of the rounded ones"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def metadata(self) -> dict[str, Any]:
        """What every export of this plan carries beside the problem: units, family, stages, the table, and the
        step time a run of the best plan is predicted to take (:meth:`prediction`)."""
        best = self.best
        return {
            "units": self.units.to_dict(),
            "pipeline": self.pipeline.to_dict(),
            "family": best.family if best else None,
            "runtime": self.runtime,
            "candidate": attrs.asdict(best.candidate) if best else None,
            "layers_per_stage": [list(g) for g in self.layers],
            "table": [r.to_dict() for r in self.rows],
            "prediction": self.prediction(),
        }

    def prediction(self) -> dict[str, float] | None:
        """The step time a run of the best plan is predicted to take, in ms, and its parts: the plan's makespan
        as the table shows it (its order re-timed with the pipeline's unrounded times) and the pipeline's
        ``step_overhead_ms`` (what a calibration measured a step to cost beyond its actions; 0 when not
        calibrated). None without a best plan."""
        if self.best is None or self.best.makespan_ms is None:
            return None
        overhead = self.pipeline.step_overhead_ms
        return {"makespan_ms": self.best.makespan_ms, "step_overhead_ms": overhead,
                "step_ms": self.best.makespan_ms + overhead}

    def write(self, out_dir: str | Path, *, microbatch_size: int | None = None, torchtitan_config: str | None = None,
              torchtitan_module: str = "llama3", layers_per_entry: int = 1,
              recomputation: Any = None) -> dict[str, Path]:
        """Write the best plan; return the paths by kind (see :func:`~schedsearch.plan.torchtitan.write_plan_outputs`).

        ``schedule.csv``, ``torchtitan.args`` and ``train.sh`` (torch's CSV
        runtime under torchtitan), ``trace.json``, ``gantt.png`` (with
        matplotlib), ``plan.json`` and ``plan.txt``; ``plan.txt`` ends with
        why any of them was not written. ``microbatch_size``: samples per
        micro-batch for torchtitan's batch settings (default: the
        description's ``microbatch_sizes`` when all equal, else 1).
        ``torchtitan_config``, ``torchtitan_module``, ``layers_per_entry``:
        the torchtitan model the files are for and the transformer layers
        each entry of the description stands for, checked before anything
        is written. ``recomputation``: the activation recomputation of the
        plan's configuration (a :class:`~schedsearch.plan.layers.Recomputation`),
        written as torchtitan's activation checkpointing.
        """
        from schedsearch.plan.torchtitan import write_plan_outputs

        return write_plan_outputs(self, out_dir, microbatch_size=microbatch_size, torchtitan_config=torchtitan_config,
                                  torchtitan_module=torchtitan_module, layers_per_entry=layers_per_entry,
                                  recomputation=recomputation)


#: Under a FEASIBLE row whose makespan meets the bound but whose peak memory is not proven.
PEAK_NOT_PROVEN = "makespan proven, peak memory not proven (OPTIMAL needs both; a longer time_limit_s may prove it)"


def _row_notes(row: PlanRow) -> list[str]:
    """What the table says under ``row``: which proof is open, then its note."""
    out = []
    if row.makespan_ms is not None and row.status is Status.FEASIBLE:
        if row.makespan_proven and not row.peak_proven:
            out.append(PEAK_NOT_PROVEN)
        elif row.bound_ms is not None and not row.makespan_proven:
            out.append(f"makespan not proven: within {100 * (row.gap or 0.0):.1f}% of the bound")
    if row.note:
        out.append(row.note)
    return out


def _rank_key(row: PlanRow) -> tuple:
    if row.makespan_ms is None:
        return (1, 0.0, 0.0)
    return (0, row.makespan_ms, max(row.peak_gib, default=0.0))


#: The most lines a "no plan" error gives to reasons (the rest are counted), the longest such line, the longest
#: headline, and the most characters of the whole message (its headline, the lines and the count); the error's
#: ``reasons`` keep every family's.
MAX_ERROR_FAMILIES = 4


MAX_ERROR_LINE = 240


MAX_ERROR_HEADLINE = 360


MAX_ERROR_CHARS = 560


def _per_family(headline: str, entries: Sequence[tuple[str, str]]) -> str:
    """``headline``, then one line per reason with the families it holds for (families with the same reason
    share a line): the first reasons, as many as fit in :data:`MAX_ERROR_CHARS` characters and at most
    :data:`MAX_ERROR_FAMILIES` lines of at most :data:`MAX_ERROR_LINE` characters, then a count of the rest."""
    by_reason: dict[str, list[str]] = {}
    for family, why in entries:
        by_reason.setdefault(why, []).append(family)
    reasons = list(by_reason.items())
    lines = [_cut(headline, MAX_ERROR_HEADLINE - 1) + ":"]
    for why, families in reasons[:MAX_ERROR_FAMILIES]:
        shown = len(lines) - 1
        count = len(_more(reasons, shown + 1)) + 1 if shown + 1 < len(reasons) else 0
        room = MAX_ERROR_CHARS - sum(len(x) + 1 for x in lines) - count
        if room < 60:  # the headline leaves at least that much for the first reason
            break
        lines.append(_cut(f"  {', '.join(families)}: {why}", min(MAX_ERROR_LINE, room)))
    if len(lines) - 1 < len(reasons):
        lines.append(_more(reasons, len(lines) - 1))
    return "\n".join(lines)


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 4] + " ..."


def _no_fitting_plan(headline: str, entries: Sequence[tuple[str, str]]) -> NoFittingPlanError:
    """The error of ``headline`` with its ``(family, reason)`` entries: the first few in its message
    (:func:`_per_family`), every one in its ``reasons``."""
    entries = tuple(entries)
    return NoFittingPlanError(_per_family(headline, entries), reasons=entries)


def _more(reasons: Sequence[tuple[str, Sequence[str]]], shown: int) -> str:
    """The count line of the reasons after the first ``shown``."""
    rest = reasons[shown:]
    return (f"  ... and {len(rest)} more reason{'s' if len(rest) > 1 else ''} "
            f"({sum(len(families) for _, families in rest)} families)")


@attrs.frozen(kw_only=True)
class SweepPoint:
    """One grid point of :func:`plan_sweep`: the pipeline's micro-batches, budget and families there.

    ``result`` is its :class:`PlanResult`, or None with ``error`` saying why
    (no family fits, a value the description rejects).

    Examples
    --------
    >>> from schedsearch.plan.planner import SweepPoint
    >>> SweepPoint(num_microbatches=8, memory_budget_bytes=4 * 2**30, families=("1f1b",)).label
    'm=8 budget=4 GiB families=1f1b'
    """

    num_microbatches: int
    memory_budget_bytes: int | None
    families: tuple[str, ...]
    result: PlanResult | None = attrs.field(default=None, eq=False)
    error: str = ""

    @property
    def label(self) -> str:
        budget = "none" if self.memory_budget_bytes is None else f"{self.memory_budget_bytes / GIB:g} GiB"
        return f"m={self.num_microbatches} budget={budget} families={','.join(self.families)}"

    @property
    def best(self) -> PlanRow | None:
        return None if self.result is None else self.result.best


@attrs.frozen(kw_only=True)
class SweepResult:
    """What :func:`plan_sweep` found: one :class:`SweepPoint` per grid point, in grid order.

    :meth:`table` prints one ranked table per point; :meth:`combined` one
    line per point (its best plan), failed points with their reason.
    """

    pipeline: Pipeline
    points: tuple[SweepPoint, ...]
    executor: str = "local"
    wall_time_s: float = 0.0

    @property
    def engine(self) -> str:
        """Deprecated name of :attr:`executor` (the executor that ran the candidates)."""
        warnings.warn("SweepResult.engine is deprecated: use SweepResult.executor", DeprecationWarning, stacklevel=2)
        return self.executor

    def table(self) -> str:
        """Every point's ranked table (or its error), one after the other."""
        parts = []
        for pt in self.points:
            body = pt.result.table() if pt.result is not None else f"error: {pt.error}"
            parts.append(f"== {pt.label}\n{body}")
        return "\n\n".join(parts)

    def combined(self) -> str:
        """One line per point: its best family, makespan, peak, bound and gap; failed points say why."""
        head = (f"{'#':>2}  {'grid point':<44} {'best family':<24} {'makespan ms':>11} {'bound ms':>9} {'gap':>6}  "
                f"{'max peak GiB':>12}")
        lines = [head, "-" * len(head)]
        for i, pt in enumerate(self.points, 1):
            b = pt.best
            if b is None:
                why = " ".join(line.strip() for line in pt.error.splitlines()) or "no candidate found a plan: " + "; ".join(
                    f"{r.family}: {r.mark}{' (' + r.note + ')' if r.note else ''}" for r in pt.result.rows)
                lines.append(f"{i:>2}  {pt.label:<44} -  {why}")
                continue
            gap = "-" if b.gap is None else f"{100 * b.gap:.1f}%"
            bound = "-" if b.bound_ms is None else f"{b.bound_ms:.3f}"
            lines.append(f"{i:>2}  {pt.label:<44} {b.family:<24} {b.makespan_ms:>11.3f} {bound:>9} {gap:>6}  "
                         f"{max(b.peak_gib, default=0.0):>12.2f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.combined()

