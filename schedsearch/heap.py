"""Full garbage collections that do not rescan what a call keeps: the survivors of each are frozen while it runs.

A search builds hundreds of thousands of objects it keeps to its end (task
instances, constraints, schedules). CPython's full collection walks every
tracked object, so each one costs more the longer the call has run: a
``solve`` of thousands of micro-batches makes a dozen or more in 30 s, the
last ones tenths of a second of CPU each (seconds of wall time on a loaded
machine), long enough for a call to pass its stop between two checkpoints.

Inside :func:`survivors_frozen` every object alive after a full collection
is moved to the permanent generation (:func:`gc.freeze`), so the next full
collection only walks what was made since; on leaving, they are unfrozen
(:func:`gc.unfreeze`) and collected as usual from then on. Nothing is lost:
a frozen object that becomes garbage during the call is collected after it.
The process's own frozen objects are left alone: when anything is frozen on
entry (an application's :func:`gc.freeze` before forking workers, say), the
context does nothing. Contexts nest and may run in several threads at once;
the outermost one freezes and unfreezes. A process forked inside one starts
without it (what it inherited frozen is unfrozen), so a long-lived forked
worker collects as usual.

Examples
--------
>>> import gc
>>> from schedsearch.heap import survivors_frozen
>>> with survivors_frozen():
...     kept = [[i] for i in range(1000)]
...     _ = gc.collect()
...     frozen = gc.get_freeze_count() >= 1000
>>> frozen, gc.get_freeze_count()
(True, 0)
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

__all__ = ["survivors_frozen"]

_LOCK = threading.Lock()
_depth = 0
_engaged = False


def _freeze_survivors(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextlib.contextmanager
def survivors_frozen() -> Iterator[None]:
    """Inside, the survivors of each full collection are frozen (see the module); on leaving, unfrozen."""
    global _depth, _engaged
    with _LOCK:
        _depth += 1
        if _depth == 1 and gc.get_freeze_count() == 0:
            gc.callbacks.append(_freeze_survivors)
            _engaged = True
    try:
        yield
    finally:
        with _LOCK:
            _depth = max(0, _depth - 1)  # a forked child leaves contexts its parent entered: already reset
            if _depth == 0 and _engaged:
                _disengage()


def _disengage() -> None:
    global _engaged
    _engaged = False
    with contextlib.suppress(ValueError):
        gc.callbacks.remove(_freeze_survivors)
    gc.unfreeze()


def _forked_child() -> None:
    """In a child forked inside a context: no context, nothing frozen by one, a lock no thread holds."""
    global _LOCK, _depth
    _LOCK = threading.Lock()
    if _engaged:
        _disengage()
    _depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)
