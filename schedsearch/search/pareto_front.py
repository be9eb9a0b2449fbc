"""The time-memory trade-off: Pareto fronts and memory walks.

Both work by the epsilon-constraint method on a *uniform* per-device memory
capacity ``M`` (every device of the problem gets capacity ``M``; initial
memory is kept and counts against it):

* :func:`pareto` walks ``M`` downwards. At each step it finds the least
  makespan (or longest device span) ``T*(M)`` under capacity ``M`` (a
  heuristic schedule that meets the analytic lower bound answers a step
  without a solver) and measures the peak ``P <= M`` of
  the schedule it found; since ``T*`` does not increase with ``M``,
  ``T*(P) = T*(M)``, so the next capacity to try is ``P - 1``. The walk stops
  when a search proves the capacity infeasible, or when
  :meth:`~schedsearch.problem.Problem.memory_refusal` proves that no order
  fits it (a necessary condition of the memory semantics: the initial memory,
  or a block that does not fit even after every free that may come first).
  A point ``(T, P)`` is *proven* non-dominated when ``T`` was proven optimal
  under capacity ``P`` and the next step proved that capacity ``P - 1``
  needs a longer makespan (or is infeasible).
* :func:`min_memory` finds the least uniform capacity at which a makespan
  target is still reachable (a downward walk of feasibility checks, each
  answered exactly, or stopping with the status that prevented a proof).

Memory is the device level of the problem model (initial memory plus the
running deltas and workspace), so "activations" are what the placement's
memory deltas count. Overlap declarations that cannot shorten anything are
dropped first (:func:`~schedsearch.rewrite.overlaps_redundant`): the
front is the same, the models smaller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import attrs

from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch._json import short_repr
from schedsearch.errors import InvalidOptionsError, UnsupportedFeatureError
from schedsearch.options import Rule, SearchOptions
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.rewrite import resolved_capacities, with_capacities
from schedsearch.schedule import Schedule, objective_value, peak_memory
from schedsearch.search.exact import exact_search
from schedsearch.search.run import Provenance, Run
from schedsearch.validate import validate

__all__ = ["ParetoPoint", "ParetoFront", "pareto", "MemoryWalk", "min_memory"]

#: A heuristic of :func:`pareto` and :func:`min_memory`: a plan of the step's problem, or None.
Heuristic = Callable[[Problem], Schedule | None]


def _peak(problem: Problem, schedule: Schedule) -> int:
    return max(peak_memory(problem, schedule).values())


@attrs.frozen(kw_only=True)
class ParetoPoint(SearchResult):
    """One point of a Pareto front: the search result of its step, with its peak memory.

    ``objective`` is the time objective walked (``objective_name``: the
    makespan, or the longest device span), ``lower_bound`` its proven bound
    under capacity ``capacity`` (None: unbounded), and ``problem`` the
    problem under that uniform capacity (the plan is one of its plans).
    ``peak_memory`` is the plan's worst-device peak, ``peak_per_device``
    each device's (initial memory included).

    ``proven`` is True when the objective is proven optimal under capacity
    ``peak_memory`` and a capacity of ``peak_memory - 1`` is proven to need
    a larger objective (or to be infeasible): the point is non-dominated.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> point = pareto(vshape(2, 3), time_limit_s=10)[-1]
    >>> point.objective, point.peak_memory, point.capacity, point.status.value, point.how
    (18, 1, 1, 'OPTIMAL', 'proven')
    """

    peak_memory: int = 0
    capacity: int | None = None
    proven: bool = False
    peak_per_device: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def makespan(self) -> int | None:
        """The plan's makespan (whatever the time objective walked)."""
        return None if self.schedule is None else self.schedule.makespan

    @property
    def how(self) -> str:
        """How the point was settled: ``"proven"`` (optimal under its peak and
        the next capacity proven to need longer), else the step's status."""
        return "proven" if self.proven else self.status.value.lower()

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(makespan=self.makespan, peak_memory=self.peak_memory, peak_per_device=dict(self.peak_per_device),
                 capacity=self.capacity, proven=self.proven, how=self.how)
        return d


