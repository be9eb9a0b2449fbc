"""Time-optimal search: the whole problem, encoded exactly, solved once.

The objective is the problem's: the makespan, or the longest device span
for ``"max_span"`` problems. The best lower bound known of that objective is
computed first (for the makespan :func:`schedsearch.bounds.lower_bound`:
critical path, per-device bounds, the memory bound, and the assignment LP
where blocks choose among options; for spans the per-device work) and handed
to the backend: it lets Z3's bisection start at the bound, and it closes the
gap as soon as a schedule reaches it. The result's ``lower_bound`` is the
larger of it and the solver's own bound, and ``gap`` follows from it. Every returned
schedule has passed the independent validator (see
:func:`schedsearch.encode.solve`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from schedsearch.bounds.schedule_bounds import lower_bound
from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.encode.base import Backend, Progress, SolveOptions, solve
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, objective_value

__all__ = ["optimal"]


def optimal(
    problem: Problem,
    *,
    backend: str | Backend = "cpsat",
    time_limit_s: float | None = 60.0,
    seed: int = 0,
    workers: int = 2,
    deterministic: bool = False,
    warm_start: Schedule | None = None,
    symmetry_breaking: bool = True,
    redundant: bool = True,
    upper_bound: int | None = None,
    ties: tuple = (),
    progress: Callable[[Progress], None] | None = None,
    log: bool = False,
    backend_params: Mapping[str, Any] | None = None,
) -> SearchResult:
    """Find a schedule of ``problem`` optimal for its objective (makespan or longest device span).

    Parameters
    ----------
    problem:
        The problem to solve.
    backend:
        ``"cpsat"`` (default) or ``"z3"``, or a backend object.
    time_limit_s:
        Wall-clock limit; when it is reached the result is FEASIBLE (with a
        schedule and a bound) or TIMEOUT (without a schedule).
    warm_start:
        A valid schedule of ``problem`` to start from (e.g. a handcrafted
        one); the result is never worse than it.
    ties:
        Start-time ties that restrict the search (see
        :class:`~schedsearch.encode.SolveOptions`); with ties, OPTIMAL and
        the solver's bound refer to the restricted space, except that the
        analytic bound (valid for every schedule) is merged in.
    Other parameters are those of :class:`~schedsearch.encode.SolveOptions`.

    Returns
    -------
    SearchResult
        Status, validated schedule (or None), makespan, proven lower bound.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> result = optimal(vshape(2, 2, memory=2), time_limit_s=10)
    >>> result.status.value, result.objective
    ('OPTIMAL', 9)
    """
    bound = lower_bound(problem) if problem.objective == "makespan" else objective_lower_bound(problem)
    options = SolveOptions(
        time_limit_s=time_limit_s,
        seed=seed,
        workers=workers,
        deterministic=deterministic,
        warm_start=warm_start,
        symmetry_breaking=symmetry_breaking,
        redundant=redundant,
        lower_bound=bound.value,
        upper_bound=upper_bound,
        ties=ties,
        progress=progress,
        log=log,
        backend_params=dict(backend_params or {}),
    )
    result = solve(problem, backend, options)
    stats = dict(result.stats)
    stats["analytic_bound"] = bound.value
    stats["analytic_bound_part"] = bound.tight_part
    stats["bound_parts"] = dict(bound.parts)
    if ties:
        # the solver's status and bound hold for the tied (restricted) space only
        stats["restricted_status"] = result.status.value
        stats["restricted_bound"] = result.lower_bound
        status = result.status
        if status is Status.INFEASIBLE:
            status = Status.UNKNOWN  # no tied schedule; says nothing about the problem
        elif result.objective is not None:
            status = Status.OPTIMAL if result.objective <= bound.value else Status.FEASIBLE
        result = attrs.evolve(result, status=status, lower_bound=bound.value)
    if warm_start is not None and result.schedule is None and result.status is not Status.INFEASIBLE:
        # the solver found nothing within the limit: the warm start stands
        result = attrs.evolve(result, schedule=warm_start, objective=objective_value(warm_start, problem.objective),
                              status=Status.FEASIBLE)
    return attrs.evolve(result, stats=stats, strategy="optimal")
