"""Turn per-device orders of task instances into a timed schedule (as soon as possible).

A handcrafted pipeline schedule is a *list of actions per device* (the way
GPipe, 1F1B, ZB-H1, DualPipe, ... are published and the way PyTorch's
pipelining CSV stores them). :func:`schedule_from_orders` gives each action
the earliest start that respects

* its device order (an action starts after the previous one on each of its
  devices ends),
* the problem's dependency edges (``start(v, m) >= end(u, m)``, plus the
  transfer when the edge has a size and the two ends run on disjoint
  devices; transfers take the first gap on the channel serving the lead
  devices that frees first),
* releases.

Durations are the problem's (per-micro-batch overrides applied); an
overlapped :class:`Group` lasts the duration of the problem's matching
:class:`~schedsearch.problem.Overlap`, and dependencies between its own
members are its internal order. A task that needs several devices appears
in the order of each of them and starts when it heads all of them.

Memory is not simulated: the result is checked by the independent
validator (:func:`~schedsearch.validate.assert_valid`), which reports a
capacity the orders exceed. An order that can never run (a cycle through
device orders and dependencies) raises :class:`DeadlockError` naming the
stuck actions.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Union

import attrs

from schedsearch.errors import InvalidScheduleError, ValidationFailedError
from schedsearch.problem import Problem, TaskKey
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import assert_valid

__all__ = ["Group", "Entry", "DeadlockError", "schedule_from_orders", "entry_label"]


def _keys(value: Iterable[Sequence]) -> tuple[TaskKey, ...]:
    return tuple((str(b), int(m)) for b, m in value)


@attrs.frozen(kw_only=True)
class Group:
    """Task instances run as one overlapped group (see :class:`~schedsearch.problem.Overlap`).

    ``members`` are ``(block, micro-batch)`` keys; ``tag`` names the group
    (``"F&B"`` for DualPipe's overlapped forward and backward, ``"B"`` for a
    fused input and weight gradient).

    Examples
    --------
    A fused input and weight gradient of stage 1, micro-batch 0, as one
    entry of a device order:

    >>> from schedsearch.handcrafted import Group
    >>> Group(members=[("I1", 0), ("W1", 0)], tag="B")
    Group(members=(('I1', 0), ('W1', 0)), tag='B')
    """

    members: tuple[TaskKey, ...] = attrs.field(converter=_keys)
    tag: str

    def __attrs_post_init__(self) -> None:
        if len(self.members) < 2:
            raise InvalidScheduleError(f"group {self.tag!r}: 'members' must hold at least two tasks, got {self.members}")
        if not isinstance(self.tag, str) or not self.tag:
            raise InvalidScheduleError(f"group of {self.members}: 'tag' must be a non-empty string, got {self.tag!r}")


#: One action of a device order: a task key or an overlapped group.
Entry = Union[TaskKey, Group]


class DeadlockError(InvalidScheduleError):
    """Device orders that can never all run (each head waits for another).

    The message names the action each device is stuck at.

    Examples
    --------
    A backward ordered before its own forward on ``d0``:

    >>> from schedsearch.handcrafted import DeadlockError, schedule_from_orders
    >>> from schedsearch.placements import vshape
    >>> orders = {"d0": [("B0", 0), ("F0", 0)], "d1": [("F1", 0), ("B1", 0)]}
    >>> try:
    ...     schedule_from_orders(vshape(2, 1), orders)
    ... except DeadlockError as error:
    ...     print(error)
    orders cannot run: every device waits (for a dependency or for another device); next actions: d0: B0#0; d1: F1#0
    """


def entry_label(entry: Entry) -> str:
    if isinstance(entry, Group):
        return f"{entry.tag}[" + ", ".join(f"{b}#{m}" for b, m in entry.members) + "]"
    return f"{entry[0]}#{entry[1]}"


def _members(entry: Entry) -> tuple[TaskKey, ...]:
    return entry.members if isinstance(entry, Group) else ((str(entry[0]), int(entry[1])),)


class _Channels:
    """Busy intervals per channel; a transfer takes the first gap that fits."""

    def __init__(self) -> None:
        self.busy: dict[str, list[tuple[int, int]]] = {}

    def earliest(self, name: str, ready: int, length: int) -> int:
        intervals = self.busy.get(name, [])
        t = ready
        i = bisect.bisect_left(intervals, (ready, ready))
        # an interval starting before `ready` may still cover it
        if i > 0 and intervals[i - 1][1] > t:
            t = intervals[i - 1][1]
        while i < len(intervals):
            s, e = intervals[i]
            if length == 0 or t + length <= s:
                break
            t = max(t, e)
            i += 1
        return t

    def book(self, name: str, start: int, length: int) -> None:
        if length > 0:
            bisect.insort(self.busy.setdefault(name, []), (start, start + length))


def schedule_from_orders(
    problem: Problem,
    orders: Mapping[str, Sequence[Entry]],
    *,
    name: str = "",
    validate: bool = True,
) -> Schedule:
    """The as-soon-as-possible schedule that runs each device's actions in ``orders``.

    Parameters
    ----------
    problem:
        The problem; every task instance must appear (on each of its
        devices, in one of its block's options).
    orders:
        Device name -> its actions in order: ``(block, micro-batch)`` keys
        or :class:`Group` objects.
    name:
        Name of the returned schedule.
    validate:
        Run the independent validator on the result (default) and raise
        :class:`~schedsearch.errors.InvalidScheduleError` (with the list in
        its ``violations``) when it fails, for example when the orders
        exceed a memory capacity.

    Raises
    ------
    InvalidScheduleError
        An action names an unknown task or device, appears twice, a group is
        not declared by the problem, or a task is missing.
    DeadlockError
        The orders cannot all run.

    Examples
    --------
    >>> from schedsearch.handcrafted import schedule_from_orders
    >>> from schedsearch.placements import vshape
    >>> orders = {
    ...     "d0": [("F0", 0), ("F0", 1), ("B0", 0), ("B0", 1)],
    ...     "d1": [("F1", 0), ("B1", 0), ("F1", 1), ("B1", 1)],
    ... }
    >>> schedule = schedule_from_orders(vshape(2, 2), orders, name="1F1B")
    >>> [(t.block, t.microbatch, t.start) for t in schedule.tasks if t.devices == ("d1",)]
    [('F1', 0, 1), ('B1', 0, 2), ('F1', 1, 4), ('B1', 1, 5)]
    """
    blocks = problem.graph.by_name()
    devices = set(problem.cluster.device_names)
    n = problem.num_microbatches
    preds = problem.graph.predecessors()

    # -- resolve every action: its members, devices (option), duration
    info: dict[int, tuple[Entry, tuple[TaskKey, ...], tuple[str, ...], int]] = {}
    entry_id: dict[object, int] = {}
    seen_task: dict[TaskKey, str] = {}
    seqs: dict[str, list[int]] = {}
    for dev, seq in orders.items():
        if dev not in devices:
            raise InvalidScheduleError(f"orders: device {dev!r} is not in the problem's cluster {sorted(devices)}")
        ids: list[int] = []
        for entry in seq:
            members = _members(entry)
            ident = entry if isinstance(entry, Group) else members[0]
            if ident in entry_id:
                eid = entry_id[ident]
            else:
                eid = len(info)
                entry_id[ident] = eid
                info[eid] = _resolve(problem, blocks, entry, members, n)
                for key in members:
                    if key in seen_task:
                        raise InvalidScheduleError(f"orders: task {key[0]!r} (micro-batch {key[1]}) appears twice")
                    seen_task[key] = dev
            if dev not in info[eid][2]:
                raise InvalidScheduleError(
                    f"orders: {entry_label(entry)} is listed on device {dev!r} but runs on {list(info[eid][2])}"
                )
            if eid in ids:
                raise InvalidScheduleError(f"orders: {entry_label(entry)} appears twice on device {dev!r}")
            ids.append(eid)
        seqs[dev] = ids
    for eid, (entry, _, devs, _) in info.items():
        for d in devs:
            if eid not in seqs.get(d, ()):
                raise InvalidScheduleError(
                    f"orders: {entry_label(entry)} runs on {list(devs)} but is missing from the order of device {d!r}"
                )
    missing = [(b.name, m) for m in range(n) for b in problem.graph.blocks if (b.name, m) not in seen_task]
    if missing:
        shown = ", ".join(f"{b!r} (micro-batch {m})" for b, m in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InvalidScheduleError(f"orders: {len(missing)} task instance(s) are not in any order: {shown}{more}")

    group_of: dict[TaskKey, int] = {}
    for eid, (entry, members, _, _) in info.items():
        if isinstance(entry, Group):
            for key in members:
                group_of[key] = eid

    # -- as soon as possible, device heads in turn
    head = {d: 0 for d in seqs}
    free = {d: 0 for d in problem.cluster.device_names}
    start_of: dict[int, int] = {}
    end_of: dict[TaskKey, int] = {}
    placed_devices: dict[TaskKey, tuple[str, ...]] = {}
    channels = _Channels()
    transfers: list[Transfer] = []
    remaining = sum(len(v) for v in seqs.values())
    while remaining:
        progress = False
        for dev in problem.cluster.device_names:
            seq = seqs.get(dev, [])
            while head[dev] < len(seq):
                eid = seq[head[dev]]
                if eid in start_of:  # a multi-device action already placed from another device
                    head[dev] += 1
                    remaining -= 1
                    progress = True
                    continue
                entry, members, devs, duration = info[eid]
                if any(seqs[d][head[d]] != eid for d in devs if head[d] < len(seqs[d])):
                    break
                ready = max(free[d] for d in devs)
                pending = []
                blocked = False
                for key in members:
                    ready = max(ready, problem.release_of(*key))
                    for e in preds[key[0]]:
                        src = (e.src, key[1])
                        if group_of.get(src) == eid and group_of.get(key) == eid:
                            continue  # internal order of the group
                        if src not in end_of:
                            blocked = True
                            break
                        if e.size > 0 and not (set(placed_devices[src]) & set(devs)):
                            pending.append((e, src, key))
                        else:
                            ready = max(ready, end_of[src])
                    if blocked:
                        break
                if blocked:
                    break
                for e, src, key in pending:
                    lead_src = _lead(blocks[src[0]], placed_devices[src])
                    lead_dst = _lead(blocks[key[0]], devs)
                    options = problem.cluster.channels_between(lead_src, lead_dst)
                    if not options:
                        raise InvalidScheduleError(
                            f"edge {e.src!r} -> {e.dst!r}: no channel from {lead_src!r} to {lead_dst!r}"
                        )
                    best = None
                    for ch in options:
                        length = ch.transfer_time(e.size)
                        t0 = channels.earliest(ch.name, end_of[src], length)
                        if best is None or t0 + length < best[0] + best[2]:
                            best = (t0, ch.name, length)
                    t0, ch_name, length = best
                    channels.book(ch_name, t0, length)
                    transfers.append(
                        Transfer(src=e.src, dst=e.dst, microbatch=key[1], channel=ch_name, start=t0, end=t0 + length)
                    )
                    ready = max(ready, t0 + length)
                start_of[eid] = ready
                for key in members:
                    end_of[key] = ready + duration
                    placed_devices[key] = devs
                for d in devs:
                    free[d] = ready + duration
                head[dev] += 1
                remaining -= 1
                progress = True
        if not progress:
            stuck = [
                f"{d}: {entry_label(info[seqs[d][head[d]]][0])}"
                for d in problem.cluster.device_names
                if d in seqs and head[d] < len(seqs[d])
            ]
            raise DeadlockError(
                "orders cannot run: every device waits (for a dependency or for another device); "
                "next actions: " + "; ".join(stuck)
            )

    tasks = []
    for eid, (entry, members, devs, duration) in info.items():
        tag = entry.tag if isinstance(entry, Group) else None
        for b, m in members:
            tasks.append(
                TaskInstance(block=b, microbatch=m, devices=devs, start=start_of[eid], end=start_of[eid] + duration, overlap=tag)
            )
    schedule = Schedule(tasks=tasks, transfers=transfers, name=name or problem.name)
    if validate:
        try:
            assert_valid(problem, schedule, f"schedule {schedule.name!r}" if schedule.name else "schedule")
        except ValidationFailedError as exc:
            # the orders are input, not a solver's answer: a memory capacity they exceed, say
            err = InvalidScheduleError(f"the device orders give an invalid schedule: {exc}")
            err.violations = exc.violations  # type: ignore[attr-defined]
            raise err from None
    return schedule


def _lead(block, devices: tuple[str, ...]) -> str:
    for o in block.options:
        if set(o.devices) == set(devices):
            return o.devices[0]
    return devices[0]


def _resolve(problem: Problem, blocks, entry: Entry, members: tuple[TaskKey, ...], n: int):
    for b, m in members:
        if b not in blocks:
            raise InvalidScheduleError(f"orders: unknown block {b!r} in {entry_label(entry)}")
        if not 0 <= m < n:
            raise InvalidScheduleError(f"orders: micro-batch {m} of block {b!r} is not in 0..{n - 1}")
    if isinstance(entry, Group):
        rule = problem.overlap_for(b for b, _ in members)
        if rule is None or len({b for b, _ in members}) != len(members):
            raise InvalidScheduleError(
                f"orders: group {entry_label(entry)} is not one of the problem's overlaps "
                f"{[list(o.blocks) for o in problem.overlaps]}"
            )
        devs = blocks[members[0][0]].options[0].devices
        return entry, members, tuple(devs), rule.duration
    (b, m), = members
    block = blocks[b]
    if len(block.options) != 1:
        raise InvalidScheduleError(
            f"orders: block {b!r} has {len(block.options)} placement options; handcrafted orders need fixed blocks"
        )
    return entry, members, tuple(block.options[0].devices), problem.durations(b, m)[0]
