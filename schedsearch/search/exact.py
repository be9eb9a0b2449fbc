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

from schedsearch.options import Rule, SearchOptions
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.search.run import Provenance, Run, Source

__all__ = ["optimal", "exact_search"]


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
        analytic bound (valid for every schedule) is merged in; the
        result's ``restricted_status`` is the status in the restricted
        space and ``ties`` their number.
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
    run = Run.open(problem, options, common, "optimal", own={
        "symmetry_breaking": (symmetry_breaking, Rule.boolean()), "redundant": (redundant, Rule.boolean()),
        "upper_bound": (upper_bound, Rule.integer(0, none=True)), "ties": (ties, Rule.ties())})
    run.offer_warm_starts("optimal", report=False)
    return exact_search(run, symmetry_breaking=symmetry_breaking, redundant=redundant, upper_bound=upper_bound,
                        ties=ties)


def exact_search(run: Run, *, symmetry_breaking: bool = True, redundant: bool = True, upper_bound: int | None = None,
                 ties: tuple = ()) -> SearchResult:
    """:func:`optimal`'s search inside ``run``: the run's problem solved once by its backend, from the best plan
    of its pool; the solver's plan is offered to the pool (:attr:`~schedsearch.search.run.Source.EXACT`)."""
    problem = run.problem
    bound = run.facts.lower_bound(problem) if problem.objective == "makespan" else run.facts.analytic(problem)
    run.reporter.report("bound", bound=bound.value)
    warm = run.best
    result = run.backend_search(problem, run.solve_options(
        warm_start=None if warm is None else warm.schedule,
        symmetry_breaking=symmetry_breaking,
        redundant=redundant,
        lower_bound=bound.value,
        upper_bound=upper_bound,
        ties=ties,
        progress=run.reporter.relay(bounds=not ties),
    ))
    stats = dict(result.stats)
    stats["analytic_bound"] = bound.value
    stats["analytic_bound_part"] = bound.tight_part
    stats["bound_parts"] = dict(bound.parts)
    if ties:
        # the solver's status and bound hold for the tied (restricted) space only
        stats["restricted_bound"] = result.lower_bound
        status = result.status
        if status is Status.INFEASIBLE:
            status = Status.UNKNOWN  # no tied schedule; says nothing about the problem
        elif result.objective is not None:
            status = Status.OPTIMAL if result.objective <= bound.value else Status.FEASIBLE
        result = attrs.evolve(result, status=status, lower_bound=bound.value, restricted_status=result.status,
                              ties=len(ties))
    engine = ""
    if result.schedule is not None:
        # the backend validated it against this very problem
        exact = Provenance(source=Source.EXACT, engine=f"exact search ({result.backend})")
        run.offer(result.schedule, exact, validated=True, report=False)
        engine = exact.engine
    if warm is not None and result.schedule is None and result.status is not Status.INFEASIBLE:
        # the solver found nothing within the limit: the warm start stands
        engine = warm.engine
        result = attrs.evolve(result, schedule=warm.schedule, objective=warm.value, status=Status.FEASIBLE)
    bound_engine = ""
    if result.lower_bound is not None and result.status is not Status.INFEASIBLE:
        bound_engine = "analytic" if result.lower_bound <= bound.value else result.backend
    run.reporter.report(incumbent=result.objective)
    return attrs.evolve(result, stats=stats, strategy="optimal", engine=engine, bound_engine=bound_engine,
                        problem=problem, wall_time_s=run.budget.elapsed)
