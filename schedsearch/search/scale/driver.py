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
   skipped, and ``stats["notes"]`` says why, when a plan is at hand and
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

from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.options import Deadline, Reporter, Rule, SearchOptions, resolve_options
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.rewrite import flatten_overlaps, reduced_problem
from schedsearch.schedule import Schedule, objective_value
from schedsearch.search.list_scheduling import PIPELINE_RULES, PipelineRule, list_plan
from schedsearch.search.optimal import optimal
from schedsearch.search.scale.ties import Tie, periodic_ties
from schedsearch.validate import assert_valid, validate

__all__ = ["scale_search", "TIES_AUTO_TASKS"]

#: ``ties="auto"`` ties micro-batches periodically above this many task instances.
TIES_AUTO_TASKS = 1000

#: Time the exact search needs at least to be worth starting (model building included).
_EXACT_MIN_S = 1.0

#: What the capped V greedy's plans are called.
_CAPPED_V = "handcrafted capped V greedy"

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
        times, whether the overlaps were dropped and how many ties were
        used.

    Examples
    --------
    1F1B with 4 activations per device: a list schedule meets the analytic
    bound (8 + 4 - 1) x 3 = 33, so no solver runs.

    >>> from schedsearch.placements import vshape
    >>> result = scale_search(vshape(4, 8, memory=4), time_limit_s=20)
    >>> result.status.value, result.objective, result.engine, result.bound_engine
    ('OPTIMAL', 33, 'list scheduling (I > F > W, ...)', 'analytic')
    """
    opts = resolve_options(options, common, "scale_search", own={
        "problem": (problem, Rule.instance(Problem, "a Problem")),
        "rules": (rules, Rule.sequence(PipelineRule, "a list of PipelineRule")), "exact": (exact, Rule.boolean()),
        "ties": (ties, Rule("'auto', 'periodic', None or a list of ties",
                            lambda v: v in ("auto", "periodic", None) or Rule.ties().test(v), ("auto", "periodic"))),
        "periodic_window": (periodic_window, _WINDOW), "period": (period, Rule.integer(1, none=True)),
        "extra_ties": (extra_ties, Rule.ties()), "reduce": (reduce, Rule.boolean()),
    }, time_limit_s=300.0)
    run = _ScaleRun.start(problem, opts, reduce)
    for i, schedule in enumerate(opts.warm_starts):
        run.offer(_usable(problem, run.search_problem, schedule), f"warm start {i}")
    _capped_v(run)
    _list_schedules(run, rules)
    if exact and (run.best is None or run.best[0] > run.bound) and not run.deadline.expired(_EXACT_MIN_S):
        left = run.deadline.left()
        tasks = len(run.search_problem.tasks)
        if run.best is not None and left is not None and tasks > _EXACT_TASKS_PER_S * left:
            run.note(f"exact search skipped: {tasks} task instances need about {tasks / _EXACT_TASKS_PER_S:.0f} s "
                     f"to model and search, {left:.1f} s were left")
        else:
            tie_list = _tie_list(run.search_problem, ties, periodic_window, period, extra_ties)
            if tie_list and run.best is not None and run.best[2] == _CAPPED_V:
                # a tied search starts from scratch (the greedy's plan breaks the ties); on V placements it
                # ended above the greedy and took the most memory of the run (benchmark zbv_scale)
                run.note(f"exact search skipped: under {len(tie_list)} ties it cannot start from the capped V "
                         f"greedy's plan")
            else:
                infeasible = _exact_search(run, tie_list)
                if infeasible is not None:
                    return infeasible
    return run.result()


def _capped_v(run: _ScaleRun) -> None:
    """On a two-chunk V placement with split backwards, the capped V greedy
    (:func:`~schedsearch.handcrafted.v_capped.v_capped`) at the devices'
    capacities, within half the time left (in deterministic mode a work
    limit of that many deterministic seconds at
    :data:`~schedsearch.handcrafted.v_capped.V_TASKS_PER_S`, no wall
    clock); other problems: nothing."""
    from schedsearch.errors import SchedSearchError
    from schedsearch.handcrafted.v_capped import V_TASKS_PER_S, v_capped

    if run.best is not None and run.best[0] <= run.bound:
        return
    t = run.deadline.elapsed
    share = run.deadline.slice(0.5, floor_s=0.1)
    limit: dict[str, Any] = {"time_limit_s": share}
    if run.opts.deterministic:
        limit = {"work_limit": None if share is None else int(share * V_TASKS_PER_S)}
    try:
        schedule = v_capped(run.problem, None, **limit)
    except SchedSearchError:
        return  # not a V placement (or no room for the greedy): the other phases handle it
    run.stats["capped_v_s"] = run.deadline.elapsed - t
    run.offer(_usable(run.problem, run.search_problem, schedule), _CAPPED_V)


@attrs.define
class _ScaleRun:
    """One call of :func:`scale_search`: its options, time, the problem it
    searches (overlaps dropped when redundant), the bound, figures and best plan."""

    problem: Problem
    search_problem: Problem
    opts: SearchOptions
    deadline: Deadline
    reporter: Reporter
    bound: int
    stats: dict[str, Any]
    bound_engine: str = "analytic"
    backend_name: str = ""
    best: tuple[int, Schedule, str] | None = None

    @classmethod
    def start(cls, problem: Problem, opts: SearchOptions, reduce: bool) -> _ScaleRun:
        """The run's clock started, the problem reduced (when asked) and its analytic bound reported."""
        deadline = Deadline(opts.time_limit_s, deterministic=opts.deterministic)
        reporter = Reporter(opts.progress, deadline.t0)
        search_problem = reduced_problem(problem) if reduce else problem
        bound = objective_lower_bound(search_problem).value
        reporter.report("bound", bound=bound)
        stats: dict[str, Any] = {"overlaps_dropped": search_problem is not problem, "analytic_bound": bound,
                                 "num_tasks": len(problem.tasks)}
        return cls(problem=problem, search_problem=search_problem, opts=opts, deadline=deadline, reporter=reporter,
                   bound=bound, stats=stats, backend_name=opts.backend_name)

    def note(self, text: str) -> None:
        """Say in the result's ``stats["notes"]`` what the run left out and why."""
        self.stats.setdefault("notes", []).append(text)

    def offer(self, schedule: Schedule | None, origin: str) -> None:
        """Keep ``schedule`` (found by ``origin``) when it beats the best plan so far."""
        if schedule is None:
            return
        value = objective_value(schedule, self.problem.objective)
        if self.best is None or value < self.best[0]:
            self.best = (value, schedule, origin)
            self.reporter.report(origin, incumbent=value)

    @property
    def objective_name(self) -> str:
        return "max_span" if self.problem.objective == "max_span" else "makespan"

    def result(self) -> SearchResult:
        """The best plan, validated against the original problem, OPTIMAL when it
        meets the bound; TIMEOUT (or UNKNOWN without a limit) when there is none."""
        wall = self.deadline.elapsed
        self.stats["wall_s"] = wall
        bound, name, problem = self.bound, self.objective_name, self.problem
        if self.best is None:
            limit_hit = self.opts.time_limit_s is not None  # every phase ran within the limit and found nothing
            return SearchResult(status=Status.TIMEOUT if limit_hit else Status.UNKNOWN, lower_bound=bound or None,
                                wall_time_s=wall, backend=self.backend_name, stats=self.stats, strategy="scale",
                                objective_name=name, bound_engine=self.bound_engine if bound else "",
                                problem=problem)
        value, schedule, origin = self.best
        assert_valid(problem, schedule, f"schedule found by {origin}")
        return SearchResult(
            status=Status.OPTIMAL if value <= bound else Status.FEASIBLE,
            schedule=schedule,
            objective=value,
            lower_bound=min(bound, value),
            wall_time_s=wall,
            backend=self.backend_name,
            stats=self.stats,
            strategy="scale",
            objective_name=name,
            engine=origin,
            bound_engine=self.bound_engine,
            problem=problem,
        )


