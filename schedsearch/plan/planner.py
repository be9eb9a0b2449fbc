"""``plan(pipeline)``: search across schedule families under a memory budget.

For a :class:`~schedsearch.plan.pipeline.Pipeline` (milliseconds and bytes), the
planner

1. lists the candidate families it allows: the "loop" layout with v = 1..4
   stages per rank (1F1B, interleaved), the "v" layout (ZB-V, DualPipeV) and
   DualPipe's two opposite pipelines (each rank holds two stages' parameters:
   two parameter copies, counted against the budget), each with a full and,
   where the description gives input- and weight-gradient times, a split
   backward; DualPipe and DualPipeV with overlapped F&B pairs when
   ``fb_overlap_ms`` is given;
2. chooses the units once (:func:`~schedsearch.units.choose_units`) for
   every candidate's stage times;
3. leaves out, with the reason, each candidate that cannot fit: a rank must
   hold its parameters and one micro-batch's activations of all its stages of
   one pipeline at once in any plan (every forward of a micro-batch runs
   before its first backward);
4. runs :func:`~schedsearch.search.portfolio.solve` on each remaining candidate
   (makespan, then the worst rank's peak memory) and the handcrafted schedule
   of the same family on the same problem, through one executor
   (:mod:`schedsearch.executors`: local processes or Ray);
5. returns a :class:`PlanResult`: the ranked table and the best plan, every
   figure in milliseconds of the unrounded times (:mod:`schedsearch.plan.times`).

Memory is held as a real runtime holds it: an activation is freed when the
block that frees it ends (``free_at_end``); parameters are the ranks'
initial memory.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from schedsearch.executors import TaskStatus
from schedsearch.errors import (
    InvalidOptionsError,
    InvalidPipelineError,
    InvalidProblemError,
    NoFittingPlanError,
    SchedSearchError,
)
from schedsearch.handcrafted.families import RUNTIMES, SCHEDULES, Family, check_runtime, family as family_record
from schedsearch.handcrafted.simulate import validation_deferred
from schedsearch.options import MAX_SEED, Rule, SearchOptions, check_options
from schedsearch.plan.pipeline import (FAMILIES, Pipeline, Stage, check_integer_range, check_plan_arguments,
                                  exact_bytes, exact_memory_unit)
from schedsearch.rewrite import with_capacities
from schedsearch.problem import Problem
from schedsearch.plan.outcome import Reason
from schedsearch.plan.shares import (SEARCH_FLOOR_S, SEARCH_FLOOR_WITH_PLAN_S, ShareClock, Shares,
                                     WorkEstimate)
from schedsearch.plan.times import (CandidateTimes, candidate_times, float_below, named_times, rank_pipelines,
                                    retime_ms)
from schedsearch.result import Status
from schedsearch.schedule import Schedule, metrics
from schedsearch.units import GIB, Units, choose_units
from schedsearch.validate import validate

__all__ = ["RUNTIMES", "Candidate", "PlanRow", "PlanResult", "SweepPoint", "SweepResult", "candidates", "build_problem",
           "plan", "plan_sweep", "runtime_gap"]

@attrs.frozen(kw_only=True)
class Candidate:
    """One schedule family at one setting: ``chunks`` stages per rank, split backward or not, F&B pairs or not.

    Examples
    --------
    >>> from schedsearch.plan.planner import Candidate
    >>> Candidate(family="interleaved", chunks=2, split_backward=True).label
    'interleaved ZB v=2'
    >>> Candidate(family="dualpipe", chunks=1, split_backward=True, overlap=True).num_stages(4)
    4
    """

    family: str
    chunks: int = 1
    split_backward: bool = False
    overlap: bool = False

    @property
    def record(self) -> Family:
        """The family's record (:mod:`schedsearch.handcrafted.families`)."""
        return family_record(self.family)

    @property
    def label(self) -> str:
        return self.record.label(self.chunks, self.split_backward) + (" (F&B)" if self.overlap else "")

    @property
    def layout(self) -> str:
        """The stage-to-rank layout: ``"loop"`` or ``"v"`` (torch's styles), ``"bidirectional"`` (two pipelines)."""
        return self.record.layout

    def num_stages(self, num_ranks: int) -> int:
        return num_ranks * self.chunks

    def handcrafted_name(self) -> str | None:
        """The published schedule of the same family and backward, or None."""
        variant = next((v for v in self.record.variants if v.split_backward == self.split_backward), None)
        return variant.name if variant is not None and variant.schedule is not None else None


def runtime_gap(candidate: Candidate, runtime: str) -> str:
    """Why ``runtime`` (a key of :data:`RUNTIMES`) cannot execute plans of ``candidate``, in a user's terms; "" when it can.

    The family record answers it (:meth:`~schedsearch.handcrafted.families.Family.runtime_gap`).

    Examples
    --------
    >>> from schedsearch.plan.planner import Candidate, runtime_gap
    >>> runtime_gap(Candidate(family="dualpipe", split_backward=True), "torch")
    "needs two copies of every stage's parameters; torch's CSV runtime holds one"
    >>> runtime_gap(Candidate(family="zb-v", chunks=2, split_backward=True), "torch")
    ''
    """
    return candidate.record.runtime_gap(runtime)


def candidates(pipeline: Pipeline) -> list[Candidate]:
    """Every candidate of the pipeline's allowed families, in table order."""
    out: list[Candidate] = []
    overlap = pipeline.fb_overlap_ms is not None
    for key in pipeline.families:
        fam = family_record(key)
        out += [Candidate(family=key, chunks=v, split_backward=variant.split_backward, overlap=overlap and fam.overlap)
                for v in fam.chunks for variant in fam.variants]
    return out


