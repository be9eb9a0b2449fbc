"""Units: milliseconds and bytes in, the solver's integers out, chosen once and reported.

The solvers work on integers (:mod:`schedsearch.problem`). :func:`choose_units`
picks one time unit for a whole plan so that every stage time, rounded to a
whole number of units, is off by at most the asked relative tolerance (1% by
default), and one memory unit (a power of two bytes) so that rounding an
activation or a parameter amount *up* to whole units adds at most that
tolerance; budgets are rounded *down*, so a plan that fits in units fits in
bytes. The chosen :class:`Units` travel with every plan result and in the
metadata of every export (the problem itself has no field for them; they are
never written into its name).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidPipelineError

__all__ = ["Units", "choose_units"]

GIB = 2**30


@attrs.frozen(kw_only=True)
class Units:
    """How the plan's integers map to milliseconds and bytes.

    ``time_unit_ms``: one solver time unit in milliseconds;
    ``memory_unit_bytes``: one memory unit in bytes; ``time_tolerance``: the
    largest relative rounding error asked for a stage time;
    ``max_time_error``: the largest one of the rounded times (with
    ``worst_time`` naming it); ``max_memory_error`` the largest relative
    error of a rounded memory amount.

    Examples
    --------
    >>> from schedsearch.units import Units
    >>> units = Units(time_unit_ms=0.05, memory_unit_bytes=2**20, time_tolerance=0.01, max_time_error=0.0,
    ...               max_memory_error=0.0)
    >>> units.ticks(1.23), units.ms(25), units.memory(2**30), units.gib(1024)
    (25, 1.25, 1024, 1.0)
    >>> print(units)
    time unit 0.05 ms (largest stage-time rounding error 0.00%, asked <= 1.00%), memory unit 1 MiB
    """

    time_unit_ms: float
    memory_unit_bytes: int
    time_tolerance: float
    max_time_error: float
    max_memory_error: float
    worst_time: str = ""

    def ticks(self, ms: float) -> int:
        """Milliseconds as whole time units (at least 1)."""
        return max(1, round(ms / self.time_unit_ms))

    def ticks_or_zero(self, ms: float) -> int:
        """Milliseconds as whole time units, 0 allowed (transfers)."""
        return round(ms / self.time_unit_ms)

    def ms(self, ticks: float) -> float:
        return ticks * self.time_unit_ms

    def memory(self, num_bytes: int) -> int:
        """Bytes as whole memory units, rounded up (what a block holds)."""
        return -(-num_bytes // self.memory_unit_bytes)

    def capacity(self, num_bytes: int) -> int:
        """Bytes as whole memory units, rounded down (a budget)."""
        return num_bytes // self.memory_unit_bytes

    def gib(self, units: float) -> float:
        return units * self.memory_unit_bytes / GIB

    def __str__(self) -> str:
        mem = self.memory_unit_bytes
        mem_text = next((f"{mem // s} {n}" for n, s in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10))
                         if mem % s == 0), f"{mem} B")
        return (f"time unit {self.time_unit_ms:g} ms (largest stage-time rounding error "
                f"{100 * self.max_time_error:.2f}%, asked <= {100 * self.time_tolerance:.2f}%), memory unit {mem_text}")

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _nice_units(largest: float) -> Iterable[float]:
    """1, 2, 5 x 10^k milliseconds, descending from at most ``largest``."""
    exponent = math.floor(math.log10(largest))
    while True:
        for mantissa in (5, 2, 1):
            value = float(f"{mantissa}e{exponent}")
            if value <= largest:
                yield value
        exponent -= 1


def choose_units(times_ms: Mapping[str, float], memory_bytes: Iterable[int], *, tolerance: float = 0.01) -> Units:
    """The coarsest round time unit that keeps every time within ``tolerance``, and a memory unit.

    ``times_ms`` names each time (``"stage 3 forward"``) so the worst one
    can be reported; zero times are left out. The time unit is the largest
    of 1, 2 and 5 times a power of ten (ms) under which every time rounds
    to at least one unit with a relative error <= ``tolerance`` (one exists:
    any unit <= 2 x tolerance x the shortest time does). The memory unit is
    the largest power of two bytes <= ``tolerance`` x the smallest non-zero
    amount, so rounding up adds at most ``tolerance``.

    Examples
    --------
    >>> from schedsearch.units import choose_units
    >>> units = choose_units({"F0": 1.0, "B0": 2.0, "F1": 1.3}, [3 * 2**30, 2**30])
    >>> units.time_unit_ms, units.memory_unit_bytes // 2**20
    (0.1, 8)
    >>> round(units.max_time_error, 4), units.worst_time
    (0.0, 'F1')
    """
    positive = {k: float(v) for k, v in times_ms.items() if v > 0}
    if not positive:
        raise InvalidPipelineError(f"choose_units: 'times_ms' must hold a time > 0 ms to scale, got {dict(times_ms)!r:.200}")
    shortest = min(positive.values())
    chosen, worst, worst_name = None, 0.0, ""
    for unit in _nice_units(shortest):
        errors = {k: abs(max(1, round(t / unit)) * unit - t) / t for k, t in positive.items()}
        name = max(errors, key=lambda k: (errors[k], k))
        if errors[name] <= tolerance + 1e-12:
            chosen, worst, worst_name = unit, errors[name], name
            break
    assert chosen is not None
    amounts = [int(b) for b in memory_bytes if b > 0]
    if amounts:
        mem_unit = 2 ** max(0, math.floor(math.log2(max(1.0, tolerance * min(amounts)))))
        mem_error = max((-(-a // mem_unit) * mem_unit - a) / a for a in amounts)
    else:
        mem_unit, mem_error = 2**20, 0.0
    return Units(time_unit_ms=chosen, memory_unit_bytes=mem_unit, time_tolerance=tolerance, max_time_error=worst,
                 max_memory_error=mem_error, worst_time=worst_name)
