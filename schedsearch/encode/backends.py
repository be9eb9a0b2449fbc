"""The backend protocol and the registry of backends, and :func:`solve`.

A backend turns a :class:`~schedsearch.problem.Problem` into a solver model,
solves it and returns a :class:`~schedsearch.result.SearchResult`. Backends
are looked up by name with :func:`get_backend` (the names:
:data:`schedsearch.registry.BACKENDS`) and imported lazily, so a missing
solver package only matters when that backend is used.

A backend declares what it supports beyond the problem's features (its
``capabilities``, of :class:`Capability`); a caller asks :func:`supports`
instead of comparing the backend's name.

:func:`solve` is the one entry point the search strategies use: it checks
that the backend can express the problem, runs it, and passes every
schedule through the independent validator before returning it (a backend's
answer is never trusted as given).
"""

from __future__ import annotations

import enum
import time
import warnings
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from schedsearch.deadline import unstopped
from schedsearch.encode.solve_options import SolveOptions
from schedsearch.errors import InvalidOptionsError, UnsoundBoundWarning, UnsupportedFeatureError
from schedsearch.problem import Problem
from schedsearch.registry import BACKENDS, available_backends, load_registered
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import objective_value
from schedsearch.validate import assert_valid

__all__ = [
    "Backend",
    "Capability",
    "supports",
    "FEATURES",
    "BACKENDS",
    "get_backend",
    "available_backends",
    "problem_features",
    "backend_params_error",
    "solve",
]


class Capability(enum.Enum):
    """What a backend may support beyond expressing a problem's features (:data:`FEATURES`).

    A backend lists its own in ``capabilities``; a caller asks
    :func:`supports`. A backend object without ``capabilities`` supports
    none of them.
    """

    #: In deterministic mode its time limit counts the solver's deterministic time (its work count, in
    #: seconds of :data:`~schedsearch.options.DETERMINISTIC_UNITS_PER_S` units), and its results report
    #: what they used (:attr:`~schedsearch.result.SearchResult.deterministic_s`); the backend's
    #: ``deterministic_limit_param`` names the parameter of that limit in deterministic units.
    DETERMINISTIC_TIME = "deterministic time"
    #: In deterministic mode a wall-clock guard also stops its search, after ``wall_guard_s(time_limit_s)``
    #: seconds (the backend's method); its results say when it did
    #: (:attr:`~schedsearch.result.SearchResult.wall_guard_hit`).
    WALL_GUARD = "wall-clock guard"
    #: Its propagation of the devices' no-overlap (disjunctive) constraints finds on a plain job shop what
    #: the redundant per-device bounds say, and a stronger one can be switched on by the parameter its
    #: ``strong_disjunctive_param`` names.
    STRONG_DISJUNCTIVE = "strong disjunctive propagation"
    #: A warm start is a solution hint that guides its search (without it, a warm start only gives an
    #: initial upper bound).
    SOLUTION_HINT = "solution hint"


class Backend(Protocol):
    """What every backend provides.

    Optional members: ``capabilities`` (a frozenset of :class:`Capability`),
    ``params_error(params)`` (why it would refuse ``backend_params``), and
    what a capability names (``wall_guard_s``, ``strong_disjunctive_param``,
    ``deterministic_limit_param``).
    """

    name: str
    #: Features the backend can express (see FEATURES).
    features: frozenset[str]

    def solve(self, problem: Problem, options: SolveOptions) -> SearchResult:  # pragma: no cover
        """Solve ``problem``; the schedule is not yet validated."""
        ...


def supports(backend: str | Backend, capability: Capability) -> bool:
    """Whether ``backend`` (a registered name or a backend object) declares ``capability``.

    Examples
    --------
    >>> from schedsearch.encode.backends import Capability, supports
    >>> supports("cpsat", Capability.WALL_GUARD), supports("z3", Capability.WALL_GUARD)
    (True, False)
    """
    return capability in getattr(get_backend(backend), "capabilities", frozenset())


#: Feature names a problem may need.
FEATURES = (
    "flexible_options",
    "multi_device",
    "transfers",
    "memory",
    "workspace",
    "releases",
    "fixed_orders",
    "overlaps",
)

def get_backend(name: str | Backend) -> Backend:
    """The backend called ``name`` (``"cpsat"`` or ``"z3"``), or ``name`` itself if it is one."""
    if not isinstance(name, str):
        return name
    if name not in BACKENDS:
        from schedsearch.options import did_you_mean

        raise InvalidOptionsError(f"backend: unknown name {name!r}{did_you_mean(name, BACKENDS)}; "
                                  f"choose one of {sorted(BACKENDS)}")
    return load_registered(name, BACKENDS)()