def _why_not(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage] | None) -> str:
    """Why ``candidate`` cannot be planned (empty when it can be tried)."""
    P, m = pipeline.num_ranks, pipeline.num_microbatches
    n = candidate.num_stages(P)
    if stages is None:
        what = "layers" if pipeline.partition == "dp" else "stages"
        return f"needs {n} stages, the description gives {len(pipeline.stages)} {what}"
    if candidate.split_backward and not all(s.has_split for s in stages):
        return "needs input_grad_ms and weight_grad_ms for every stage (split backward)"
    fields = ("forward_ms", "input_grad_ms", "weight_grad_ms") if candidate.split_backward else ("forward_ms",)
    if candidate.record.full_backward or not candidate.split_backward:
        fields += ("backward_ms",)
    for k, s in enumerate(stages):
        zero = next((f for f in fields if getattr(s, f) == 0), None)
        if zero is not None:
            return (f"stage {k} ({s.name}) has {zero} = 0: the schedule model's blocks last at least one time "
                    f"unit, so a zero time cannot be kept (give it a positive time)")
    why = candidate.record.requires(P, m)
    if why:
        return why
    if candidate.overlap:
        longest = max(max(s.forward_ms, s.input_grad_ms, s.weight_grad_ms) for s in stages)
        if pipeline.fb_overlap_ms < longest:
            return (f"fb_overlap_ms {pipeline.fb_overlap_ms:g} is shorter than the longest forward or gradient "
                    f"block of its stages ({longest:g} ms): an overlapped pair lasts at least its longest member")
    return ""


def _memory_need(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage]) -> tuple[int, int, int, int]:
    """(rank, its parameter bytes, activation bytes it must hold at once, total) for the neediest rank."""
    pipes, _ = rank_pipelines(candidate, pipeline.num_ranks)
    worst = (0, 0, 0, -1)
    for r in range(pipeline.num_ranks):
        params = sum(stages[s].parameter_bytes for pipe in pipes for s, d in enumerate(pipe) if d == r)
        acts = max(sum(stages[s].activation_bytes for s, d in enumerate(pipe) if d == r) for pipe in pipes)
        if params + acts > worst[3]:
            worst = (r, params, acts, params + acts)
    return worst


def build_problem(pipeline: Pipeline, candidate: Candidate, stages: Sequence[Stage], units: Units, *,
                  relaxed_memory: bool = False) -> Problem:
    """The integer problem of one candidate: durations in ``units`` time units, memory in memory units.

    Its times are the candidate's (:func:`~schedsearch.plan.times.candidate_times`,
    which holds them in exact ms and this problem beside them): each
    duration is its time rounded to whole units. Activations are allocated
    by the forward and freed when the backward (or the weight gradient)
    ends; each rank starts with its parameters and may hold at most the
    budget. Transfers between stages on different ranks run on the channel
    between the two ranks, which takes ``pipeline.p2p``'s time for the
    sending stage's bytes. Memory amounts are rounded up and the budget down
    (a plan that fits in units fits in bytes); with ``relaxed_memory`` the
    other way round (amounts down, budget up: every plan that fits in bytes
    fits in units, the problem whose bounds hold for the bytes).
    """
    times = candidate_times(pipeline, candidate, stages, units)
    return times.relaxed_problem() if relaxed_memory and not times.memory_exact else times.problem


def _handcrafted(candidate: Candidate, problem: Problem) -> Schedule:
    spec = SCHEDULES[candidate.record.variant(candidate.split_backward).schedule]
    return spec.generate(problem, dict(spec.defaults))


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
class _Task:
    pipeline: Pipeline
    candidate: Candidate
    units: Units
    options: SearchOptions
    times: CandidateTimes  # the candidate's times and its integer problem, built once


@attrs.frozen(kw_only=True)
class _Outcome:
    row: PlanRow
    schedule: Schedule | None
    handcrafted: Schedule | None


def _gibs(units: Units, problem: Problem, schedule: Schedule, figures: Any = None) -> tuple[float, ...]:
    """Each rank's peak in GiB (from ``figures``, the plan's metrics, when already computed)."""
    peak = (figures or metrics(problem, schedule)).peak_memory
    return tuple(round(units.gib(peak[d]), 3) for d in problem.cluster.device_names)


def _seconds(s: float) -> str:
    """A duration in words with two significant figures: ``"0.41 ms"``, ``"12 ms"``, ``"3.4 s"``."""
    def figures(x: float) -> str:
        return f"{x:.0f}" if x >= 10 else f"{x:.2g}"

    if s >= 1.0:
        return f"{figures(s)} s"
    return f"{figures(s * 1e3)} ms" if s * 1e3 >= 0.01 else "under 0.01 ms"


def _not_drawn_note(name: str, num_tasks: int, share_s: float, spent_s: float, need_s: float) -> str:
    """Why the published ``name`` was not drawn: what the candidate's share had left against what it needed."""
    left = share_s - spent_s
    what = (f"the candidate's share of the time limit ({_seconds(share_s)}) was used up by building its problem "
            f"({num_tasks} task instances, {_seconds(spent_s)})" if left <= 0 else
            f"the candidate's share of the time limit ({_seconds(share_s)}) had {_seconds(left)} left after "
            f"building its problem ({num_tasks} task instances)")
    return (f"the published {name} was not drawn: {what}, and drawing it and proving it against the bound take "
            f"about {_seconds(need_s)} (a longer time_limit_s, or fewer candidates at once, gives it time)")


@attrs.frozen(kw_only=True)
class _Published:
    """The family's published schedule on one candidate's problem: drawn, or why not."""

    name: str | None = None
    schedule: Schedule | None = None
    fits: bool = False
    note: str = ""
    draw_s: float = 0.0  # wall seconds its drawing took


