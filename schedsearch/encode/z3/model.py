"""The Z3 backend: builds the families, then bisects on the objective.

Bisection: the bound ``objective <= b`` (the makespan, or the longest
device span for ``"max_span"``) is passed as an assumption literal,
so the solver keeps what it learned between checks. The first check is at
the known lower bound (a schedule reaching it is optimal at once); then a
first schedule is found (or the warm start's value is used as the upper
end) and the interval ``[lower, best - 1]`` is halved until it is empty
(OPTIMAL) or the time limit is reached (FEASIBLE with the proven bound).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from schedsearch.encode.solve_options import SolveOptions
from schedsearch.options import ProgressEvent, did_you_mean
from schedsearch.encode.structure import TaskStructure, build_structure
from schedsearch.encode.z3.constraints import (
    add_dependencies,
    add_groups,
    add_memory,
    add_no_overlap,
    add_redundant_bounds,
    add_symmetry_breaking,
    add_transfers,
)
from schedsearch.encode.z3.objective import add_objective, add_ties
from schedsearch.encode.z3.variables import Variables, make_variables
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, objective_value

__all__ = ["Z3Backend", "build_solver"]


class BuildTimeout(Exception):
    """The time limit ran out while the model was being built."""


class _TimedSolver:
    """A ``z3.Solver`` whose ``add`` stops the build once the deadline has passed.

    Building a large model (pairwise disjunctions) can take longer than the
    whole time limit; the clock is read every 64 constraints.
    """

    def __init__(self, solver: z3.Solver, deadline: float | None) -> None:
        self._solver = solver
        self._deadline = deadline
        self._count = 0

    def add(self, *constraints: Any) -> None:
        self._count += 1
        if self._deadline is not None and self._count % 64 == 0 and time.perf_counter() > self._deadline:
            raise BuildTimeout
        self._solver.add(*constraints)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._solver, name)


def build_solver(
    problem: Problem, options: SolveOptions, deadline: float | None = None
) -> tuple[z3.Solver, TaskStructure, Variables, int]:
    """Build the Z3 solver holding families 1-10; returns it with the horizon.

    Raises :class:`BuildTimeout` when ``deadline`` (a ``time.perf_counter``
    value) passes during the build.
    """
    st = build_structure(problem, symmetry_breaking=options.symmetry_breaking)
    if deadline is not None and time.perf_counter() > deadline:
        raise BuildTimeout
    horizon = st.horizon
    by_makespan = problem.objective in ("makespan", "feasibility")
    if by_makespan and options.warm_start is not None:
        horizon = min(horizon, options.warm_start.makespan)
    if by_makespan and options.upper_bound is not None:
        horizon = min(horizon, options.upper_bound)
    raw = z3.Solver()
    solver = _TimedSolver(raw, deadline)
    solver.set(random_seed=options.seed)
    for key, value in options.backend_params.items():
        solver.set(key, value)
    var = make_variables(solver, st, horizon)
    add_groups(solver, st, var)
    add_no_overlap(solver, st, var)
    add_dependencies(solver, st, var)
    add_transfers(solver, st, var)
    add_memory(solver, st, var)
    add_symmetry_breaking(solver, st, var)
    add_objective(solver, st, var, problem.objective)
    if options.redundant:
        add_redundant_bounds(solver, st, var)
    add_ties(solver, st, var, options.ties)
    solver.add(var.makespan <= horizon)
    if options.lower_bound is not None:
        solver.add(var.objective >= options.lower_bound)
    if not by_makespan and options.upper_bound is not None:
        solver.add(var.objective <= options.upper_bound)
    return raw, st, var, horizon


class Z3Backend:
    """Z3 (single-threaded): every feature of the problem model."""

    name = "z3"
    features = frozenset(
        {"flexible_options", "multi_device", "transfers", "memory", "workspace", "releases", "fixed_orders",
         "overlaps"}
    )
    #: none of :class:`~schedsearch.encode.backends.Capability`: its limit stays wall-clock, and a warm start
    #: only gives an initial upper bound
    capabilities: frozenset = frozenset()

    @staticmethod
    def params_error(params: Mapping[str, Any]) -> str | None:
        """Why Z3 would refuse ``params`` (``backend_params``): an undotted name that is
        not a solver parameter (Z3 ignores those silently); dotted module parameters
        (``smt.random_seed``) are left to Z3. None if it takes them."""
        descrs = z3.Solver().param_descrs()
        names = {descrs.get_name(i) for i in range(descrs.size())}
        for key in params:
            if "." not in key and key not in names:
                return f"{key!r} is not a Z3 solver parameter{did_you_mean(key, names)}"
        return None

    def solve(self, problem: Problem, options: SolveOptions) -> SearchResult:
        t0 = time.perf_counter()
        deadline = None if options.time_limit_s is None else t0 + options.time_limit_s
        try:
            solver, st, var, horizon = build_solver(problem, options, deadline)
        except BuildTimeout:
            wall = time.perf_counter() - t0
            return SearchResult(status=Status.TIMEOUT, wall_time_s=wall, backend=self.name,
                                stats={"build_s": wall, "stopped": "time limit reached while building the model"})
        build_s = time.perf_counter() - t0
        checks: list[dict[str, Any]] = []
        stopped: list[str] = []  # Z3's reasons for "unknown"
        minimise = problem.objective in ("makespan", "max_span")

        def value_of(schedule: Schedule) -> int:
            return objective_value(schedule, problem.objective)

        def check(bound: int | None) -> z3.CheckSatResult | None:
            """One check under ``objective <= bound``; None when out of time."""
            if deadline is not None:
                remaining = deadline - time.perf_counter()
                if remaining <= 0.01:
                    return None
                solver.set("timeout", max(1, int(remaining * 1000)))
            c0 = time.perf_counter()
            if bound is None:
                answer = solver.check()
            else:
                lit = z3.Bool(f"objective<={bound}")
                solver.add(z3.Implies(lit, var.objective <= bound))
                answer = solver.check(lit)
            checks.append({"bound": bound, "answer": str(answer), "seconds": time.perf_counter() - c0})
            if answer == z3.unknown:
                stopped.append(solver.reason_unknown())
                return None
            return answer

        def report(incumbent: int | None, bound: int | None) -> None:
            if options.progress is not None:
                options.progress(ProgressEvent(phase="exact search (z3)", incumbent=incumbent, bound=bound,
                                              elapsed_s=time.perf_counter() - t0))

        best: Schedule | None = None
        best_value: int | None = None
        lower = max(options.lower_bound or 0, 0)
        status: Status | None = None
        if options.warm_start is not None:
            best_value = value_of(options.warm_start)

        answer = check(lower if minimise else None)
        if answer == z3.sat:
            best = _read_schedule(solver.model(), st, var)
            best_value = value_of(best)
            status = Status.OPTIMAL if minimise else Status.FEASIBLE
            report(best_value, lower if minimise else None)
        elif answer == z3.unsat and not minimise:
            status = Status.INFEASIBLE
        elif answer == z3.unsat:
            lower += 1
            report(best_value, lower)
            if best_value is None:
                answer = check(None)
                if answer == z3.sat:
                    best = _read_schedule(solver.model(), st, var)
                    best_value = value_of(best)
                    report(best_value, lower)
                elif answer == z3.unsat:
                    status = Status.INFEASIBLE
            while status is None and best_value is not None and lower < best_value:
                mid = (lower + best_value - 1) // 2
                answer = check(mid)
                if answer is None:
                    break
                if answer == z3.sat:
                    best = _read_schedule(solver.model(), st, var)
                    best_value = value_of(best)
                else:
                    lower = mid + 1
                report(best_value, lower)
            if status is None and best_value is not None and lower >= best_value:
                status = Status.OPTIMAL
        wall = time.perf_counter() - t0
        stats = {"build_s": build_s, "checks": checks, "num_tasks": len(st.tasks), "horizon": horizon,
                 "unknown_reasons": stopped}
        if best is None and options.warm_start is not None and status is Status.OPTIMAL:
            # the warm start itself is optimal; hand it back
            best = options.warm_start
        if status is Status.INFEASIBLE:
            return SearchResult(status=status, wall_time_s=wall, backend=self.name, stats=stats)
        if best is None:
            # out of time (the deadline passed, or Z3 reports its timeout) unless Z3 gave up otherwise
            limit_hit = deadline is not None and (
                time.perf_counter() >= deadline - 0.05 or not stopped or any("timeout" in r or "canceled" in r
                                                                            for r in stopped))
            return SearchResult(
                status=Status.TIMEOUT if limit_hit else Status.UNKNOWN,
                lower_bound=lower if minimise and lower > 0 else None,
                wall_time_s=wall,
                backend=self.name,
                stats=stats,
            )
        if status is None:
            status = Status.FEASIBLE
        return SearchResult(
            status=status,
            schedule=best,
            objective=value_of(best),
            lower_bound=lower if minimise else None,
            wall_time_s=wall,
            backend=self.name,
            stats=stats,
        )


def _read_schedule(model: z3.ModelRef, st: TaskStructure, var: Variables) -> Schedule:
    def value(expr: z3.ExprRef) -> z3.ExprRef:
        return model.eval(expr, model_completion=True)

    chosen = []
    for t, tv in zip(st.tasks, var.tasks):
        option = 0 if t.fixed else next(k for k, p in enumerate(tv.present) if z3.is_true(value(p)))
        chosen.append((option, value(tv.start).as_long()))
    transfers = [
        (k, name, value(tv.start).as_long())
        for k, tv in enumerate(var.transfers)
        for name, (lit, _) in tv.channels.items()
        if z3.is_true(value(lit))
    ]
    groups = [g for g, lit in enumerate(var.groups) if z3.is_true(value(lit))]
    return st.to_schedule(chosen, transfers, groups)
