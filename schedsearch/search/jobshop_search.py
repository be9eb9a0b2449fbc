"""The operator-level planner: flexible job shop with channels and memory.

Each block of an arbitrary DAG may run on one of several machines (its
options); a transfer runs on a channel between two machines only when
dependent blocks land on different machines, one transfer at a time per
channel; memory levels rise and fall with the blocks (deltas at the start,
workspace while running). The planner chooses machines, orders blocks and
transfers, respects the memory capacities and minimises the makespan, with
the exact model of a backend (CP-SAT or Z3).

Pipeline (every phase stays within ``time_limit_s`` in total):

1. **baseline**: list scheduling
   (:func:`~schedsearch.search.list_scheduling.heft`); its schedule is the warm
   start of the exact search, and it is returned when nothing better is
   found. It is also available on its own (``list_baseline_only=True``).
2. **coarsening** (only with ``coarsen_to`` and a larger graph): the graph is
   merged to ``coarsen_to`` blocks (:func:`~schedsearch.search.coarsening.coarsen`),
   the coarse problem is solved exactly (warm-started from its own list
   schedule) for ``coarse_share`` of the time, and its schedule is expanded
   into a schedule of the original problem.
3. **quick pass** (CP-SAT, plain job shops without coarsening, when the stronger
   no-overlap propagation was switched on automatically, see
   ``strong_disjunctive`` and ``quick_pass``): short exact searches
   without that propagation (it costs a set-up of up to 0.4
   deterministic seconds on a 15x5 instance (la06: 0.4 against 0.002) and
   about 1.7 times the wall clock per deterministic second on 10x10 ones,
   la17). Two steps: (a) warm-started from the best plan, for 0.04
   deterministic seconds: it settles the instances whose optimum meets the
   lower bound (la01, la05); (b) when step (a)'s plan is still more than
   15% above the bound, the plain model's search (the plan only caps the
   makespan, no hint), for 0.35 deterministic seconds: it settles the
   instances a plain CP-SAT model proves at once (la17; where it proves
   nothing it has cost at most that). With a smaller gap the exact search
   from step (a)'s plan, which stops at a plan that meets the bound, is
   the quicker way (la07, la09, la10, la12: step (b) would add 0.1 s for
   nothing). Step (b) is a wall-clock measure: it does not run in
   deterministic mode. Each step's plan and proven bound are kept; the
   exact search starts from step (a)'s plan and bound, so step (b) adds
   its cost but does not redirect that search.
4. **exact search on the original problem**: warm-started from the best
   schedule so far (without coarsening this is the whole search; after it,
   the *refinement*, skipped with ``refine=False``). For a plain job shop
   with CP-SAT on the wall clock without the stronger no-overlap
   propagation (flexible options), that schedule caps the makespan instead
   of being a solution hint (hinted one-worker searches of flexible job
   shops prove far later); otherwise it stays a hint.

The best validated schedule wins. The lower bound is the original problem's
(the analytic bound, for a plain job shop the full lower bound of
:func:`~schedsearch.bounds.lower_bound`, or the quick pass's or exact
search's proven bound): a coarse optimum is no bound on the original
problem, since coarsening restricts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.deadline import set_aside, stopping, unstopped
from schedsearch.encode.backends import Capability, get_backend, problem_features, supports
from schedsearch.errors import DeadlineExceeded
from schedsearch.heap import survivors_frozen

from schedsearch.options import DETERMINISTIC_UNITS_PER_S, Rule, SearchOptions
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule
from schedsearch.search.coarsening import coarsen
from schedsearch.search.list_scheduling import heft
from schedsearch.search.exact import exact_search
from schedsearch.search.run import Plan, Provenance, Run, RunView, Source

__all__ = ["jobshop", "jobshop_search", "transfer_overlap"]

#: budgets of the quick pass's warm-started step: CP-SAT's deterministic time
#: (in deterministic seconds, :data:`~schedsearch.options.DETERMINISTIC_UNITS_PER_S`),
#: so the step stops at the same point under any load, and a wall-clock cap
#: (seconds; deterministic seconds in deterministic mode). It proves la01,
#: ft06 and la05 within 0.002, 0.013 and 0.015 deterministic seconds (seeds
#: 0-2, 2 workers); la02-la04 are not proven within 0.1.
_QUICK_DET_S = 0.04
_QUICK_S = 0.15

#: budgets of the quick pass's plain step (the plain model's search: no
#: hint, no stronger propagation), as above. With one worker it proves
#: la10, la17 and la01 within 0.10, 0.31 and 0.07 deterministic seconds
#: (0.04, 0.09 and 0.03 s; the stronger propagation takes 0.1-0.2 s);
#: la02, la04 and la07 need 0.55-0.72, la08 and la12 more than 1.
_PLAIN_DET_S = 0.35
_PLAIN_S = 0.5

#: the plain step runs only when the best plan is more than this share above the bound
_PLAIN_MIN_GAP = 0.15

#: a step of the quick pass runs only when at least this many of its wall-clock caps are left
_QUICK_MIN_LEFT = 8

#: time kept back from each exact search for model building and validation
_MARGIN_S = 0.3
_MARGIN_SHARE = 0.01

#: former knob names of :func:`jobshop` and their present ones
_RENAMED = {"heuristic": "list_baseline", "heuristic_only": "list_baseline_only"}


@survivors_frozen()
def jobshop(
    problem: Problem,
    *,
    list_baseline: bool = True,
    list_baseline_only: bool = False,
    coarsen_to: int | None = None,
    coarsen_options: Mapping[str, Any] | None = None,
    coarse_share: float = 0.5,
    refine: bool = True,
    strong_disjunctive: bool | None = None,
    redundant: bool | None = None,
    quick_pass: bool = True,
    options: SearchOptions | None = None,
    **common: Any,
) -> SearchResult:
    """Plan ``problem`` as a flexible job shop (see the module notes).

    Parameters
    ----------
    problem:
        Any problem of the model; job shops have one micro-batch.
    list_baseline:
        Run the list-scheduling baseline (:func:`~schedsearch.search.heft`)
        and warm-start from it.
    list_baseline_only:
        Return the baseline without any exact search.
    coarsen_to:
        Coarsen graphs with more blocks than this first.
    coarsen_options:
        Keyword arguments of :func:`~schedsearch.search.coarsening.coarsen`
        (``max_duration``, ``max_memory``, ``strict_factor``, ``non_adjacent``).
    coarse_share:
        Share of the time limit given to the coarse search when a refinement
        follows, in ``(0, 1]``.
    refine:
        After coarsening, search the original problem from the expanded plan.
    strong_disjunctive:
        With CP-SAT, turn on its stronger no-overlap propagation
        (``use_strong_propagation_in_disjunctive``). None (default): on when
        every block has one option (a classic job shop: no optional
        intervals), where it proves 10x10 instances 3-6 times faster; off
        with flexible options, where it slows the search down (measured in
        the job-shop benchmark). An explicit ``backend_params`` entry wins.
    redundant:
        As for :func:`~schedsearch.search.optimal`. None (default): off for
        a plain (flexible) job shop (one micro-batch, the makespan, every
        option on one device, no memory capacity, transfer, release, fixed
        order or overlapped group: what the job-shop loaders build) with
        CP-SAT, on otherwise (Z3 was not measured without them). The redundant bounds are implied constraints: turning
        them off removes no schedule, so it changes the speed, never a
        result's claims. On plain job shops CP-SAT's own propagation of the
        job chains and machines finds what they say; measured, they slow
        mk08 down 5-10 times and help no instance of the job-shop benchmark.
    quick_pass:
        Run the quick pass (module notes, phase 3) where it applies: a
        plain job shop (as for ``redundant``), CP-SAT, the stronger
        no-overlap propagation chosen automatically (neither
        ``strong_disjunctive`` nor ``backend_params`` set it), no
        coarsening, and no less than 1.2 s left (4 s for its plain step,
        which runs only while the plan is more than 15% above the bound,
        and not in deterministic mode).
        Its steps stop after 0.04 and 0.35 deterministic seconds of CP-SAT
        (or 0.15 and 0.5 s).
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions` or
        keywords of its field names); ``time_limit_s`` covers the whole
        pipeline; the best of the ``warm_starts`` (valid plans of
        ``problem``) is kept if it beats the baseline. Progress phases:
        ``"bound"``, ``"warm start i"``, ``"list scheduling (HEFT, <rule>)"``,
        ``"quick pass: ..."``, ``"quick pass (plain): ..."``, ``"coarse search: ..."``,
        ``"coarse plan expanded (...)"``, the backend's
        ``"exact search (<backend>)"``.

    Returns
    -------
    SearchResult
        Strategy ``"jobshop"``; ``engine`` names what found the plan,
        ``bound_engine`` what proved the bound; ``stats`` holds each
        phase's makespan and time (``baseline``, ``quick``, ``quick_plain``, ``coarse``,
        ``expanded``, ``exact``), the starting bound (``analytic_bound``;
        for a plain job shop the full lower bound, its parts in
        ``bound_parts``), the coarsening
        figures and ``redundant`` (the value used).

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> jobshop(p, time_limit_s=10).objective
    6
    """
    run = Run.open(problem, options, common, "jobshop", renamed=_RENAMED, own={
        "list_baseline": (list_baseline, Rule.boolean()), "list_baseline_only": (list_baseline_only, Rule.boolean()),
        "coarsen_to": (coarsen_to, Rule.integer(1, none=True)),
        "coarsen_options": (coarsen_options, _COARSEN_OPTIONS),
        "coarse_share": (coarse_share, Rule.number(maximum=1, above=0)), "refine": (refine, Rule.boolean()),
        "strong_disjunctive": (strong_disjunctive, Rule.boolean(none=True)),
        "redundant": (redundant, Rule.boolean(none=True)), "quick_pass": (quick_pass, Rule.boolean()),
    })
    return jobshop_search(run, list_baseline=list_baseline, list_baseline_only=list_baseline_only,
                          coarsen_to=coarsen_to, coarsen_options=coarsen_options, coarse_share=coarse_share,
                          refine=refine, strong_disjunctive=strong_disjunctive, redundant=redundant,
                          quick_pass=quick_pass)


def jobshop_search(run: Run, *, list_baseline: bool = True, list_baseline_only: bool = False,
                   coarsen_to: int | None = None, coarsen_options: Mapping[str, Any] | None = None,
                   coarse_share: float = 0.5, refine: bool = True, strong_disjunctive: bool | None = None,
                   redundant: bool | None = None, quick_pass: bool = True) -> SearchResult:
    """:func:`jobshop` inside ``run`` (its options already checked; its warm starts are checked here).

    Its passes run under the run's hard stop (:func:`~schedsearch.deadline.stopping`): past it, the pass
    running ends where it is and the result holds the best plan and bound found before it."""
    shop = _JobShop.start(run, _plain_job_shop(run.problem))
    try:
        with stopping(shop.deadline):
            return _passes(shop, list_baseline=list_baseline, list_baseline_only=list_baseline_only,
                           coarsen_to=coarsen_to, coarsen_options=coarsen_options, coarse_share=coarse_share,
                           refine=refine, strong_disjunctive=strong_disjunctive, redundant=redundant,
                           quick_pass=quick_pass)
    except DeadlineExceeded as stop:
        set_aside(stop)
        shop.stats["stopped_at_s"] = round(shop.deadline.elapsed, 3)
        return shop.result(None)


def _passes(shop: _JobShop, *, list_baseline: bool, list_baseline_only: bool, coarsen_to: int | None,
            coarsen_options: Mapping[str, Any] | None, coarse_share: float, refine: bool,
            strong_disjunctive: bool | None, redundant: bool | None, quick_pass: bool) -> SearchResult:
    """The passes of :func:`jobshop_search` on ``shop``, in order, each while time is left."""
    problem, opts = shop.problem, shop.options
    for i, schedule in enumerate(opts.checked_warm_starts(problem, "jobshop")):

        shop.offer(schedule, Provenance.warm_start(i))
    if list_baseline or list_baseline_only:
        infeasible = _baseline(shop)
        if infeasible is not None:
            return infeasible
    if list_baseline_only:
        return shop.result(None)
    params = _exact_options(shop, strong_disjunctive)
    if shop.best is not None and shop.best.schedule.makespan <= shop.bound:
        shop.stats["skipped_exact"] = "the incumbent meets the lower bound"
        return shop.result(None)
    if redundant is None:
        redundant = not (shop.plain and shop.backend_supports(Capability.STRONG_DISJUNCTIVE))
    shop.stats["redundant"] = redundant
    coarsening = coarsen_to is not None and len(problem.graph.blocks) > coarsen_to
    start = None
    if quick_pass and shop.plain and not coarsening:
        proven = _quick_pass(shop, params, redundant)
        if isinstance(proven, SearchResult):
            return proven
        start = proven
    if coarsening:
        _coarse_search(shop, params, coarsen_to, coarsen_options, coarse_share if refine else 1.0, redundant)
        if not refine:
            return shop.result(None)
    return _exact_search(shop, params, redundant, start)


def _plain_job_shop(problem: Problem) -> bool:
    """Whether ``problem`` is a plain (flexible) job shop: one micro-batch,
    the makespan objective, every option on one device, and no memory
    capacity, transfer, release, fixed order or overlapped group (what the
    job-shop loaders build)."""
    return (problem.num_microbatches == 1 and problem.objective == "makespan"
            and problem_features(problem) <= {"flexible_options"})


#: ``coarsen_options``: keywords of :func:`~schedsearch.search.coarsening.coarsen`
_COARSEN_OPTIONS = Rule(
    "None or a mapping of coarsen()'s keywords (max_duration, max_memory, strict_factor, non_adjacent)",
    lambda v: v is None or (isinstance(v, Mapping) and set(v) <= {"max_duration", "max_memory", "strict_factor",
                                                                   "non_adjacent"}),
)


@attrs.define
class _JobShop(RunView):
    """What :func:`jobshop_search` adds to its run: whether the problem is a plain job shop and whether the
    stronger no-overlap propagation was switched on automatically. Plans are ranked by their makespan."""

    run: Run
    #: the stronger no-overlap propagation was switched on by :func:`_exact_options` itself
    strong_auto: bool = False
    #: a plain job shop (:func:`_plain_job_shop`): ``bound`` is the full
    #: lower bound and the exact searches take it as theirs (:func:`_exact`)
    plain: bool = False
    #: the deterministic time the backend searches reported (set when a quick step proves or the exact search ran)
    deterministic_s: float | None = None

    def backend_supports(self, capability: Capability) -> bool:
        """Whether the run's backend declares ``capability``."""
        return supports(self.options.solver_backend, capability)

    @classmethod
    def start(cls, run: Run, plain: bool = False) -> _JobShop:
        """The bound reported: the analytic bound, or for a plain job shop the full lower bound of
        :func:`~schedsearch.bounds.lower_bound` (with the assignment LP when blocks have several options),
        computed once for every phase."""
        problem = run.problem
        run.stats["blocks"] = len(problem.graph.blocks)
        try:
            with stopping(run.budget):  # stopped like every phase: the call keeps the cheap bound then
                if plain:
                    full = run.facts.lower_bound(problem)
                    bound = full.value
                    run.stats["bound_parts"] = dict(full.parts)
                else:
                    from schedsearch.bounds.analytic import analytic_lower_bound

                    bound = analytic_lower_bound(problem).value
        except DeadlineExceeded as stop:
            set_aside(stop)
            from schedsearch.bounds.analytic import _average_load

            with unstopped():  # linear in the blocks
                bound = _average_load(problem)
            run.note(f"stopped at the time limit while the lower bound was computed, "
                     f"{run.budget.elapsed:.2f} s into the call: the bound is the average load's")
        run.stats["analytic_bound"] = bound
        run.raise_bound(bound, "analytic")
        run.reporter.report("bound", bound=bound)
        return cls(run=run, plain=plain)


    def offer(self, schedule: Schedule | None, provenance: Provenance) -> None:
        """Keep ``schedule`` (a validated plan: every phase validates its own) when it beats the best plan so
        far (by makespan)."""
        if schedule is not None:
            self.run.offer(schedule, provenance, validated=True, value=schedule.makespan)

    def remaining(self) -> float | None:
        """Time left, less a margin for building the model and validating
        the schedule, which the solver's own limit does not count."""
        left = self.deadline.left()
        return None if left is None else max(0.0, left - _MARGIN_S - _MARGIN_SHARE * left)

    def result(self, solved: SearchResult | None) -> SearchResult:
        """The best plan with the best bound (see :func:`_result`)."""
        best = self.best
        facts = {"deterministic_s": self.deterministic_s, "wall_guard_hit": self.deadline.wall_guard_hit}
        return _result(self.problem, None if best is None else (best.schedule, best.engine),
                       (self.bound, self.bound_engine), solved, self.stats, self.deadline.elapsed,
                       self.options.backend_name, facts)


def _baseline(run: _JobShop) -> SearchResult | None:
    """HEFT's best list schedule offered as a plan; the INFEASIBLE result when
    fixed orders and edges form a cycle (no plan exists), else None."""
    # the run's makespan bound, computed once, serves HEFT's result too (not for a "max_span" objective)
    known = None if run.problem.objective == "max_span" else (run.bound, run.bound_engine)
    base = heft(run.problem, bound=known)
    if base.status is Status.INFEASIBLE:  # fixed orders and edges form a cycle
        run.stats["baseline"] = {"status": base.status.value, "reason": base.stats.get("reason")}
        return attrs.evolve(base, wall_time_s=run.deadline.elapsed, stats=run.stats, strategy="jobshop")
    run.stats["baseline"] = {"makespan": base.objective, "time_s": base.wall_time_s, "rule": base.stats.get("rule")}
    run.offer(base.schedule, Provenance(source=Source.LIST, engine=base.engine))
    return None


def _exact_options(run: _JobShop, strong_disjunctive: bool | None) -> dict[str, Any]:
    """The backend parameters of the exact searches: the backend's stronger no-overlap
    propagation where it has one and it helps (unless the caller's parameters say otherwise)."""
    params = dict(run.options.backend_params)
    auto = strong_disjunctive is None
    if auto:
        strong_disjunctive = all(b.is_fixed for b in run.problem.graph.blocks)
    if strong_disjunctive and run.backend_supports(Capability.STRONG_DISJUNCTIVE):
        param = _strong_param(run)
        run.strong_auto = auto and param not in params
        params.setdefault(param, True)
    run.stats["backend_params"] = dict(params)
    return params


def _strong_param(run: _JobShop) -> str:
    """The parameter of the backend's stronger no-overlap propagation (:attr:`Capability.STRONG_DISJUNCTIVE`)."""
    return str(get_backend(run.options.solver_backend).strong_disjunctive_param)


def _seeded(child: Run, run: _JobShop, best: Plan | None = None) -> Run:
    """``child`` with ``best`` (default the job shop's best plan so far; a validated plan of the same problem)
    to start from."""
    best = run.best if best is None else best
    if best is not None:
        child.offer(best.schedule, Provenance.warm_start(0), validated=True, report=False)
    return child


#: where the exact search starts after the quick pass: the plan to start from and the lower bound it is given
_Start = tuple[Plan | None, int]


def _quick_pass(run: _JobShop, params: dict[str, Any], redundant: bool) -> SearchResult | _Start | None:
    """The quick pass (module notes, phase 3): short CP-SAT searches without
    the stronger no-overlap propagation; the result when one proves the
    optimum (or infeasibility), else where the exact search starts (the
    warm-started step's best plan and bound), every plan found offered and
    every bound proven kept. The plain step runs only when the warm-started
    step's plan is more than ``_PLAIN_MIN_GAP`` above the bound, and not in
    deterministic mode: there CP-SAT interleaves its subsolvers, so the step
    is not the plain model's search; on la17-la20 it proved nothing and the
    call used 1-2 deterministic seconds more.

    Applies only where :func:`_exact_options` switched the propagation on
    by itself (None otherwise); a step is skipped when less than
    ``_QUICK_MIN_LEFT`` of its wall-clock caps are left.
    """
    if not run.strong_auto:
        return None
    proven = _quick_step(run, params, redundant, hint=True)
    if isinstance(proven, SearchResult):
        return proven
    # the exact search starts where the warm-started step left it: the plain step only adds its cost
    start = (run.best, run.bound)
    best = run.best
    if run.options.deterministic or (best is not None and best.value <= (1 + _PLAIN_MIN_GAP) * run.bound):
        return start
    proven = _quick_step(run, params, redundant, hint=False)
    return proven if isinstance(proven, SearchResult) else start


def _quick_step(run: _JobShop, params: dict[str, Any], redundant: bool, *, hint: bool) -> SearchResult | None:
    """One step of the quick pass: warm-started from the best plan (``hint``), or the plain model's search (the
    plan only caps the makespan); the result when it proves the optimum (or infeasibility), else None with
    its plan offered and its proven bound kept (also None when skipped)."""
    det_s, cap_s, key, name = ((_QUICK_DET_S, _QUICK_S, "quick", "quick pass") if hint else
                               (_PLAIN_DET_S, _PLAIN_S, "quick_plain", "quick pass (plain)"))
    left = run.remaining()
    if left is not None and left < _QUICK_MIN_LEFT * cap_s:
        return None
    strong = _strong_param(run)
    limit = str(get_backend(run.options.solver_backend).deterministic_limit_param)
    quick_params = {k: v for k, v in params.items() if k != strong}
    quick_params[limit] = min(quick_params.get(limit, float("inf")), det_s * DETERMINISTIC_UNITS_PER_S)
    child = _seeded(run.run.child(time_limit_s=cap_s, prefix=name, backend_params=quick_params), run)
    quick = _exact(run, child, redundant, hint=hint)
    run.stats[key] = {
        "status": quick.status.value,
        "makespan": quick.objective,
        "lower_bound": quick.lower_bound,
        "time_s": quick.wall_time_s,
        "deterministic_s": child.budget.reported_s,
    }
    found = child.last(Source.EXACT)
    if found is not None:
        run.offer(found.schedule, Provenance(source=Source.QUICK, engine=f"{name}: {found.engine}"))
    if quick.status in (Status.OPTIMAL, Status.INFEASIBLE):
        run.deterministic_s = run.run.budget.reported_s
        return run.result(quick)
    if quick.lower_bound is not None and quick.lower_bound > run.bound:
        run.run.raise_bound(quick.lower_bound, quick.bound_engine)
    return None


def _coarse_search(run: _JobShop, params: dict[str, Any], coarsen_to: int,
                   coarsen_options: Mapping[str, Any] | None, share: float, redundant: bool) -> None:
    """Coarsen the graph to ``coarsen_to`` blocks, search the coarse problem
    exactly for ``share`` of the time left (from its own list schedule), and
    offer its plan expanded back to the problem."""
    tc = run.deadline.elapsed
    coarsening = coarsen(run.problem, coarsen_to, **dict(coarsen_options or {}))
    run.stats["coarsening"] = dict(coarsening.stats, time_s=run.deadline.elapsed - tc)
    coarse_base = heft(coarsening.coarse)
    left = run.remaining()
    budget = left * share if left is not None else None
    run.reporter.report("coarse search")
    # plans and bounds of the coarse problem are neither plans nor bounds of this one
    child = run.run.child(coarsening.coarse, time_limit_s=max(budget, 0.1) if budget is not None else None,
                          incumbents=False, bounds=False, prefix="coarse search", backend_params=params)
    if coarse_base.schedule is not None:  # HEFT validated it against the coarse problem
        child.offer(coarse_base.schedule, Provenance.warm_start(0), validated=True, report=False)
    coarse_result = exact_search(child, redundant=redundant)
    run.stats["coarse"] = {
        "status": coarse_result.status.value,
        "makespan": coarse_result.objective,
        "lower_bound": coarse_result.lower_bound,
        "heuristic_makespan": coarse_base.objective,
        "time_s": coarse_result.wall_time_s,
        "deterministic_s": child.budget.reported_s,
    }
    if coarse_result.schedule is not None:
        te = run.deadline.elapsed
        expanded = coarsening.expand(coarse_result.schedule)
        run.stats["expanded"] = {"makespan": expanded.makespan, "time_s": run.deadline.elapsed - te}
        run.offer(expanded, Provenance(source=Source.COARSE, engine=f"coarse plan expanded ({coarse_result.engine})"))


def _exact_search(run: _JobShop, params: dict[str, Any], redundant: bool, start: _Start | None = None) -> SearchResult:
    """The exact search of the problem, warm-started from the best plan so
    far (or from ``start``'s plan, with its bound), with the time left
    (skipped when too little is left)."""
    left = run.remaining()
    if left is not None and left < 0.1:
        run.stats["skipped_exact"] = "no time left"
        return run.result(None)
    plan, lower = (None, None) if start is None else start
    child = _seeded(run.run.child(time_limit_s=left, backend_params=params), run, plan)
    solved = _exact(
        run,
        child,
        redundant,
        lower_bound=lower,
        # CP-SAT without the stronger no-overlap propagation (flexible options) on the wall clock: the
        # plan so far caps the makespan instead of being a hint; guided by a list schedule's hint,
        # one-worker searches of flexible job shops prove far later (mk08: 6-11 s over seeds 0-3,
        # against 0.1-0.4 s unhinted). With that propagation (classic job shops) the hint helps (la10:
        # 0.19 s against 0.57 s unhinted); in deterministic mode, where the limit counts CP-SAT's
        # deterministic time, it stays too: an unhinted search costs about 2 deterministic seconds
        # more (mk01, mk08) at equal wall time. The quick pass's first step keeps the hint.
        hint=run.options.deterministic or (run.backend_supports(Capability.STRONG_DISJUNCTIVE)
                                           and bool(params.get(_strong_param(run)))),
    )
    run.stats["exact"] = {
        "status": solved.status.value,
        "makespan": solved.objective,
        "lower_bound": solved.lower_bound,
        "time_s": solved.wall_time_s,
        "solver": dict(solved.stats),
    }
    run.deterministic_s = run.run.budget.reported_s
    found = child.last(Source.EXACT)
    if found is not None:
        run.offer(found.schedule, found.provenance)
    return run.result(solved)


def _exact(run: _JobShop, child: Run, redundant: bool, hint: bool = True,
           lower_bound: int | None = None) -> SearchResult:
    """One exact search of the job shop's problem in ``child`` (from the best plan of its pool, if any; with
    ``lower_bound``, default the run's bound, as the backend's).

    :func:`~schedsearch.search.exact.exact_search`, except for a plain job shop: its
    full lower bound is the run's (:meth:`_JobShop.start`), so the backend is
    called directly with it instead of computing it again (as
    :func:`~schedsearch.search.optimal` does, the bound lets the search stop
    at a plan that meets it, and it is merged into the result's bound by
    :func:`~schedsearch.encode.solve`; a plain job shop has the makespan
    objective and no ties, so no other part of
    :func:`~schedsearch.search.optimal` applies).
    """
    if not run.plain:
        return exact_search(child, redundant=redundant)
    best = child.best
    warm = None if best is None else best.schedule
    # the plan so far as a solution hint, or (hint=False, a backend that takes hints) only as a cap on the makespan
    hinted = warm is not None and (hint or not run.backend_supports(Capability.SOLUTION_HINT))
    result = child.backend_search(run.problem, child.solve_options(
        warm_start=warm if hinted else None,
        upper_bound=None if warm is None or hinted else warm.makespan,
        redundant=redundant,
        lower_bound=run.bound if lower_bound is None else lower_bound,
        progress=child.options.progress,
    ))
    engine = ""
    if result.schedule is not None:  # the backend validated it against this very problem
        exact = Provenance(source=Source.EXACT, engine=f"exact search ({result.backend})")
        child.offer(result.schedule, exact, validated=True, report=False, value=result.schedule.makespan)
        engine = exact.engine
    if warm is not None and result.schedule is None and result.status is not Status.INFEASIBLE:
        # the solver found nothing within the limit: the warm start stands
        engine = "warm start 0"
        result = attrs.evolve(result, schedule=warm, objective=warm.makespan, status=Status.FEASIBLE)
    bound_engine = ""
    if result.lower_bound is not None and result.status is not Status.INFEASIBLE:
        bound_engine = "analytic" if result.lower_bound <= run.bound else result.backend
    return attrs.evolve(result, strategy="optimal", engine=engine, bound_engine=bound_engine, problem=run.problem)


def _result(
    problem: Problem,
    incumbent: tuple[Schedule, str] | None,
    bound: tuple[int, str],
    solved: SearchResult | None,
    stats: dict[str, Any],
    wall: float,
    backend: str,
    facts: Mapping[str, Any],
) -> SearchResult:
    """The best plan found (``incumbent``: the schedule and what found it)
    with the better of ``bound`` (the run's bound and what proved it) and
    the exact search's; INFEASIBLE as the exact search proved it. ``facts``:
    the result's fields of how the run went (``deterministic_s``, ``wall_guard_hit``)."""
    if solved is not None and solved.status is Status.INFEASIBLE:
        return attrs.evolve(solved, wall_time_s=wall, stats=stats, strategy="jobshop", problem=problem, **facts)
    lower, bound_engine = bound
    if solved is not None and solved.lower_bound is not None and solved.lower_bound > lower:
        lower, bound_engine = solved.lower_bound, solved.bound_engine
    if incumbent is None:
        status = solved.status if solved is not None else Status.UNKNOWN
        return SearchResult(status=status, lower_bound=lower, wall_time_s=wall, backend=backend, stats=stats,
                            strategy="jobshop", bound_engine=bound_engine, problem=problem, **facts)
    schedule, source = incumbent
    return SearchResult(
        status=Status.FEASIBLE,  # OPTIMAL when the bound meets it (SearchResult's rule)
        schedule=schedule,
        objective=schedule.makespan,
        lower_bound=min(lower, schedule.makespan),
        wall_time_s=wall,
        backend=backend,
        stats=stats,
        strategy="jobshop",
        engine=source,
        bound_engine=bound_engine,
        problem=problem,
        **facts,
    )


def transfer_overlap(problem: Problem, schedule: Schedule) -> dict[str, float]:
    """How much transfer time is hidden under compute.

    Returns ``total`` (summed transfer time), ``hidden_both`` (share of it
    during which both endpoint devices of the channel are computing),
    ``hidden_any`` (share during which at least one of them is) and
    ``exposed`` (share during which neither is). All shares are 0 without
    transfers.

    Examples
    --------
    Three micro-batches of ``A`` (on ``d0``) sending 3 units to ``B`` (on
    ``d1``): most of each transfer runs while a device computes.

    >>> from schedsearch import Block, Channel, Cluster, Device, Graph, Problem
    >>> from schedsearch.search import heft, transfer_overlap
    >>> problem = Problem(
    ...     graph=Graph(blocks=[Block(name="A", options=[("d0", 2)]), Block(name="B", options=[("d1", 2)])],
    ...                 edges=[("A", "B", 3)]),
    ...     num_microbatches=3,
    ...     cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")],
    ...                     channels=[Channel(name="link", endpoints=("d0", "d1"))]),
    ... )
    >>> shares = transfer_overlap(problem, heft(problem).schedule)
    >>> shares["total"], round(shares["hidden_any"], 3), round(shares["exposed"], 3)
    (9, 0.778, 0.222)
    """
    busy: dict[str, list[tuple[int, int]]] = {}
    for t in schedule.tasks:
        for d in t.devices:
            busy.setdefault(d, []).append((t.start, t.end))
    union = {d: _union(v) for d, v in busy.items()}
    channels = {c.name: c for c in problem.cluster.channels}
    total = both = anyone = 0
    for tr in schedule.transfers:
        if tr.end <= tr.start:
            continue
        a, b = channels[tr.channel].endpoints
        ua, ub = union.get(a, []), union.get(b, [])
        window = [(tr.start, tr.end)]
        on_a = _length(_intersect(ua, window))
        on_b = _length(_intersect(ub, window))
        on_both = _length(_intersect(_intersect(ua, ub), window))
        total += tr.end - tr.start
        both += on_both
        anyone += on_a + on_b - on_both
    if total == 0:
        return {"total": 0, "hidden_both": 0.0, "hidden_any": 0.0, "exposed": 0.0}
    return {"total": total, "hidden_both": both / total, "hidden_any": anyone / total, "exposed": 1 - anyone / total}


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _intersect(x: list[tuple[int, int]], y: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Intersection of two sorted lists of disjoint intervals."""
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        s, e = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if s < e:
            out.append((s, e))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)
