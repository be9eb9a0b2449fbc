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
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import attrs

from schedsearch._json import short_repr
from schedsearch.errors import InvalidPipelineError

__all__ = ["MAX_BYTES", "MAX_MS", "Units", "choose_units", "format_bytes", "number", "parse_bytes", "read_ms"]

GIB = 2**30
#: Largest byte amount a pipeline may give (1 EiB).
MAX_BYTES = 2**60
#: Largest time in milliseconds a pipeline or a calibration may give (about 31 years).
MAX_MS = 1e12
_UNITS = {
    "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(value: Any, where: str = "pipeline", field: str = "bytes") -> int:
    """Bytes from an integer, a float or a string with a unit (``"80 GiB"``, ``"1.5 GB"``).

    Examples
    --------
    >>> from schedsearch.plan.pipeline import parse_bytes
    >>> parse_bytes("80 GiB"), parse_bytes("1.5 kB"), parse_bytes(4096)
    (85899345920, 1500, 4096)
    >>> parse_bytes("-1 GiB", "stage 'embed'", "activation_bytes")
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidPipelineError: stage 'embed': 'activation_bytes' must be a byte amount from 0 to 2**60 (an integer or a string such as "80 GiB"), got '-1 GiB'
    """
    amount: Fraction | None = None
    if isinstance(value, bool):
        amount = None
    elif isinstance(value, int):
        amount = Fraction(value)
    elif isinstance(value, float):
        amount = Fraction(repr(value)) if math.isfinite(value) else None
    elif isinstance(value, str) and len(value) <= 64:
        match = _BYTES.match(value)
        unit = match.group(2).lower() if match else ""
        if match and (unit in _UNITS or unit == "") and len(match.group(1)) <= 32:
            amount = Fraction(match.group(1)) * _UNITS.get(unit, 1)
    if amount is None or amount < 0 or amount > MAX_BYTES:
        raise InvalidPipelineError(
            f"{where}: {field!r} must be a byte amount from 0 to 2**60 (an integer or a string such as "
            f"\"80 GiB\"), got {short_repr(value)}"
        )
    return round(amount)


def format_bytes(amount: int) -> str | int:
    """The exact string form of a byte amount (``"80 GiB"``), or the integer when no unit divides it.

    Examples
    --------
    >>> from schedsearch.plan.pipeline import format_bytes
    >>> format_bytes(80 * 2**30), format_bytes(3 * 2**19), format_bytes(1000)
    ('80 GiB', '1536 KiB', 1000)
    """
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if amount and amount % size == 0:
            return f"{amount // size} {unit}"
    return amount


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a number (a bool, a string, NaN, inf, 10**400)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def read_ms(where: str, field: str, value: Any, optional: bool = False) -> float | None:
    """``value`` as a time in milliseconds from 0 to :data:`MAX_MS` (None when ``optional`` and absent); ``where``
    and ``field`` name it in the error."""
    if value is None and optional:
        return None
    number_ = number(value)
    if number_ is None or number_ < 0 or number_ > MAX_MS:
        raise InvalidPipelineError(
            f"{where}: {field!r} must be a time in milliseconds from 0 to 1e12, got {short_repr(value)}")
    return number_



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
