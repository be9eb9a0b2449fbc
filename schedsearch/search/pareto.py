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
  when the capacity no longer fits a block or the problem becomes infeasible.
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

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from schedsearch.encode.base import Backend
from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.rewrite import reduced_problem, with_capacities
from schedsearch.schedule import Schedule, objective_value, peak_memory
from schedsearch.search.optimal import optimal

__all__ = ["ParetoPoint", "ParetoFront", "pareto", "MemoryWalk", "min_memory"]


def _peak(problem: Problem, schedule: Schedule) -> int:
    return max(peak_memory(problem, schedule).values())


@attrs.frozen(kw_only=True)
class ParetoPoint:
    """One non-dominated schedule: its time objective, its peak memory and the proof.

    ``value`` is the objective walked (``objective``: the makespan, or the
    longest device span); ``makespan`` is the schedule's makespan either way.

    ``proven`` is True when the makespan is proven optimal under capacity
    ``peak_memory`` and a capacity of ``peak_memory - 1`` is proven to need
    a longer makespan (or to be infeasible).
    """

    makespan: int
    peak_memory: int
    capacity: int | None
    schedule: Schedule
    result: SearchResult
    proven: bool
    #: peak memory of each device (the schedule's own, initial memory included)
    peak_per_device: Mapping[str, int] = attrs.field(factory=dict)
    #: the time objective walked and its value
    objective: str = "makespan"
    value: int | None = None

    @property
    def how(self) -> str:
        """How the point was settled: ``"proven"`` (optimal under its peak and
        the next capacity proven to need longer), else the search status."""
        return "proven" if self.proven else self.result.status.value.lower()

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "value": self.value,
            "makespan": self.makespan,
            "peak_memory": self.peak_memory,
            "peak_per_device": dict(self.peak_per_device),
            "capacity": self.capacity,
            "status": self.result.status.value,
            "lower_bound": self.result.lower_bound,
            "proven": self.proven,
            "how": self.how,
            "strategy": self.result.strategy,
            "wall_time_s": self.result.wall_time_s,
        }


@attrs.frozen(kw_only=True)
class ParetoFront:
    """Non-dominated (makespan, peak memory) points, by decreasing memory."""

    points: tuple[ParetoPoint, ...]
    #: why the walk stopped ("infeasible", "block does not fit", "timeout", "max_points", ...)
    stop_reason: str
    wall_time_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"points": [p.to_dict() for p in self.points], "stop_reason": self.stop_reason,
                "wall_time_s": self.wall_time_s}

    def __str__(self) -> str:
        name = self.points[0].objective.replace("_", " ") if self.points else "makespan"
        rows = [f"  {name} {p.value:>6}  peak memory {p.peak_memory:>4}  {p.how}" for p in self.points]
        return f"Pareto front ({name}, peak memory):\n" + "\n".join(rows) + f"\n  (stopped: {self.stop_reason})"


