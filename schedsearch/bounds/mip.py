"""The one MIP layer: a solver-free model, solved by HiGHS, SCIP or CBC.

Every integer program of :mod:`schedsearch.bounds` is written against
:class:`MipModel`, a plain list of variables, linear rows and a linear
objective; nothing above this module touches a solver's API. The model is
built once and handed to :func:`solve_mip`, which translates it for the
solver the caller picks:

``"highs"`` (default)
    HiGHS through OR-tools' MathOpt. MathOpt reports HiGHS's true dual
    bound (the older ``pywraplp`` wrapper returns the objective as
    "best bound" for HiGHS, which would certify nothing).
``"scip"``
    SCIP through MathOpt (``GSCIP``).
``"cbc"``
    COIN-OR CBC through ``pywraplp`` (MathOpt has no CBC interface); its
    ``BestBound()`` is CBC's dual bound. CBC takes no random seed there.

All three ship inside the OR-tools wheel, so nothing needs a licence. Which
ones a given installation has is reported by :func:`available_solvers`.

Results (:class:`MipResult`) carry the statuses of
:class:`~schedsearch.result.SearchResult`: OPTIMAL means *within the
relative gap* (1e-4 by default), so compare optima with that tolerance;
FEASIBLE is a solution with a proven bound but an open gap; TIMEOUT is no
solution within the limit (the bound may still be known); INFEASIBLE is
proven. A warm start (:meth:`MipModel.set_hint`) is passed to the solver and
also kept: if the solver returns nothing better, the hint is the reported
solution, so an incumbent is never lost.

Numerics: keep coefficients within a few orders of magnitude (scale byte
sizes near 1e10 to fractions of the capacity before they enter a row);
HiGHS warns about, and may mis-handle, very large bounds.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from schedsearch.errors import InvalidOptionsError, InvalidProblemError, UnsupportedFeatureError
from schedsearch.options import BaseSolverOptions, Rule, did_you_mean, options_error
from schedsearch.status import Status

__all__ = [
    "MipModel",
    "MipOptions",
    "MipResult",
    "SOLVERS",
    "DEFAULT_SOLVER",
    "available_solvers",
    "solve_mip",
]

#: Solver names accepted by :func:`solve_mip`.
SOLVERS = ("highs", "scip", "cbc")
DEFAULT_SOLVER = "highs"

_INF = math.inf
Terms = Mapping[int, float] | Iterable[tuple[int, float]]


def _items(terms: Terms) -> list[tuple[int, float]]:
    if isinstance(terms, Mapping):
        return list(terms.items())
    return list(terms)


class MipModel:
    """A mixed-integer linear program, independent of any solver.

    Variables are numbered from 0 in creation order; rows and the
    objective are lists of ``(variable, coefficient)`` terms (repeated
    variables are summed). Build with the ``new_*`` and ``add_*`` methods,
    then call :func:`solve_mip`.

    >>> m = MipModel("knapsack")
    >>> a, b = m.new_binary("a"), m.new_binary("b")
    >>> _ = m.add_le([(a, 3), (b, 4)], 5)
    >>> m.maximize([(a, 2), (b, 3)])
    >>> m.num_vars, m.num_rows
    (2, 1)
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.var_names: list[str] = []
        self.rows: list[tuple[list[tuple[int, float]], float, float, str]] = []
        self.objective: list[tuple[int, float]] = []
        self.objective_offset = 0.0
        self.sense = "min"
        self.hint: dict[int, float] = {}

    # -- variables ---------------------------------------------------------
    def new_var(self, lb: float = 0.0, ub: float = _INF, *, integer: bool = False, name: str = "") -> int:
        """A new variable with bounds ``[lb, ub]``; returns its index."""
        if not lb <= ub:
            raise InvalidProblemError(f"MIP model {self.name!r}: variable {name!r}: 'lb' {lb} > 'ub' {ub}")
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.integer.append(bool(integer))
        self.var_names.append(name or f"v{len(self.lb) - 1}")
        return len(self.lb) - 1

    def new_binary(self, name: str = "") -> int:
        return self.new_var(0.0, 1.0, integer=True, name=name)

    def new_continuous(self, lb: float = 0.0, ub: float = _INF, name: str = "") -> int:
        return self.new_var(lb, ub, integer=False, name=name)

    def fix(self, var: int, value: float) -> None:
        """Fix ``var`` to ``value`` (by its bounds)."""
        self.lb[var] = self.ub[var] = float(value)

    # -- rows ----------------------------------------------------------------
    def add_row(self, terms: Terms, lb: float = -_INF, ub: float = _INF, name: str = "") -> int:
        """Add ``lb <= sum(coef * var) <= ub``; returns the row index."""
        items = _items(terms)
        n = len(self.lb)
        for v, c in items:
            if not 0 <= v < n:
                raise InvalidProblemError(f"MIP model {self.name!r}: row {name!r}: unknown variable {v}")
            if not math.isfinite(c):
                raise InvalidProblemError(f"MIP model {self.name!r}: row {name!r}: coefficient {c!r} of variable {v}")
        self.rows.append((items, float(lb), float(ub), name))
        return len(self.rows) - 1

    def add_le(self, terms: Terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, -_INF, rhs, name)

    def add_ge(self, terms: Terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, rhs, _INF, name)

    def add_eq(self, terms: Terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, rhs, rhs, name)

    # -- objective -----------------------------------------------------------
    def minimize(self, terms: Terms, offset: float = 0.0) -> None:
        self.objective, self.objective_offset, self.sense = _items(terms), float(offset), "min"

    def maximize(self, terms: Terms, offset: float = 0.0) -> None:
        self.objective, self.objective_offset, self.sense = _items(terms), float(offset), "max"

    def set_hint(self, values: Mapping[int, float]) -> None:
        """A (complete or partial) starting solution; see the module docstring."""
        self.hint = {int(k): float(v) for k, v in values.items()}

    # -- evaluation ------------------------------------------------------------
    @property
    def num_vars(self) -> int:
        return len(self.lb)

    @property
    def num_rows(self) -> int:
        return len(self.rows)

    @property
    def num_nonzeros(self) -> int:
        return sum(len(r[0]) for r in self.rows)

    def objective_value(self, values: Sequence[float] | Mapping[int, float]) -> float:
        get = values.get if isinstance(values, Mapping) else values.__getitem__
        return self.objective_offset + math.fsum(c * get(v) for v, c in self.objective)

    def violations(self, values: Mapping[int, float] | Sequence[float], tol: float = 1e-6) -> list[str]:
        """Rows, bounds and integrality broken by ``values`` (an empty list: feasible)."""
        if isinstance(values, Mapping):
            if len(values) < self.num_vars:
                return [f"{self.num_vars - len(values)} variables without a value"]
            vals = [values[i] for i in range(self.num_vars)]
        else:
            vals = list(values)
        out = []
        for i, x in enumerate(vals):
            scale = tol * max(1.0, abs(x))
            if x < self.lb[i] - scale or x > self.ub[i] + scale:
                out.append(f"variable {self.var_names[i]} = {x} outside [{self.lb[i]}, {self.ub[i]}]")
            if self.integer[i] and abs(x - round(x)) > 1e-6:
                out.append(f"variable {self.var_names[i]} = {x} is not integral")
        for terms, lb, ub, name in self.rows:
            act = math.fsum(c * vals[v] for v, c in terms)
            scale = tol * max(1.0, abs(lb) if math.isfinite(lb) else 0.0, abs(ub) if math.isfinite(ub) else 0.0)
            if act < lb - scale or act > ub + scale:
                out.append(f"row {name!r}: activity {act} outside [{lb}, {ub}]")
        return out

    def __str__(self) -> str:
        ints = sum(self.integer)
        return (
            f"MIP {self.name!r}: {self.num_vars} variables ({ints} integer), {self.num_rows} rows, "
            f"{self.num_nonzeros} nonzeros, {self.sense}imise"
        )


