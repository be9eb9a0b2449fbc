"""Busy intervals of a resource and the earliest free gap in them (solver-free).

The list schedulers (:mod:`schedsearch.search.list_scheduling`) and the
simulator of device orders (:func:`schedsearch.handcrafted.schedule_from_orders`)
place work greedily: a task or a transfer goes at the earliest time, no
earlier than when it is ready, at which its resource (a device or a
channel), or every one of its resources, is free for its whole duration.
This module is that bookkeeping, once.

Intervals are half-open, ``[start, start + duration)``, so work may start
the moment other work ends. A zero-length interval occupies nothing: it is
never booked and never conflicts (the validator does not check zero-length
transfers either). The intervals booked on one timeline never overlap (the
caller books only where :meth:`Timeline.earliest` found room), which is
what makes the search for a gap a bisection.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import TypeVar

__all__ = ["Timeline", "earliest_common", "earliest_finish"]

Key = TypeVar("Key")


class Timeline:
    """The busy intervals of one resource, disjoint and sorted by start.

    Examples
    --------
    >>> line = Timeline()
    >>> line.book(2, 3)          # busy [2, 5)
    >>> line.earliest(0, 2)      # [0, 2) fits before it
    0
    >>> line.earliest(1, 2)      # [1, 3) would overlap: the gap after it
    5
    >>> line.conflict(4, 1), line.last_end
    (5, 5)
    """

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    @property
    def last_end(self) -> int:
        """The end of the latest busy interval (0 when there is none)."""
        return self.ends[-1] if self.ends else 0

    def conflict(self, start: int, duration: int) -> int | None:
        """The end of a busy interval that overlaps ``[start, start + duration)``, or None."""
        if duration <= 0:
            return None
        i = bisect.bisect_right(self.starts, start) - 1
        # the interval starting last at or before ``start`` may still cover it
        if i >= 0 and self.ends[i] > start:
            return self.ends[i]
        j = i + 1
        if j < len(self.starts) and self.starts[j] < start + duration:
            return self.ends[j]
        return None

    def earliest(self, ready: int, duration: int) -> int:
        """The earliest start ``>= ready`` at which ``duration`` fits in a free gap."""
        return earliest_common((self,), ready, duration)

    def book(self, start: int, duration: int) -> None:
        """Mark ``[start, start + duration)`` busy (nothing for a zero duration)."""
        if duration <= 0:
            return
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, start + duration)


def earliest_common(timelines: Iterable[Timeline], ready: int, duration: int) -> int:
    """The earliest start ``>= ready`` at which ``duration`` fits on every one of ``timelines``.

    Each conflict moves the start to the end of the interval in the way; no
    start skipped that way can fit (it would overlap that interval), so the
    answer is the least start that fits.

    Examples
    --------
    >>> a, b = Timeline(), Timeline()
    >>> a.book(0, 2); b.book(3, 2)     # a busy [0, 2), b busy [3, 5)
    >>> earliest_common([a, b], 0, 1)  # [2, 3) is free on both
    2
    >>> earliest_common([a, b], 0, 2)  # [2, 4) is not free on b
    5
    """
    timelines = tuple(timelines)
    start = ready
    while True:
        moved = False
        for line in timelines:
            end = line.conflict(start, duration)
            if end is not None:
                start, moved = end, True
        if not moved:
            return start


def earliest_finish(
    candidates: Iterable[tuple[Key, int, Sequence[Timeline]]], ready: int
) -> tuple[Key, int, int] | None:
    """Among ``(key, duration, timelines)`` candidates, the one that ends first.

    Each candidate starts at its :func:`earliest_common` start ``>= ready``;
    returns ``(key, start, duration)`` of the one that ends earliest (the
    first of those on a tie), or None when there is no candidate. This is
    how a transfer picks its channel among parallel ones.

    Examples
    --------
    >>> slow, busy = Timeline(), Timeline()
    >>> busy.book(0, 4)
    >>> earliest_finish([("busy", 1, [busy]), ("slow", 3, [slow])], 0)
    ('slow', 0, 3)
    """
    best: tuple[Key, int, int] | None = None
    for key, duration, timelines in candidates:
        start = earliest_common(timelines, ready, duration)
        if best is None or start + duration < best[1] + best[2]:
            best = (key, start, duration)
    return best
