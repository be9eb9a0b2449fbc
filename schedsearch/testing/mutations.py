"""Mutations of a valid schedule, one per violation kind the validator knows.

Each mutation changes a valid plan so that :func:`~schedsearch.validate.validate`
must report a given kind (see :data:`~schedsearch.validate.VIOLATION_KINDS`);
a mutation may break other rules too (moving a task before its predecessor
may also make it overlap another task), but the named kind is always among
the violations. They test checkers, simulators and runtimes that must
*reject* bad plans, and the validator itself.

:func:`mutation_sites` lists, per kind, the places of a schedule where the
kind can be produced (empty: not producible from this plan of this problem,
e.g. ``release`` when the problem has no release after time 0);
:func:`mutate` applies one. The hypothesis strategy
:func:`schedsearch.testing.broken` draws both.

What each kind does (a moved task loses its ``overlap`` tag, so that it can
never join an overlapped group by accident):

=====================  =========================================================
``missing_task``       drop a task (and the transfers of its edges)
``duplicate_task``     repeat a task
``unknown_task``       add a copy of a task with micro-batch ``num_microbatches``
``option_not_allowed`` run a task on devices that are none of its options
                       (another device tuple of the cluster, else a device the
                       cluster lacks)
``wrong_duration``     make a task one unit longer (skipping durations another
                       option on the same devices allows)
``release``            start a released task one unit before its release
``device_overlap``     start a task with another task of one of its devices
``dependency``         start an edge's destination one unit before its source ends
``missing_transfer``   drop a transfer
``wrong_transfer``     shorten a transfer by one unit (lengthen one of length 0)
``unexpected_transfer`` add a zero-length transfer the problem does not call for
``channel_overlap``    start a transfer with another on the same channel (or add
                       an uncalled-for one over it when the channel carries one)
``memory``             on a device with a capacity, start every task that raises
                       its level at time 0 and every other one after the plan
                       (only where that exceeds the capacity)
``fixed_order``        start the second of two consecutive tasks of a fixed
                       order with the first
=====================  =========================================================
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import permutations
from typing import Any

import attrs

from schedsearch.errors import InvalidOptionsError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import VIOLATION_KINDS

__all__ = ["Mutation", "mutation_sites", "mutate", "producible_kinds", "NOWHERE"]

#: Name of a device and channel that no problem of the strategies has.
NOWHERE = "__nowhere__"


@attrs.frozen
class Mutation:
    """A broken copy of a valid schedule: the ``kind`` validate must report.

    Examples
    --------
    >>> from schedsearch.handcrafted import zb_h1
    >>> from schedsearch.placements import zero_bubble
    >>> from schedsearch.testing import mutate
    >>> plan = zb_h1(zero_bubble(2, 1))
    >>> mutation = mutate(zero_bubble(2, 1), plan, "missing_task", plan.tasks[-1])
    >>> mutation.kind, mutation.description, len(mutation.schedule.tasks)
    ('missing_task', "dropped task 'W0' (micro-batch 0)", 5)
    """

    kind: str
    schedule: Schedule
    description: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.description}"


def _label(t: TaskInstance) -> str:
    return f"{t.block!r} (micro-batch {t.microbatch})"


def _moved(t: TaskInstance, start: int, duration: int | None = None) -> TaskInstance:
    d = t.duration if duration is None else duration
    return attrs.evolve(t, start=start, end=start + d, overlap=None)


def _replace(schedule: Schedule, old: TaskInstance, new: TaskInstance | list[TaskInstance] | None,
             transfers: list[Transfer] | None = None) -> Schedule:
    tasks = list(schedule.tasks)
    i = tasks.index(old)
    tasks[i:i + 1] = [] if new is None else new if isinstance(new, list) else [new]
    return Schedule(tasks=tasks, transfers=schedule.transfers if transfers is None else transfers,
                    name=schedule.name)


def _expected_transfers(problem: Problem, schedule: Schedule) -> set[tuple[str, str, int]]:
    placed = schedule.by_key()
    out = set()
    for e in problem.graph.edges:
        for m in range(problem.num_microbatches):
            u, v = placed.get((e.src, m)), placed.get((e.dst, m))
            if u is not None and v is not None and e.size > 0 and not set(u.devices) & set(v.devices):
                out.add((e.src, e.dst, m))
    return out


def _stray_key(problem: Problem, schedule: Schedule) -> tuple[str, str, int]:
    """A transfer key the problem never calls for (a size-0 edge or shared
    devices when there is one, else a block to itself)."""
    expected = _expected_transfers(problem, schedule)
    for e in problem.graph.edges:
        for m in range(problem.num_microbatches):
            if (e.src, e.dst, m) not in expected:
                return (e.src, e.dst, m)
    b = problem.graph.blocks[0].name
    return (b, b, 0)


def _pile_up(problem: Problem, schedule: Schedule, device: str) -> tuple[list[TaskInstance], int]:
    """The tasks of ``device`` that raise its level at their start, and the level if they all start at 0."""
    blocks = problem.graph.by_name()
    up = [t for t in schedule.tasks if device in t.devices
          and (blocks[t.block].memory > 0 or (blocks[t.block].memory == 0 and blocks[t.block].workspace > 0))]
    level = problem.initial_memory_of(device) + sum(blocks[t.block].memory + blocks[t.block].workspace for t in up)
    return up, level


def mutation_sites(problem: Problem, schedule: Schedule) -> dict[str, list[Hashable]]:
    """Per violation kind, where a mutation of ``schedule`` produces it (see the module notes).

    ``schedule`` must be a valid schedule of ``problem``.

    Examples
    --------
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import mutation_sites
    >>> sites = mutation_sites(vshape(2, 2), one_f_one_b(vshape(2, 2)))
    >>> len(sites["missing_task"]), sites["release"], sites["memory"]  # any task; no release; no capacity
    (8, [], [])
    """
    tasks = list(schedule.tasks)
    placed = schedule.by_key()
    sites: dict[str, list[Hashable]] = {k: [] for k in VIOLATION_KINDS}
    sites["missing_task"] = list(tasks)
    sites["duplicate_task"] = list(tasks)
    sites["unknown_task"] = list(tasks)
    sites["option_not_allowed"] = list(tasks)
    sites["wrong_duration"] = list(tasks)
    sites["release"] = [t for t in tasks if problem.release_of(t.block, t.microbatch) >= 1]
    sites["device_overlap"] = [
        (a, b) for a in tasks for b in tasks if a is not b and set(a.devices) & set(b.devices)
    ]
    for e in problem.graph.edges:
        for m in range(problem.num_microbatches):
            u, v = placed.get((e.src, m)), placed.get((e.dst, m))
            if u is None or v is None or (u.group_key is not None and u.group_key == v.group_key):
                continue  # (an edge inside an overlapped group is its internal order)
            sites["dependency"].append((u, v))
    positive = [tr for tr in schedule.transfers if tr.end > tr.start]
    sites["missing_transfer"] = list(schedule.transfers)
    sites["wrong_transfer"] = list(schedule.transfers)
    sites["unexpected_transfer"] = [None]
    pairs = [(a, b) for a in positive for b in positive if a is not b and a.channel == b.channel]
    sites["channel_overlap"] = pairs or [(a, None) for a in positive]
    for d in problem.cluster.devices:
        if d.memory is not None and _pile_up(problem, schedule, d.name)[1] > d.memory:
            sites["memory"].append(d.name)
    for order in problem.fixed_orders:
        for k0, k1 in zip(order, order[1:]):
            if k0 in placed and k1 in placed:
                sites["fixed_order"].append((placed[k0], placed[k1]))
    return sites


def producible_kinds(problem: Problem, schedule: Schedule) -> tuple[str, ...]:
    """The violation kinds :func:`mutate` can produce from ``schedule``, in ``VIOLATION_KINDS`` order.

    Examples
    --------
    Without releases, transfers, capacities or fixed orders, 1F1B's plan can
    be broken eight ways:

    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import producible_kinds
    >>> producible_kinds(vshape(2, 2), one_f_one_b(vshape(2, 2)))
    ('missing_task', 'duplicate_task', 'unknown_task', 'option_not_allowed', 'wrong_duration', 'device_overlap',
     'dependency', 'unexpected_transfer')
    """
    sites = mutation_sites(problem, schedule)
    return tuple(k for k in VIOLATION_KINDS if sites[k])


def mutate(problem: Problem, schedule: Schedule, kind: str, site: Any) -> Mutation:
    """Apply the ``kind`` mutation at ``site`` (one of ``mutation_sites(...)[kind]``).

    Examples
    --------
    >>> from schedsearch import validate
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import mutate, mutation_sites
    >>> problem = vshape(2, 2)
    >>> plan = one_f_one_b(problem)
    >>> mutation = mutate(problem, plan, "dependency", mutation_sites(problem, plan)["dependency"][0])
    >>> print(mutation.description)
    task 'F1' (micro-batch 0) starts at 0, before its predecessor 'F0' ends
    >>> [violation.kind for violation in validate(problem, mutation.schedule)]
    ['dependency']
    """
    n = problem.num_microbatches
    if kind == "missing_task":
        t = site
        keep = [tr for tr in schedule.transfers
                if not (tr.microbatch == t.microbatch and t.block in (tr.src, tr.dst))]
        return Mutation(kind, _replace(schedule, t, None, keep), f"dropped task {_label(t)}")
    if kind == "duplicate_task":
        t = site
        return Mutation(kind, _replace(schedule, t, [t, t]), f"repeated task {_label(t)}")
    if kind == "unknown_task":
        t = site
        extra = attrs.evolve(t, microbatch=n)
        return Mutation(kind, _replace(schedule, t, [t, extra]), f"added {_label(extra)}, beyond {n} micro-batches")
    if kind == "option_not_allowed":
        t = site
        allowed = {o.devices for o in problem.graph.block(t.block).options}
        names = problem.cluster.device_names
        other = [(d,) for d in names if (d,) not in allowed]
        other += [p for p in permutations(names, 2) if p not in allowed]
        devices = other[0] if other else (NOWHERE,)
        return Mutation(kind, _replace(schedule, t, attrs.evolve(t, devices=devices)),
                        f"moved task {_label(t)} from {t.devices} to {devices}")
    if kind == "wrong_duration":
        t = site
        block = problem.graph.block(t.block)
        durations = problem.durations(t.block, t.microbatch)
        allowed = {durations[i] for i, o in enumerate(block.options) if o.devices == t.devices}
        d = t.duration + 1
        while t.overlap is None and d in allowed:
            d += 1
        return Mutation(kind, _replace(schedule, t, attrs.evolve(t, end=t.start + d)),
                        f"task {_label(t)} lasts {d} instead of {t.duration}")
    if kind == "release":
        t = site
        release = problem.release_of(t.block, t.microbatch)
        return Mutation(kind, _replace(schedule, t, _moved(t, release - 1)),
                        f"task {_label(t)} starts at {release - 1}, before its release {release}")
    if kind == "device_overlap":
        a, b = site
        return Mutation(kind, _replace(schedule, b, _moved(b, a.start)),
                        f"task {_label(b)} starts with {_label(a)} at {a.start}")
    if kind == "dependency":
        u, v = site
        return Mutation(kind, _replace(schedule, v, _moved(v, u.end - 1)),
                        f"task {_label(v)} starts at {u.end - 1}, before its predecessor {u.block!r} ends")
    if kind == "missing_transfer":
        tr = site
        keep = [x for x in schedule.transfers if x is not tr]
        return Mutation(kind, Schedule(tasks=schedule.tasks, transfers=keep, name=schedule.name),
                        f"dropped transfer {tr.src!r} -> {tr.dst!r} (micro-batch {tr.microbatch})")
    if kind == "wrong_transfer":
        tr = site
        new = attrs.evolve(tr, end=tr.end - 1 if tr.end > tr.start else tr.end + 1)
        keep = [new if x is tr else x for x in schedule.transfers]
        return Mutation(kind, Schedule(tasks=schedule.tasks, transfers=keep, name=schedule.name),
                        f"transfer {tr.src!r} -> {tr.dst!r} (micro-batch {tr.microbatch}) lasts "
                        f"{new.end - new.start} instead of {tr.end - tr.start}")
    if kind == "unexpected_transfer":
        src, dst, m = _stray_key(problem, schedule)
        channel = problem.cluster.channels[0].name if problem.cluster.channels else NOWHERE
        extra = Transfer(src=src, dst=dst, microbatch=m, channel=channel, start=0, end=0)
        return Mutation(kind, Schedule(tasks=schedule.tasks, transfers=[*schedule.transfers, extra],
                                       name=schedule.name),
                        f"added transfer {src!r} -> {dst!r} (micro-batch {m}), which the problem does not call for")
    if kind == "channel_overlap":
        a, b = site
        if b is not None:
            new = attrs.evolve(b, start=a.start, end=a.start + (b.end - b.start))
            keep = [new if x is b else x for x in schedule.transfers]
            what = f"transfer {b.src!r} -> {b.dst!r} starts with {a.src!r} -> {a.dst!r} on {a.channel!r}"
        else:
            src, dst, m = _stray_key(problem, schedule)
            keep = [*schedule.transfers, Transfer(src=src, dst=dst, microbatch=m, channel=a.channel,
                                                  start=a.start, end=a.end)]
            what = f"added a transfer over {a.src!r} -> {a.dst!r} on {a.channel!r}"
        return Mutation(kind, Schedule(tasks=schedule.tasks, transfers=keep, name=schedule.name), what)
    if kind == "memory":
        device = site
        up, level = _pile_up(problem, schedule, device)
        after = schedule.makespan
        tasks = []
        for t in schedule.tasks:
            if device not in t.devices:
                tasks.append(t)
            elif t in up:
                tasks.append(_moved(t, 0))
            else:
                tasks.append(_moved(t, after))
                after += t.duration
        return Mutation(kind, Schedule(tasks=tasks, transfers=schedule.transfers, name=schedule.name),
                        f"device {device!r}: every allocation starts at 0 (level {level} > capacity "
                        f"{problem.capacity(device)})")
    if kind == "fixed_order":
        t0, t1 = site
        return Mutation(kind, _replace(schedule, t1, _moved(t1, t0.start)),
                        f"task {_label(t1)} starts with {_label(t0)}, its predecessor in a fixed order")
    raise InvalidOptionsError(f"mutate: 'kind' must be one of {VIOLATION_KINDS}, got {kind!r}")