def _draw_published(candidate: Candidate, problem: Problem, clock: ShareClock, work: WorkEstimate) -> _Published:
    """The family's published schedule on ``problem``, drawn once (the row shows it, and when it fits the
    budget the search starts from it), or why it was not: not timed by the description, no time left in the
    share, a precondition of the construction not met."""
    name = candidate.handcrafted_name()
    if name is None:
        return _Published()
    if candidate.record.overlap and not candidate.overlap:
        return _Published(name=name, note=(f"no published {name} to compare with: it runs a forward and a backward "
                                           f"together, which the description does not time (give 'fb_overlap_ms')"))
    if not clock.covers(work.draw_s + work.with_published_s):
        return _Published(name=name, note=_not_drawn_note(name, work.num_tasks, clock.share_s, clock.spent_s,
                                                          work.draw_s + work.with_published_s))
    drawn_at = time.perf_counter()
    free = problem if all(d.memory is None for d in problem.cluster.devices) else with_capacities(problem, None)
    try:
        with validation_deferred():  # validated once, below, against ``problem`` itself
            hand = _handcrafted(candidate, free)
    except InvalidProblemError as exc:  # a precondition of the published construction: say which
        return _Published(name=name, note=f"no published {name} to compare with: {exc}")
    except Exception as exc:  # the construction failed on this problem: an error inside the library
        return _Published(name=name, note=(f"no published {name} to compare with: its construction failed on this "
                                           f"candidate ({type(exc).__name__}, an error inside the library)"))
    broken = validate(problem, hand)  # a plan of ``problem`` itself: no check again in the search
    other = [v for v in broken if v.kind != "memory"]
    assert not other, f"{name}: the handcrafted schedule breaks more than memory: {other[:3]}"
    return _Published(name=name, schedule=hand, fits=not broken, draw_s=time.perf_counter() - drawn_at)


def _search(problem: Problem, options: SearchOptions) -> tuple[Any, list[str]]:
    """:func:`~schedsearch.search.portfolio.solve` on one candidate's problem, and what its row must say."""
    from schedsearch.search.portfolio import ENGINES, solve

    notes = []
    try:
        result = solve(problem, options=options)
    except (KeyError, IndexError) as exc:
        # a handcrafted construction of the portfolio failed on this problem: search without them
        notes.append("the published schedules the search starts from could not be drawn for this candidate "
                     f"({type(exc).__name__}); searched without them")
        result = solve(problem, options=options, engines=[e for e in ENGINES if e != "handcrafted"])
    if result.wall_guard_hit:
        notes.append("a deterministic search hit its wall-clock guard: this row may differ on another run")
    return result, notes


def _evaluate(task: _Task) -> _Outcome:
    """Solve one candidate and run its handcrafted schedule (the executor's unit of work).

    The candidate's share of the time (:mod:`schedsearch.plan.shares`) pays
    for building its problem, drawing its published schedule (when the share
    covers it), the search, and the row's figures (reserved before the
    search starts).
    """
    from schedsearch.search.portfolio import HANDCRAFTED_S_PER_TASK, estimated_tasks

    clock = ShareClock(task.options)
    candidate, problem = task.candidate, task.times.problem
    work = WorkEstimate(num_tasks=problem.num_microbatches * len(problem.graph.blocks),
                        weighted=estimated_tasks(problem), memory_exact=task.times.memory_exact,
                        draw_s_per_task=HANDCRAFTED_S_PER_TASK)
    published = _draw_published(candidate, problem, clock, work)
    reserve = work.after_search_s
    if published.schedule is not None and work.draw_s > 0:
        # a machine slower than the estimates (a loaded one) is slower after the search too: keep the
        # reserve in proportion
        reserve *= max(1.0, published.draw_s / work.draw_s)
    options = clock.search_options(reserve, SEARCH_FLOOR_WITH_PLAN_S if published.fits else SEARCH_FLOOR_S)
    if published.fits:
        options = options.replace(warm_starts=(published.schedule,))
    result, notes = _search(problem, options)
    if published.note:
        notes.append(published.note)
    row, schedule = _figures(task, result, published, notes)
    row["wall_time_s"] = round(clock.spent_s, 3)
    return _Outcome(row=PlanRow(**row), schedule=schedule, handcrafted=published.schedule)


def _figures(task: _Task, result: Any, published: _Published,
             notes: list[str]) -> tuple[dict[str, Any], Schedule | None]:
    """The row's fields of one candidate's search and published schedule, every figure in ms of the real
    times (the plan's order re-timed, a bound on the real problem), and the plan it shows."""
    candidate, units, times = task.candidate, task.units, task.times
    problem = times.problem
    hand, name = published.schedule, published.name
    engine = f"handcrafted {name}" if hand is not None and result.schedule is hand else result.engine
    row: dict[str, Any] = {"candidate": candidate, "status": result.status, "engine": engine}
    bound = times.bound_ms(result.lower_bound)
    if bound is not None:
        row["bound_ms"] = float_below(bound)
    schedule = result.schedule  # validated by the search (every plan solve returns is)
    hand_real = hand_fig = None
    if hand is not None:
        # a published schedule is timed as soon as possible in its order (schedule_from_orders): with every
        # time exact, re-timing it with the real times gives its own times in ms
        hand_real = Fraction(hand.makespan) * times.unit_ms if times.exact() else retime_ms(hand, times)
    real = None
    if schedule is not None:
        real = hand_real if schedule is hand else retime_ms(schedule, times)
    if name is not None:
        row["handcrafted"] = name
    if hand is not None:
        hand_fig = metrics(problem, hand)
        row.update(handcrafted_ms=float(hand_real), handcrafted_peak_gib=_gibs(units, problem, hand, hand_fig),
                   handcrafted_fits=published.fits)
        if published.fits and (real is None or hand_real < real):  # the search had nothing better in time
            notes.append(f"the search found {'no plan' if real is None else 'no better plan'} in time: "
                         f"the plan is {name}'s")
            schedule, real = hand, hand_real
            row["status"] = Status.FEASIBLE
    if schedule is not None:
        fig = hand_fig if schedule is hand else metrics(problem, schedule)
        peak_proven = result.proven_levels >= 2 and schedule is result.schedule
        row.update(makespan_ms=float(real), bubble_pct=round(100 * fig.bubble_global / fig.makespan, 2),
                   peak_gib=_gibs(units, problem, schedule, fig), peak_proven=peak_proven)
        if bound is not None:
            row["gap"] = float((real - bound) / real) if real else 0.0
            row["makespan_proven"] = bound >= real
            row["status"] = Status.OPTIMAL if bound >= real and peak_proven else Status.FEASIBLE
            if bound < real and result.status is Status.OPTIMAL and schedule is result.schedule:
                notes.append(f"optimal for the times rounded to {units.time_unit_ms:g} ms units; with the real "
                             f"times within {100 * row['gap']:.2f}% of the bound")
    row["note"] = "; ".join(notes)
    return row, schedule


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
              torchtitan_module: str = "llama3", layers_per_entry: int = 1) -> dict[str, Path]:
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
        is written.
        """
        from schedsearch.plan.torchtitan import write_plan_outputs

        return write_plan_outputs(self, out_dir, microbatch_size=microbatch_size, torchtitan_config=torchtitan_config,
                                  torchtitan_module=torchtitan_module, layers_per_entry=layers_per_entry)


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


#: A keyword not given (the deprecated names' default).
_UNSET: Any = object()


def _renamed(where: str, old: str, new: str, old_value: Any, value: Any) -> Any:
    """``value``, or ``old_value`` with a DeprecationWarning when the caller used the old keyword ``old``."""
    if old_value is _UNSET:
        return value
    warnings.warn(f"{where}: {old!r} is deprecated: use {new!r}", DeprecationWarning, stacklevel=3)
    return old_value


def _parallel_of(executor: Any, parallel: int | None) -> int | None:
    """Candidates searched at once: ``parallel``, else the executor's own (its ``parallel`` attribute)."""
    if parallel is not None:
        return parallel
    if hasattr(executor, "parallel"):
        return executor.parallel
    return getattr(executor, "workers", None)  # an executor written before ``parallel``


