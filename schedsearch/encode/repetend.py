"""The repetend entry (a modulo-scheduling model): one period of a steady state, searched exactly.

The repetend search (:func:`schedsearch.search.repetend`) asks a backend for
a :class:`~schedsearch.periodic.Repetend` of a given period through
:func:`solve_repetend`, the counterpart of
:func:`schedsearch.encode.backends.solve` for that sub-problem: the same
argument order, the encoders looked up by name in :data:`REPETEND_BACKENDS`
and loaded lazily, and every repetend a backend returns checked by
:func:`~schedsearch.periodic.check_repetend` before it is returned.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.encode.backends import Backend, problem_features
from schedsearch.errors import InvalidOptionsError, UnsupportedFeatureError, ValidationFailedError
from schedsearch.options import SolverSettings, did_you_mean, options_error
from schedsearch.problem import Problem
from schedsearch.registry import load_registered
from schedsearch.result import Status

__all__ = [
    "REPETEND_OBJECTIVES",
    "REPETEND_MEMORY_ENCODINGS",
    "RepetendOptions",
    "PeriodResult",
    "REPETEND_BACKENDS",
    "repetend_support_error",
    "repetend_memory_pairs",
    "solve_repetend",
]

#: Objectives of a repetend sub-problem: any valid repetend, or one whose
#: micro-batch latency (first start to last end of one micro-batch) is least.
REPETEND_OBJECTIVES = ("feasibility", "latency")

#: Encodings of the memory family of a repetend model (all exact; see RepetendOptions).
REPETEND_MEMORY_ENCODINGS = ("cumulative", "events", "both")


def _at_least_one(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise options_error(inst, attribute.name, "an integer >= 1", value)


def _non_negative(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise options_error(inst, attribute.name, "an integer >= 0", value)


def _forbidden(value: Any) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Offset vectors as sorted ``(block, offset)`` tuples (from mappings or pairs)."""
    out = []
    for item in value:
        pairs = item.items() if isinstance(item, Mapping) else item
        out.append(tuple(sorted((str(b), int(o)) for b, o in pairs)))
    return tuple(out)


@attrs.frozen(kw_only=True)
class RepetendOptions(SolverSettings):
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
        Reproducible search (CP-SAT: interleaved search, ``time_limit_s``
        read as deterministic time; Z3 is deterministic for a fixed seed).
    The solver settings (time limit, seed, workers, log, backend parameters) are those of
    :class:`~schedsearch.options.SolverSettings`, as in :class:`~schedsearch.encode.solve_options.SolveOptions`.
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

    def __attrs_post_init__(self) -> None:
        if self.objective not in REPETEND_OBJECTIVES:
            raise options_error(self, "objective", f"one of {REPETEND_OBJECTIVES}", self.objective)
        if self.memory_encoding not in REPETEND_MEMORY_ENCODINGS:
            raise options_error(self, "memory_encoding", f"one of {REPETEND_MEMORY_ENCODINGS}", self.memory_encoding)


@attrs.frozen(kw_only=True)
class PeriodResult:
    """Outcome of a repetend sub-problem.

    ``status`` is OPTIMAL (latency proven least, or any repetend for the
    feasibility objective), FEASIBLE, INFEASIBLE (no repetend of this period
    and offset range), TIMEOUT or UNKNOWN. ``repetend`` has passed
    :func:`~schedsearch.periodic.check_repetend`. ``wall_guard_hit``: a
    deterministic search was stopped by its wall-clock guard (not
    reproducible); ``stats`` holds the solver's figures.
    """

    status: Status
    repetend: Any = None
    latency: int | None = None
    latency_bound: int | None = None
    wall_time_s: float = 0.0
    backend: str = ""
    stats: Mapping[str, Any] = attrs.field(factory=dict)
    wall_guard_hit: bool = False


#: backend name -> "module:function" solving a repetend sub-problem, imported lazily.
REPETEND_BACKENDS: dict[str, str] = {
    "cpsat": "schedsearch.encode.cpsat.repetend:solve_repetend",
    "z3": "schedsearch.encode.z3.repetend:solve_repetend",
}


def repetend_support_error(problem: Problem) -> str | None:
    """Why the repetend encodings cannot express ``problem`` (None when they can)."""
    feats = problem_features(problem)
    unsupported = feats & {"flexible_options", "transfers", "releases", "fixed_orders", "overlaps"}
    if unsupported:
        return f"it uses {sorted(unsupported)}; the repetend encoding needs fixed placements and no transfers"
    if problem.duration_overrides:
        return "micro-batches differ in duration ('duration_overrides'); a repetend needs identical micro-batches"
    return None