def _list_schedules(run: _ScaleRun, rules: Sequence[PipelineRule]) -> None:
    """The list schedule of every rule, without groups, then forming the
    groups that save time (when some do), until one meets the bound or time is up."""
    t_list = run.deadline.elapsed
    tried = 0
    search_problem = run.search_problem
    saving_groups = any(ov.duration < sum(search_problem.graph.block(b).min_duration for b in ov.blocks)
                        for ov in search_problem.overlaps)
    for form_groups in (False, True) if saving_groups else (False,):
        for rule in rules:
            if run.best is not None and run.best[0] <= run.bound:
                break
            if run.deadline.expired():
                break
            tried += 1
            engine = f"list scheduling ({rule}{', pairs formed' if form_groups else ''})"
            run.reporter.report(engine)
            run.offer(list_plan(search_problem, rule, form_groups=form_groups, deadline=run.deadline), engine)
    run.stats["list_rules_tried"] = tried
    run.stats["list_s"] = run.deadline.elapsed - t_list


def _tie_list(search_problem: Problem, ties: str | Sequence[Tie] | None, periodic_window: tuple[float, float],
              period: int | None, extra_ties: Sequence[Tie]) -> tuple[Tie, ...]:
    """The ties of the exact search: periodic ones over the window (``"auto"``:
    on problems of more than :data:`TIES_AUTO_TASKS` tasks), the given ones, and the extra ones."""
    if ties == "auto":
        ties = "periodic" if len(search_problem.tasks) > TIES_AUTO_TASKS else None
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


def _exact_search(run: _ScaleRun, tie_list: tuple[Tie, ...]) -> SearchResult | None:
    """The exact search with the time left (warm-started from the best plan
    unless tied); its plan is offered, its bound kept when untied. Returns
    the INFEASIBLE result when an untied search proves it, else None."""
    stats, deadline = run.stats, run.deadline
    stats["ties"] = len(tie_list)
    t_exact = deadline.elapsed
    # a tied search proves bounds of the tied space only
    exact_options = run.opts.replace(
        time_limit_s=deadline.left(),
        warm_starts=(run.best[1],) if run.best is not None and not tie_list else (),
        progress=run.reporter.relay(bounds=not tie_list),
    )
    exact_result = optimal(run.search_problem, ties=tie_list, options=exact_options)
    run.backend_name = exact_result.backend or run.backend_name
    stats["exact_s"] = deadline.elapsed - t_exact
    stats["exact_status"] = exact_result.status.value
    stats["deterministic_s"] = exact_result.stats.get("deterministic_s", 0.0)
    deadline.charge(stats["deterministic_s"])
    if exact_result.stats.get("wall_guard_hit"):
        stats["wall_guard_hit"] = True
    stats["exact_restricted_status"] = exact_result.stats.get("restricted_status")
    if exact_result.schedule is not None and exact_result.engine.startswith("exact search"):
        run.offer(exact_result.schedule, f"exact search ({run.backend_name}{', tied' if tie_list else ''})")
    if not tie_list and exact_result.lower_bound is not None and exact_result.lower_bound > run.bound:
        run.bound, run.bound_engine = exact_result.lower_bound, exact_result.bound_engine
    if not tie_list and exact_result.status is Status.INFEASIBLE:
        return SearchResult(status=Status.INFEASIBLE, wall_time_s=deadline.elapsed, backend=run.backend_name,
                            stats=stats, strategy="scale", objective_name=run.objective_name,
                            bound_engine=run.backend_name, problem=run.problem)
    return None