def _check_call(where: str, pipeline: Any, runtime: Any, *, time_limit_s: Any, parallel: Any, address: Any,
                deterministic: Any, seed: Any) -> None:
    """The checks :func:`plan` and :func:`plan_sweep` make before any work: the pipeline, the options, the runtime."""
    check_plan_arguments(where, pipeline)
    check_options(where, {
        "time_limit_s": (time_limit_s, Rule.number(maximum=10**7, above=0)),
        "parallel": (parallel, Rule.integer(1, 4096, none=True)),
        "address": (address, Rule.instance(str, "an address string", none=True)),
        "deterministic": (deterministic, Rule.boolean()), "seed": (seed, Rule.integer(0, MAX_SEED)),
    })
    check_runtime(runtime)


def plan(
    pipeline: Pipeline,
    *,
    time_limit_s: float = 60.0,
    executor: Any = "local",
    parallel: int | None = None,
    address: str | None = None,
    deterministic: bool = False,
    seed: int = 0,
    runtime: str = "torch",
    progress: Callable[[str], None] | None = None,
    engine: Any = _UNSET,
    workers: Any = _UNSET,
) -> PlanResult:
    """Search every allowed schedule family for ``pipeline`` and rank the plans.

    Parameters
    ----------
    pipeline:
        The pipeline in milliseconds and bytes.
    time_limit_s:
        Wall time for the whole search; each candidate gets its share
        (``time_limit_s / ceil(candidates / parallel)``, less its part of the
        time spent before the candidates start: the rounds end within the
        limit). Its published schedule is drawn only when the share covers
        it, its proof against the bound and the row's figures (estimated per
        task instance; the row's note says when it was not), and its search
        gets the rest (:mod:`schedsearch.plan.shares`).
    executor:
        What runs the candidates' searches: ``"local"`` (processes of this
        machine), ``"ray"`` (a Ray cluster; ``address`` to join one) or an
        executor of :mod:`schedsearch.executors`. (``engine=`` is its
        deprecated name.)
    parallel:
        Candidates searched at once (default: one per CPU), each with one
        solver thread. (``workers=`` is its deprecated name: in a search's
        options ``workers`` are the solver's threads.)
    deterministic, seed:
        Each candidate's search runs one solver thread with a fixed seed.
        By default its share of the time is wall-clock time, so ``plan``
        ends within about ``time_limit_s``; a search stopped by its limit
        may then find another plan on another run or executor. With
        ``deterministic=True`` the share is read as deterministic time (the
        solver's work count: see :class:`~schedsearch.options.SearchOptions`),
        so every executor and every run gives the same table, also when
        searches stop at their limit; the wall time then depends on the
        machine (a guard of several times the share stops a runaway search,
        and the row says so).
    runtime:
        What the plan is for (a key of :data:`RUNTIMES`): ``"torch"``
        (default: torch's CSV runtime, as torchtitan runs it) makes ``best``
        the best plan it can execute, while a better plan it cannot (DualPipe's
        two parameter copies) stays in the table with the reason;
        ``"any"``: the best plan of every family.
    progress:
        Called with one line per candidate as its search finishes
        (``"[3/9] ZB-V: 104.000 ms, OPTIMAL (2.1 s)"``); the executor must
        take ``on_done`` (the local and Ray ones do).

    Returns
    -------
    PlanResult
        Its ``best`` is never None: :class:`~schedsearch.errors.NoFittingPlanError`
        is raised when no candidate can fit the budget (before any search,
        saying per family why) or none has a plan after the search (a row
        whose search found nothing in time keeps its handcrafted schedule
        when that fits). A bad value of the pipeline or of these arguments
        raises :class:`~schedsearch.errors.InvalidPipelineError` before any
        search.

    Every figure in milliseconds is of the pipeline's own (unrounded)
    times: a row's makespan is its plan's order re-timed with them
    (:func:`~schedsearch.plan.times.retime_ms`), its bound a bound on every plan with them
    (:func:`~schedsearch.plan.times.real_bound_ms`). A row is ``OPTIMAL`` when the two meet and its
    peak memory is proven least for that makespan; ``FEASIBLE`` otherwise.

    Examples
    --------
    >>> import schedsearch
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB",
    ...     families=["1f1b"], stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0,
    ...     "weight_grad_ms": 1.0, "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}] * 2)
    >>> result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1)
    >>> [(r.family, r.status.value, r.makespan_ms, r.handcrafted_ms) for r in result.rows]
    [('ZB-H1', 'OPTIMAL', 13.0, 13.0), ('1F1B', 'OPTIMAL', 15.0, 15.0)]
    >>> result.best.peak_gib  # 1 GiB of parameters and 2 activations of 1 GiB on each rank
    (3.0, 3.0)
    """
    from schedsearch.executors import get_executor

    executor = _renamed("plan", "engine", "executor", engine, executor)
    parallel = _renamed("plan", "workers", "parallel", workers, parallel)
    _check_call("plan", pipeline, runtime, time_limit_s=time_limit_s, parallel=parallel, address=address,
                deterministic=deterministic, seed=seed)
    if progress is not None and not callable(progress):
        raise InvalidOptionsError(f"plan: 'progress' must be a function of one line of text, got {progress!r}")
    t0 = time.perf_counter()
    runner = get_executor(executor, parallel=parallel, address=address)
    parallel = _parallel_of(runner, parallel)
    prepared = _prepare(pipeline, time_limit_s=time_limit_s, parallel=parallel, deterministic=deterministic,
                        seed=seed, runtime=runtime)
    more: dict[str, Any] = {}
    if progress is not None:
        more["on_done"] = _progress_lines(prepared, progress)
    timeout_s = _run_timeout([prepared], parallel=parallel, deterministic=deterministic)
    prepared = _charge_setup(prepared, time_limit_s, time.perf_counter() - t0)
    outcomes = runner.run(_evaluate, prepared.tasks, timeout_s=timeout_s, **more)
    result = _finish(prepared, outcomes, runner.name, t0)
    if result.best is None:
        raise NoFittingPlanError(_no_plan_error(result, time_limit_s))
    return result


