"""The backend protocol, solve options, and the registry of backends.

A backend turns a :class:`~schedsearch.problem.Problem` into a solver model,
solves it and returns a :class:`~schedsearch.result.SearchResult`. Backends
are looked up by name with :func:`get_backend` and imported lazily, so a
missing solver package only matters when that backend is used.

:func:`solve` is the one entry point the search strategies use: it runs a
backend and passes every schedule through the independent validator before
returning it.
"""

from __future__ import annotations

import importlib
import operator
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from schedsearch.errors import InvalidOptionsError, UnsoundBoundWarning, UnsupportedFeatureError
from schedsearch.options import (  # noqa: F401 - MAX_SEED and MAX_WORKERS are re-exported
    MAX_SEED,
    MAX_WORKERS,
    ProgressEvent,
    check_boolean,
    check_callable,
    check_params,
    check_seed,
    check_time_limit,
    check_workers,
    options_error,
)
from schedsearch.problem import Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, objective_value
from schedsearch.validate import assert_valid

__all__ = [
    "Progress",
    "SolveOptions",
    "Backend",
    "BACKENDS",
    "get_backend",
    "available_backends",
    "solve",
    "ModuloOptions",
    "ModuloResult",
    "MODULO_BACKENDS",
    "modulo_memory_pairs",
    "solve_modulo",
]


#: The event a backend reports (the one event of every strategy; see
#: :class:`schedsearch.options.ProgressEvent`). Backends name their phase
#: ``"exact search (cpsat)"`` or ``"exact search (z3)"``.
Progress = ProgressEvent


#: Memory encodings an option may name (see :class:`ModuloOptions`).
_MEMORY_ENCODINGS = ("cumulative", "events", "both")