def _check_solver(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, str) or value not in SOLVERS:
        raise options_error(inst, attribute.name, f"one of {', '.join(repr(s) for s in SOLVERS)}"
                                                  f"{did_you_mean(value, SOLVERS)}", value)


def _non_negative(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not Rule.number(0).test(value):
        raise options_error(inst, attribute.name, "a number >= 0", value)


def _at_least_one(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not Rule.integer(1).test(value):
        raise options_error(inst, attribute.name, "an integer >= 1", value)


def _hint_choice(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise options_error(inst, attribute.name, "True, False or None", value)


@attrs.frozen(kw_only=True)
class MipOptions(BaseSolverOptions):
    """How to solve a :class:`MipModel`: the options every solver call takes
    (:class:`~schedsearch.options.BaseSolverOptions`: ``time_limit_s``,
    ``seed``, ``log``) and the MIP solver's own. A bad value raises
    :class:`~schedsearch.errors.InvalidOptionsError` naming the option and
    the value.

    Parameters
    ----------
    solver:
        ``"highs"`` (default), ``"scip"`` or ``"cbc"``.
    time_limit_s:
        Wall-clock limit (None: none).
    relative_gap:
        Stop when ``|primal - dual| / |primal|`` is at most this (1e-4).
    threads:
        Solver threads (HiGHS and SCIP solve MIPs on one thread whatever
        this says; CBC uses it if built with threads).
    seed:
        Random seed (HiGHS, SCIP; CBC ignores it).
    log:
        Let the solver print its log.
    pass_hint:
        Hand the model's hint to the solver as a starting solution. By
        default (None) it goes to SCIP and CBC but not to HiGHS: measured
        here, a hint makes HiGHS 1.x prove the bert24 max-load optimum in
        more than 300 s instead of 14 s. The hint is kept as the fallback
        incumbent either way.
    """

    solver: str = attrs.field(default=DEFAULT_SOLVER, validator=_check_solver)
    relative_gap: float = attrs.field(default=1e-4, validator=_non_negative)
    threads: int = attrs.field(default=1, validator=_at_least_one)
    pass_hint: bool | None = attrs.field(default=None, validator=_hint_choice)

    @classmethod
    def resolve(cls, options: MipOptions | None, overrides: Mapping[str, Any], where: str = "solve_mip") -> MipOptions:
        """``options`` (None: the defaults) with the keyword ``overrides`` applied, checked.

        Raises :class:`~schedsearch.errors.InvalidOptionsError` naming
        ``where`` for ``options`` that are not a :class:`MipOptions`, an
        unknown name (the closest ones suggested) or a bad value.

        Examples
        --------
        >>> from schedsearch.bounds.mip import MipOptions
        >>> MipOptions.resolve(None, {"relative_gap": 0.0}).relative_gap
        0.0
        >>> MipOptions.resolve(None, {"time_limit": 5})
        Traceback (most recent call last):
        ...
        schedsearch.errors.InvalidOptionsError: solve_mip: unknown MIP option 'time_limit' (did you mean 'time_limit_s'?)
        """
        if options is not None and not isinstance(options, MipOptions):
            raise InvalidOptionsError(f"{where}: 'options' must be a MipOptions, got {options!r:.80}")
        options = options or cls()
        if not overrides:
            return options
        names = [f.name for f in attrs.fields(cls)]
        for name in overrides:
            if name not in names:
                raise InvalidOptionsError(f"{where}: unknown MIP option {name!r}{did_you_mean(name, names)}")
        return attrs.evolve(options, **overrides)


@attrs.frozen(kw_only=True)
class MipResult:
    """The outcome of :func:`solve_mip`.

    ``objective`` is the value of the best solution (None without one);
    ``best_bound`` the proven bound on the optimum (a lower bound when
    minimising, upper when maximising; None if the solver proved nothing);
    ``values`` the best solution, one value per variable.
    """

    status: Status
    objective: float | None
    best_bound: float | None
    values: tuple[float, ...] | None
    wall_time_s: float
    solver: str
    stats: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def gap(self) -> float | None:
        """``|objective - best_bound| / |objective|`` (0 when both are 0)."""
        if self.objective is None or self.best_bound is None:
            return None
        diff = abs(self.objective - self.best_bound)
        if diff == 0:
            return 0.0
        return diff / abs(self.objective) if self.objective else math.inf

    @property
    def has_solution(self) -> bool:
        return self.values is not None

    def __str__(self) -> str:
        parts = [self.status.value]
        if self.objective is not None:
            parts.append(f"objective {self.objective:.6g}")
        if self.best_bound is not None:
            parts.append(f"bound {self.best_bound:.6g}")
        if self.gap is not None:
            parts.append(f"gap {100 * self.gap:.3g}%")
        parts.append(f"{self.wall_time_s:.2f} s, {self.solver}")
        return ", ".join(parts)


def _pywraplp() -> Any:
    """OR-tools' ``pywraplp``, imported with SWIG's import-time DeprecationWarnings
    silenced: where warnings are errors, the warning raised inside the
    extension's initialisation crashes the interpreter (ortools 9.14)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ortools.linear_solver import pywraplp
    return pywraplp


def available_solvers() -> tuple[str, ...]:
    """The solvers of :data:`SOLVERS` this installation can run."""
    return tuple(s for s in SOLVERS if _can_run(s))


def _can_run(solver: str) -> bool:
    """Whether this installation runs ``solver`` (one of :data:`SOLVERS`); it loads only that
    solver's interface (MathOpt for HiGHS and SCIP, ``pywraplp`` for CBC)."""
    try:
        if solver == "cbc":
            return _pywraplp().Solver.CreateSolver("CBC") is not None
        from ortools.math_opt.python import mathopt
    except ImportError:  # pragma: no cover - depends on the installation
        return False
    return hasattr(mathopt.SolverType, "HIGHS" if solver == "highs" else "GSCIP")


def solve_mip(model: MipModel, options: MipOptions | None = None, **overrides: Any) -> MipResult:
    """Solve ``model``; keyword arguments override fields of ``options``.

    Raises
    ------
    UnsupportedFeatureError
        The chosen solver is not in this installation (the message names
        the ones that are).

    InvalidOptionsError
        An unknown option or a bad value (:meth:`MipOptions.resolve`).

    A solver that fails on its own (HiGHS sometimes rejects its answer for
    numerical trouble) gives status UNKNOWN with the message in
    ``stats["error"]``, not an exception.
    """
    options = MipOptions.resolve(options, overrides)
    if not _can_run(options.solver):
        raise UnsupportedFeatureError(
            f"MIP solver {options.solver!r} is not available in this installation; "
            f"use one of {available_solvers()}"
        )
    t0 = time.perf_counter()
    if options.solver == "cbc":
        result = _solve_pywraplp(model, options)
    else:
        result = _solve_mathopt(model, options)
    result = _keep_incumbent(model, result)
    return attrs.evolve(result, wall_time_s=time.perf_counter() - t0)


def _keep_incumbent(model: MipModel, result: MipResult) -> MipResult:
    """Fall back on the model's hint when it is complete, feasible and better."""
    if len(model.hint) < model.num_vars or result.status is Status.INFEASIBLE:
        return result
    if model.violations(model.hint):
        return result
    value = model.objective_value(model.hint)
    better = (
        result.objective is None
        or (model.sense == "min" and value < result.objective - 1e-9 * max(1.0, abs(value)))
        or (model.sense == "max" and value > result.objective + 1e-9 * max(1.0, abs(value)))
    )
    if not better:
        return result
    status = result.status
    if status in (Status.TIMEOUT, Status.UNKNOWN):
        status = Status.FEASIBLE
    bound = result.best_bound
    if bound is not None:
        tol = 1e-9 * max(1.0, abs(value))
        if (model.sense == "min" and bound > value + tol) or (model.sense == "max" and bound < value - tol):
            bound = value  # the solver's bound cannot pass a feasible point
    stats = dict(result.stats)
    stats["incumbent_from_hint"] = True
    values = tuple(model.hint[i] for i in range(model.num_vars))
    res = attrs.evolve(result, status=status, objective=value, values=values, best_bound=bound, stats=stats)
    return res


# ------------------------------------------------------------------ MathOpt
def _solve_mathopt(model: MipModel, options: MipOptions) -> MipResult:
    from ortools.math_opt.python import mathopt

    om = mathopt.Model(name=model.name or "model")
    xs = [
        om.add_variable(lb=model.lb[i], ub=model.ub[i], is_integer=model.integer[i], name=model.var_names[i])
        for i in range(model.num_vars)
    ]
    for terms, lb, ub, name in model.rows:
        row = om.add_linear_constraint(lb=lb, ub=ub, name=name)
        merged: dict[int, float] = {}
        for v, c in terms:
            merged[v] = merged.get(v, 0.0) + c
        for v, c in merged.items():
            if c:
                row.set_coefficient(xs[v], c)
    obj = om.objective
    obj.is_maximize = model.sense == "max"
    obj.offset = model.objective_offset
    merged_obj: dict[int, float] = {}
    for v, c in model.objective:
        merged_obj[v] = merged_obj.get(v, 0.0) + c
    for v, c in merged_obj.items():
        if c:
            obj.set_linear_coefficient(xs[v], c)
    params = mathopt.SolveParameters(
        enable_output=options.log,
        relative_gap_tolerance=options.relative_gap,
        absolute_gap_tolerance=0.0,
    )
    if options.time_limit_s is not None:
        params.time_limit = datetime.timedelta(seconds=options.time_limit_s)
    if options.solver == "highs":
        solver_type = mathopt.SolverType.HIGHS
        # MathOpt refuses the generic 'threads' and 'random_seed' for HiGHS: use its own options
        params.highs.int_options["threads"] = options.threads
        params.highs.int_options["random_seed"] = options.seed
    else:
        solver_type = mathopt.SolverType.GSCIP
        params.threads = options.threads
        params.random_seed = options.seed
    model_params = None
    pass_hint = options.pass_hint if options.pass_hint is not None else options.solver != "highs"
    if model.hint and pass_hint:
        hint = mathopt.SolutionHint(variable_values={xs[i]: v for i, v in model.hint.items()})
        model_params = mathopt.ModelSolveParameters(solution_hints=[hint])
    t_solve = time.perf_counter()
    try:
        res = mathopt.solve(om, solver_type, params=params, model_params=model_params)
    except Exception as exc:  # noqa: BLE001 - MathOpt raises its own status types
        # e.g. HiGHS refusing its own answer for numerical trouble ("Solve error"):
        # a status, not a crash of ours
        return MipResult(
            status=Status.UNKNOWN, objective=None, best_bound=None, values=None,
            wall_time_s=time.perf_counter() - t_solve, solver=options.solver,
            stats={"termination": "SOLVER_ERROR", "error": repr(exc), "num_vars": model.num_vars,
                   "num_rows": model.num_rows, "num_nonzeros": model.num_nonzeros},
        )
    reason = res.termination.reason
    R = mathopt.TerminationReason
    has_solution = res.has_primal_feasible_solution()
    values = None
    objective = None
    if has_solution:
        sol = res.variable_values()
        values = tuple(float(sol[x]) for x in xs)
        objective = float(res.objective_value())
    dual = res.termination.objective_bounds.dual_bound
    bound = float(dual) if math.isfinite(dual) else None
    if reason == R.OPTIMAL:
        status = Status.OPTIMAL
    elif reason == R.INFEASIBLE:
        status = Status.INFEASIBLE
    elif reason in (R.FEASIBLE, R.NO_SOLUTION_FOUND):
        status = Status.FEASIBLE if has_solution else Status.TIMEOUT
    else:
        status = Status.FEASIBLE if has_solution else Status.UNKNOWN
    solve_time_s = res.solve_time().total_seconds()
    stats = {
        "termination": reason.name,
        "limit": res.termination.limit.name if res.termination.limit is not None else None,
        "detail": res.termination.detail,
        "solve_time_s": solve_time_s,
        "num_vars": model.num_vars,
        "num_rows": model.num_rows,
        "num_nonzeros": model.num_nonzeros,
    }
    try:
        stats["nodes"] = int(res.solve_stats.node_count)
    except Exception:  # pragma: no cover - depends on the solver
        pass
    return MipResult(
        status=status, objective=objective, best_bound=bound, values=values,
        wall_time_s=solve_time_s, solver=options.solver, stats=stats,
    )


# ------------------------------------------------------------------ pywraplp (CBC)
def _solve_pywraplp(model: MipModel, options: MipOptions) -> MipResult:
    pywraplp = _pywraplp()

    solver = pywraplp.Solver.CreateSolver("CBC")
    if solver is None:  # pragma: no cover - checked by available_solvers
        raise UnsupportedFeatureError("MIP solver 'cbc' is not available; use 'highs' or 'scip'")
    inf = solver.infinity()

    def conv(x: float) -> float:
        return inf if x == _INF else (-inf if x == -_INF else x)

    xs = [
        (solver.IntVar if model.integer[i] else solver.NumVar)(conv(model.lb[i]), conv(model.ub[i]), model.var_names[i])
        for i in range(model.num_vars)
    ]
    for terms, lb, ub, name in model.rows:
        row = solver.Constraint(conv(lb), conv(ub), name)
        merged: dict[int, float] = {}
        for v, c in terms:
            merged[v] = merged.get(v, 0.0) + c
        for v, c in merged.items():
            if c:
                row.SetCoefficient(xs[v], c)
    obj = solver.Objective()
    merged_obj: dict[int, float] = {}
    for v, c in model.objective:
        merged_obj[v] = merged_obj.get(v, 0.0) + c
    for v, c in merged_obj.items():
        if c:
            obj.SetCoefficient(xs[v], c)
    obj.SetOffset(model.objective_offset)
    if model.sense == "max":
        obj.SetMaximization()
    else:
        obj.SetMinimization()
    if options.time_limit_s is not None:
        solver.SetTimeLimit(max(1, int(options.time_limit_s * 1000)))
    solver.SetNumThreads(options.threads)
    if options.log:
        solver.EnableOutput()
    if model.hint and options.pass_hint is not False:
        keys = sorted(model.hint)
        solver.SetHint([xs[i] for i in keys], [model.hint[i] for i in keys])
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, options.relative_gap)
    code = solver.Solve(params)
    has_solution = code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE)
    values = tuple(float(x.solution_value()) for x in xs) if has_solution else None
    objective = float(obj.Value()) if has_solution else None
    bound: float | None = None
    if code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        b = obj.BestBound()
        bound = float(b) if math.isfinite(b) else None
    if code == pywraplp.Solver.OPTIMAL:
        status = Status.OPTIMAL
    elif code == pywraplp.Solver.FEASIBLE:
        status = Status.FEASIBLE
    elif code == pywraplp.Solver.INFEASIBLE:
        status = Status.INFEASIBLE
    elif code == pywraplp.Solver.NOT_SOLVED:
        status = Status.TIMEOUT
    else:
        status = Status.UNKNOWN
    solve_time_s = solver.wall_time() / 1000.0
    stats = {
        "termination": {0: "OPTIMAL", 1: "FEASIBLE", 2: "INFEASIBLE", 3: "UNBOUNDED", 4: "ABNORMAL",
                        5: "MODEL_INVALID", 6: "NOT_SOLVED"}.get(code, str(code)),
        "solve_time_s": solve_time_s,
        "num_vars": model.num_vars,
        "num_rows": model.num_rows,
        "num_nonzeros": model.num_nonzeros,
        "nodes": int(solver.nodes()) if has_solution else None,
    }
    return MipResult(
        status=status, objective=objective, best_bound=bound, values=values,
        wall_time_s=solve_time_s, solver="cbc", stats=stats,
    )