@attrs.frozen(kw_only=True)
class ParetoFront(Sequence[ParetoPoint]):
    """Non-dominated (time, peak memory) points by decreasing memory: a sequence of :class:`ParetoPoint`.

    ``front[i]``, ``len(front)`` and ``for point in front`` work as on a
    tuple (``points`` is that tuple); ``stop_reason`` says why the walk
    stopped (``"infeasible"``, ``"capacity C holds no plan: <why>"``,
    ``"time limit"``, ``"max_points"``, ...); ``notes`` what the walk left
    out and why (a heuristic that does not apply to the problem, say).

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> front = pareto(vshape(2, 3), time_limit_s=10)
    >>> len(front), [(p.objective, p.peak_memory) for p in front]
    (2, [(12, 2), (18, 1)])
    >>> front.stop_reason.split(":")[0]
    'capacity 0 holds no plan'
    """

    points: tuple[ParetoPoint, ...] = attrs.field(converter=tuple)
    stop_reason: str
    wall_time_s: float
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    @overload
    def __getitem__(self, index: int) -> ParetoPoint: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ParetoPoint, ...]: ...

    def __getitem__(self, index: int | slice) -> ParetoPoint | tuple[ParetoPoint, ...]:
        return self.points[index]

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[ParetoPoint]:
        return iter(self.points)

    def to_dict(self) -> dict[str, Any]:
        out = {"points": [p.to_dict() for p in self.points], "stop_reason": self.stop_reason,
               "wall_time_s": self.wall_time_s}
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def __str__(self) -> str:
        name = self.points[0].objective_name.replace("_", " ") if self.points else "makespan"
        rows = [f"  {name} {p.objective:>6}  peak memory {p.peak_memory:>4}  {p.how}" for p in self.points]
        notes = "".join(f"\n  note: {text}" for text in self.notes)
        return (f"Pareto front ({name}, peak memory):\n" + "\n".join(rows) + f"\n  (stopped: {self.stop_reason})"
                + notes)


#: The objectives a front walks, and the pairs of them it takes (in either order).
_OBJECTIVES = ("makespan", "max_span", "peak_memory")
_PAIRS = "('makespan', 'peak_memory') or ('max_span', 'peak_memory')"