def _no_plan_error(result: PlanResult, time_limit_s: float) -> str:
    """Why no row of ``result`` is a plan to write: the cause, then one line per family with its outcome."""
    rows = result.rows
    if any(r.makespan_ms is not None for r in rows):
        what = (f"no candidate the {result.runtime!r} runtime can execute has a plan (runtime='any' keeps the "
                f"others)")
    elif any(r.status is Status.TIMEOUT and r.reason is None for r in rows) \
            and all(r.status is Status.TIMEOUT and r.reason is None or r.reason is not None and r.reason.left_out
                    for r in rows):
        what = (f"no candidate found a plan within time_limit_s={time_limit_s:g} (each candidate's note says "
                f"what its share could not cover; a longer limit gives one)")
    else:
        what = "no candidate has a plan within the budget after the search"
    return _per_family(f"{result.pipeline}: {what}",
                       [(r.family, r.mark + (f": {r.note}" if r.note else "")) for r in rows])


#: The most lines a "no plan" error gives to families (the rest are counted), and the longest such line.
MAX_ERROR_FAMILIES = 16
MAX_ERROR_LINE = 320


def _per_family(headline: str, entries: Sequence[tuple[str, str]]) -> str:
    """``headline``, then one line per reason with the families it holds for (families with the same reason
    share a line), at most :data:`MAX_ERROR_FAMILIES` lines of at most :data:`MAX_ERROR_LINE` characters."""
    by_reason: dict[str, list[str]] = {}
    for family, why in entries:
        by_reason.setdefault(why, []).append(family)
    lines = [f"{headline}:"]
    for why, families in list(by_reason.items())[:MAX_ERROR_FAMILIES]:
        line = f"  {', '.join(families)}: {why}"
        lines.append(line if len(line) <= MAX_ERROR_LINE else line[:MAX_ERROR_LINE - 4] + " ...")
    if len(by_reason) > MAX_ERROR_FAMILIES:
        lines.append(f"  ... and {len(by_reason) - MAX_ERROR_FAMILIES} more")
    return "\n".join(lines)


def _charge_setup(prepared: _Prepared, time_limit_s: float, spent_s: float) -> _Prepared:
    """``prepared`` with each candidate's share cut for the time ``spent_s`` of the limit before any candidate
    started (:meth:`Shares.after_setup <schedsearch.plan.shares.Shares.after_setup>`). Deterministic shares are
    not cut (they must not depend on the clock)."""
    tasks = prepared.tasks
    if not tasks or any(t.options.deterministic or t.options.time_limit_s is None for t in tasks):
        return prepared
    shares = Shares(time_limit_s=time_limit_s, num_candidates=len(tasks))
    return attrs.evolve(prepared, tasks=tuple(
        attrs.evolve(t, options=t.options.replace(time_limit_s=shares.after_setup(t.options.time_limit_s, spent_s)))
        for t in tasks))


def _progress_lines(prepared: _Prepared, progress: Callable[[str], None]) -> Callable[[int, Any], None]:
    """The executor's ``on_done``: one line per finished candidate search, in the order they finish."""
    total = len(prepared.tasks)
    finished = [0]

    def on_done(index: int, outcome: Any) -> None:
        finished[0] += 1
        label = prepared.runnable[index].label
        if outcome.ok:
            row = outcome.value.row
            what = (f"{row.makespan_ms:.3f} ms, {row.mark}" if row.makespan_ms is not None
                    else f"no plan ({row.mark})")
        else:
            what = f"{outcome.status.value}: {outcome.error}"
        progress(f"[{finished[0]}/{total}] {label}: {what} ({outcome.wall_time_s:.1f} s)")

    return on_done


