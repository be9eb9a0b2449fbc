"""The options every backend takes (:class:`SolveOptions`).

A backend reads them as given; the checks run when the options are built,
so a bad seed, worker count or time limit is reported before any solver
sees it (with the option's name and allowed range; the checks themselves
are those of :mod:`schedsearch.options`, shared with the strategies).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidOptionsError
from schedsearch.options import ProgressEvent, SolverSettings, check_boolean, check_callable, options_error
from schedsearch.schedule import Schedule

__all__ = ["Progress", "SolveOptions"]


#: The event a backend reports (the one event of every strategy; see
#: :class:`schedsearch.options.ProgressEvent`). Backends name their phase
#: ``"exact search (cpsat)"`` or ``"exact search (z3)"``.
Progress = ProgressEvent


def _bound(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise options_error(inst, attribute.name, "an integer >= 0 or None", value)


def _warm_start(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, Schedule):
        raise options_error(inst, attribute.name, "a Schedule or None", value)


def _tie_key(value: Any) -> tuple[str, int] | None:
    """``(block, micro-batch)`` of a tie's end, or None when ``value`` is not one."""
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
    """The ties as ``((block, micro-batch), (block, micro-batch), offset)`` triples, checked."""
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
class SolveOptions(SolverSettings):
    """Options shared by every backend: the solver settings
    (:class:`~schedsearch.options.SolverSettings`) and what one exact search adds.

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
        fixed seed, and ``time_limit_s`` read as deterministic time, so a
        search its limit stops ends at the same point on any machine; Z3 is
        deterministic for a fixed seed, its limit stays wall-clock).
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

    warm_start: Schedule | None = attrs.field(default=None, validator=_warm_start)
    symmetry_breaking: bool = attrs.field(default=True, validator=check_boolean)
    redundant: bool = attrs.field(default=True, validator=check_boolean)
    lower_bound: int | None = attrs.field(default=None, validator=_bound)
    upper_bound: int | None = attrs.field(default=None, validator=_bound)
    ties: tuple[tuple[tuple[str, int], tuple[str, int], int], ...] = attrs.field(default=(), converter=_ties)
    progress: Callable[[ProgressEvent], None] | None = attrs.field(default=None, eq=False, validator=check_callable)
