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

from typing import Any

import attrs

from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.bounds.schedule_bounds import lower_bound
from schedsearch.encode import SolveOptions, solve
from schedsearch.options import Deadline, Reporter, Rule, SearchOptions, resolve_options
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, objective_value

__all__ = ["optimal"]


def optimal(
    problem: Problem,
    *,
    symmetry_breaking: bool = True,
    redundant: bool = True,
    upper_bound: int | None = None,
    ties: tuple = (),
    options: SearchOptions | None = None,
    **common: Any,
) -> SearchResult:
    """Find a schedule of ``problem`` optimal for its objective (makespan or longest device span).

    Parameters
    ----------
    problem:
        The problem to solve.
    symmetry_breaking, redundant, upper_bound:
        As for :class:`~schedsearch.encode.SolveOptions` (pruning that keeps
        an optimum, redundant bounds, a cap on the objective).
    ties:
        Start-time ties that restrict the search (see
        :class:`~schedsearch.encode.SolveOptions`); with ties, OPTIMAL and
        the solver's bound refer to the restricted space, except that the
        analytic bound (valid for every schedule) is merged in.
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions`,
        or keywords of its field names: ``time_limit_s`` for the whole
        call, ``backend``, ``seed``, ``workers``, ``warm_starts``, ...).
        The best warm start (each must be a valid plan of ``problem``) is
        the solver's starting point; the result is never worse than it.

    Returns
    -------
    SearchResult
        Status, validated schedule (or None), objective, proven lower bound;
        ``engine`` is ``"exact search (<backend>)"`` (or ``"warm start i"``
        when the solver found nothing better), ``bound_engine``
        ``"analytic"`` when the analytic bound is the proof, else the
        backend's name.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> result = optimal(vshape(2, 2, memory=2), time_limit_s=10)
    >>> result.status.value, result.objective
    ('OPTIMAL', 9)
    """
    opts = resolve_options(options, common, "optimal", own={
        "problem": (problem, Rule.instance(Problem, "a Problem")),
        "symmetry_breaking": (symmetry_breaking, Rule.boolean()), "redundant": (redundant, Rule.boolean()),
        "upper_bound": (upper_bound, Rule.integer(0, none=True)), "ties": (ties, Rule.ties())})
    deadline = Deadline(opts.time_limit_s, deterministic=opts.deterministic)
    reporter = Reporter(opts.progress, deadline.t0)
    bound = lower_bound(problem) if problem.objective == "makespan" else objective_lower_bound(problem)
    reporter.report("bound", bound=bound.value)
    warm = _best_warm_start(problem, opts)
    left = deadline.left()
    solve_options = SolveOptions(
        time_limit_s=None if left is None else max(left, 1e-3),
        seed=opts.seed,
        workers=opts.workers,
        deterministic=opts.deterministic,
        warm_start=None if warm is None else warm[1],
        symmetry_breaking=symmetry_breaking,
        redundant=redundant,
        lower_bound=bound.value,
        upper_bound=upper_bound,
        ties=ties,
        progress=reporter.relay(bounds=not ties),
        log=opts.log,
        backend_params=dict(opts.backend_params),
    )
    result = solve(problem, opts.solver_backend, solve_options)
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
    engine = f"exact search ({result.backend})" if result.schedule is not None else ""
    if warm is not None and result.schedule is None and result.status is not Status.INFEASIBLE:
        # the solver found nothing within the limit: the warm start stands
        engine = warm[0]
        result = attrs.evolve(result, schedule=warm[1], objective=objective_value(warm[1], problem.objective),
                              status=Status.FEASIBLE)
    bound_engine = ""
    if result.lower_bound is not None and result.status is not Status.INFEASIBLE:
        bound_engine = "analytic" if result.lower_bound <= bound.value else result.backend
    reporter.report(incumbent=result.objective)
    return attrs.evolve(result, stats=stats, strategy="optimal", engine=engine, bound_engine=bound_engine,
                        problem=problem, wall_time_s=deadline.elapsed)



def _best_warm_start(problem: Problem, options: SearchOptions) -> tuple[str, Schedule] | None:
    """The warm start of least objective, with its name (``"warm start i"``); each must be a valid plan."""
    best: tuple[int, str, Schedule] | None = None
    for i, schedule in enumerate(options.checked_warm_starts(problem, "optimal")):
        value = objective_value(schedule, problem.objective)
        if best is None or value < best[0]:
            best = (value, f"warm start {i}", schedule)
    return None if best is None else (best[1], best[2])