def _run_timeout(prepared: Sequence[Any], *, parallel: int | None, deterministic: bool) -> float:
    """Wall time an executor allows a batch of candidate searches before it reports the rest as timed out
    (:meth:`Shares.executor_timeout_s <schedsearch.plan.shares.Shares.executor_timeout_s>`).

    Each search stops at its share (wall-clock), or in deterministic mode at
    its backend's wall-clock guard (a backend without one stops at its share);
    the batch runs ``parallel`` at a time. The margin covers building
    problems, handcrafted schedules and start-up.
    """
    from schedsearch.encode.backends import Capability, get_backend, supports

    tasks = [t for p in prepared if isinstance(p, _Prepared) for t in p.tasks]
    if not tasks:
        return 60.0
    share = tasks[0].options.time_limit_s or 0.0
    backend = get_backend(tasks[0].options.solver_backend)
    guarded = deterministic and supports(backend, Capability.WALL_GUARD)
    per_task = backend.wall_guard_s(share) if guarded else 1.5 * share
    return Shares(time_limit_s=share, num_candidates=len(tasks), parallel=parallel).executor_timeout_s(per_task)


@attrs.frozen(kw_only=True)
class _Prepared:
    """One pipeline's candidates before the search: units, the rows of those left out, the tasks to run."""

    pipeline: Pipeline
    units: Units
    splits: dict[Candidate, Any]
    skipped: tuple[PlanRow, ...]
    runnable: tuple[Candidate, ...]
    tasks: tuple[_Task, ...]
    runtime: str = "torch"


def _units(pipeline: Pipeline, cands: Sequence[Candidate], splits: dict[Candidate, Any]) -> tuple[Units, list[int]]:
    """The units of every candidate's stage times and memory amounts, and the amounts (bytes) they cover."""
    staged = [split[0] for split in splits.values() if split is not None]
    if not staged:
        raise NoFittingPlanError(_per_family(f"{pipeline}: no family applies",
                                             [(c.label, _why_not(pipeline, c, None)) for c in cands]))
    times = named_times(pipeline, staged)
    amounts = [a for stages in staged for s in stages for a in (s.activation_bytes, s.parameter_bytes)]
    if pipeline.memory_budget_bytes is not None:
        amounts.append(pipeline.memory_budget_bytes)
    if not any(t > 0 for t in times.values()):
        raise InvalidPipelineError(f"{pipeline}: every stage time is 0 ms: nothing to schedule")
    units = choose_units(times, amounts, tolerance=pipeline.time_tolerance)
    check_integer_range(pipeline, times, amounts, units)
    return units, amounts


def _over_budget(pipeline: Pipeline, c: Candidate, stages: Sequence[Stage], units: Units,
                 amounts: list[int]) -> tuple[str, Units, int]:
    """Why ``c`` cannot fit the memory budget in any plan ("" when it may), the units (a finer memory unit
    when rounding up would refuse an exact fit) and the bytes its neediest rank holds at once in any plan."""
    if pipeline.memory_budget_bytes is None:
        return "", units, 0
    rank, params, acts, need = _memory_need(pipeline, c, stages)
    budget = pipeline.memory_budget_bytes
    if need > budget:  # exact bytes: an exact fit fits
        copies = " (two parameter copies)" if c.record.two_pipelines else ""
        return (f"rank {rank} holds its parameters{copies} ({exact_bytes(params)}) and one micro-batch's "
                f"activations of its stages ({exact_bytes(acts)}) at once in any {c.label} plan: "
                f"{exact_bytes(need)} > budget {exact_bytes(budget)}"), units, need
    if units.memory(params) + units.memory(acts) > units.capacity(budget):
        units = exact_memory_unit(pipeline, amounts, units)
        if units.memory(params) + units.memory(acts) > units.capacity(budget):
            return (f"rank {rank} needs {exact_bytes(need)} at once in any {c.label} plan, within the budget "
                    f"{exact_bytes(budget)} by less than the memory unit ({exact_bytes(units.memory_unit_bytes)}), "
                    f"and no exact unit keeps the amounts in range"), units, need
    return "", units, need


def _times_or_refusal(pipeline: Pipeline, c: Candidate, stages: Sequence[Stage],
                   units: Units) -> CandidateTimes | PlanRow:
    """The times of ``c`` (:func:`~schedsearch.plan.times.candidate_times`, its integer problem with them), or
    its row when the schedule model refuses that problem.

    The memory check of the problem (:meth:`~schedsearch.problem.Problem.memory_refusal`)
    is asked of the problem without a budget, so that a refusal is known as
    a memory one; any other refusal is a description the checks above let
    through, an error inside the library.
    """
    try:
        return candidate_times(pipeline, c, stages, units)
    except InvalidProblemError:
        pass
    try:
        free = build_problem(attrs.evolve(pipeline, memory_budget_bytes=None), c, stages, units)
    except InvalidProblemError:
        free = None
    budget = pipeline.memory_budget_bytes
    if free is not None and budget is not None \
            and free.memory_refusal({d: units.capacity(budget) for d in free.cluster.device_names}) is not None:
        return _row_without_plan(c, Reason.MEMORY, (
            f"no {c.label} plan keeps every rank within the budget {exact_bytes(budget)}: the schedule model proves "
            f"that a rank's parameters and the activations it must hold at once exceed it in any order (a larger "
            f"memory_budget_bytes, or a family with fewer stages per rank)"))
    return _row_without_plan(c, Reason.MODEL, (
        f"{c.label} was not searched: the description passed the planner's checks but its schedule model could not "
        f"be built from it, an error inside the library (please report it with the description)"))