def pareto(
    problem: Problem,
    objectives: tuple[str, str] = ("makespan", "peak_memory"),
    *,
    max_points: int = 50,
    start_capacity: int | None = None,
    step_time_limit_s: float | None = None,
    heuristic: Heuristic | None = None,
    reduce: bool = True,
    options: SearchOptions | None = None,
    **common: Any,
) -> ParetoFront:
    """The (makespan or longest span) / peak-memory Pareto front of ``problem``.

    Parameters
    ----------
    objectives:
        ``("makespan", "peak_memory")`` or ``("max_span", "peak_memory")`` (in
        either order; ``max_span`` is the longest device span).
    max_points:
        Most points searched.
    start_capacity:
        First capacity tried (default: the problem's own capacities are
        ignored and the walk starts unbounded).
    step_time_limit_s:
        Most time one step (one capacity) may take (None: the time left of
        the whole walk).
    heuristic:
        A callable given each step's problem (uniform capacity) that returns
        a plan of it or None; a plan it returns joins the warm starts, and
        when its value equals the step's analytic lower bound the step needs
        no solver (the point is optimal by the bound). E.g. a list
        scheduler (:func:`~schedsearch.search.dualpipe.list_heuristic`).
        A heuristic that does not apply to the problem (it raises
        :class:`~schedsearch.errors.UnsupportedFeatureError`) is skipped
        with a note in the front's ``notes``: the walk is the one without
        it. One that returns anything but a plan or None raises
        :class:`~schedsearch.errors.InvalidOptionsError`.
    reduce:
        Search without the overlap declarations when they cannot improve
        anything (:func:`~schedsearch.rewrite.overlaps_redundant`);
        the front is the same and the schedules stay valid.
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions` or
        keywords of its field names); ``time_limit_s`` covers the whole
        walk; ``warm_starts`` (handcrafted plans, say) are used at a step
        when valid under its capacity. Progress phases: ``"pareto capacity
        C"`` (``"pareto capacity unbounded"`` first) and its sub-phases
        (``"pareto capacity C: exact search (cpsat)"``), each with the
        step's incumbent and bound.

    Returns
    -------
    ParetoFront
        A sequence of :class:`ParetoPoint` results (empty when the walk
        found nothing before it stopped).

    Examples
    --------
    1F1B on 2 devices, 3 micro-batches: two activations on the first device
    give the least makespan (3 + 2 - 1) x 3 = 12; one activation runs the
    micro-batches one after another, 3 x 2 x 3 = 18.

    >>> from schedsearch.placements import vshape
    >>> front = pareto(vshape(2, 3), time_limit_s=10)
    >>> [(p.objective, p.peak_memory, p.how) for p in front]
    [(12, 2, 'proven'), (18, 1, 'proven')]
    """
    run = Run.open(problem, options, common, "pareto", own={
        "max_points": (max_points, Rule.integer(1)), "start_capacity": (start_capacity, Rule.integer(0, none=True)),
        "step_time_limit_s": (step_time_limit_s, Rule.number(above=0, none=True)),
        "heuristic": (heuristic, Rule.function()), "reduce": (reduce, Rule.boolean()),
        "objectives": (objectives, attrs.evolve(Rule.choices(_OBJECTIVES, lone=False, size=2), allowed=_PAIRS)),
    })
    if set(objectives) not in ({"makespan", "peak_memory"}, {"max_span", "peak_memory"}):
        raise InvalidOptionsError(
            f"pareto: 'objectives' must be {_PAIRS}, got {tuple(objectives)!r}"
        )
    time_objective = "max_span" if "max_span" in objectives else "makespan"
    problem = problem.with_(objective=time_objective)
    run = run.on(problem)
    deadline, reporter = run.budget, run.reporter
    capacity = start_capacity
    search_problem = run.reduced if reduce else problem
    helper = _Heuristic(heuristic, "pareto")
    found: list[tuple[int, int, int | None, SearchResult]] = []
    stop = "max_points"
    while len(found) < max_points + 1:
        if deadline.expired():
            stop = "time limit"
            break
        refusal = _refusal(search_problem, capacity)
        if refusal is not None:
            stop = f"capacity {capacity} holds no plan: {refusal}"
            break
        sub = with_capacities(search_problem, capacity)
        phase = f"pareto capacity {'unbounded' if capacity is None else capacity}"
        reporter.reset(phase)
        limit = deadline.slice(1.0, cap_s=step_time_limit_s)
        # the step's searches charge this run's budget as they go
        result = _step(run.child(sub, time_limit_s=limit, prefix=phase), run.options.warm_starts, helper)
        if result.schedule is None:
            stop = "infeasible" if result.status is Status.INFEASIBLE else result.status.value.lower()
            break
        peak = _peak(sub, result.schedule)
        found.append((objective_value(result.schedule, time_objective), peak, capacity, result))
        reporter.report(incumbent=result.objective, bound=result.lower_bound)
        if peak <= 0:
            stop = "peak memory 0"
            break
        capacity = peak - 1
    points = []
    for i, (value, peak, cap, result) in enumerate(found):
        if any(v2 <= value and p2 <= peak and (v2, p2) != (value, peak) for v2, p2, *_ in found):
            continue  # dominated by another point of the walk
        if any((v2, p2) == (value, peak) for v2, p2, *_ in found[:i]):
            continue  # the same point twice
        nxt = found[i + 1] if i + 1 < len(found) else None
        next_proven = (
            stop in ("infeasible", "peak memory 0") or stop.startswith("capacity") if nxt is None
            else nxt[3].status is Status.OPTIMAL and nxt[0] > value
        )
        points.append(_point(problem, result, peak, cap, result.status is Status.OPTIMAL and bool(next_proven)))
    return ParetoFront(points=points, stop_reason=stop, wall_time_s=deadline.elapsed, notes=helper.notes)