def backend_params_error(name: str, params: Mapping[str, Any]) -> str | None:
    """Why the backend called ``name`` would refuse ``params`` (its ``backend_params``), or None.

    Asks the backend's own ``params_error`` (a backend without one takes
    any). CP-SAT: every name must be a ``SatParameters`` field and its
    value of the field's type. Z3: every undotted name must be a solver
    parameter (Z3 itself ignores unknown ones silently). Called by the
    strategies' door (:meth:`~schedsearch.search.run.Run.open`), before
    any work; it loads the backend's solver package.

    Examples
    --------
    >>> backend_params_error("cpsat", {"num_search_worker": 2})
    "'num_search_worker' is not a CP-SAT parameter (did you mean 'num_search_workers' or 'num_workers'?)"
    >>> backend_params_error("cpsat", {"linearization_level": 2}) is None
    True
    """
    check = getattr(get_backend(name), "params_error", None)
    return None if check is None else check(params)


def problem_features(problem: Problem) -> frozenset[str]:
    """The features (of :data:`FEATURES`) a problem uses."""
    feats = set()
    blocks = problem.graph.blocks
    if any(len(b.options) > 1 for b in blocks):
        feats.add("flexible_options")
    if any(len(o.devices) > 1 for b in blocks for o in b.options):
        feats.add("multi_device")
    if any(e.size > 0 for e in problem.graph.edges):
        feats.add("transfers")
    if any(d.memory is not None for d in problem.cluster.devices):
        feats.add("memory")
    if any(b.workspace for b in blocks):
        feats.add("workspace")
    if problem.releases:
        feats.add("releases")
    if problem.fixed_orders:
        feats.add("fixed_orders")
    if problem.overlaps:
        feats.add("overlaps")
    return frozenset(feats)


def solve(problem: Problem, backend: str | Backend = "cpsat", options: SolveOptions | None = None) -> SearchResult:
    """Solve ``problem`` with ``backend`` and validate the schedule it returns.

    Raises :class:`~schedsearch.errors.ValidationFailedError` if a backend
    ever returns a schedule the validator rejects (an encoder bug), and
    :class:`~schedsearch.errors.UnsupportedFeatureError` when the backend
    cannot express a feature the problem uses.
    """
    options = options or SolveOptions()
    impl = get_backend(backend)
    _check_features(problem, impl)
    if options.warm_start is not None:
        assert_valid(problem, options.warm_start, "warm start")
    t0 = time.perf_counter()
    result = impl.solve(problem, options)
    with unstopped():  # a solver's answer is checked whatever the clock says (a plan is at stake)
        result = _checked(problem, impl, options, result)

    return attrs.evolve(result, wall_time_s=max(result.wall_time_s, time.perf_counter() - t0),
                        objective_name="max_span" if problem.objective == "max_span" else "makespan")


def _check_features(problem: Problem, impl: Backend) -> None:
    """Raise :class:`~schedsearch.errors.UnsupportedFeatureError` naming what
    the backend cannot express, and what to use instead."""
    missing = problem_features(problem) - impl.features
    if missing == {"overlaps"}:
        raise UnsupportedFeatureError(
            f"backend {impl.name!r} cannot express overlapped groups (the problem declares "
            f"{len(problem.overlaps)} overlaps); search the schedules without them with "
            f"problem.with_(overlaps=())"
        )
    if missing:
        others = [n for n in BACKENDS if n != impl.name]
        raise UnsupportedFeatureError(
            f"backend {impl.name!r} cannot express {sorted(missing)}; use backend {others[0]!r}"
            if others
            else f"backend {impl.name!r} cannot express {sorted(missing)}"
        )


def _checked(problem: Problem, impl: Backend, options: SolveOptions, result: SearchResult) -> SearchResult:
    """A backend's result with only the claims that hold.

    The schedule must pass the validator (else
    :class:`~schedsearch.errors.ValidationFailedError`) and the objective
    is recomputed from it; a status that promises a schedule without one
    becomes UNKNOWN; the bound is the larger of the backend's and the one
    the caller knew (``options.lower_bound``, not for INFEASIBLE); a bound
    above the objective of the validated plan is dropped with an
    :class:`~schedsearch.errors.UnsoundBoundWarning`, and optimality with it.
    """
    if result.schedule is not None:
        assert_valid(problem, result.schedule, f"schedule returned by backend {impl.name!r}")
        # the schedule is the truth: the objective is recomputed from it
        result = attrs.evolve(result, objective=objective_value(result.schedule, problem.objective))
    elif result.status.has_schedule:
        result = attrs.evolve(result, status=Status.UNKNOWN)
    bound = result.lower_bound
    if options.lower_bound is not None and result.status is not Status.INFEASIBLE:
        bound = max(bound or 0, options.lower_bound)
    status = result.status
    if result.objective is not None and bound is not None and bound > result.objective:
        # A validated plan beats the bound: the bound, and any proof built on
        # it, is wrong. Report the plan without a claim rather than a false one.
        warnings.warn(
            UnsoundBoundWarning(
                f"backend {impl.name!r} on problem {problem.name!r}: lower bound {bound} exceeds the objective "
                f"{result.objective} of a validated plan; the bound is dropped and optimality is not claimed "
                f"(please report this problem)"
            ),
            stacklevel=3,
        )
        bound, status = None, Status.FEASIBLE
    return attrs.evolve(result, status=status, lower_bound=bound)
