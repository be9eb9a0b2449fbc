"""The hard stop of a call: one deadline its phases check, counted by the work they do.

A call with a wall-clock time limit (:class:`~schedsearch.options.Deadline`)
plans its phases to end within it; a phase whose work turns out larger than
planned (a construction at 400,000 task instances on a loaded machine, a
bound, a validation) would still run to its end. :func:`stopping` makes the
call's deadline the **hard stop** of everything run inside it: every phase
calls :func:`checkpoint` as it works (once per task instance, per list-
scheduling step, per constraint built, ...), and once the work counted since
the last reading of the clock reaches :data:`STRIDE` units the clock is read;
past the stop, :class:`~schedsearch.errors.DeadlineExceeded` is raised and
the phase ends where it is. The call that opened the stop catches it and
returns what it has.

The stop is the limit plus a grace (:func:`grace_s`), so that a phase that
plans to end at the limit ends there by itself; the grace and what the call
does after the stop (building its result) stay within ``0.5 s + 5 %`` of the
limit. Stops nest: inside an enclosing one, the earlier of the two holds.
Deterministic limits set no stop (they must not depend on the clock), nor
does a call without a limit; :func:`checkpoint` then costs one look-up.

Examples
--------
>>> from schedsearch.deadline import STRIDE, checkpoint, stopping
>>> from schedsearch.errors import DeadlineExceeded
>>> from schedsearch.options import Deadline
>>> now = [0.0]
>>> deadline = Deadline(1.0, clock=lambda: now[0])
>>> done = 0
>>> try:
...     with stopping(deadline, grace=0.0):
...         for step in range(10_000):
...             now[0] += 0.001  # each unit of work takes 1 ms on this clock
...             checkpoint()
...             done += 1
... except DeadlineExceeded:
...     pass
>>> 1000 <= done <= 1000 + STRIDE
True
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from schedsearch.errors import DeadlineExceeded

T = TypeVar("T")

__all__ = ["STRIDE", "Stop", "checkpoint", "counted", "current_stop", "grace_s", "set_aside", "stopping",
           "unstopped"]

#: Units of work (task instances, steps) between two readings of the clock: at 10-50 us per unit, a stop is
#: noticed within a few milliseconds of passing.
STRIDE = 64


def grace_s(limit_s: float) -> float:
    """The time past a limit of ``limit_s`` seconds at which the hard stop falls: ``0.1 s + 1 %``, a fifth of
    the ``0.5 s + 5 %`` a call may end past its limit (the rest is for what it does after the stop: freeing
    what the phase stopped had built, building the result, on a loaded machine).

    >>> grace_s(10.0)
    0.2
    """
    return 0.1 + 0.01 * limit_s


class Stop:
    """A hard stop at clock time ``at``: :meth:`tick` counts work and reads ``clock`` every :data:`STRIDE`
    units of it (and at the first tick), raising :class:`~schedsearch.errors.DeadlineExceeded` past ``at``;
    ``outer`` is an enclosing stop on another clock, ticked with it (one on the same clock is folded into
    ``at``)."""

    __slots__ = ("at", "clock", "outer", "work", "_next")

    def __init__(self, at: float, clock: Callable[[], float], outer: Stop | None = None) -> None:
        self.at = at
        self.clock = clock
        self.outer = outer
        self.work = 0
        self._next = 0

    def tick(self, work: int = 1) -> None:
        self.work += work
        if self.work >= self._next:
            self._next = self.work + STRIDE
            if self.clock() >= self.at:
                raise DeadlineExceeded(f"the time limit passed ({self.clock() - self.at:.2f} s past the stop)")
        if self.outer is not None:
            self.outer.tick(work)

    def left(self) -> float:
        """Seconds to the stop (<= 0 once passed)."""
        return self.at - self.clock()

    def passed(self) -> bool:
        return self.clock() >= self.at


_STOP: ContextVar[Stop | None] = ContextVar("schedsearch_stop", default=None)


def current_stop() -> Stop | None:
    """The hard stop the code running now is under (None: none)."""
    return _STOP.get()


def checkpoint(work: int = 1) -> None:
    """Count ``work`` units done by the phase running; past the hard stop it raises
    :class:`~schedsearch.errors.DeadlineExceeded` (nothing happens outside :func:`stopping`)."""
    stop = _STOP.get()
    if stop is not None:
        stop.tick(work)


#: Seconds a stopped phase's data wait before they are freed (:func:`set_aside`).
SET_ASIDE_S = 1.0


def set_aside(error: BaseException) -> None:
    """Free what ``error``'s traceback holds (the data of the phase it stopped: a half-built schedule of
    400,000 task instances takes a second to free on a loaded machine) on a background thread, a second
    later, so that the call that caught it returns first (freeing holds the interpreter's lock: done at
    once, it would hold up the call's end). The caller must hold no other reference to ``error``."""
    box = [error]
    del error

    def free() -> None:
        time.sleep(SET_ASIDE_S)  # the caller's handler ends (and drops its own reference), its call returns
        box.clear()

    threading.Thread(target=free, name="schedsearch-set-aside", daemon=True).start()


def counted(items: Iterable[T], work: int = 1) -> Iterator[T]:
    """``items`` one by one, each counted as ``work`` units of work (:func:`checkpoint` before the first and
    then once per :data:`STRIDE` units): the checkpoint of a loop written as one expression.

    >>> sum(counted(range(1000))), sum(counted(range(10), work=1000))
    (499500, 45)
    """
    every = max(1, STRIDE // max(1, work))
    for i, item in enumerate(items):
        if not i % every:
            checkpoint(every * work)
        yield item


@contextlib.contextmanager
def unstopped() -> Iterator[None]:
    """Inside: no hard stop, not even an enclosing one's (what a call does after its stop to build its
    result from what it found: bounded work that must end)."""
    token = _STOP.set(None)
    try:
        yield
    finally:
        _STOP.reset(token)


@contextlib.contextmanager
def stopping(deadline: Any, grace: float | None = None) -> Iterator[Stop | None]:
    """Inside: :func:`checkpoint` raises once ``deadline``'s wall-clock limit plus ``grace`` seconds (default
    :func:`grace_s` of the limit) has passed, or an enclosing stop has.

    ``deadline`` is a :class:`~schedsearch.options.Deadline` (its start, limit
    and clock), or None. A deterministic deadline, or one without a limit,
    adds no stop (an enclosing one still holds).
    """
    outer = _STOP.get()
    limit = None if deadline is None or deadline.deterministic else deadline.limit_s
    if limit is None:
        yield outer
        return
    at = deadline.t0 + limit + (grace_s(limit) if grace is None else grace)
    if outer is not None and outer.clock is deadline.clock:
        at, outer = min(at, outer.at), outer.outer
    stop = Stop(at, deadline.clock, outer)

    token = _STOP.set(stop)
    try:
        yield stop
    finally:
        _STOP.reset(token)