def _prepare(pipeline: Pipeline, *, time_limit_s: float, parallel: int | None, deterministic: bool,
             seed: int, runtime: str = "torch") -> _Prepared:
    """Units, candidates that cannot fit (with why) and the search tasks of the others.

    Each candidate's search gets its share of ``time_limit_s``
    (:class:`~schedsearch.plan.shares.Shares`: ``parallel`` candidates
    searched at once, default 2). Raises
    :class:`~schedsearch.errors.NoFittingPlanError` when none can fit.
    """
    cands = candidates(pipeline)
    splits = {c: pipeline.stages_for(c.num_stages(pipeline.num_ranks)) for c in cands}
    units, amounts = _units(pipeline, cands, splits)
    rows: list[PlanRow] = []
    runnable: list[Candidate] = []
    needs = []  # bytes at once on the neediest rank, of the candidates over the budget
    for c in cands:
        split = splits[c]
        why = _why_not(pipeline, c, None if split is None else split[0])
        if why:
            rows.append(_row_without_plan(c, Reason.SHAPE, why))
            continue
        why, units, need = _over_budget(pipeline, c, split[0], units, amounts)
        if why:
            rows.append(_row_without_plan(c, Reason.MEMORY, why))
            if need > pipeline.memory_budget_bytes:
                needs.append(need)
        else:
            runnable.append(c)
    kept = []
    built: dict[Candidate, CandidateTimes] = {}
    for c in runnable:  # what the schedule model refuses is said here, before any search
        times_or_row = _times_or_refusal(pipeline, c, splits[c][0], units)
        if isinstance(times_or_row, CandidateTimes):
            built[c] = times_or_row
            kept.append(c)
        else:
            rows.append(times_or_row)
    runnable = kept
    if not runnable:
        fix = (f" (the least any family holds at once on a rank is {exact_bytes(min(needs))}: a memory_budget_bytes of "
               f"at least that lets its search start)" if needs else "")
        raise NoFittingPlanError(_per_family(f"no schedule family fits{fix}", [(r.family, r.note) for r in rows]))
    share = Shares(time_limit_s=time_limit_s, num_candidates=len(runnable), parallel=parallel).share_s
    options = SearchOptions(time_limit_s=share, deterministic=deterministic, seed=seed, workers=1)
    tasks = tuple(_Task(pipeline=pipeline, candidate=c, units=units, options=options, times=built[c])
                  for c in runnable)
    return _Prepared(pipeline=pipeline, units=units, splits=splits, skipped=tuple(rows), runnable=tuple(runnable),
                     tasks=tasks, runtime=runtime)


def _times_of(prepared: _Prepared, candidate: Candidate) -> CandidateTimes:
    """The times (and the integer problem) of one of ``prepared``'s candidates, as its search task holds them."""
    return next(t.times for t in prepared.tasks if t.candidate == candidate)


def _handcrafted_outcome(prepared: _Prepared, row: PlanRow) -> _Outcome | None:
    """``row`` with its handcrafted schedule as the plan, when that applies and fits the budget (else None)."""
    c, units = row.candidate, prepared.units
    times = _times_of(prepared, c)
    problem = times.problem
    try:
        hand = _handcrafted(c, with_capacities(problem, None))
    except Exception:  # a published schedule's precondition not met (or its construction failed): the row stays
        return None
    if validate(problem, hand):
        return None
    real = retime_ms(hand, times)
    fig = metrics(problem, hand)
    peaks = _gibs(units, problem, hand, fig)
    note = f"{row.note}; " if row.note else ""
    return _Outcome(row=attrs.evolve(row, status=Status.FEASIBLE, reason=None, makespan_ms=float(real),
                                     handcrafted_ms=float(real), bubble_pct=round(100 * fig.bubble_global / fig.makespan, 2),
                                     peak_gib=peaks, handcrafted_peak_gib=peaks, handcrafted_fits=True,
                                     note=f"{note}the search returned nothing: the plan is {row.handcrafted}'s"),
                    schedule=hand, handcrafted=hand)


def _finish(prepared: _Prepared, outcomes: Sequence[Any], executor: str, t0: float) -> PlanResult:
    """The ranked table and the best plan from the executor's outcomes of ``prepared.tasks``."""
    pipeline, units = prepared.pipeline, prepared.units
    rows = list(prepared.skipped)
    found: dict[PlanRow, _Outcome] = {}
    for c, o in zip(prepared.runnable, outcomes):
        if o.ok:
            rows.append(o.value.row)
            found[o.value.row] = o.value
        else:
            rows.append(_row_without_plan(c, Reason.of_task(o.status), _executor_note(o)))
    if all(r.makespan_ms is None for r in rows):
        # no search returned a plan (stopped by the executor): the handcrafted plans that fit, run here
        for i, r in enumerate(rows):
            if r.reason is not None and not r.reason.left_out and r.handcrafted is not None:
                outcome = _handcrafted_outcome(prepared, r)
                if outcome is not None:
                    rows[i] = outcome.row
                    found[outcome.row] = outcome
    ordered = sorted((r for r in rows if r.makespan_ms is not None), key=_rank_key)
    ordered += [r for r in rows if r.makespan_ms is None]
    best = next((r for r in ordered if r.makespan_ms is not None
                 and not r.candidate.record.runtime_gap(prepared.runtime)), None)
    problem = schedule = None
    stages: tuple[Stage, ...] = ()
    layers: tuple[tuple[int, ...], ...] = ()
    if best is not None:
        stages, layers = prepared.splits[best.candidate]
        problem = _times_of(prepared, best.candidate).problem
        schedule = found[best].schedule  # validated against this candidate's problem where it was found, once
    ordered = [_with_runtime_note(r, prepared.runtime, best) for r in ordered]
    best = next((r for r in ordered if best is not None and r.candidate == best.candidate), None)
    return PlanResult(pipeline=pipeline, units=units, rows=tuple(ordered), best=best, problem=problem,
                      schedule=schedule, stages=stages, layers=layers, executor=executor,
                      wall_time_s=round(time.perf_counter() - t0, 3), runtime=prepared.runtime)


def _executor_note(outcome: Any) -> str:
    """Why a candidate's search gave no answer, in the user's terms (an error inside the library says so)."""
    if outcome.status is TaskStatus.RAISED:
        return f"the search stopped on an error inside the library, please report it: {outcome.error}"
    if outcome.status is TaskStatus.TIMEOUT:
        return f"the executor stopped waiting for its search: {outcome.error}; a longer time_limit_s gives it more time"
    return outcome.error


