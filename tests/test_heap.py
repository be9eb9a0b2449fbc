"""The collector's freezing during a call: survivors of full collections frozen inside, every one unfrozen after,
nothing lost, the process's own frozen objects left alone."""

from __future__ import annotations

import gc
import os
import threading
import weakref

import pytest

from schedsearch.heap import _freeze_survivors, survivors_frozen


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(b)


@pytest.fixture(autouse=True)
def clean_collector():
    gc.unfreeze()
    yield
    gc.unfreeze()
    assert _freeze_survivors not in gc.callbacks


def test_survivors_are_frozen_inside_and_unfrozen_after() -> None:
    with survivors_frozen():
        kept = [Node() for _ in range(500)]
        gc.collect()
        inside = gc.get_freeze_count()
        assert _freeze_survivors in gc.callbacks
    assert inside >= 500
    assert gc.get_freeze_count() == 0
    assert _freeze_survivors not in gc.callbacks
    assert len(kept) == 500


def test_a_cycle_frozen_then_dropped_is_collected_after_the_call() -> None:
    with survivors_frozen():
        a, gone = cycle()
        gc.collect()  # the cycle survives (a holds it) and is frozen
        del a
        gc.collect()  # frozen: not collected inside
        assert gone() is not None
    gc.collect()
    assert gone() is None


def test_an_error_inside_still_unfreezes() -> None:
    with pytest.raises(RuntimeError), survivors_frozen():
        gc.collect()
        raise RuntimeError("inside")
    assert gc.get_freeze_count() == 0
    assert _freeze_survivors not in gc.callbacks


def test_nested_contexts_unfreeze_at_the_outermost_end() -> None:
    with survivors_frozen():
        with survivors_frozen():
            gc.collect()
        assert gc.get_freeze_count() > 0 and _freeze_survivors in gc.callbacks
    assert gc.get_freeze_count() == 0


def collected(objects: list[Node]) -> int:
    """How many of ``objects`` the collector's generations list (a frozen object is in none of them)."""
    listed = {id(o) for o in gc.get_objects()}
    return sum(id(o) in listed for o in objects)


def test_objects_the_process_froze_stay_frozen() -> None:
    mine = [Node() for _ in range(100)]
    assert collected(mine) == 100
    gc.freeze()
    before = gc.get_freeze_count()
    assert collected(mine) == 0
    with survivors_frozen():
        assert _freeze_survivors not in gc.callbacks  # engaged only when nothing was frozen
        gc.collect()
    # Still frozen, and nothing added: the count may only drop, by frozen objects that other threads or the
    # interpreter freed by reference counting meanwhile (the freeze took every transient object alive then).
    assert collected(mine) == 0
    assert 0 < gc.get_freeze_count() <= before


def test_threads_share_one_engagement() -> None:
    inside = threading.Barrier(3)
    out = threading.Barrier(3)

    def call() -> None:
        with survivors_frozen():
            inside.wait()
            out.wait()

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    with survivors_frozen():
        inside.wait()
        assert gc.callbacks.count(_freeze_survivors) == 1
        out.wait()
    for t in threads:
        t.join()
    assert gc.get_freeze_count() == 0 and _freeze_survivors not in gc.callbacks


def test_the_entries_leave_the_collector_as_they_found_it() -> None:
    from schedsearch.placements import vshape_chunks
    from schedsearch.search.portfolio import solve

    callbacks = list(gc.callbacks)
    result = solve(vshape_chunks(4, 8), objective="makespan", time_limit_s=5, deterministic=True, workers=1)
    assert result.schedule is not None
    assert gc.get_freeze_count() == 0 and gc.callbacks == callbacks


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_child_forked_inside_starts_without_the_context() -> None:
    with survivors_frozen():
        kept = [Node() for _ in range(200)]
        gc.collect()
        assert gc.get_freeze_count() > 0
        pid = os.fork()
        if pid == 0:  # the child: nothing frozen, no callback; its own contexts work and end
            ok = gc.get_freeze_count() == 0 and _freeze_survivors not in gc.callbacks
            with survivors_frozen():
                gc.collect()
                ok = ok and gc.get_freeze_count() > 0
            ok = ok and gc.get_freeze_count() == 0 and _freeze_survivors not in gc.callbacks
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert gc.get_freeze_count() > 0  # the parent's context goes on
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.get_freeze_count() == 0 and kept