def _refusal(problem: Problem, capacity: int | None) -> str | None:
    """Why no order of ``problem`` fits the uniform ``capacity``
    (:meth:`~schedsearch.problem.Problem.memory_refusal`, a proof), or None."""
    if capacity is None:
        return None
    return problem.memory_refusal(resolved_capacities(problem, capacity))


@attrs.define
class _Heuristic:
    """The ``heuristic`` option of a walk (``where``), asked for a plan at each step: a heuristic that does not
    apply to the problem (:class:`~schedsearch.errors.UnsupportedFeatureError`) gives none and leaves a note, so
    the walk is the one without it; an answer that is neither a plan nor None is refused."""

    heuristic: Heuristic | None
    where: str
    notes: list[str] = attrs.field(factory=list)

    def plan(self, problem: Problem) -> Schedule | None:
        if self.heuristic is None:
            return None
        try:
            found = self.heuristic(problem)
        except UnsupportedFeatureError as exc:
            text = str(exc)
            note = (f"the heuristic was skipped, it does not apply to the problem: "
                    f"{text if len(text) <= 200 else text[:197] + '...'}")
            if note not in self.notes:
                self.notes.append(note)
            return None
        if found is not None and not isinstance(found, Schedule):
            raise InvalidOptionsError(f"{self.where}: 'heuristic' must return a Schedule or None, got "
                                      f"{short_repr(found)} for problem {problem.name!r}")
        return found


def _step(run: Run, candidates: Sequence[Schedule], heuristic: _Heuristic) -> SearchResult:
    """Least objective under the capacities of ``run``'s problem: the heuristic's schedule
    when it reaches the analytic bound, else the exact search from the best
    valid candidate."""
    problem = run.problem
    clock = run.budget
    pool = list(candidates)
    found = heuristic.plan(problem)
    if found is not None:
        pool.append(found)
    warm = _best_fitting(problem, pool)
    bound = run.analytic.value
    if warm is not None and objective_value(warm, problem.objective) <= bound:
        return SearchResult(status=Status.OPTIMAL, schedule=warm, objective=objective_value(warm, problem.objective),
                            lower_bound=bound, wall_time_s=clock.elapsed, strategy="pareto",
                            stats={"analytic_bound": bound}, objective_name=problem.objective,
                            engine="heuristic" if warm is found else f"warm start {pool.index(warm)}",
                            bound_engine="analytic", problem=problem)
    if warm is not None:  # _best_fitting validated it against this very problem
        run.offer(warm, Provenance.warm_start(0), validated=True, report=False)
    return exact_search(run)


def _best_fitting(problem: Problem, candidates: Sequence[Schedule]) -> Schedule | None:
    """The best given plan that is a valid schedule of ``problem`` (a plan of
    another problem is reported invalid by the validator, never raised)."""
    best = None
    for schedule in candidates:
        if not validate(problem, schedule) and (best is None or objective_value(schedule, problem.objective)
                                                < objective_value(best, problem.objective)):
            best = schedule
    return best


def _point(problem: Problem, result: SearchResult, peak: int, capacity: int | None, proven: bool) -> ParetoPoint:
    fields = {f.name: getattr(result, f.name) for f in attrs.fields(SearchResult) if f.name != "problem"}
    fields.update(strategy="pareto", objective_name=problem.objective)
    return ParetoPoint(**fields, problem=with_capacities(problem, capacity), peak_memory=peak, capacity=capacity,
                       proven=proven, peak_per_device=peak_memory(problem, result.schedule))