def pareto(
    problem: Problem,
    objectives: tuple[str, str] = ("makespan", "peak_memory"),
    *,
    backend: str | Backend = "cpsat",
    time_limit_s: float | None = 60.0,
    total_time_limit_s: float | None = None,
    max_points: int = 50,
    start_capacity: int | None = None,
    warm_starts: Iterable[Schedule] | Mapping[Any, Schedule] | None = None,
    heuristic: Callable[[Problem], Schedule | None] | None = None,
    reduce: bool = True,
    progress: Callable[[ParetoPoint], None] | None = None,
    **options: Any,
) -> ParetoFront:
    """The (makespan or longest span) / peak-memory Pareto front of ``problem``.

    Parameters
    ----------
    objectives:
        ``("makespan", "peak_memory")`` or ``("max_span", "peak_memory")`` (in
        either order; ``max_span`` is the longest device span).
    time_limit_s:
        Limit of each exact step.
    total_time_limit_s:
        Limit of the whole walk (None: no limit beyond the per-step ones).
    start_capacity:
        First capacity tried (default: the problem's own capacities are
        ignored and the walk starts unbounded).
    warm_starts:
        Schedules (e.g. handcrafted ones) tried as warm starts: a schedule is
        used at a step when it is valid under the step's capacity.
    heuristic:
        Called with each step's problem (uniform capacity); a schedule it
        returns joins the warm starts, and when its value equals the
        step's analytic lower bound the step needs no solver (the point is
        optimal by the bound). E.g. a list scheduler
        (:func:`~schedsearch.search.scale.best_list_schedule`).
    reduce:
        Search without the overlap declarations when they cannot improve
        anything (:func:`~schedsearch.rewrite.overlaps_redundant`);
        the front is the same and the schedules stay valid.
    options:
        Passed to :func:`~schedsearch.search.optimal` (seed, workers, ...).
    """
    if len(objectives) != 2 or set(objectives) not in ({"makespan", "peak_memory"}, {"max_span", "peak_memory"}):
        raise ValueError(
            f"pareto: 'objectives' must be ('makespan', 'peak_memory') or ('max_span', 'peak_memory'), "
            f"got {tuple(objectives)!r}"
        )
    time_objective = "max_span" if "max_span" in objectives else "makespan"
    problem = problem.with_(objective=time_objective)
    t0 = time.perf_counter()
    capacity = start_capacity
    search_problem = reduced_problem(problem) if reduce else problem
    candidates = _schedules(warm_starts)
    found: list[tuple[int, int, int | None, Schedule, SearchResult]] = []
    stop = "max_points"
    while len(found) < max_points + 1:
        remaining = None if total_time_limit_s is None else total_time_limit_s - (time.perf_counter() - t0)
        if remaining is not None and remaining <= 0:
            stop = "total time limit"
            break
        try:
            sub = with_capacities(search_problem, capacity)
        except InvalidProblemError:
            stop = f"capacity {capacity} does not fit a block"
            break
        limit = time_limit_s if remaining is None else min(x for x in (time_limit_s, remaining) if x is not None)
        result = _step(sub, candidates, heuristic, backend=backend, time_limit_s=limit, **options)
        if result.schedule is None:
            stop = "infeasible" if result.status is Status.INFEASIBLE else result.status.value.lower()
            break
        peak = _peak(sub, result.schedule)
        found.append((objective_value(result.schedule, time_objective), peak, capacity, result.schedule, result))
        if progress is not None:
            progress(_point(sub, found, len(found) - 1, False))
        if peak <= 0:
            stop = "peak memory 0"
            break
        capacity = peak - 1
    points = []
    for i, (value, peak, cap, schedule, result) in enumerate(found):
        if any(v2 <= value and p2 <= peak and (v2, p2) != (value, peak) for v2, p2, *_ in found):
            continue  # dominated by another point of the walk
        if any((v2, p2) == (value, peak) for v2, p2, *_ in found[:i]):
            continue  # the same point twice
        nxt = found[i + 1] if i + 1 < len(found) else None
        next_proven = (
            stop == "infeasible" or stop.startswith("capacity") if nxt is None
            else nxt[4].status is Status.OPTIMAL and nxt[0] > value
        )
        points.append(_point(problem, found, i, result.status is Status.OPTIMAL and bool(next_proven)))
    return ParetoFront(points=tuple(points), stop_reason=stop, wall_time_s=time.perf_counter() - t0)


def _schedules(warm_starts: Iterable[Schedule] | Mapping[Any, Schedule] | None) -> list[Schedule]:
    if warm_starts is None:
        return []
    if isinstance(warm_starts, Mapping):
        return list(warm_starts.values())
    return list(warm_starts)


def _step(
    problem: Problem,
    candidates: list[Schedule],
    heuristic: Callable[[Problem], Schedule | None] | None,
    **options: Any,
) -> SearchResult:
    """Least objective under ``problem``'s capacities: the heuristic's schedule
    when it reaches the analytic bound, else the exact search from the best
    valid candidate."""
    from schedsearch.bounds.analytic import objective_lower_bound

    t0 = time.perf_counter()
    pool = list(candidates)
    if heuristic is not None:
        found = heuristic(problem)
        if found is not None:
            pool.append(found)
    warm = _best_fitting(problem, pool)
    bound = objective_lower_bound(problem).value
    if warm is not None and objective_value(warm, problem.objective) <= bound:
        return SearchResult(status=Status.OPTIMAL, schedule=warm, objective=objective_value(warm, problem.objective),
                            lower_bound=bound, wall_time_s=time.perf_counter() - t0, backend="",
                            strategy="heuristic + analytic bound", stats={"analytic_bound": bound},
                            objective_name=problem.objective)
    return optimal(problem, warm_start=warm, **options)


