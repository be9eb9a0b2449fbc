"""The as-soon-as-possible simulator against a reference written here from its definition.

The reference shares no code with :mod:`schedsearch.handcrafted.simulate`:
it iterates ``start = max(release, end of the previous action on the
device, end of every predecessor)`` to its fixed point, and calls orders
deadlocked exactly when the device orders and the dependencies form a cycle.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.errors import InvalidScheduleError
from schedsearch.handcrafted import DeadlockError, one_f_one_b, schedule_from_orders
from schedsearch.handcrafted.simulate import validation_deferred
from schedsearch.placements import vshape, vshape_chunks, zero_bubble
from schedsearch.problem import Release
from schedsearch.schedule import Schedule, TaskInstance, Transfer, metrics, schedule_of_rows, transfer_unchecked
from schedsearch.validate import validate


def _problem(kind: int, p: int, m: int, durations: list[int], releases: list[tuple[int, int]],
             overrides: list[tuple[int, int]] = ()):
    d = durations
    if kind == 0:
        problem = vshape(p, m, forward=d[:p], backward=d[p:2 * p])
    elif kind == 1:
        problem = zero_bubble(p, m, forward=d[:p], input_grad=d[p:2 * p], weight_grad=d[2 * p:3 * p])
    else:
        problem = vshape_chunks(p, m, split_backward=False, forward=d[:2 * p], backward=d[2 * p:4 * p])
    blocks = [b.name for b in problem.graph.blocks]
    rel = {(blocks[i % len(blocks)], mb % m): t for i, (mb, t) in enumerate(releases)}
    if rel:
        problem = problem.with_(releases=[Release(block=b, microbatch=mb, time=t) for (b, mb), t in rel.items()])
    longer = {(blocks[i % len(blocks)], mb % m): (t,) for i, (mb, t) in enumerate(overrides)}
    if longer:  # some task instances last another time than their block's
        problem = problem.with_(duration_overrides=longer)
    return problem


def _device_of(problem, block: str) -> str:
    return problem.graph.block(block).options[0].devices[0]


def _random_orders(problem, rng: random.Random) -> dict[str, list[tuple[str, int]]]:
    """Device orders that can run: a random linear extension of the dependencies, split by device."""
    preds = {b.name: [e.src for e in problem.graph.edges if e.dst == b.name] for b in problem.graph.blocks}
    keys = [(b.name, mb) for mb in range(problem.num_microbatches) for b in problem.graph.blocks]
    done: set[tuple[str, int]] = set()
    orders: dict[str, list[tuple[str, int]]] = {}
    while len(done) < len(keys):
        ready = [k for k in keys if k not in done and all((s, k[1]) in done for s in preds[k[0]])]
        key = rng.choice(ready)
        done.add(key)
        orders.setdefault(_device_of(problem, key[0]), []).append(key)
    return orders


def _reference_starts(problem, orders) -> dict[tuple[str, int], int] | None:
    """The least starts with every order and dependency kept (a fixed point); None when they form a cycle."""
    preds = {b.name: [e.src for e in problem.graph.edges if e.dst == b.name] for b in problem.graph.blocks}
    before: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for seq in orders.values():
        for a, b in zip(seq, seq[1:]):
            before.setdefault(b, []).append(a)
    keys = [k for seq in orders.values() for k in seq]
    waits = {k: before.get(k, []) + [(s, k[1]) for s in preds[k[0]]] for k in keys}
    # a cycle: no order of the keys puts every wait first
    left, placed = set(keys), set()
    while left:
        free = [k for k in left if all(w in placed for w in waits[k])]
        if not free:
            return None
        placed.update(free)
        left.difference_update(free)
    length = {k: problem.durations(*k)[0] for k in keys}
    start = {k: 0 for k in keys}
    changed = True
    while changed:
        changed = False
        for k in keys:
            want = max([problem.release_of(*k)] + [start[w] + length[w] for w in waits[k]])
            if want != start[k]:
                start[k], changed = want, True
    return start


@settings(max_examples=150, deadline=None)
@given(kind=st.integers(0, 2), p=st.integers(1, 3), m=st.integers(1, 4),
       durations=st.lists(st.integers(1, 4), min_size=12, max_size=12),
       releases=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=3),
       overrides=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), max_size=3),
       seed=st.integers(0, 10**6))
def test_runnable_orders_give_the_reference_starts(kind, p, m, durations, releases, overrides, seed):
    problem = _problem(kind, p, m, durations, releases, overrides)
    orders = _random_orders(problem, random.Random(seed))
    schedule = schedule_from_orders(problem, orders, name="random")
    want = _reference_starts(problem, orders)
    assert want is not None
    assert {t.key: t.start for t in schedule.tasks} == want
    # the same object as the checked constructors build, in the same order
    checked = Schedule(tasks=[TaskInstance(block=b, microbatch=mb, devices=(_device_of(problem, b),), start=s,
                                           end=s + problem.durations(b, mb)[0]) for (b, mb), s in want.items()],
                       name="random")
    assert schedule == checked and schedule.to_json() == checked.to_json()
    assert validate(problem, schedule) == ()
    # the span bubble: per device its last end - first start - busy time, the worst device
    spans = []
    for d in problem.cluster.device_names:
        mine = [t for t in schedule.tasks if d in t.devices]
        if mine:
            spans.append(max(t.end for t in mine) - min(t.start for t in mine) - sum(t.end - t.start for t in mine))
    assert metrics(problem, schedule).bubble_span == max(spans, default=0)


@settings(max_examples=150, deadline=None)
@given(kind=st.integers(0, 2), p=st.integers(1, 3), m=st.integers(1, 3),
       durations=st.lists(st.integers(1, 3), min_size=12, max_size=12), seed=st.integers(0, 10**6))
def test_shuffled_orders_deadlock_exactly_on_a_cycle(kind, p, m, durations, seed):
    problem = _problem(kind, p, m, durations, [])
    rng = random.Random(seed)
    orders = _random_orders(problem, rng)
    for seq in orders.values():
        if rng.random() < 0.5:
            rng.shuffle(seq)
    want = _reference_starts(problem, orders)
    if want is None:
        with pytest.raises(DeadlockError, match="orders cannot run"):
            schedule_from_orders(problem, orders)
    else:
        schedule = schedule_from_orders(problem, orders)
        assert {t.key: t.start for t in schedule.tasks} == want


def row_task(*, block, microbatch, devices, start, end, overlap):
    """The task :func:`schedule_of_rows` makes of one row."""
    return schedule_of_rows([(start, devices, block, microbatch, end, overlap)]).tasks[0]


@settings(max_examples=60, deadline=None)
@given(block=st.sampled_from(["F0", "", "B1"]), microbatch=st.integers(-1, 3), start=st.integers(-2, 4),
       length=st.integers(-1, 3), overlap=st.sampled_from([None, "B", ""]),
       devices=st.sampled_from([("d0",), ("d0", "d1"), (), ("",)]))
def test_unchecked_constructors_build_what_the_checked_ones_build_or_raise_alike(block, microbatch, start, length,
                                                                                  overlap, devices):
    def outcome(make, **kw):
        try:
            return make(**kw)
        except InvalidScheduleError as exc:
            return str(exc)

    # the library passes only checked names: the unchecked path looks at the numbers
    if block and all(devices) and (overlap is None or overlap):
        task = dict(block=block, microbatch=microbatch, devices=devices, start=start, end=start + length,
                    overlap=overlap)
        assert outcome(row_task, **task) == outcome(TaskInstance, **task)
    transfer = dict(src="F0", dst="F1", microbatch=microbatch, channel="link", start=start, end=start + length)
    assert outcome(transfer_unchecked, **transfer) == outcome(Transfer, **transfer)


row_values = st.tuples(st.integers(0, 3), st.sampled_from([("d0",), ("d1",), ("d0", "d1"), ["d1"]]),
                       st.sampled_from(["F0", "F1", "B0"]), st.integers(0, 2), st.integers(1, 3),
                       st.sampled_from([None, "B"]))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(row_values, max_size=12))
def test_a_schedule_of_rows_is_the_schedule_of_its_tasks(rows):
    # rows may repeat a sort key (the schedule's order then keeps their places, as sorted() does); devices
    # given as a list go through the constructor, which makes them a tuple
    rows = [(start, devices, block, m, start + length, tag) for start, devices, block, m, length, tag in rows]
    got = schedule_of_rows(rows, name="rows")
    want = Schedule(tasks=[TaskInstance(block=b, microbatch=m, devices=devs, start=s, end=e, overlap=tag)
                           for s, devs, b, m, e, tag in rows], name="rows")
    assert got == want
    assert [(t.block, t.microbatch, t.overlap) for t in got.tasks] == [
        (t.block, t.microbatch, t.overlap) for t in want.tasks]


def test_a_row_the_constructor_refuses_raises_its_error():
    with pytest.raises(InvalidScheduleError, match="'end' must be > 'start'"):
        schedule_of_rows([(2, ("d0",), "F0", 0, 2, None)])


def test_deferred_validation_leaves_the_check_to_the_caller():
    problem = vshape(2, 4, memory=1)  # 1F1B holds 2 activations on d0
    with pytest.raises(InvalidScheduleError, match="memory"):
        one_f_one_b(problem)
    with validation_deferred():
        schedule = one_f_one_b(problem)
    assert {v.kind for v in validate(problem, schedule)} == {"memory"}
    with pytest.raises(InvalidScheduleError, match="memory"):  # only inside the block
        one_f_one_b(problem)
