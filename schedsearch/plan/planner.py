"""``plan(pipeline)``: search across schedule families under a memory budget.

For a :class:`~schedsearch.plan.pipeline.Pipeline` (milliseconds and bytes), the
planner

1. lists the candidate families it allows (:mod:`schedsearch.plan.candidates`): the "loop" layout with v = 1..4
   stages per rank (1F1B, interleaved), the "v" layout (ZB-V, DualPipeV) and
   DualPipe's two opposite pipelines (each rank holds two stages' parameters:
   two parameter copies, counted against the budget), each with a full and,
   where the description gives input- and weight-gradient times, a split
   backward; DualPipe and DualPipeV with overlapped F&B pairs when
   ``fb_overlap_ms`` is given;
2. chooses the units once (:func:`~schedsearch.units.choose_units`) for
   every candidate's stage times;
3. leaves out, with a typed reason (:class:`~schedsearch.plan.outcome.Reason`),
   each candidate that does not apply or cannot fit: a rank must hold its
   parameters and one micro-batch's activations of all its stages of one
   pipeline at once in any plan (every forward of a micro-batch runs before
   its first backward);
4. runs :func:`~schedsearch.search.portfolio.solve` on each remaining candidate
   (makespan, then the worst rank's peak memory) and the handcrafted schedule
   of the same family on the same problem (:mod:`schedsearch.plan.evaluation`),
   each in its share of the time limit (:mod:`schedsearch.plan.shares`), through
   one executor (:mod:`schedsearch.executors`: local processes or Ray);
5. returns a :class:`PlanResult` (:mod:`schedsearch.plan.table`): the ranked
   table and the best plan, every figure in milliseconds of the unrounded
   times (:mod:`schedsearch.plan.times`).

Memory is held as a real runtime holds it: an activation is freed when the
block that frees it ends (``free_at_end``); parameters are the ranks'
initial memory.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import attrs

from schedsearch.deadline import checkpoint, grace_s, set_aside, stopping
from schedsearch.executors import LocalExecutor, TaskStatus

from schedsearch.errors import (
    DeadlineExceeded,
    InvalidPipelineError,
    InvalidProblemError,
    NoFittingPlanError,
    SchedSearchError,
)
from schedsearch.handcrafted.families import RUNTIMES, check_runtime
from schedsearch.heap import survivors_frozen
from schedsearch.options import MAX_SEED, Deadline, Rule, SearchOptions, check_option, check_options
from schedsearch.plan.pipeline import (Pipeline, Stage, _families as family_keys, check_integer_range,
                                       check_plan_arguments, exact_bytes, exact_memory_unit)
from schedsearch.rewrite import with_capacities
from schedsearch.plan.outcome import Reason
from schedsearch.plan.shares import (DEFAULT_PARALLEL, SEARCH_FLOOR_S, SETUP_PREPARE_SHARE, SETUP_PROPOSALS_SHARE,
                                     Shares, worker_start_s)

from schedsearch.plan.times import CandidateTimes, candidate_times, named_times, retime_ms
from schedsearch.result import Status
from schedsearch.schedule import metrics
from schedsearch.units import Units, choose_units
from schedsearch.validate import validate

# the candidates' searches run CP-SAT, in this process when the machine is too busy to start workers: loaded
# with the planner rather than inside a call's limit (its import, with numpy and pandas, cannot be stopped:
# 0.45 s of CPU, several seconds on a loaded machine)
import ortools.sat.python.cp_model  # noqa: E402,F401
from schedsearch.plan.candidates import (Candidate as Candidate, _handcrafted, _memory_need, _why_not,
                                         build_problem as build_problem, candidates as candidates,
                                         runtime_gap as runtime_gap)
from schedsearch.plan.evaluation import _evaluate, _gibs, _Outcome, _Task
from schedsearch.plan.autoplan import (Decision, LayerCandidate, LayerPlanResult, _breakdown, _pipeline, _pre_bound,
                                       _refined_bound, configuration_floor_ms, least_bound_ms, parameters_over_budget,
                                       proposed_configurations,
                                       space_floor_ms)
from schedsearch.plan.layers import Configuration, LayerModel
from schedsearch.plan.table import (PlanResult as PlanResult, PlanRow as PlanRow, SweepPoint as SweepPoint,
                                    SweepResult as SweepResult, _no_fitting_plan, _rank_key, _row_without_plan)

__all__ = ["RUNTIMES", "Candidate", "PlanRow", "PlanResult", "SweepPoint", "SweepResult", "candidates", "build_problem",
           "plan", "plan_sweep", "plan_layers", "plan_configuration", "runtime_gap"]


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


#: The ``progress`` option of the planner's entries.
_PROGRESS = Rule("a function of one line of text, or None", lambda v: v is None or callable(v))


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


@survivors_frozen()
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
        The pipeline in milliseconds and bytes; or a model in layers
        (:class:`~schedsearch.plan.layers.LayerModel`): then the split,
        micro-batching and recomputation are chosen with the schedule
        (:func:`plan_layers`, on the model's first
        pipeline degree, ``time_limit_s`` each candidate's share) and the
        result is its :class:`~schedsearch.plan.autoplan.LayerPlanResult`.
        A pipeline whose ``layers_per_entry`` says how many transformer
        layers each entry stands for is planned so too, as the model in
        layers it describes (:meth:`LayerModel.from_pipeline
        <schedsearch.plan.layers.LayerModel.from_pipeline>`, its families
        the description's), the result's ``notes`` saying what was assumed.
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
    if isinstance(pipeline, LayerModel):
        return plan_layers(pipeline, time_limit_s=time_limit_s, executor=executor, parallel=parallel,
                           address=address, deterministic=deterministic, seed=seed, runtime=runtime,
                           progress=progress)
    if isinstance(pipeline, Pipeline) and pipeline.layers_per_entry is not None:
        return _plan_entries_in_layers(pipeline, time_limit_s=time_limit_s, executor=executor, parallel=parallel,
                                       address=address, deterministic=deterministic, seed=seed, runtime=runtime,
                                       progress=progress)
    _check_call("plan", pipeline, runtime, time_limit_s=time_limit_s, parallel=parallel, address=address,
                deterministic=deterministic, seed=seed)
    check_option("plan", "progress", progress, _PROGRESS)
    call = Deadline(None if deterministic else time_limit_s)
    t0, cpu0 = call.t0, time.process_time()
    runner = get_executor(executor, parallel=parallel, address=address)
    parallel = _parallel_of(runner, parallel)
    prepared = _prepare(pipeline, time_limit_s=time_limit_s, parallel=parallel, deterministic=deterministic,
                        seed=seed, runtime=runtime)
    more: dict[str, Any] = {}
    if progress is not None:
        more["on_done"] = _progress_lines(prepared, progress)
    timeout_s = _run_timeout([prepared], parallel=parallel, deterministic=deterministic)
    prepared = _charge_setup(prepared, time_limit_s, time.perf_counter() - t0)
    if not deterministic:
        if (call.left() or 0.0) < worker_start_s(call.elapsed, time.process_time() - cpu0) \
                and isinstance(runner, LocalExecutor):
            runner, parallel = LocalExecutor(parallel=1), 1  # no time to start worker processes: in this one
        prepared, timeout_s = _measured_shares(prepared, call, parallel)
    outcomes = runner.run(_evaluate, prepared.tasks, timeout_s=timeout_s, **more)
    result = _finish(prepared, outcomes, runner.name, t0, call)
    if result.best is None:
        raise _no_plan_error(result, time_limit_s)
    return result


def _no_plan_error(result: PlanResult, time_limit_s: float) -> NoFittingPlanError:
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
    return _no_fitting_plan(f"{result.pipeline}: {what}",
                            [(r.family, r.mark + (f": {r.note}" if r.note else "")) for r in rows])


def _measured_shares(prepared: _Prepared, call: Deadline, parallel: int | None) -> tuple[_Prepared, float]:
    """``prepared`` with each candidate's share measured when it starts (the call's time left over the rounds
    left, :func:`~schedsearch.plan.evaluation._measured_share`), and the wall time the executor waits for
    the answers: the call's time left, the hard stop's grace and as much again for the answers to come back
    (each candidate stops itself at the call's end; one that does not answer by then is not waited for).
    """
    left = call.left() or 0.0
    ends_at = time.time() + left
    at_once = max(1, parallel or DEFAULT_PARALLEL)
    count = len(prepared.tasks)
    tasks = tuple(attrs.evolve(t, ends_at=ends_at, turn=(i, count, at_once)) for i, t in enumerate(prepared.tasks))
    return attrs.evolve(prepared, tasks=tasks), max(0.0, left) + 2 * grace_s(call.limit_s or 0.0)


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
    per_task = 1.5 * share
    if deterministic:  # the backend (and its solver's import) only where its guard decides
        backend = get_backend(tasks[0].options.solver_backend)
        if supports(backend, Capability.WALL_GUARD):
            per_task = backend.wall_guard_s(share)

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
        raise _no_fitting_plan(f"{pipeline}: no family applies", [(c.label, _why_not(pipeline, c, None)) for c in cands])
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
             seed: int, runtime: str = "torch", keep: Callable[[Candidate], bool] | None = None) -> _Prepared:
    """Units, candidates that cannot fit (with why) and the search tasks of the others.

    ``keep`` (None: all) chooses which of the pipeline's candidates are listed at all.

    Each candidate's search gets its share of ``time_limit_s``
    (:class:`~schedsearch.plan.shares.Shares`: ``parallel`` candidates
    searched at once, default 2). Raises
    :class:`~schedsearch.errors.NoFittingPlanError` when none can fit.
    """
    cands = [c for c in candidates(pipeline) if keep is None or keep(c)]
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
        raise _no_fitting_plan(f"no schedule family fits{fix}", [(r.family, r.note) for r in rows])
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
    except DeadlineExceeded:
        raise
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


def _finish(prepared: _Prepared, outcomes: Sequence[Any], executor: str, t0: float,
            call: Deadline | None = None) -> PlanResult:
    """The ranked table and the best plan from the executor's outcomes of ``prepared.tasks``; the handcrafted
    plans drawn here when no search returned one stop at ``call``'s hard stop (None: none)."""
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
        try:
            with stopping(call, grace=2 * grace_s(call.limit_s or 0.0) if call is not None else None):
                for i, r in enumerate(rows):
                    if r.reason is not None and not r.reason.left_out and r.handcrafted is not None:
                        outcome = _handcrafted_outcome(prepared, r)
                        if outcome is not None:
                            rows[i] = outcome.row
                            found[outcome.row] = outcome
        except DeadlineExceeded as stop:  # the rows not reached keep why they have no plan
            set_aside(stop)
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
    if pipeline.layers_per_entry is not None:
        raise InvalidPipelineError(
            f"plan_sweep: {pipeline} says its entries stand for layers (layers_per_entry): the sweep plans a "
            f"description stage by stage; plan() plans it in layers (micro-batching and families chosen there)")
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


# ------------------------------------------------------------------ a model in layers
@survivors_frozen()
def plan_layers(
    model: LayerModel,
    *,
    num_ranks: int | None = None,
    time_limit_s: float = 10.0,
    executor: Any = "local",
    parallel: int | None = None,
    address: str | None = None,
    deterministic: bool = False,
    seed: int = 0,
    runtime: str = "torch",
    prune: bool = True,
    progress: Callable[[str], None] | None = None,
    families: Sequence[str] | None = None,
    proposals: Sequence[tuple[str, Sequence[Sequence[int]]]] = (),
) -> LayerPlanResult:
    """Choose the configuration (split, stages per rank, micro-batching, recomputation) with the schedule.

    See :mod:`schedsearch.plan.autoplan` for the space and the pruning.
    ``time_limit_s`` is the whole call's (as :func:`plan`'s): the candidates
    are searched in rounds of as many as the executor runs at once, in
    increasing order of their bounds, and each round gets an equal part of
    what is left of the limit for the rounds that may still come (at least
    :data:`~schedsearch.plan.shares.SEARCH_FLOOR_S`; in deterministic mode,
    what is left is the limit less the parts already given, so the same call
    searches the same candidates on any machine). The candidates whose turn
    does not come within the limit are *not reached*: their analytic bounds
    still count in the result's bound. ``executor``, ``parallel``,
    ``address``, ``deterministic``, ``seed`` and ``runtime`` are
    :func:`~schedsearch.plan.planner.plan`'s. ``num_ranks`` is one of the
    model's pipeline degrees (default its first). ``prune=False`` searches
    every candidate (what the pruning is checked against). ``families``
    (keys of :data:`~schedsearch.plan.pipeline.FAMILIES`; default all)
    limits the search to those families; ``proposals`` are splits to search
    besides the space's own, each named by its origin (see
    :func:`~schedsearch.plan.autoplan.configurations`).

    Raises :class:`~schedsearch.errors.NoFittingPlanError` when no candidate
    of any configuration has a plan the runtime can execute.

    Examples
    --------
    >>> from schedsearch.plan.layers import LayerModel
    >>> from schedsearch.plan.planner import plan_layers
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
    ...         "checkpoint_bytes": "0.25 GiB"}]
    >>> model = LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes="5 GiB",
    ...                    layers=[{"name": "block", "repeat": 4, "measured": at1}])
    >>> result = plan_layers(model, time_limit_s=5, parallel=1, deterministic=True)
    >>> result.best.makespan_ms, result.best.configuration.label(), result.covered
    (27.0, '[1/1/1/1] on 2 ranks (loop, v=2), 4 x 1, no recomputation', True)
    >>> result.searched, result.pruned, result.skipped, result.bound_ms
    (1, 9, 6, 27.0)
    """
    from schedsearch.executors import get_executor

    num_ranks = _check_layers_call(model, num_ranks=num_ranks, time_limit_s=time_limit_s, parallel=parallel,
                                   address=address, deterministic=deterministic, seed=seed, runtime=runtime,
                                   prune=prune, progress=progress)
    t0, cpu0 = time.perf_counter(), time.process_time()
    runner = get_executor(executor, parallel=parallel, address=address)
    at_once = _parallel_of(runner, parallel) or os.cpu_count() or 1  # candidates per round, as the executor runs them
    families = None if families is None else family_keys(families)  # checked as a description's
    # the setup's parts of a wall-clock limit (none in deterministic mode: the same space on every machine)
    with stopping(Deadline(SETUP_PROPOSALS_SHARE * time_limit_s, deterministic=deterministic), grace=0.0):
        configs, whole, cut = proposed_configurations(model, num_ranks, runtime=runtime, families=families,
                                                      proposals=proposals)
    space = _LayerSpace.prepare(model, configs, time_limit_s=time_limit_s, deterministic=deterministic, seed=seed,
                                runtime=runtime, families=families, t0=t0)
    space.cut_proposals = cut
    rounds = _Rounds(space=space, runner=runner, at_once=at_once, time_limit_s=time_limit_s,
                     deterministic=deterministic, prune=prune, runtime=runtime, progress=progress, t0=t0,
                     cpu0=cpu0)
    rounds.run()
    return _layer_result(model, num_ranks, space, rounds, covered=whole, num_configurations=len(configs),
                         executor=runner.name, runtime=runtime, t0=t0)


def _plan_entries_in_layers(pipeline: Pipeline, **options: Any) -> LayerPlanResult:
    """:func:`plan` of a description whose entries stand for ``layers_per_entry`` layers: its model in layers
    planned with the description's families, its own split among those searched, the result noting what the
    reading assumed."""
    from schedsearch.plan.layers import entry_notes, entry_proposals

    _check_call("plan", pipeline, options["runtime"], **{k: options[k] for k in (
        "time_limit_s", "parallel", "address", "deterministic", "seed")})
    model = LayerModel.from_pipeline(pipeline)
    result = plan_layers(model, families=pipeline.families, proposals=entry_proposals(pipeline), **options)
    return attrs.evolve(result, notes=(*entry_notes(pipeline), *result.notes))


def _check_layers_call(model: Any, *, num_ranks: Any, time_limit_s: Any, parallel: Any, address: Any,
                       deterministic: Any, seed: Any, runtime: Any, prune: Any, progress: Any) -> int:
    """:func:`plan_layers`'s arguments checked before any work; the pipeline degree to plan for."""
    if not isinstance(model, LayerModel):
        raise InvalidPipelineError(f"plan_layers: 'model' must be a LayerModel (LayerModel.load reads one), got "
                                   f"{type(model).__name__}")
    check_options("plan_layers", {
        "time_limit_s": (time_limit_s, Rule.number(maximum=10**7, above=0)),
        "parallel": (parallel, Rule.integer(1, 4096, none=True)),
        "address": (address, Rule.instance(str, "an address string", none=True)),
        "deterministic": (deterministic, Rule.boolean()), "seed": (seed, Rule.integer(0, MAX_SEED)),
        "prune": (prune, Rule.boolean()),
    })
    check_runtime(runtime)
    check_option("plan_layers", "progress", progress, _PROGRESS)
    if num_ranks is None:
        return model.num_ranks[0]
    if isinstance(num_ranks, bool) or num_ranks not in model.num_ranks:
        raise InvalidPipelineError(f"plan_layers: 'num_ranks' must be one of the model's pipeline degrees "
                                   f"{list(model.num_ranks)}, got {num_ranks!r}")
    return num_ranks


@attrs.define
class _LayerSpace:
    """The candidates of a model in layers before the search: those that cannot run (as entries), and the
    search tasks of the others with their analytic bounds in ms, in the order they are searched (least bound
    first)."""

    entries: list[LayerCandidate]
    waiting: list[tuple[Fraction, Configuration, _Task]]
    prepared_of: dict[Configuration, tuple[_Prepared, tuple[str, ...]]]
    #: configurations a wall-clock limit left unprepared (not reached, their floors counted), and split
    #: proposals it cut before they were made
    unprepared: int = 0
    cut_proposals: int = 0

    @classmethod
    def prepare(cls, model: LayerModel, configs: Sequence[tuple[Configuration, tuple[str, ...]]], *,
                time_limit_s: float, deterministic: bool, seed: int, runtime: str,
                families: Sequence[str] | None = None, t0: float | None = None) -> _LayerSpace:
        """The candidates of ``configs``, prepared in increasing order of their configuration's floor
        (:func:`~schedsearch.plan.autoplan.configuration_floor_ms`) within
        :data:`~schedsearch.plan.shares.SETUP_PREPARE_SHARE` of a wall-clock limit (counted from ``t0``; the
        first within the whole limit); the search order and the table do not depend on where that ends."""
        start = time.perf_counter() if t0 is None else t0
        setup = Deadline(SETUP_PREPARE_SHARE * time_limit_s, deterministic=deterministic)
        call = Deadline(time_limit_s, deterministic=deterministic)
        setup.t0 = call.t0 = start
        floors = [configuration_floor_ms(model, config) for config, _ in configs]
        per_config: list[list[LayerCandidate]] = [[] for _ in configs]
        waiting: list[tuple[Fraction, int, int, Configuration, _Task]] = []
        prepared_of: dict[Configuration, tuple[_Prepared, tuple[str, ...]]] = {}
        order = sorted(range(len(configs)), key=lambda k: (floors[k], k))
        unprepared = 0
        for pos, k in enumerate(order):
            config, origins = configs[k]
            keep = {(c.family, c.chunks, c.split_backward) for c in _variant_candidates(config, families)}
            over = parameters_over_budget(model, config)
            if over is not None:  # no plan of it fits: skipped as one that none does
                per_config[k] = [LayerCandidate(configuration=config, origins=origins, outcome=Decision.SKIPPED,
                                                candidate=c, note=over) for c in _variant_candidates(config, families)]
                continue
            try:
                with stopping(setup if prepared_of else call, grace=0.0 if prepared_of else None):
                    checkpoint()
                    prepared = _prepare(_pipeline(model, config), time_limit_s=time_limit_s, parallel=None,
                                        deterministic=deterministic, seed=seed, runtime=runtime,
                                        keep=lambda c: (c.family, c.chunks, c.split_backward) in keep)
                    bounds = [_pre_bound(task.times) for task in prepared.tasks]
            except NoFittingPlanError as exc:
                why = str(exc).splitlines()[0]
                per_config[k] = [LayerCandidate(configuration=config, origins=origins, outcome=Decision.SKIPPED,
                                                candidate=c, note=why) for c in _variant_candidates(config, families)]
                continue
            except DeadlineExceeded as exc:
                set_aside(exc)
                del exc
                for j in order[pos:]:
                    config, origins = configs[j]
                    per_config[j] = [LayerCandidate(
                        configuration=config, origins=origins, outcome=Decision.NOT_REACHED, candidate=c,
                        bound_ms=float(floors[j]),
                        note=f"the time limit of {time_limit_s:g} s ended before its configuration was prepared "
                             f"(its floor counts)") for c in _variant_candidates(config, families)]
                unprepared = len(order) - pos
                break
            per_config[k] = [LayerCandidate(configuration=config, origins=origins, candidate=row.candidate,
                                            outcome=Decision.SKIPPED, note=row.note) for row in prepared.skipped]
            prepared_of[config] = (prepared, origins)
            waiting += [(bound, k, i, config, task) for i, (bound, task) in enumerate(zip(bounds, prepared.tasks))]
        waiting.sort(key=lambda w: w[:3])
        return cls(entries=[e for entries in per_config for e in entries],
                   waiting=[(b, c, t) for b, _, _, c, t in waiting], prepared_of=prepared_of, unprepared=unprepared)

    def entry(self, config: Configuration, candidate: Candidate, outcome: Decision, **fields: Any) -> LayerCandidate:
        return LayerCandidate(configuration=config, origins=self.prepared_of[config][1], candidate=candidate,
                              outcome=outcome, **fields)


def _variant_candidates(config: Configuration, families: Sequence[str] | None) -> list[Candidate]:
    """The candidates of ``config``: each (family, variant) torchtitan runs with its recomputation, of
    ``families`` (None: all)."""
    return [Candidate(family=f.key, chunks=config.stages_per_rank, split_backward=v.split_backward)
            for f, v in config.torchtitan_variants() if families is None or f.key in families]


@attrs.define
class _Rounds:
    """The search of a :class:`_LayerSpace`: rounds of ``at_once`` candidates within the whole call's limit,
    pruned by the best plan found so far (see :func:`plan_layers`)."""

    space: _LayerSpace
    runner: Any
    at_once: int
    time_limit_s: float
    deterministic: bool
    prune: bool
    runtime: str
    progress: Callable[[str], None] | None
    t0: float
    cpu0: float = attrs.Factory(time.process_time)  # the process's CPU seconds when the call started
    start_s: float = 0.0  # a worker process's start, measured over the setup (this process working alone)
    best_ms: float | None = None
    given_s: float = 0.0
    searched: list[tuple[Configuration, _Task, Any, Fraction]] = attrs.Factory(list)
    decided: list[LayerCandidate] = attrs.Factory(list)

    def share_s(self, undecided: int) -> float | None:
        """The share of each search of the next round, or None when the limit leaves no round its floor."""
        spent = self.given_s if self.deterministic else time.perf_counter() - self.t0
        left = self.time_limit_s - spent
        if left < SEARCH_FLOOR_S and self.searched:
            return None
        rounds_left = math.ceil(undecided / self.at_once)
        return max(left / rounds_left, min(SEARCH_FLOOR_S, self.time_limit_s))

    def run(self) -> None:
        self.start_s = worker_start_s(time.perf_counter() - self.t0, time.process_time() - self.cpu0)
        if not isinstance(self.runner, LocalExecutor):
            self._run()
            return
        local = self.runner
        with local.session() as pooled:  # the rounds share one set of worker processes
            self.runner = pooled
            try:
                self._run()
            finally:
                self.runner = local

    def _run(self) -> None:
        waiting, k = self.space.waiting, 0
        while k < len(waiting):
            batch: list[tuple[Fraction, Configuration, _Task]] = []
            while k < len(waiting) and len(batch) < self.at_once:
                bound, config, task = waiting[k]
                k += 1
                if self.prune and self.best_ms is not None and bound < self.best_ms:
                    bound = _refined_bound(task.times, bound)
                if self.prune and self.best_ms is not None and bound >= self.best_ms:
                    self.decided.append(self.space.entry(
                        config, task.candidate, Decision.PRUNED, bound_ms=float(bound),
                        note=f"its bound {float(bound):.3f} ms is not below the best plan found before it "
                             f"({self.best_ms:.3f} ms)"))
                    continue
                batch.append((bound, config, task))
            if not batch:
                break
            share = self.share_s(len(batch) + len(waiting) - k)
            if share is None:
                self.decided += [self.space.entry(c, t.candidate, Decision.NOT_REACHED, bound_ms=float(b),
                                                  note=f"the time limit of {self.time_limit_s:g} s ended before its "
                                                       f"turn (its bound counts)")
                                 for b, c, t in batch + waiting[k:]]
                return
            self.search(batch, share)

    def search(self, batch: list[tuple[Fraction, Configuration, _Task]], share: float) -> None:
        tasks = [attrs.evolve(t, options=t.options.replace(time_limit_s=share)) for _, _, t in batch]
        self.given_s += share
        timeout = _run_timeout([attrs.evolve(self.space.prepared_of[c][0], tasks=(t,)) for (_, c, _), t
                                in zip(batch, tasks)], parallel=self.at_once, deterministic=self.deterministic)
        runner = self.runner
        if not self.deterministic:  # each search stops itself at the call's end; its answer is not waited for
            left = self.time_limit_s - (time.perf_counter() - self.t0)
            tasks = [attrs.evolve(t, ends_at=time.time() + left) for t in tasks]
            timeout = min(timeout, max(0.0, left) + 2 * grace_s(self.time_limit_s))
            if left < self.start_s and getattr(runner, "workers_running", True) is False:
                runner = LocalExecutor(parallel=1)  # no time to start worker processes (none running): in this one
        outcomes = runner.run(_evaluate, tasks, timeout_s=timeout)

        for (bound, config, _), task, outcome in zip(batch, tasks, outcomes):
            self.searched.append((config, task, outcome, bound))
            row = outcome.value.row if outcome.ok else None
            if row is not None and row.makespan_ms is not None and not row.candidate.record.runtime_gap(self.runtime) \
                    and (self.best_ms is None or row.makespan_ms < self.best_ms):
                self.best_ms = row.makespan_ms
            if self.progress is not None:
                what = "no plan" if row is None or row.makespan_ms is None else f"{row.makespan_ms:.3f} ms"
                self.progress(f"[{len(self.searched)}/{len(self.space.waiting)}] {task.candidate.label} on "
                              f"{config.label()}: {what}")


def _layer_result(model: LayerModel, num_ranks: int, space: _LayerSpace, rounds: _Rounds, *, covered: bool,
                  num_configurations: int, executor: str, runtime: str, t0: float) -> LayerPlanResult:
    """The ranked candidates, the winner with its configuration's table, the runner-up and the bound."""
    entries = space.entries + rounds.decided
    for config, task, outcome, bound in rounds.searched:
        row = outcome.value.row if outcome.ok else None
        entries.append(space.entry(
            config, task.candidate, Decision.SEARCHED, bound_ms=float(bound), row=row,
            breakdown=_breakdown(model, config, row) if row is not None and row.makespan_ms is not None else None,
            note="" if outcome.ok else outcome.error))
    entries.sort(key=_layer_rank)
    runnable = [c for c in entries if c.makespan_ms is not None and not c.candidate.record.runtime_gap(runtime)]
    best = runnable[0] if runnable else None
    runner_up = runnable[1] if len(runnable) > 1 else min(
        (c for c in entries if c.outcome in (Decision.PRUNED, Decision.NOT_REACHED)), key=lambda c: c.bound_ms,
        default=None)  # every other candidate unsearched: the one with the least bound, which it costs at least
    result = None
    if best is not None:
        prepared = space.prepared_of[best.configuration][0]
        done = [(t, o) for c, t, o, _ in rounds.searched if c == best.configuration]
        sub = attrs.evolve(prepared, runnable=tuple(t.candidate for t, _ in done), tasks=tuple(t for t, _ in done))
        result = _finish(sub, [o for _, o in done], executor, t0)
    bound = least_bound_ms(entries)
    notes = []
    if space.cut_proposals:
        notes.append(f"the time limit of {rounds.time_limit_s:g} s ended {space.cut_proposals} split proposals "
                     f"(balanced DP, torchtitan's, auto_partition's, AdaPipe's) before they were made: a longer "
                     f"limit searches their configurations too")
    if space.unprepared:
        notes.append(f"the time limit of {rounds.time_limit_s:g} s ended before {space.unprepared} configurations "
                     f"were prepared for their search: their candidates are not reached, bounded by their floors")
    out = LayerPlanResult(model=model, num_ranks=num_ranks, candidates=tuple(entries), best=best,
                          runner_up=runner_up, result=result, bound_ms=bound,
                          space_bound_ms=bound if covered else space_floor_ms(model, num_ranks, runtime=runtime),
                          covered=covered, num_configurations=num_configurations, executor=executor,
                          wall_time_s=round(time.perf_counter() - t0, 3), notes=tuple(notes), runtime=runtime)
    if best is None:
        raise NoFittingPlanError(f"{model}: no configuration on {num_ranks} ranks has a plan the {runtime!r} runtime "
                                 f"can execute ({out.searched} candidates searched, {out.skipped} skipped, "
                                 f"{out.not_reached} not reached within the time limit: "
                                 f"{next((c.note for c in entries if c.note), '')})")
    return out


def _layer_rank(c: LayerCandidate) -> tuple:
    if c.row is not None and c.row.makespan_ms is not None:
        return (0, *_rank_key(c.row)[:2], c.configuration.label())
    return (1, c.bound_ms if c.bound_ms is not None else math.inf, c.configuration.label())


def plan_configuration(model: LayerModel, configuration: Configuration, candidate: Candidate, *,
                       time_limit_s: float = 10.0, deterministic: bool = False, seed: int = 0) -> PlanRow:
    """One configuration planned for one family variant, in this process: the row the planner gives it (the
    same times, search and memory rules as :func:`plan_layers`), or its row without a plan and why.

    Examples
    --------
    >>> from schedsearch.plan.layers import Configuration, LayerModel
    >>> from schedsearch.plan.planner import Candidate, plan_configuration
    >>> at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    >>> model = LayerModel(global_batch=4, num_ranks=2, layers=[{"name": "block", "repeat": 4, "measured": at1}])
    >>> config = Configuration.from_boundaries([2, 2], num_ranks=2, microbatch_size=1, num_microbatches=4)
    >>> plan_configuration(model, config, Candidate(family="1f1b"), time_limit_s=5, deterministic=True).makespan_ms
    30.0
    """

    if not isinstance(candidate, Candidate):
        raise InvalidPipelineError(f"plan_configuration: 'candidate' must be a Candidate, got {type(candidate).__name__}")
    pipeline = _pipeline(model, configuration)
    if candidate.family not in pipeline.families:
        raise InvalidPipelineError(f"plan_configuration: {configuration} runs families {list(pipeline.families)}, "
                                   f"not {candidate.family!r}")
    try:
        prepared = _prepare(pipeline, time_limit_s=time_limit_s, parallel=None, deterministic=deterministic,
                            seed=seed, keep=lambda c: c == candidate)
    except NoFittingPlanError as exc:  # left out before any search: for its shape, else its memory
        why = _why_not(pipeline, candidate, pipeline.stages)
        return _row_without_plan(candidate, Reason.SHAPE if why else Reason.MEMORY,
                                 why or str(exc).splitlines()[-1].strip())
    if prepared.skipped:
        return prepared.skipped[0]
    task = prepared.tasks[0]
    return _evaluate(attrs.evolve(task, options=task.options.replace(time_limit_s=time_limit_s))).row