def _best_fitting(problem: Problem, candidates: list[Schedule]) -> Schedule | None:
    """The shortest given warm start that is a valid schedule of ``problem``."""
    from schedsearch.validate import validate

    best = None
    for schedule in candidates:
        try:
            ok = not validate(problem, schedule)
        except Exception:  # a schedule of another problem: not usable here
            ok = False
        if ok and (best is None or objective_value(schedule, problem.objective)
                   < objective_value(best, problem.objective)):
            best = schedule
    return best


def _point(problem: Problem, found: list, i: int, proven: bool) -> ParetoPoint:
    value, peak, cap, schedule, result = found[i]
    return ParetoPoint(makespan=schedule.makespan, peak_memory=peak, capacity=cap, schedule=schedule, result=result,
                       proven=proven, peak_per_device=peak_memory(problem, schedule), objective=problem.objective,
                       value=value)


@attrs.frozen(kw_only=True)
class MemoryWalk:
    """Result of :func:`min_memory`.

    ``capacity`` is the least capacity found at which ``target_makespan`` is
    reachable (with ``schedule``); ``proven`` says that ``capacity - 1`` was
    proven not to reach it. ``steps`` lists ``(capacity, status, makespan, how)``.
    """

    target_makespan: int
    capacity: int | None
    schedule: Schedule | None
    proven: bool
    steps: tuple[tuple[int | None, str, int | None, str], ...]
    wall_time_s: float


def min_memory(
    problem: Problem,
    target_makespan: int,
    *,
    start_capacity: int | None = None,
    backend: str | Backend = "cpsat",
    time_limit_s: float | None = 60.0,
    warm_start: Schedule | None = None,
    heuristic: Callable[[Problem], Schedule | None] | None = None,
    reduce: bool = True,
    **options: Any,
) -> MemoryWalk:
    """Least uniform capacity at which a makespan of at most ``target_makespan`` exists.

    Walks the capacity down from ``start_capacity`` (default: unbounded,
    then the peak of each schedule found minus one). At each step the
    ``heuristic`` (if any) is tried first: a valid schedule it returns
    within the target answers the step (feasibility needs no proof beyond
    the validator). Otherwise the step is an exact feasibility search
    restricted to makespans ``<= target_makespan``; a step that ends
    without an answer (TIMEOUT) stops the walk with ``proven=False``, an
    INFEASIBLE one proves the last capacity found minimal. ``reduce`` drops
    overlap declarations that cannot help (see
    :func:`~schedsearch.rewrite.overlaps_redundant`).

    ``steps`` lists ``(capacity, status, makespan, how)`` with ``how`` in
    ``"heuristic"``, ``"exact"``.
    """
    from schedsearch.validate import validate

    t0 = time.perf_counter()
    capacity = start_capacity
    best: tuple[int | None, Schedule] | None = None
    steps: list[tuple[int | None, str, int | None, str]] = []
    proven = False
    warm = warm_start
    search_problem = reduced_problem(problem) if reduce else problem
    while True:
        try:
            sub = with_capacities(search_problem, capacity)
        except InvalidProblemError:
            proven = True  # a smaller capacity cannot even hold one block
            break
        found = heuristic(sub) if heuristic is not None else None
        if found is not None and found.makespan <= target_makespan and not validate(sub, found):
            steps.append((capacity, Status.FEASIBLE.value, found.makespan, "heuristic"))
            schedule = found
        else:
            hint = None
            if warm is not None and warm.makespan <= target_makespan:
                try:
                    hint = warm if not validate(sub, warm) else None
                except Exception:  # a schedule of another problem
                    hint = None
            result = optimal(sub.with_(objective="feasibility"), backend=backend, time_limit_s=time_limit_s,
                             upper_bound=target_makespan, warm_start=hint, **options)
            steps.append((capacity, result.status.value, result.objective, "exact"))
            if result.schedule is None:
                proven = result.status is Status.INFEASIBLE
                break
            schedule = result.schedule
        peak = _peak(sub, schedule)
        best = (peak, schedule)
        warm = schedule
        if peak <= 0:
            proven = True
            break
        capacity = peak - 1
    return MemoryWalk(
        target_makespan=target_makespan,
        capacity=None if best is None else best[0],
        schedule=None if best is None else best[1],
        proven=proven and best is not None,
        steps=tuple(steps),
        wall_time_s=time.perf_counter() - t0,
    )