@attrs.frozen(kw_only=True)
class MemoryWalk(SearchResult):
    """Result of :func:`min_memory`: a search result whose objective is the peak memory.

    ``objective`` is the least uniform capacity found at which
    ``target_makespan`` is reachable (the worst-device peak of ``schedule``),
    ``lower_bound`` that capacity when ``capacity - 1`` was proven not to
    reach the target (then the status is OPTIMAL); ``problem`` is the
    problem under that capacity. ``steps`` lists ``(capacity, status,
    makespan, how)`` with ``how`` in ``"heuristic"``, ``"warm start"``,
    ``"exact"``, ``"capacity check"``, ``"analytic bound"``.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> walk = min_memory(vshape(2, 3), 12, time_limit_s=10)
    >>> walk.objective_name, walk.capacity, walk.lower_bound, walk.proven
    ('peak_memory', 2, 2, True)
    """

    objective_name: str = "peak_memory"
    target_makespan: int = 0
    steps: tuple[tuple[int | None, str, int | None, str], ...] = attrs.field(default=(), converter=tuple)

    @property
    def capacity(self) -> int | None:
        """The least capacity found (the objective)."""
        return self.objective

    @property
    def proven(self) -> bool:
        """``capacity - 1`` was proven not to reach the target."""
        return self.status is Status.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(target_makespan=self.target_makespan, steps=[list(s) for s in self.steps])
        return d


@attrs.frozen(kw_only=True)
class _MemoryStep:
    """One capacity's step of :func:`min_memory`: its record in the walk, and the plan that answers it
    (with the engine that found it), or none (with the proof that no smaller capacity reaches the target,
    ``""`` when unproven, and the status that stops the walk)."""

    record: tuple[int | None, str, int | None, str]
    schedule: Schedule | None = None
    engine: str = ""
    proof: str = ""
    stopped: Status = Status.UNKNOWN


def _memory_step(run: Run, sub: Problem, capacity: int | None, phase: str, heuristic: _Heuristic,
                 warm: list[Schedule], target_makespan: int) -> _MemoryStep:
    """Answer one capacity: the heuristic's plan, else a warm start or an earlier step's plan within the
    target, else the analytic bound's proof that none exists, else an exact feasibility search."""
    found = heuristic.plan(sub)
    given = _best_fitting(sub, [w for w in warm if w.makespan <= target_makespan])
    if found is not None and found.makespan <= target_makespan and not validate(sub, found):
        return _MemoryStep(record=(capacity, Status.FEASIBLE.value, found.makespan, "heuristic"), schedule=found,
                           engine="heuristic")
    if given is not None:
        return _MemoryStep(record=(capacity, Status.FEASIBLE.value, given.makespan, "warm start"), schedule=given,
                           engine="warm start")
    if objective_lower_bound(sub.with_(objective="makespan")).value > target_makespan:
        # no plan of this capacity (nor of a smaller one) is that short
        return _MemoryStep(record=(capacity, Status.INFEASIBLE.value, None, "analytic bound"), proof="analytic bound")
    # the search charges this run's budget as it goes
    child = run.child(sub.with_(objective="feasibility"), time_limit_s=run.budget.slice(1.0), incumbents=False,
                      bounds=False, prefix=phase)
    result = exact_search(child, upper_bound=target_makespan)
    record = (capacity, result.status.value, result.objective, "exact")
    if result.schedule is None:
        proof = f"exact search ({result.backend})" if result.status is Status.INFEASIBLE else ""
        return _MemoryStep(record=record, proof=proof, stopped=result.status)
    return _MemoryStep(record=record, schedule=result.schedule, engine=result.engine)