def repetend_memory_pairs(problem: Problem) -> dict[str, tuple[tuple[str, str, int], ...] | None]:
    """Per device with a capacity: the (alloc block, free block, amount) pairs
    of one micro-batch (each free depends on its allocation), or None when
    the device's deltas do not pair up that way."""
    from schedsearch.encode.structure import build_structure

    st = build_structure(problem.with_(num_microbatches=1), symmetry_breaking=False)
    out: dict[str, tuple[tuple[str, str, int], ...] | None] = {}
    for d, pairs in st.memory_pairs.items():
        out[d] = None if pairs is None else tuple((st.tasks[a].key[0], st.tasks[f].key[0], x) for a, f, x in pairs)
    return out


def solve_repetend(problem: Problem, backend: str | Backend, options: RepetendOptions) -> PeriodResult:
    """Solve a repetend sub-problem with ``backend`` and check the repetend it returns.

    The arguments come in :func:`~schedsearch.encode.backends.solve`'s
    order. ``backend`` is a name of :data:`REPETEND_BACKENDS` or a backend
    object: one with a ``solve_repetend(problem, options)`` method (or, with a
    :class:`DeprecationWarning`, its old name ``solve_modulo``) is called
    as given, another one stands for the registered repetend encoder of its
    ``name``.

    Raises :class:`~schedsearch.errors.UnsupportedFeatureError` for problems
    the encoding cannot express, and
    :class:`~schedsearch.errors.ValidationFailedError` if a backend ever
    returns a repetend that breaks a steady-state rule (an encoder bug).
    """
    name = backend if isinstance(backend, str) else str(backend.name)
    fn = None if isinstance(backend, str) else getattr(backend, "solve_repetend", None)
    if fn is None and not isinstance(backend, str) and getattr(backend, "solve_modulo", None) is not None:
        warnings.warn(f"backend {name!r}: the method solve_modulo is deprecated, name it solve_repetend",
                      DeprecationWarning, stacklevel=2)
        fn = backend.solve_modulo
    if fn is None and name not in REPETEND_BACKENDS:
        raise InvalidOptionsError(f"backend: unknown name {name!r} for modulo scheduling"
                                  f"{did_you_mean(name, REPETEND_BACKENDS)}; choose one of {sorted(REPETEND_BACKENDS)}")
    why = repetend_support_error(problem)
    if why is not None:
        raise UnsupportedFeatureError(f"modulo scheduling cannot express problem {problem.name!r}: {why}; use optimal()")
    if fn is None:
        fn = load_registered(name, REPETEND_BACKENDS)
    t0 = time.perf_counter()
    result: PeriodResult = fn(problem, options)
    if result.repetend is not None:
        _check_repetend(problem, name, options, result.repetend)
    return attrs.evolve(result, wall_time_s=max(result.wall_time_s, time.perf_counter() - t0))


def _check_repetend(problem: Problem, backend: str, options: RepetendOptions, repetend: Any) -> None:
    """Raise :class:`~schedsearch.errors.ValidationFailedError` when the
    repetend a backend returned breaks a steady-state rule or has another
    period than the one asked."""
    from schedsearch.periodic import check_repetend

    violations = check_repetend(problem, repetend)
    if violations:
        shown = "\n  ".join(str(v) for v in violations[:10])
        raise ValidationFailedError(
            f"repetend returned by backend {backend!r} breaks {len(violations)} rule(s):\n  {shown}", violations
        )
    if repetend.period != options.period:
        raise ValidationFailedError(
            f"repetend returned by backend {backend!r} has period {repetend.period}, asked {options.period}"
        )


# The names before the repetend search spoke of one word (they said "modulo"): kept working, not listed in __all__.
ModuloOptions = RepetendOptions
ModuloResult = PeriodResult
MODULO_OBJECTIVES = REPETEND_OBJECTIVES
MODULO_MEMORY_ENCODINGS = REPETEND_MEMORY_ENCODINGS
MODULO_BACKENDS = REPETEND_BACKENDS
modulo_support_error = repetend_support_error
modulo_memory_pairs = repetend_memory_pairs
solve_modulo = solve_repetend
