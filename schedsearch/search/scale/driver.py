"""Search at scale: list scheduling, then an exact search from its best schedule.

:func:`scale_search` runs, within one time budget:

1. **Reduction.** When every declared overlapped group lasts at least its
   members together and can be run member after member
   (:func:`~schedsearch.rewrite.overlaps_redundant`), the groups cannot
   shorten anything: any schedule using them can be flattened into one
   without them with the same times per device and no higher memory (frees
   first, see :func:`~schedsearch.rewrite.flatten_overlaps`). The search then runs
   on the problem without its overlap declarations (much smaller models);
   its schedules are valid for the original problem too.
2. **Bound.** The analytic lower bound of the objective (critical path,
   per-device ``first start + work + forced idle + tail``; for spans the
   device work), valid for the original problem.
3. **Candidates.** The given warm starts (flattened when the overlaps were
   dropped), on a two-chunk V placement with split backwards the capped V
   greedy at the devices' capacities
   (:func:`~schedsearch.handcrafted.v_capped.v_capped`), and a portfolio of list schedules
   (:mod:`~schedsearch.search.list_scheduling`), stopping as soon as
   one reaches the bound: it is then optimal, proven by the bound.
4. **Exact search** (when the bound is not reached and time remains):
   :func:`~schedsearch.search.optimal` warm-started from the best
   candidate, optionally restricted by start-time ties
   (:mod:`~schedsearch.search.scale.ties`: periodic micro-batches in the
   middle, mirror symmetry) to make large models tractable. Under ties the
   result is OPTIMAL only when it reaches the analytic bound. It is
   skipped, and the result's ``notes`` say why, when a plan is at hand and
   the problem has more task instances than the search can model in the
   time left (100 a second), or
   when it would be tied and the best plan is the capped V greedy's (a
   tied search cannot start from it).

Every schedule returned has passed the independent validator against the
original problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from schedsearch.options import Rule, SearchOptions
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.rewrite import flatten_overlaps
from schedsearch.schedule import Schedule
from schedsearch.search.list_scheduling import PIPELINE_RULES, PipelineRule, list_plan
from schedsearch.search.exact import exact_search
from schedsearch.search.run import Provenance, Run, Source
from schedsearch.search.scale.ties import Tie, periodic_ties
from schedsearch.validate import assert_valid, validate

__all__ = ["scale_search", "search_at_scale", "TIES_AUTO_TASKS"]

#: ``ties="auto"`` ties micro-batches periodically above this many task instances.
TIES_AUTO_TASKS = 1000

#: Time the exact search needs at least to be worth starting (model building included).
_EXACT_MIN_S = 1.0

#: Where the capped V greedy's plans come from.
_CAPPED_V = Provenance(source=Source.HANDCRAFTED, engine="handcrafted capped V greedy")

#: Task instances the exact search can model and search per second of the time left; a larger
#: problem with a plan at hand skips it (the model alone would outgrow the limit and the memory).
_EXACT_TASKS_PER_S = 100


def _usable(problem: Problem, search_problem: Problem, schedule: Schedule) -> Schedule | None:
    """``schedule`` as a schedule of ``search_problem`` (flattened if need be), or None.

    A schedule of another problem is not an error here: the validator
    reports its unknown and missing tasks as violations, and only a valid
    plan of ``problem`` is flattened.
    """
    if not validate(search_problem, schedule):
        return schedule
    if search_problem is not problem and not validate(problem, schedule):
        flat = flatten_overlaps(problem, schedule)
        if flat is not None and not validate(search_problem, flat):
            return flat
    return None


#: ``periodic_window``: fractions ``(a, b)`` of the micro-batches, ``0 <= a < b <= 1``
_WINDOW = Rule("a pair (a, b) of numbers with 0 <= a < b <= 1",
               lambda v: isinstance(v, (list, tuple)) and len(v) == 2
               and all(Rule.number(0, 1).test(x) for x in v) and v[0] < v[1])


def scale_search(
    problem: Problem,
    *,
    rules: Sequence[PipelineRule] = PIPELINE_RULES,
    exact: bool = True,
    ties: str | Sequence[Tie] | None = "auto",
    periodic_window: tuple[float, float] = (0.25, 0.75),
    period: int | None = None,
    extra_ties: Sequence[Tie] = (),
    reduce: bool = True,
    options: SearchOptions | None = None,
    **common: Any,
) -> SearchResult:
    """Best schedule of ``problem`` for its objective, at any size (see the module docstring).

    Parameters
    ----------
    rules:
        List-scheduling rules to try (empty: none).
    exact:
        Run the exact search when the bound is not reached.
    ties:
        Restriction of the exact search: ``"auto"`` (periodic ties when the
        problem has more than :data:`TIES_AUTO_TASKS` task instances),
        ``"periodic"``, ``None`` / ``()`` (none) or explicit ties.
    periodic_window, period:
        Periodic ties tie micro-batches ``floor(a n) .. floor(b n)`` for
        ``(a, b) = periodic_window``, with ``period`` (default: the
        steady-state period, :func:`~schedsearch.search.scale.ties.steady_period`).
    extra_ties:
        More ties (e.g. mirror symmetry) added to the periodic ones.
    reduce:
        Drop redundant overlap declarations (see
        :func:`~schedsearch.rewrite.overlaps_redundant`).
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions` or
        keywords of its field names); ``time_limit_s`` (default 300) is the
        budget of the whole search, list scheduling included;
        ``warm_starts`` are plans of ``problem`` (handcrafted ones, say) to
        start from. Progress phases: ``"bound"``, ``"warm start i"``,
        ``"list scheduling (<rule>)"``, the backend's ``"exact search
        (<backend>)"``.

    Returns
    -------
    SearchResult
        ``strategy="scale"``; ``engine`` names what found the plan
        (``"warm start i"``, ``"handcrafted capped V greedy"``, ``"list scheduling (<rule>)"``, ``"exact search
        (<backend>)"``, ``"exact search (<backend>, tied)"``);
        ``bound_engine`` is ``"analytic"`` or the backend that proved a
        larger bound. ``stats`` holds the list rules tried, the phases'
        times and whether the overlaps were dropped; ``ties`` says how many
        ties restricted the exact search, ``exact_status`` and
        ``restricted_status`` how it ended, ``notes`` what was skipped.

    Examples
    --------
    1F1B with 4 activations per device: a list schedule meets the analytic
    bound (8 + 4 - 1) x 3 = 33, so no solver runs.

    >>> from schedsearch.placements import vshape
    >>> result = scale_search(vshape(4, 8, memory=4), time_limit_s=20)
    >>> result.status.value, result.objective, result.engine, result.bound_engine
    ('OPTIMAL', 33, 'list scheduling (I > F > W, ...)', 'analytic')
    """
    run = Run.open(problem, options, common, "scale_search", own={
        "rules": (rules, Rule.sequence(PipelineRule, "a list of PipelineRule")), "exact": (exact, Rule.boolean()),
        "ties": (ties, Rule("'auto', 'periodic', None or a list of ties",
                            lambda v: v in ("auto", "periodic", None) or Rule.ties().test(v), ("auto", "periodic"))),
        "periodic_window": (periodic_window, _WINDOW), "period": (period, Rule.integer(1, none=True)),
        "extra_ties": (extra_ties, Rule.ties()), "reduce": (reduce, Rule.boolean()),
    }, time_limit_s=300.0)
    return search_at_scale(run, rules=rules, exact=exact, ties=ties, periodic_window=periodic_window,
                           period=period, extra_ties=extra_ties, reduce=reduce)


def search_at_scale(run: Run, *, rules: Sequence[PipelineRule] = PIPELINE_RULES, exact: bool = True,
                    ties: str | Sequence[Tie] | None = "auto", periodic_window: tuple[float, float] = (0.25, 0.75),
                    period: int | None = None, extra_ties: Sequence[Tie] = (), reduce: bool = True) -> SearchResult:
    """:func:`scale_search` inside ``run`` (its options already checked): the run's warm starts, the
    constructions, the list schedules, then the exact search in a child run."""
    state = _Scale.start(run, reduce)
    for i, schedule in enumerate(run.options.warm_starts):
        state.offer(_usable(run.problem, state.search_problem, schedule), Provenance.warm_start(i))
    _capped_v(state)
    _list_schedules(state, rules)
    if exact and not run.closed and not run.budget.expired(_EXACT_MIN_S):
        left = run.budget.left()
        tasks = state.search_problem.num_tasks
        if run.best is not None and left is not None and tasks > _EXACT_TASKS_PER_S * left:
            run.note(f"exact search skipped: {tasks} task instances need about {tasks / _EXACT_TASKS_PER_S:.0f} s "
                     f"to model and search, {left:.1f} s were left")
        else:
            tie_list = _tie_list(state.search_problem, ties, periodic_window, period, extra_ties)
            best = run.best
            if tie_list and best is not None and best.provenance == _CAPPED_V:
                # a tied search starts from scratch (the greedy's plan breaks the ties); on V placements it
                # ended above the greedy and took the most memory of the run (benchmark zbv_scale)
                run.note(f"exact search skipped: under {len(tie_list)} ties it cannot start from the capped V "
                         f"greedy's plan")
            else:
                infeasible = _exact_search(state, tie_list)
                if infeasible is not None:
                    return infeasible
    return state.result()


def _capped_v(state: _Scale) -> None:
    """On a two-chunk V placement with split backwards, the capped V greedy
    (:func:`~schedsearch.handcrafted.v_capped.v_capped`) at the devices'
    capacities, within half the time left (in deterministic mode a work
    limit of that many deterministic seconds at
    :data:`~schedsearch.handcrafted.v_capped.V_TASKS_PER_S`, no wall
    clock); other problems: nothing.

    The greedy always finishes its first candidate and runs its orders, so
    it starts only when that share covers them: at
    :data:`~schedsearch.handcrafted.v_capped.V_FIRST_S_PER_TASK` per task
    instance on the wall clock, or (deterministic mode) twice the task
    instances of work; otherwise the result's ``notes`` say it was skipped."""
    from schedsearch.errors import DeadlineExceeded, SchedSearchError
    from schedsearch.handcrafted.v_capped import V_FIRST_S_PER_TASK, V_TASKS_PER_S, v_capped, v_capped_applies

    run = state.run
    if run.closed:
        return
    t = run.budget.elapsed
    share = run.budget.slice(0.5, floor_s=0.1)
    limit: dict[str, Any] = {"time_limit_s": share}
    if run.options.deterministic:
        limit = {"work_limit": None if share is None else int(share * V_TASKS_PER_S)}
    if share is not None and v_capped_applies(run.problem):
        tasks = run.problem.num_tasks
        # one candidate and the run of its orders: a count of work in deterministic mode, the clock's otherwise
        need = 2 * tasks / V_TASKS_PER_S if run.options.deterministic else V_FIRST_S_PER_TASK * tasks
        if need > share:
            run.note(f"capped V greedy skipped: its first candidate and the run of its orders need about "
                     f"{need:.1f} s at {tasks} task instances, {max(share, 0.0):.1f} s of the time left were its share")
            return
    try:
        schedule = v_capped(run.problem, None, **limit)
    except DeadlineExceeded:
        raise
    except SchedSearchError:
        return  # not a V placement (or no room for the greedy): the other phases handle it

    run.stats["capped_v_s"] = run.budget.elapsed - t
    state.offer(_usable(run.problem, state.search_problem, schedule), _CAPPED_V)


@attrs.define
class _Scale:
    """What :func:`scale` adds to its run: the problem it searches (overlaps dropped when redundant) and the
    backend that searched. The run's pool holds plans of the search problem, each validated against it (and
    so plans of the run's problem: :func:`~schedsearch.rewrite.overlaps_redundant`); the result asserts it."""

    run: Run
    search_problem: Problem
    backend_name: str = ""
    #: the exact search's status and its status in the tied space (None: it ran none, or untied), and its ties
    exact_status: Status | None = None
    restricted_status: Status | None = None
    ties: int = 0

    @classmethod
    def start(cls, run: Run, reduce: bool) -> _Scale:
        """The problem reduced (when asked) and its analytic bound reported (both computed once per run)."""
        problem = run.problem
        search_problem = run.reduced if reduce else problem
        bound = run.facts.analytic(search_problem).value
        run.raise_bound(bound, "analytic")
        run.reporter.report("bound", bound=bound)
        run.stats.update({"overlaps_dropped": search_problem is not problem, "analytic_bound": bound,
                          "num_tasks": problem.num_tasks})
        return cls(run=run, search_problem=search_problem, backend_name=run.options.backend_name)

    def offer(self, schedule: Schedule | None, provenance: Provenance) -> None:
        """Keep ``schedule``, a validated plan of the search problem (or None), found by ``provenance``."""
        self.run.offer(schedule, provenance, validated=True)

    def facts(self) -> dict[str, Any]:
        """The result's facts of the run: its notes and, when the exact search ran, its status, ties and the
        deterministic time it used (its backend searches are the run's only ones); a guard that stopped one."""
        run, ran = self.run, self.exact_status is not None
        return {"notes": run.notes, "deterministic_s": run.budget.reported_s if ran else None,
                "wall_guard_hit": run.budget.wall_guard_hit, "exact_status": self.exact_status,
                "restricted_status": self.restricted_status, "ties": self.ties}

    @property
    def objective_name(self) -> str:
        return "max_span" if self.run.problem.objective == "max_span" else "makespan"

    def result(self) -> SearchResult:
        """The best plan, validated against the original problem (once: again only when it was found on
        the reduced problem), OPTIMAL when it meets the bound; TIMEOUT (or UNKNOWN without a limit) when
        there is none."""
        run = self.run
        wall = run.budget.elapsed
        run.stats["wall_s"] = wall
        bound, name, problem = run.bound, self.objective_name, run.problem
        best = run.best
        if best is None:
            limit_hit = run.options.time_limit_s is not None  # every phase ran within the limit and found nothing
            return SearchResult(status=Status.TIMEOUT if limit_hit else Status.UNKNOWN, lower_bound=bound or None,
                                wall_time_s=wall, backend=self.backend_name, stats=run.stats, strategy="scale",
                                objective_name=name, bound_engine=run.bound_by if bound else "",
                                problem=problem, **self.facts())
        if self.search_problem is not problem:  # a plan of the reduced problem: checked on the original once
            assert_valid(problem, best.schedule, f"schedule found by {best.engine}")
        # (else the pool's plans were each validated against this very problem when offered)
        return SearchResult(
            status=Status.OPTIMAL if best.value <= bound else Status.FEASIBLE,
            schedule=best.schedule,
            objective=best.value,
            lower_bound=min(bound, best.value),
            wall_time_s=wall,
            backend=self.backend_name,
            stats=run.stats,
            strategy="scale",
            objective_name=name,
            engine=best.engine,
            bound_engine=run.bound_by,
            problem=problem,
            **self.facts(),
        )


def _list_schedules(state: _Scale, rules: Sequence[PipelineRule]) -> None:
    """The list schedule of every rule, without groups, then forming the
    groups that save time (when some do), until one meets the bound or time is up."""
    run = state.run
    t_list = run.budget.elapsed
    tried = 0
    search_problem = state.search_problem
    saving_groups = any(ov.duration < sum(search_problem.graph.block(b).min_duration for b in ov.blocks)
                        for ov in search_problem.overlaps)
    for form_groups in (False, True) if saving_groups else (False,):
        for rule in rules:
            if run.closed:
                break
            if run.budget.expired():
                break
            tried += 1
            engine = f"list scheduling ({rule}{', pairs formed' if form_groups else ''})"
            run.reporter.report(engine)
            state.offer(list_plan(search_problem, rule, form_groups=form_groups, deadline=run.budget),
                        Provenance(source=Source.LIST, engine=engine))
    run.stats["list_rules_tried"] = tried
    run.stats["list_s"] = run.budget.elapsed - t_list


def _tie_list(search_problem: Problem, ties: str | Sequence[Tie] | None, periodic_window: tuple[float, float],
              period: int | None, extra_ties: Sequence[Tie]) -> tuple[Tie, ...]:
    """The ties of the exact search: periodic ones over the window (``"auto"``:
    on problems of more than :data:`TIES_AUTO_TASKS` tasks), the given ones, and the extra ones."""
    if ties == "auto":
        ties = "periodic" if search_problem.num_tasks > TIES_AUTO_TASKS else None
    tie_list: tuple[Tie, ...] = ()
    if ties == "periodic":
        n = search_problem.num_microbatches
        a, b = periodic_window
        first, last = int(math.floor(a * n)), int(math.floor(b * n))
        last = min(last, n - 1)
        if first < last:
            tie_list = periodic_ties(search_problem, first, last, period)
    elif ties:
        tie_list = tuple(ties)
    return tie_list + tuple(extra_ties)


def _exact_search(state: _Scale, tie_list: tuple[Tie, ...]) -> SearchResult | None:
    """The exact search with the time left, in a child run (warm-started from the best plan
    unless tied); its plan is offered, its bound kept when untied. Returns
    the INFEASIBLE result when an untied search proves it, else None."""
    run = state.run
    stats, budget = run.stats, run.budget
    state.ties = len(tie_list)
    t_exact = budget.elapsed
    # a tied search proves bounds of the tied space only
    child = run.child(state.search_problem, time_limit_s=budget.left(), bounds=not tie_list)
    best = run.best
    if best is not None and not tie_list:
        # a validated plan of the search problem, the child's problem
        child.offer(best.schedule, Provenance.warm_start(0), validated=True, report=False)
    exact_result = exact_search(child, ties=tie_list)
    state.backend_name = exact_result.backend or state.backend_name
    stats["exact_s"] = budget.elapsed - t_exact
    state.exact_status, state.restricted_status = exact_result.status, exact_result.restricted_status
    found = child.last(Source.EXACT)
    if found is not None:
        engine = f"exact search ({state.backend_name}{', tied' if tie_list else ''})"
        state.offer(found.schedule, Provenance(source=Source.EXACT, engine=engine))
    if not tie_list and exact_result.lower_bound is not None and exact_result.lower_bound > run.bound:
        run.raise_bound(exact_result.lower_bound, exact_result.bound_engine)
    if not tie_list and exact_result.status is Status.INFEASIBLE:
        return SearchResult(status=Status.INFEASIBLE, wall_time_s=budget.elapsed, backend=state.backend_name,
                            stats=stats, strategy="scale", objective_name=state.objective_name,
                            bound_engine=state.backend_name, problem=run.problem, **state.facts())
    return None