def min_memory(
    problem: Problem,
    target_makespan: int,
    *,
    start_capacity: int | None = None,
    heuristic: Heuristic | None = None,
    reduce: bool = True,
    options: SearchOptions | None = None,
    **common: Any,
) -> MemoryWalk:
    """Least uniform capacity at which a makespan of at most ``target_makespan`` exists.

    Walks the capacity down from ``start_capacity`` (default: unbounded,
    then the peak of each schedule found minus one). At each step the
    ``heuristic`` (a callable as for :func:`pareto`), then the warm starts
    and the plans of earlier steps, are tried first: a valid plan within
    the target answers the step
    (feasibility needs no proof beyond the validator). Otherwise the step
    is an exact feasibility search restricted to makespans ``<=
    target_makespan``; a step that ends without an answer (TIMEOUT) stops
    the walk unproven, an INFEASIBLE one proves the last capacity found
    minimal, and so do a capacity no order fits
    (:meth:`~schedsearch.problem.Problem.memory_refusal`, step ``how``
    ``"capacity check"``) and an analytic lower bound above the target
    (``"analytic bound"``; a smaller capacity only raises it). ``reduce`` drops overlap declarations that cannot help (see
    :func:`~schedsearch.rewrite.overlaps_redundant`).

    ``options`` / ``common`` are the common settings
    (:class:`~schedsearch.options.SearchOptions` or keywords of its field
    names); ``time_limit_s`` covers the whole walk. Progress phases:
    ``"peak memory capacity C"`` and its sub-phases, the incumbent being the
    least capacity found.

    Examples
    --------
    1F1B's least makespan on 2 devices, 3 micro-batches (12) needs two
    activations on the first device, and one is proven too few (by the
    analytic bound: one activation runs the micro-batches one by one):

    >>> from schedsearch.placements import vshape
    >>> walk = min_memory(vshape(2, 3), 12, time_limit_s=10)
    >>> walk.status.value, walk.objective, walk.steps[-1]
    ('OPTIMAL', 2, (1, 'INFEASIBLE', None, 'analytic bound'))
    """
    run = Run.open(problem, options, common, "min_memory", own={
        "target_makespan": (target_makespan, Rule.integer(0)),
        "start_capacity": (start_capacity, Rule.integer(0, none=True)),
        "heuristic": (heuristic, Rule.function()), "reduce": (reduce, Rule.boolean()),
    })
    opts = run.options
    deadline, reporter = run.budget, run.reporter
    capacity = start_capacity
    best: tuple[int, Schedule, str] | None = None
    steps: list[tuple[int | None, str, int | None, str]] = []
    proof = ""  # what proved that no smaller capacity reaches the target ("" = not proven)
    stopped = Status.UNKNOWN
    warm = list(opts.warm_starts)
    search_problem = run.reduced if reduce else problem
    helper = _Heuristic(heuristic, "min_memory")
    while True:
        refusal = _refusal(search_problem, capacity)
        if refusal is not None:
            # no order fits this capacity, nor any smaller one (Problem.memory_refusal's proof)
            steps.append((capacity, Status.INFEASIBLE.value, None, "capacity check"))
            proof = "capacity check"
            break
        sub = with_capacities(search_problem, capacity)
        if deadline.expired():
            stopped = Status.TIMEOUT
            break
        phase = f"peak memory capacity {'unbounded' if capacity is None else capacity}"
        reporter.report(phase)
        step = _memory_step(run, sub, capacity, phase, helper, warm, target_makespan)
        steps.append(step.record)
        if step.schedule is None:
            proof, stopped = step.proof, step.stopped
            break
        schedule, engine = step.schedule, step.engine
        peak = _peak(sub, schedule)
        best = (peak, schedule, engine)
        reporter.report(incumbent=peak)
        warm.append(schedule)
        if peak <= 0:
            proof = "zero peak"
            break
        capacity = peak - 1
    if best is None:
        return MemoryWalk(status=Status.INFEASIBLE if proof else stopped, target_makespan=target_makespan,
                          steps=steps, wall_time_s=deadline.elapsed, strategy="min_memory", bound_engine=proof,
                          backend=opts.backend_name, problem=problem, notes=helper.notes)
    peak, schedule, engine = best
    return MemoryWalk(
        status=Status.OPTIMAL if proof else Status.FEASIBLE,
        schedule=schedule,
        objective=peak,
        lower_bound=peak if proof else None,
        target_makespan=target_makespan,
        steps=steps,
        wall_time_s=deadline.elapsed,
        strategy="min_memory",
        engine=engine,
        bound_engine=proof,
        backend=opts.backend_name,
        problem=with_capacities(problem, peak),
        notes=helper.notes,
    )
