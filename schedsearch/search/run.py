"""One search run: what every strategy of :mod:`schedsearch.search` works inside.

A public strategy (:func:`~schedsearch.solve`, :func:`~schedsearch.search.optimal`,
:func:`~schedsearch.search.scale_search`, :func:`~schedsearch.search.jobshop`,
:func:`~schedsearch.search.repetend`, :func:`~schedsearch.search.pareto`,
:func:`~schedsearch.search.min_memory`) opens one :class:`Run` at its door
(:meth:`Run.open`): the options are checked there once, before any work.
The run then holds, for the whole call:

* the **budget** (:class:`Budget`): the wall clock and, in deterministic mode,
  the deterministic time the solver searches used (a search of a backend that
  reports none: its whole limit); a sub-search gets a child
  run (:meth:`Run.child`) whose budget draws from its parent's, and every
  backend search charges the budget of the run that started it
  (:meth:`Run.backend_search`), so the time spent reaches every run above it
  without being passed up by hand;
* the **facts** of its problems (:class:`Facts`, shared by a run and its
  children): the problem with its redundant overlaps dropped and the
  analytic lower bounds, each computed once per problem;
* the **pool** of plans (:class:`Plan`): each validated against the run's
  problem once, with where it came from as a typed :class:`Provenance`;
* the best **bound** and what proved it;
* the **progress reporter** (:class:`~schedsearch.options.Reporter`);
* the backend's options, derived from the run's options in one place
  (:meth:`Run.solve_options`, :meth:`Run.repetend_options`).

A strategy is a function of a run that offers plans (:meth:`Run.offer`) and
raises the bound (:meth:`Run.raise_bound`); the public entry turns the run
into its :class:`~schedsearch.result.SearchResult`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from schedsearch.deadline import current_stop
from schedsearch.encode import solve
from schedsearch.encode.backends import backend_params_error
from schedsearch.errors import InvalidOptionsError
from schedsearch.options import Deadline, Reporter, Rule, SearchOptions, resolve_options
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, objective_value

if TYPE_CHECKING:  # pragma: no cover
    from schedsearch.bounds.analytic import AnalyticBound
    from schedsearch.encode import SolveOptions
    from schedsearch.encode.repetend import RepetendOptions
    from schedsearch.result import SearchResult

__all__ = ["Budget", "Facts", "Plan", "Provenance", "Run", "Source"]


class Budget(Deadline):
    """The time of one run: a :class:`~schedsearch.options.Deadline` that charges its parent too.

    A child budget (:meth:`child`) starts its own clock with its own limit
    (a share of what its parent has left); the deterministic time charged
    to it is charged to every budget above it, and so is a search stopped
    by its wall-clock guard (:attr:`wall_guard_hit`).

    Examples
    --------
    >>> from schedsearch.search.run import Budget
    >>> outer = Budget(10.0, deterministic=True)
    >>> inner = outer.child(outer.left())
    >>> inner.charge(4.0)
    >>> inner.left(), outer.left(), outer.used_s
    (6.0, 6.0, 4.0)
    """

    def __init__(self, limit_s: float | None, deterministic: bool = False, parent: Budget | None = None) -> None:
        super().__init__(limit_s, deterministic=deterministic)
        self.parent = parent
        #: a deterministic backend search under this budget was stopped by its wall-clock guard
        self.wall_guard_hit = False
        #: some backend search under this budget reported the deterministic time it used
        self.metered = False
        #: the deterministic time the backend searches under this budget reported
        self.reported_s = 0.0

    @property
    def used_s(self) -> float:
        """Deterministic time the backend searches under this budget used."""
        return self.spent

    def child(self, limit_s: float | None) -> Budget:
        """A budget for a sub-search, with its own limit, charging this one."""
        return Budget(limit_s, deterministic=self.deterministic, parent=self)

    def charge(self, seconds: float) -> None:
        super().charge(seconds)
        if self.parent is not None:
            self.parent.charge(seconds)

    def charge_search(self, result: SearchResult, unmetered_s: float | None = None) -> None:
        """Charge what one backend search reports (its result's ``deterministic_s`` and ``wall_guard_hit``) to
        this budget and every one above it; a search that reports no deterministic time (Z3) is charged
        ``unmetered_s`` (the time limit it was given) instead, the same whatever the wall clock said."""
        used = result.deterministic_s
        budget: Budget | None = self
        while budget is not None:
            if used is not None:
                budget.metered = True
                budget.reported_s += float(used)
            if result.wall_guard_hit:
                budget.wall_guard_hit = True
            budget = budget.parent
        self.charge(float(used) if used is not None else float(unmetered_s or 0.0))

    @property
    def deterministic_s(self) -> float | None:
        """The deterministic time the backend searches under this budget reported (None: none reported any)."""
        return self.reported_s if self.metered else None


class Source(enum.Enum):
    """What kind of engine found a plan.

    Examples
    --------
    >>> from schedsearch.search.run import Source
    >>> Source("list scheduling") is Source.LIST, Source.EXACT.value
    (True, 'exact search')
    """

    WARM_START = "warm start"
    HANDCRAFTED = "handcrafted"
    LIST = "list scheduling"
    REPETEND = "repetend"
    EXACT = "exact search"
    QUICK = "quick pass"
    COARSE = "coarse plan"


@attrs.frozen(kw_only=True)
class Provenance:
    """Where a plan came from: the kind of engine and the name it is reported under
    (:attr:`~schedsearch.result.SearchResult.engine`).

    Examples
    --------
    >>> from schedsearch.search.run import Provenance, Source
    >>> str(Provenance.warm_start(2)), Provenance.warm_start(2).source is Source.WARM_START
    ('warm start 2', True)
    """

    source: Source
    engine: str

    @classmethod
    def warm_start(cls, index: int) -> Provenance:
        return cls(source=Source.WARM_START, engine=f"warm start {index}")

    def __str__(self) -> str:
        return self.engine


@attrs.frozen(kw_only=True)
class Plan:
    """One plan of a run's pool: its objective value, the schedule (valid for the run's problem) and where it
    came from."""

    value: int
    schedule: Schedule = attrs.field(eq=False)
    provenance: Provenance

    @property
    def engine(self) -> str:
        return self.provenance.engine


class Facts:
    """Facts of the problems of one run and its children, each computed once per problem.

    A problem is recognised by identity (the facts hold a reference to every
    problem they describe, so an identity is never reused while they live).
    """

    def __init__(self) -> None:
        self._memo: dict[tuple[str, int], tuple[Problem, Any]] = {}

    def _get(self, kind: str, problem: Problem, compute: Any) -> Any:
        key = (kind, id(problem))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = (problem, compute(problem))
        return hit[1]

    def reduced(self, problem: Problem) -> Problem:
        """``problem`` without its redundant overlap declarations (:func:`~schedsearch.rewrite.reduced_problem`)."""
        from schedsearch.rewrite import reduced_problem

        reduced = self._get("reduced", problem, reduced_problem)
        if reduced is not problem:
            self._memo.setdefault(("reduced", id(reduced)), (reduced, reduced))
        return reduced

    def analytic(self, problem: Problem) -> AnalyticBound:
        """The analytic lower bound of ``problem``'s objective
        (:func:`~schedsearch.bounds.analytic.objective_lower_bound`)."""
        from schedsearch.bounds.analytic import objective_lower_bound

        return self._get("analytic", problem, objective_lower_bound)

    def lower_bound(self, problem: Problem) -> Any:
        """The full lower bound of the makespan (:func:`~schedsearch.bounds.lower_bound`: the analytic one and,
        where blocks choose among options, the assignment LP)."""
        from schedsearch.bounds.schedule_bounds import lower_bound

        return self._get("lower_bound", problem, lower_bound)


@attrs.define(eq=False)
class Run:
    """One search run: options, budget, facts, the pool of plans, the bound and the progress reporter
    (see the module docstring). Built by :meth:`open` (a public entry) or :meth:`child` (a sub-search).

    Examples
    --------
    A strategy offers plans and raises the bound; a sub-search draws from the run's budget:

    >>> from schedsearch.handcrafted import reproduce
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.search.run import Provenance, Run, Source
    >>> problem = vshape(2, 4)
    >>> run = Run.open(problem, None, {"time_limit_s": 10, "workers": 1}, "example")
    >>> plan = run.offer(reproduce("1f1b", devices=2, microbatches=4).schedule,
    ...                  Provenance(source=Source.HANDCRAFTED, engine="handcrafted 1F1B"))
    >>> plan.value, run.best.engine, run.raise_bound(15, "analytic"), run.bound_by
    (15, 'handcrafted 1F1B', True, 'analytic')
    >>> child = run.child(time_limit_s=5)
    >>> child.problem is problem, child.budget.left() <= 5
    (True, True)
    """

    problem: Problem
    options: SearchOptions
    budget: Budget
    reporter: Reporter
    facts: Facts
    #: every valid plan of ``problem`` offered, in the order offered
    plans: list[Plan] = attrs.field(factory=list)
    #: the best lower bound of the objective known, and what proved it ("" until one is known)
    bound: int = 0
    bound_by: str = ""
    #: figures for the result's ``stats``
    stats: dict[str, Any] = attrs.field(factory=dict)
    #: what the run left out and why (the result's ``notes``)
    notes: list[str] = attrs.field(factory=list)
    parent: Run | None = None

    @classmethod
    def open(cls, problem: Problem, options: SearchOptions | None, common: Mapping[str, Any], where: str, *,
             own: Mapping[str, tuple[Any, Rule]] | None = None, renamed: Mapping[str, str] | None = None,
             **defaults: Any) -> Run:
        """The run of one public entry ``where``: the options checked (:func:`~schedsearch.options.resolve_options`,
        ``problem`` must be a :class:`~schedsearch.problem.Problem`; the ``backend_params`` of a named backend
        must be parameters it takes), the clock started."""
        opts = resolve_options(options, common, where, own={"problem": (problem, Rule.instance(Problem, "a Problem")),
                                                          **(own or {})}, renamed=renamed, **defaults)
        if opts.backend_params and isinstance(opts.backend, str):
            why = backend_params_error(opts.backend_name, opts.backend_params)
            if why is not None:
                raise InvalidOptionsError(f"{where}: 'backend_params': {why}")
        budget = Budget(opts.time_limit_s, deterministic=opts.deterministic)
        return cls(problem=problem, options=opts, budget=budget, reporter=Reporter(opts.progress, budget.t0),
                   facts=Facts())

    def child(self, problem: Problem | None = None, *, time_limit_s: float | None,
              warm_starts: tuple[Schedule, ...] = (), incumbents: bool = True, bounds: bool = True,
              prefix: str | None = None, silent: bool = False, **changes: Any) -> Run:
        """A run for a sub-search of ``problem`` (default this run's) with ``time_limit_s`` of this run's budget
        (None: no limit of its own).

        Its progress reaches this run's reporter (``incumbents`` / ``bounds``:
        whether its values hold for this run's problem, ``prefix`` names
        this run's phase; ``silent``: it reports nothing); ``changes``
        replace other options (backend parameters, say). Its facts are this
        run's.
        """
        progress = None if silent else self.reporter.relay(incumbents=incumbents, bounds=bounds, prefix=prefix)
        opts = self.options.replace(time_limit_s=time_limit_s, warm_starts=warm_starts, progress=progress, **changes)
        budget = self.budget.child(opts.time_limit_s)
        return Run(problem=self.problem if problem is None else problem, options=opts, budget=budget,
                   reporter=Reporter(opts.progress, budget.t0), facts=self.facts, parent=self)

    def on(self, problem: Problem) -> Run:
        """This run (options, budget, reporter, facts) on another problem, with its own pool, bound and stats
        (a level of a lexicographic objective, say)."""
        return Run(problem=problem, options=self.options, budget=self.budget, reporter=self.reporter,
                   facts=self.facts, parent=self.parent)

    # ------------------------------------------------------------------ facts

    @property
    def reduced(self) -> Problem:
        """The run's problem without its redundant overlap declarations (computed once)."""
        return self.facts.reduced(self.problem)

    @property
    def analytic(self) -> AnalyticBound:
        """The analytic lower bound of the run's problem (computed once)."""
        return self.facts.analytic(self.problem)

    # ------------------------------------------------------------------ plans and bounds

    @property
    def best(self) -> Plan | None:
        """The plan of least objective (the first offered among equals)."""
        return min(self.plans, key=lambda p: p.value) if self.plans else None

    def last(self, source: Source) -> Plan | None:
        """The plan of ``source`` offered last (the solver's plan of a sub-search, say), or None."""
        return next((p for p in reversed(self.plans) if p.provenance.source is source), None)

    @property
    def closed(self) -> bool:
        """Whether the best plan meets the bound, or is within the options' ``gap`` of it."""
        best = self.best
        return best is not None and best.value <= self.bound * (1.0 + self.options.gap)

    def offer(self, schedule: Schedule | None, provenance: Provenance, *, validated: bool = False,
              report: bool = True, value: int | None = None) -> Plan | None:
        """Keep ``schedule`` when it is a valid plan of the run's problem; the plan kept, or None.

        ``validated``: it has already passed the validator against this very
        problem (a plan is validated once; not trusted inside
        :func:`~schedsearch.validate.validation_deferred`, where the
        constructions leave the check to their caller). An improvement of the best plan
        is reported (``report``). ``value``: what the plan is ranked by
        (default its objective value for the run's problem).
        """
        if schedule is None:
            return None
        from schedsearch.validate import validation_is_deferred

        if not validated or validation_is_deferred():
            from schedsearch.validate import validate

            if validate(self.problem, schedule):
                return None
        if value is None:
            value = objective_value(schedule, self.problem.objective)
        plan = Plan(value=value, schedule=schedule, provenance=provenance)
        before = self.best
        self.plans.append(plan)
        if report and (before is None or plan.value < before.value):
            self.reporter.report(provenance.engine, incumbent=plan.value)
        return plan

    def offer_warm_starts(self, where: str, *, report: bool = True) -> None:
        """Offer the options' warm starts (``"warm start i"``), each checked once to be a valid plan of the run's
        problem: one that is not raises :class:`~schedsearch.errors.InvalidOptionsError` naming ``where``."""
        for i, schedule in enumerate(self.options.checked_warm_starts(self.problem, where)):
            self.offer(schedule, Provenance.warm_start(i), validated=True, report=report)

    def raise_bound(self, value: int | None, by: str) -> bool:
        """Keep ``value`` as the bound when it is larger than the bound so far (``by``: what proved it)."""
        if value is None or value <= self.bound and self.bound_by:
            return False
        self.bound, self.bound_by = value, by
        return True

    def note(self, text: str) -> None:
        """Say in the result's ``notes`` what the run left out and why."""
        self.notes.append(text)

    # ------------------------------------------------------------------ the backend

    def solve_options(self, **fields: Any) -> SolveOptions:
        """The backend's options of one search of this run: the time left, the run's seed, workers,
        deterministic mode, log and backend parameters; ``fields`` set the search's own (bounds, ties, warm
        start, progress, ...)."""
        from schedsearch.encode import SolveOptions

        left = self.budget.left()
        stop = current_stop()
        if left is not None and stop is not None and stop.clock is time.perf_counter:
            left = min(left, stop.left())  # a search given more than its call has left ends at the call's stop
        params = dict(self.options.backend_params)
        gap = {"relative_gap_limit": float(self.options.gap)}  # CP-SAT's name of it; a backend that has none: not
        if self.options.gap and "relative_gap_limit" not in params \
                and backend_params_error(self.options.backend_name, gap) is None:
            params.update(gap)

        base: dict[str, Any] = dict(time_limit_s=None if left is None else max(left, 1e-3), seed=self.options.seed,
                                    workers=self.options.workers, deterministic=self.options.deterministic,
                                    log=self.options.log, backend_params=params)

        return SolveOptions(**{**base, **fields})

    def repetend_options(self, **fields: Any) -> RepetendOptions:
        """The repetend backend's options of one search of this run: the run's seed, workers, deterministic mode,
        log and backend parameters; ``fields`` set the search's own (period, time limit, ...)."""
        from schedsearch.encode.repetend import RepetendOptions

        return RepetendOptions(seed=self.options.seed, workers=self.options.workers,
                               deterministic=self.options.deterministic, log=self.options.log,
                               backend_params=dict(self.options.backend_params), **fields)

    #: the method's name before the repetend search spoke of one word
    modulo_options = repetend_options

    def backend_search(self, problem: Problem, options: SolveOptions) -> SearchResult:
        """One search of ``problem`` by the run's backend; what it used is charged to the run's budget and every
        one above it: the deterministic time it reports, or, from a backend that reports none (Z3), the whole
        time limit it was given (``options.time_limit_s``). A run that starts no backend search is charged
        nothing (constructions and list schedules are not charged to the budget)."""
        result = solve(problem, self.options.solver_backend, options)
        self.budget.charge_search(result, unmetered_s=options.time_limit_s)
        return result


class RunView:
    """The run's facts as a strategy's own state reads them: a strategy's state class (an attrs class with a
    ``run`` field) inherits it instead of repeating one property per fact."""

    run: Run

    @property
    def problem(self) -> Problem:
        return self.run.problem

    @property
    def options(self) -> SearchOptions:
        return self.run.options

    @property
    def deadline(self) -> Budget:
        return self.run.budget

    @property
    def reporter(self) -> Reporter:
        return self.run.reporter

    @property
    def stats(self) -> dict[str, Any]:
        return self.run.stats

    @property
    def plans(self) -> list[Plan]:
        return self.run.plans

    @property
    def best(self) -> Plan | None:
        return self.run.best

    @property
    def closed(self) -> bool:
        return self.run.closed

    @property
    def bound(self) -> int:
        return self.run.bound

    @property
    def bound_engine(self) -> str:
        return self.run.bound_by