def _with_runtime_note(row: PlanRow, runtime: str, best: PlanRow | None) -> PlanRow:
    """``row`` with why the runtime cannot execute it, when it has a plan the runtime cannot run."""
    why = row.candidate.record.runtime_gap(runtime) if row.makespan_ms is not None else ""
    if not why:
        return row
    written = "no plan of another family was found" if best is None else f"the plan written is {best.family}"
    note = f"not the plan written: {why} ({written})"
    return attrs.evolve(row, reason=Reason.RUNTIME, note=f"{note}; {row.note}" if row.note else note)


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


def _grid_values(name: str, values: Any, default: Any) -> list[Any]:
    if values is None:
        return [default]
    if isinstance(values, (str, bytes, int)) and not isinstance(values, bool):
        values = [values]
    out = list(values)
    if not out:
        raise InvalidPipelineError(f"plan_sweep: {name!r} must list at least one value, got []")
    return out


def plan_sweep(
    pipeline: Pipeline,
    *,
    num_microbatches: Sequence[int] | None = None,
    memory_budgets: Sequence[Any] | None = None,
    families: Sequence[Sequence[str] | str] | None = None,
    time_limit_s: float = 60.0,
    executor: Any = "local",
    parallel: int | None = None,
    address: str | None = None,
    deterministic: bool = False,
    seed: int = 0,
    runtime: str = "torch",
    engine: Any = _UNSET,
    workers: Any = _UNSET,
) -> SweepResult:
    """:func:`plan` over a grid of micro-batch counts, memory budgets and family sets of one pipeline.

    Every candidate of every grid point runs through one executor call
    (``executor`` and ``runtime`` as in :func:`plan`), so the points are searched in parallel;
    each point's candidates share ``time_limit_s`` as in :func:`plan`, and a
    point's table equals ``plan`` of that point with the same ``parallel``.
    A point that cannot be planned (no family fits, a value the description
    rejects) is reported with its reason; a candidate that failed or timed
    out stays in its point's table. Ctrl-C stops the executor's processes.

    Parameters
    ----------
    num_microbatches, memory_budgets, families:
        The grid's axes (default: the pipeline's own value). Budgets are
        bytes or strings such as ``"24 GiB"`` (None: no budget); a family
        entry is one family name or a list of them.

    Examples
    --------
    >>> import schedsearch
    >>> from schedsearch.plan.planner import plan_sweep
    >>> pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
    ...     stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
    ...              "parameter_bytes": "1 GiB"}] * 2)
    >>> sweep = plan_sweep(pipeline, num_microbatches=[4, 8], memory_budgets=["1.5 GiB", "4 GiB"],
    ...                    time_limit_s=10, parallel=1)
    >>> [(p.label, p.best and p.best.makespan_ms) for p in sweep.points]
    [('m=4 budget=1.5 GiB families=1f1b', None), ('m=4 budget=4 GiB families=1f1b', 15.0),
     ('m=8 budget=1.5 GiB families=1f1b', None), ('m=8 budget=4 GiB families=1f1b', 27.0)]
    >>> print(sweep.points[0].error)  # doctest: +NORMALIZE_WHITESPACE
    no schedule family fits (the least any family holds at once on a rank is 2 GiB: a memory_budget_bytes of at least
    that lets its search start):
      1F1B: rank 0 holds its parameters (1 GiB) and one micro-batch's activations of its stages (1 GiB) at once in
      any 1F1B plan: 2 GiB > budget 1.5 GiB
      ZB-H1: needs input_grad_ms and weight_grad_ms for every stage (split backward)
    """
    from schedsearch.executors import get_executor

    executor = _renamed("plan_sweep", "engine", "executor", engine, executor)
    parallel = _renamed("plan_sweep", "workers", "parallel", workers, parallel)
    _check_call("plan_sweep", pipeline, runtime, time_limit_s=time_limit_s, parallel=parallel, address=address,
                deterministic=deterministic, seed=seed)
    t0 = time.perf_counter()
    runner = get_executor(executor, parallel=parallel, address=address)
    grid = [(m, b, f) for m in _grid_values("num_microbatches", num_microbatches, pipeline.num_microbatches)
            for b in _grid_values("memory_budgets", memory_budgets, pipeline.memory_budget_bytes)
            for f in _grid_values("families", families, pipeline.families)]
    parallel = _parallel_of(runner, parallel)
    prepared: list[_Prepared | str] = []
    points: list[SweepPoint] = []
    for m, b, f in grid:
        try:
            point = attrs.evolve(pipeline, num_microbatches=m, memory_budget_bytes=b, families=f)
        except SchedSearchError as exc:  # a value the description rejects
            prepared.append(str(exc))
            points.append(SweepPoint(num_microbatches=m, memory_budget_bytes=b if isinstance(b, int) else None,
                                     families=tuple([f] if isinstance(f, str) else f)))
            continue
        try:
            prepared.append(_prepare(point, time_limit_s=time_limit_s, parallel=parallel,
                                     deterministic=deterministic, seed=seed, runtime=runtime))
        except SchedSearchError as exc:
            prepared.append(str(exc))
        points.append(SweepPoint(num_microbatches=point.num_microbatches,
                                 memory_budget_bytes=point.memory_budget_bytes, families=point.families))
    tasks = [t for p in prepared if isinstance(p, _Prepared) for t in p.tasks]
    outcomes = runner.run(_evaluate, tasks, timeout_s=_run_timeout(prepared, parallel=parallel,
                                                                       deterministic=deterministic))
    out: list[SweepPoint] = []
    k = 0
    for pt, p in zip(points, prepared):
        if isinstance(p, str):
            out.append(attrs.evolve(pt, error=p))
            continue
        result = _finish(p, outcomes[k:k + len(p.tasks)], runner.name, t0)
        k += len(p.tasks)
        out.append(attrs.evolve(pt, result=result))
    return SweepResult(pipeline=pipeline, points=tuple(out), executor=runner.name,
                       wall_time_s=round(time.perf_counter() - t0, 3))
