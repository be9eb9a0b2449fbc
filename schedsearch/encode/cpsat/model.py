"""The CP-SAT backend: builds the model from the families, solves, reads back.

Model shape: one start/end pair per task instance, one (optional) interval
per placement option, ``NoOverlap`` per device and per channel, a reservoir
per device with a memory capacity, linear precedences, and the makespan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ortools.sat.python import cp_model

from schedsearch.deadline import current_stop
from schedsearch.encode.backends import Capability
from schedsearch.encode.solve_options import SolveOptions
from schedsearch.options import (
    DETERMINISTIC_UNITS_PER_S,
    DETERMINISTIC_WALL_GUARD,
    DETERMINISTIC_WALL_GUARD_S,
    ProgressEvent,
    did_you_mean,
)
from schedsearch.encode.cpsat.constraints import (
    add_dependencies,
    add_groups,
    add_memory,
    add_no_overlap,
    add_redundant_bounds,
    add_symmetry_breaking,
    add_transfers,
)
from schedsearch.encode.cpsat.objective import add_objective, add_ties
from schedsearch.encode.cpsat.variables import Variables, make_variables
from schedsearch.encode.structure import TaskStructure, build_structure
from schedsearch.errors import InvalidOptionsError, SolverError
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, max_span, objective_value

__all__ = ["CpSatBackend", "build_model"]


def _ortools_version() -> tuple[int, ...]:
    import ortools

    try:
        return tuple(int(x) for x in ortools.__version__.split(".")[:2])
    except ValueError:  # pragma: no cover - an unusual version string
        return (0,)


#: OR-tools 9.15 proves wrong optima on some models given a solution hint
#: (``tests/encode/data/cpsat_hint_misproof.pbtxt``: a valid one-entry hint
#: turns the proven optimum 421 into "OPTIMAL 434"; 9.10-9.14 are right).
#: The package requires ``ortools<9.15``; where a newer one is installed
#: anyway, no hint is given: the warm start then only caps the horizon
#: (and is returned when the search finds nothing better).
HINTED_PROOFS_TRUSTED = _ortools_version() < (9, 15)


def build_model(problem: Problem, options: SolveOptions) -> tuple[cp_model.CpModel, TaskStructure, Variables]:
    """Build the CP-SAT model of ``problem`` (families 1-10, in order)."""
    st = build_structure(problem, symmetry_breaking=options.symmetry_breaking)
    horizon = st.horizon
    by_makespan = problem.objective in ("makespan", "feasibility")
    if by_makespan and options.warm_start is not None:
        horizon = min(horizon, options.warm_start.makespan)
    if by_makespan and options.upper_bound is not None:
        horizon = min(horizon, options.upper_bound)
    model = cp_model.CpModel()
    var = make_variables(model, st, horizon)
    add_groups(model, st, var)
    add_no_overlap(model, st, var)
    add_dependencies(model, st, var)
    add_transfers(model, st, var)
    add_memory(model, st, var)
    add_symmetry_breaking(model, st, var)
    add_objective(model, st, var, problem.objective, horizon)
    if options.redundant:
        add_redundant_bounds(model, st, var)
    add_ties(model, st, var, options.ties)
    if options.lower_bound is not None:
        model.add(var.objective >= options.lower_bound)
    if problem.objective == "max_span":
        caps = [options.upper_bound] if options.upper_bound is not None else []
        if options.warm_start is not None:
            caps.append(max_span(options.warm_start))
        if caps:
            model.add(var.objective <= min(caps))
    if options.warm_start is not None and HINTED_PROOFS_TRUSTED:
        _add_hints(model, st, var, options.warm_start)
    return model, st, var


def _add_hints(model: cp_model.CpModel, st: TaskStructure, var: Variables, schedule: Schedule) -> None:
    """A complete hint from a (validated) schedule of the same problem.

    Every variable of the model gets a value; a literal shared by several
    roles (an option literal that is also a route literal) is hinted once.
    """
    values = st.hint_values(schedule)
    starts, chosen = values["start"], values["option"]
    hints: dict[int, tuple[Any, int]] = {}

    def put(v: Any, value: int) -> None:
        hints.setdefault(v.index, (v, int(value)))

    put(var.true, 1)
    grouped: dict[int, int] = {}
    for g in values["groups"]:
        for m in st.groups[g].members:
            grouped[m] = g
    for g, (lit, _) in enumerate(var.groups):
        put(lit, g in values["groups"])
    ends = {}
    for t, tv in enumerate(var.tasks):
        if t not in starts:
            continue
        g = grouped.get(t)
        ends[t] = starts[t] + (st.groups[g].duration if g is not None else st.tasks[t].options[chosen[t]][1])
        put(tv.start, starts[t])
        put(tv.end, ends[t])
        if tv.solo is not None:
            put(tv.solo, g is None)
        if tv.length is not None:
            put(tv.length, st.tasks[t].options[chosen[t]][1])
        for i, lit in enumerate(tv.present):
            put(lit, i == chosen[t])
    for k, tr in enumerate(st.transfers):
        tv = var.transfers[k]
        u, v = st.index[tr.src], st.index[tr.dst]
        channel, tstart = values["transfer"].get(k, (None, ends.get(u, 0)))
        put(tv.start, tstart)
        for i, j, chans in tr.routes:
            route = chosen.get(u) == i and chosen.get(v) == j
            put(tv.aux[f"route/{i},{j}"], route)
            for c in chans:
                pick = tv.aux.get(f"via/{i},{j}/{c.name}")
                if pick is not None:
                    put(pick, route and channel == c.name)
        for name, (lit, _, _) in tv.channels.items():
            put(lit, channel == name)
        put(tv.needed, channel is not None)
    put(var.makespan, schedule.makespan)
    for first, tasks in var.first_start.values():
        put(first, min(starts[t] for t in tasks))
    for d, (first, last, span, on_lits) in var.spans.items():
        on = [t for t in on_lits if t in starts and chosen[t] in st.option_on(t, d)]
        for t, lit in on_lits.items():
            if t in chosen:
                put(lit, chosen[t] in st.option_on(t, d))
        lo = min((starts[t] for t in on), default=0)
        hi = max((ends[t] for t in on), default=0)
        put(first, lo)
        put(last, hi)
        put(span, hi - lo)
    if var.spans:
        put(var.objective, max_span(schedule))
    for v, value in hints.values():
        model.add_hint(v, value)


class _Progress(cp_model.CpSolverSolutionCallback):
    def __init__(self, options: SolveOptions, t0: float) -> None:
        super().__init__()
        self._options = options
        self._t0 = t0
        self.incumbent: int | None = None
        self.bound: int | None = None

    def on_solution_callback(self) -> None:
        value = int(round(self.objective_value))
        bound = math.ceil(self.best_objective_bound - 1e-6)
        if self.incumbent is None or value < self.incumbent:
            self.incumbent = value
            self.bound = max(self.bound or 0, bound)
            if self._options.progress is not None:
                self._options.progress(ProgressEvent(phase="exact search (cpsat)", incumbent=value, bound=self.bound,
                                                    elapsed_s=time.perf_counter() - self._t0))

    def on_bound(self, bound: float) -> None:
        b = math.ceil(bound - 1e-6)
        if self.bound is None or b > self.bound:
            self.bound = b
            if self._options.progress is not None:
                self._options.progress(ProgressEvent(phase="exact search (cpsat)", incumbent=self.incumbent, bound=b,
                                                    elapsed_s=time.perf_counter() - self._t0))


class CpSatBackend:
    """OR-tools CP-SAT: every feature of the problem model, and every :class:`~schedsearch.encode.backends.Capability`."""

    name = "cpsat"
    features = frozenset(
        {"flexible_options", "multi_device", "transfers", "memory", "workspace", "releases", "fixed_orders",
         "overlaps"}
    )
    capabilities = frozenset(Capability)
    #: the parameter of the stronger no-overlap propagation (:attr:`Capability.STRONG_DISJUNCTIVE`)
    strong_disjunctive_param = "use_strong_propagation_in_disjunctive"
    #: the parameter of the deterministic-time limit, in deterministic units (:attr:`Capability.DETERMINISTIC_TIME`)
    deterministic_limit_param = "max_deterministic_time"

    @staticmethod
    def wall_guard_s(time_limit_s: float) -> float:
        """The wall-clock guard of a deterministic search (:func:`wall_guard_s`)."""
        return wall_guard_s(time_limit_s)

    @staticmethod
    def params_error(params: Mapping[str, Any]) -> str | None:
        """Why CP-SAT would refuse ``params`` (``backend_params``): a name that is
        not a ``SatParameters`` field, or a value of the wrong type; None if it takes them."""
        from ortools.sat import sat_parameters_pb2

        fields = sat_parameters_pb2.SatParameters.DESCRIPTOR.fields_by_name
        for key, value in params.items():
            if key not in fields:
                return f"{key!r} is not a CP-SAT parameter{did_you_mean(key, fields)}"
            try:
                setattr(sat_parameters_pb2.SatParameters(), key, value)
            except (TypeError, ValueError, AttributeError) as exc:
                return f"CP-SAT's {key!r} cannot be {value!r:.80} ({exc})"
        return None

    def solve(self, problem: Problem, options: SolveOptions) -> SearchResult:
        t0 = time.perf_counter()
        model, st, var = build_model(problem, options)
        build_s = time.perf_counter() - t0
        minimised = problem.objective in ("makespan", "max_span")
        callback = _Progress(options, t0)
        solver, code = _run(model, options, callback, minimised)
        stats: dict[str, Any] = {
            "build_s": build_s,
            "solve_s": solver.wall_time,
            "branches": solver.num_branches,
            "conflicts": solver.num_conflicts,
            "num_tasks": len(st.tasks),
            "num_transfers": len(st.transfers),
            "horizon": st.horizon,
            "solver_status": solver.status_name(code),
        }
        # what the search used, and whether the guard stopped it: typed facts of every result below
        used: dict[str, Any] = {
            "deterministic_s": solver.response_proto.deterministic_time / DETERMINISTIC_UNITS_PER_S,
            "wall_guard_hit": wall_guard_hit(solver, options.time_limit_s, options.deterministic),
        }
        if code == cp_model.MODEL_INVALID:
            raise SolverError(f"backend 'cpsat': the model is invalid ({model.validate()})")
        if code == cp_model.INFEASIBLE:
            return SearchResult(status=Status.INFEASIBLE, wall_time_s=time.perf_counter() - t0, backend=self.name,
                                stats=stats, **used)
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            # CP-SAT answers UNKNOWN when a limit stopped it before it found anything
            status = Status.TIMEOUT if options.time_limit_s is not None else Status.UNKNOWN
            bound = None
            if minimised:
                bound = math.ceil(solver.best_objective_bound - 1e-6)
                bound = bound if bound > 0 else None
            return SearchResult(status=status, lower_bound=bound, wall_time_s=time.perf_counter() - t0,
                                backend=self.name, stats=stats, **used)
        schedule = _read_schedule(solver, st, var)
        value = objective_value(schedule, problem.objective)
        if not minimised:
            return SearchResult(status=Status.FEASIBLE, schedule=schedule, objective=value,
                                wall_time_s=time.perf_counter() - t0, backend=self.name, stats=stats, **used)
        bound: int | None = math.ceil(solver.best_objective_bound - 1e-6)
        status = Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE
        return SearchResult(
            status=status,
            schedule=schedule,
            objective=value,
            lower_bound=bound,
            wall_time_s=time.perf_counter() - t0,
            backend=self.name,
            stats=stats,
            **used,
        )


def wall_guard_s(time_limit_s: float) -> float:
    """The wall-clock guard of a deterministic search with a budget of ``time_limit_s`` seconds.

    Examples
    --------
    >>> from schedsearch.encode.cpsat.model import wall_guard_s
    >>> wall_guard_s(10)
    160.0
    """
    return DETERMINISTIC_WALL_GUARD * float(time_limit_s) + DETERMINISTIC_WALL_GUARD_S


def wall_guard_hit(solver: Any, time_limit_s: float | None, deterministic: bool) -> bool:
    """Whether a deterministic search was stopped by its wall-clock guard (so its result is not reproducible).

    It was when the search ended without a proof (neither optimal nor
    infeasible) before it had used its deterministic time.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from schedsearch.encode.cpsat.model import wall_guard_hit
    >>> stopped_early = SimpleNamespace(response_proto=SimpleNamespace(status=0, deterministic_time=0.2))
    >>> wall_guard_hit(stopped_early, 10, deterministic=True)  # 0.2 of its 0.5 units used
    True
    >>> wall_guard_hit(stopped_early, 10, deterministic=False)
    False
    """
    if not deterministic or time_limit_s is None:
        return False
    response = solver.response_proto
    if response.status in (cp_model.OPTIMAL, cp_model.INFEASIBLE):
        return False
    return response.deterministic_time < 0.99 * float(time_limit_s) * DETERMINISTIC_UNITS_PER_S


def set_limits(params: Any, time_limit_s: float | None, deterministic: bool) -> None:
    """CP-SAT's limit for ``time_limit_s``: wall-clock seconds, or in deterministic mode deterministic time.

    In deterministic mode the budget is CP-SAT's deterministic time (its
    work count): ``max_deterministic_time = time_limit_s *``
    :data:`~schedsearch.options.DETERMINISTIC_UNITS_PER_S`, so a search
    stopped by its limit stops at the same point on any machine and under
    any load; the search is interleaved (one reproducible schedule of its
    subsolvers). A wall-clock guard (:func:`wall_guard_s`, several times the
    budget) stops a search whose deterministic time runs far slower than
    the calibration; such a stop is not reproducible (see
    :func:`wall_guard_hit`).

    Examples
    --------
    >>> from ortools.sat.python import cp_model
    >>> from schedsearch.encode.cpsat.model import set_limits
    >>> params = cp_model.CpSolver().parameters
    >>> set_limits(params, 20, deterministic=True)
    >>> params.max_deterministic_time, params.max_time_in_seconds, params.interleave_search
    (1.0, 260.0, True)
    """
    if deterministic:
        params.interleave_search = True
        if time_limit_s is not None:
            params.max_deterministic_time = float(time_limit_s) * DETERMINISTIC_UNITS_PER_S
            params.max_time_in_seconds = wall_guard_s(time_limit_s)
    elif time_limit_s is not None:
        params.max_time_in_seconds = float(time_limit_s)


def _run(
    model: cp_model.CpModel, options: SolveOptions, callback: _Progress, minimised: bool
) -> tuple[cp_model.CpSolver, int]:
    """One CP-SAT solve of ``model`` with the options' parameters."""
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = options.workers
    params.random_seed = options.seed
    limit = options.time_limit_s
    stop = current_stop()
    if limit is not None and not options.deterministic and stop is not None and stop.clock is time.perf_counter:
        limit = max(1e-3, min(limit, stop.left()))  # the model's building took part of it: to the call's stop
    set_limits(params, limit, options.deterministic)
    params.log_search_progress = options.log
    for key, value in options.backend_params.items():
        if not hasattr(params, key):
            raise InvalidOptionsError(f"backend 'cpsat': unknown parameter {key!r} in 'backend_params'")
        setattr(params, key, value)
    if options.progress is not None and minimised:
        solver.best_bound_callback = callback.on_bound
    code = solver.solve(model, callback)
    return solver, code


def _read_schedule(solver: cp_model.CpSolver, st: TaskStructure, var: Variables) -> Schedule:
    chosen = []
    for t, tv in zip(st.tasks, var.tasks):
        option = 0 if t.fixed else next(k for k, lit in enumerate(tv.present) if solver.boolean_value(lit))
        chosen.append((option, solver.value(tv.start)))
    transfers = [
        (k, name, solver.value(tv.start))
        for k, tv in enumerate(var.transfers)
        for name, (lit, _, _) in tv.channels.items()
        if lit is var.true or solver.boolean_value(lit)
    ]
    groups = [g for g, (lit, _) in enumerate(var.groups) if solver.boolean_value(lit)]
    return st.to_schedule(chosen, transfers, groups)