def _at_least_one(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise options_error(inst, attribute.name, "an integer >= 1", value)


def _bound(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise options_error(inst, attribute.name, "an integer >= 0 or None", value)


def _memory_encoding(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value not in _MEMORY_ENCODINGS:
        raise options_error(inst, attribute.name, f"one of {_MEMORY_ENCODINGS}", value)


def _warm_start(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, Schedule):
        raise options_error(inst, attribute.name, "a Schedule or None", value)


def _tie_key(value: Any) -> tuple[str, int] | None:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    block, mb = value
    if not isinstance(block, str) or isinstance(mb, bool):
        return None
    try:
        return (block, operator.index(mb))  # numpy integers too
    except TypeError:
        return None


def _ties(value: Any) -> tuple[tuple[tuple[str, int], tuple[str, int], int], ...]:
    if isinstance(value, (str, bytes, Mapping)):
        raise InvalidOptionsError(f"SolveOptions: 'ties' must be a list of triples, got {value!r}")
    try:
        items = tuple(value)
    except TypeError:
        raise InvalidOptionsError(f"SolveOptions: 'ties' must be a list of triples, got {value!r}") from None
    out = []
    for item in items:
        try:
            a, b, offset = item
        except (TypeError, ValueError):
            raise InvalidOptionsError(
                f"SolveOptions: 'ties' must hold ((block, micro-batch), (block, micro-batch), offset) triples, "
                f"got {item!r}"
            ) from None
        ka, kb = _tie_key(a), _tie_key(b)
        if ka is None or kb is None:
            raise InvalidOptionsError(
                f"SolveOptions: 'ties' must hold ((block, micro-batch), (block, micro-batch), offset) triples "
                f"with block names and integer micro-batches, got {item!r}"
            )
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise InvalidOptionsError(f"SolveOptions: tie offset must be an integer, got {offset!r} in {item!r}")
        out.append((ka, kb, offset))
    return tuple(out)


@attrs.frozen(kw_only=True)
class SolveOptions:
    """Options shared by every backend.

    Parameters
    ----------
    time_limit_s:
        Wall-clock limit (None = no limit).
    seed:
        Random seed handed to the solver.
    workers:
        Parallel search workers (CP-SAT); Z3 is single-threaded.
    deterministic:
        Ask for a reproducible search (CP-SAT: interleaved search with a
        fixed seed; Z3 is deterministic for a fixed seed).
    warm_start:
        A schedule of the same problem used as a starting point (a complete
        hint for CP-SAT, an initial upper bound for Z3). It must validate.
    symmetry_breaking:
        Order micro-batches by start (Tessel's Property 4.1): every block's
        where that keeps an optimum, else one block's where the
        micro-batches are interchangeable, else none (the conditions and
        their proofs: :func:`~schedsearch.encode.structure.chained_blocks`).
    redundant:
        Add the redundant per-device bound ``makespan >= first start + work +
        least tail``; it does not change the optimum, only the proof speed.
    lower_bound, upper_bound:
        Known bounds on the optimal value of the problem's objective (the
        makespan, or the longest device span for ``"max_span"``);
        ``upper_bound`` also restricts the search to schedules whose
        objective is at most it.
    ties:
        Start-time ties ``(a, b, offset)`` between task instances ``a`` and
        ``b`` (``(block, micro-batch)`` keys): ``start(b) = start(a) +
        offset``. They *restrict* the search (e.g. to periodic or mirror
        symmetric schedules); a status or bound then holds for the
        restricted space only, which is the caller's to interpret.
    progress:
        Called with a :class:`~schedsearch.options.ProgressEvent` whenever
        the incumbent or the bound improves.
    log:
        Let the solver print its own log.
    backend_params:
        Extra backend-specific parameters (CP-SAT ``SatParameters`` fields,
        or Z3 ``set_param`` names).
    """

    time_limit_s: float | None = attrs.field(default=60.0, validator=check_time_limit)
    seed: int = attrs.field(default=0, validator=check_seed)
    workers: int = attrs.field(default=2, validator=check_workers)
    deterministic: bool = attrs.field(default=False, validator=check_boolean)
    warm_start: Schedule | None = attrs.field(default=None, validator=_warm_start)
    symmetry_breaking: bool = attrs.field(default=True, validator=check_boolean)
    redundant: bool = attrs.field(default=True, validator=check_boolean)
    memory_encoding: str = attrs.field(default="cumulative", validator=_memory_encoding)
    hint: Any = attrs.field(default=None, eq=False)
    lower_bound: int | None = attrs.field(default=None, validator=_bound)
    upper_bound: int | None = attrs.field(default=None, validator=_bound)
    ties: tuple[tuple[tuple[str, int], tuple[str, int], int], ...] = attrs.field(default=(), converter=_ties)
    progress: Callable[[ProgressEvent], None] | None = attrs.field(default=None, eq=False, validator=check_callable)
    log: bool = attrs.field(default=False, validator=check_boolean)
    backend_params: Mapping[str, Any] = attrs.field(factory=dict, validator=check_params)


class Backend(Protocol):
    """What every backend provides."""

    name: str
    #: Features the backend can express (see FEATURES).
    features: frozenset[str]

    def solve(self, problem: Problem, options: SolveOptions) -> SearchResult:  # pragma: no cover
        """Solve ``problem``; the schedule is not yet validated."""
        ...


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

#: name -> "module:attribute" of the backend class, imported lazily.
BACKENDS: dict[str, str] = {
    "cpsat": "schedsearch.encode.cpsat.model:CpSatBackend",
    "z3": "schedsearch.encode.z3.model:Z3Backend",
}


def available_backends() -> tuple[str, ...]:
    return tuple(BACKENDS)


def get_backend(name: str | Backend) -> Backend:
    """The backend called ``name`` (``"cpsat"`` or ``"z3"``), or ``name`` itself if it is one."""
    if not isinstance(name, str):
        return name
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown name {name!r}; choose one of {sorted(BACKENDS)}")
    return _load(name, BACKENDS)()


def _load(name: str, registry: Mapping[str, str]) -> Any:
    """The object ``registry[name]`` names (``"module:attribute"``), imported now."""
    module, attr = registry[name].split(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UnsupportedFeatureError(
            f"backend {name!r} needs a solver package that is not installed ({exc}); "
            f"try one of {sorted(set(registry) - {name})}"
        ) from exc


def problem_features(problem: Problem) -> frozenset[str]:
    """The features a problem uses."""
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
    if options.warm_start is not None:
        assert_valid(problem, options.warm_start, "warm start")
    t0 = time.perf_counter()
    result = impl.solve(problem, options)
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
            stacklevel=2,
        )
        bound, status = None, Status.FEASIBLE
    return attrs.evolve(result, status=status, lower_bound=bound,
                        wall_time_s=max(result.wall_time_s, time.perf_counter() - t0),
                        objective_name="max_span" if problem.objective == "max_span" else "makespan")


# --------------------------------------------------------------------------
# Modulo scheduling (the repetend search's sub-problem)
# --------------------------------------------------------------------------

#: Objectives of a modulo sub-problem: any valid repetend, or one whose
#: micro-batch latency (first start to last end of one micro-batch) is least.
MODULO_OBJECTIVES = ("feasibility", "latency")

#: Encodings of the memory family of a modulo model (all exact; see ModuloOptions).
MODULO_MEMORY_ENCODINGS = ("cumulative", "events", "both")


def _non_negative(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"ModuloOptions: {attribute.name!r} must be an integer >= 0, got {value!r}")


def _forbidden(value: Any) -> tuple[tuple[tuple[str, int], ...], ...]:
    out = []
    for item in value:
        pairs = item.items() if isinstance(item, Mapping) else item
        out.append(tuple(sorted((str(b), int(o)) for b, o in pairs)))
    return tuple(out)


@attrs.frozen(kw_only=True)
class ModuloOptions:
    """A modulo-scheduling sub-problem: one period, searched exactly.

    The backend looks for a :class:`~schedsearch.periodic.Repetend` of
    exactly ``period`` whose offsets lie in ``0 .. max_offset`` (see
    :mod:`schedsearch.periodic` for the rules it must keep).

    Parameters
    ----------
    period:
        The period (initiation interval), >= 1.
    max_offset:
        Largest micro-batch offset allowed (Tessel's ``N_R - 1``).
    objective:
        ``"feasibility"`` or ``"latency"`` (least time from the first start
        to the last end of one micro-batch).
    forbidden_offsets:
        Offset vectors (``{block: offset}``) the answer must differ from in at
        least one block: candidates already seen.
    max_latency:
        Optional upper bound on the latency.
    cyclic_orders:
        Sequences of blocks whose starts ``t_b - P o_b`` must be
        non-decreasing along the sequence, the last no later than the first
        plus ``P`` (copies of one block in a fold-``k`` super-graph, ordered
        to break the symmetry between the copies).
    redundant:
        Add the redundant average-memory constraint (it changes no answer,
        only the proof speed).
    memory_encoding:
        ``"cumulative"`` (per paired device, one cumulative over the
        circular windows the pairs hold memory), ``"events"`` (the level at
        every start that raises it, through phase-order literals) or
        ``"both"``; all exact, they differ in speed only (CP-SAT; Z3 always
        uses events). Devices whose deltas do not pair up always use events.
    hint:
        A :class:`~schedsearch.periodic.Repetend` of the same problem and
        period to start from (CP-SAT: a solution hint; Z3 ignores it).
    deterministic:
        Reproducible search (CP-SAT: interleaved search; Z3 is
        deterministic for a fixed seed).
    Other fields are those of :class:`SolveOptions`.
    """

    period: int = attrs.field(validator=_at_least_one)
    max_offset: int = attrs.field(validator=_non_negative)
    objective: str = "latency"
    forbidden_offsets: tuple[tuple[tuple[str, int], ...], ...] = attrs.field(converter=_forbidden, default=())
    max_latency: int | None = None
    cyclic_orders: tuple[tuple[str, ...], ...] = attrs.field(
        converter=lambda v: tuple(tuple(str(x) for x in seq) for seq in v), default=()
    )
    redundant: bool = True
    memory_encoding: str = "cumulative"
    hint: Any = attrs.field(default=None, eq=False)
    time_limit_s: float | None = attrs.field(default=60.0, validator=check_time_limit)
    seed: int = attrs.field(default=0, validator=check_seed)
    workers: int = attrs.field(default=2, validator=check_workers)
    deterministic: bool = attrs.field(default=False, validator=check_boolean)
    log: bool = attrs.field(default=False, validator=check_boolean)
    backend_params: Mapping[str, Any] = attrs.field(factory=dict, validator=check_params)

    def __attrs_post_init__(self) -> None:
        if self.objective not in MODULO_OBJECTIVES:
            raise ValueError(f"ModuloOptions: 'objective' must be one of {MODULO_OBJECTIVES}, got {self.objective!r}")
        if self.memory_encoding not in MODULO_MEMORY_ENCODINGS:
            raise ValueError(
                f"ModuloOptions: 'memory_encoding' must be one of {MODULO_MEMORY_ENCODINGS}, "
                f"got {self.memory_encoding!r}"
            )


@attrs.frozen(kw_only=True)
class ModuloResult:
    """Outcome of a modulo sub-problem.

    ``status`` is OPTIMAL (latency proven least, or any repetend for the
    feasibility objective), FEASIBLE, INFEASIBLE (no repetend of this period
    and offset range), TIMEOUT or UNKNOWN. ``repetend`` has passed
    :func:`~schedsearch.periodic.check_repetend`.
    """

    status: Status
    repetend: Any = None
    latency: int | None = None
    latency_bound: int | None = None
    wall_time_s: float = 0.0
    backend: str = ""
    stats: Mapping[str, Any] = attrs.field(factory=dict)


#: backend name -> "module:function" solving a modulo sub-problem, imported lazily.
MODULO_BACKENDS: dict[str, str] = {
    "cpsat": "schedsearch.encode.cpsat.modulo:solve_modulo",
    "z3": "schedsearch.encode.z3.modulo:solve_modulo",
}


def modulo_support_error(problem: Problem) -> str | None:
    """Why the modulo encodings cannot express ``problem`` (None when they can)."""
    feats = problem_features(problem)
    unsupported = feats & {"flexible_options", "transfers", "releases", "fixed_orders", "overlaps"}
    if unsupported:
        return f"it uses {sorted(unsupported)}; the modulo encoding needs fixed placements and no transfers"
    if problem.duration_overrides:
        return "micro-batches differ in duration ('duration_overrides'); a repetend needs identical micro-batches"
    return None


def modulo_memory_pairs(problem: Problem) -> dict[str, tuple[tuple[str, str, int], ...] | None]:
    """Per device with a capacity: the (alloc block, free block, amount) pairs
    of one micro-batch (each free depends on its allocation), or None when
    the device's deltas do not pair up that way."""
    from schedsearch.encode.structure import build_structure

    st = build_structure(problem.with_(num_microbatches=1), symmetry_breaking=False)
    out: dict[str, tuple[tuple[str, str, int], ...] | None] = {}
    for d, pairs in st.memory_pairs.items():
        out[d] = None if pairs is None else tuple((st.tasks[a].key[0], st.tasks[f].key[0], x) for a, f, x in pairs)
    return out


def solve_modulo(problem: Problem, backend: str | Backend, options: ModuloOptions) -> ModuloResult:
    """Solve a modulo sub-problem with ``backend`` and check the repetend it returns.

    The arguments come in :func:`solve`'s order. ``backend`` is a name of
    :data:`MODULO_BACKENDS` or a backend object: one with a
    ``solve_modulo(problem, options)`` method is called as given, another
    one stands for the registered modulo encoder of its ``name``.

    Raises :class:`~schedsearch.errors.UnsupportedFeatureError` for problems
    the encoding cannot express, and
    :class:`~schedsearch.errors.ValidationFailedError` if a backend ever
    returns a repetend that breaks a steady-state rule (an encoder bug).
    """
    from schedsearch.errors import ValidationFailedError
    from schedsearch.periodic import check_repetend

    name = backend if isinstance(backend, str) else str(backend.name)
    fn = None if isinstance(backend, str) else getattr(backend, "solve_modulo", None)
    if fn is None and name not in MODULO_BACKENDS:
        raise ValueError(f"backend: unknown name {name!r} for modulo scheduling; choose one of {sorted(MODULO_BACKENDS)}")
    why = modulo_support_error(problem)
    if why is not None:
        raise UnsupportedFeatureError(f"modulo scheduling cannot express problem {problem.name!r}: {why}; use optimal()")
    if fn is None:
        fn = _load(name, MODULO_BACKENDS)
    t0 = time.perf_counter()
    result: ModuloResult = fn(problem, options)
    if result.repetend is not None:
        violations = check_repetend(problem, result.repetend)
        if violations:
            shown = "\n  ".join(str(v) for v in violations[:10])
            raise ValidationFailedError(
                f"repetend returned by backend {name!r} breaks {len(violations)} rule(s):\n  {shown}", violations
            )
        if result.repetend.period != options.period:
            raise ValidationFailedError(
                f"repetend returned by backend {name!r} has period {result.repetend.period}, asked {options.period}"
            )
    return attrs.evolve(result, wall_time_s=max(result.wall_time_s, time.perf_counter() - t0))
