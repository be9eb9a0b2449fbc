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

from collections.abc import Iterable, Mapping, Sequence
from typing import Union

import attrs

from schedsearch.deadline import STRIDE, checkpoint
from schedsearch.errors import InvalidScheduleError, ValidationFailedError
from schedsearch.problem import Edge, Problem, TaskKey
from schedsearch.schedule import Schedule, Transfer, schedule_of_rows, transfer_unchecked
from schedsearch.timeline import Timeline, earliest_finish
# the deferral is the validator's fact; its names stay importable from here, where the constructions heed it
from schedsearch.validate import assert_valid, validation_deferred as validation_deferred, validation_is_deferred

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
    resolved = _resolve_orders(problem, orders)
    starts, transfers = _AsSoonAsPossible(problem, resolved).run()
    schedule = _as_schedule(problem, resolved, starts, transfers, name)
    if validate and not validation_is_deferred():
        _check_valid(problem, schedule)
    return schedule


class _Action:
    """One action of the orders, resolved: its members, its devices and how long it runs."""

    __slots__ = ("entry", "members", "devices", "duration")

    def __init__(self, entry: Entry, members: tuple[TaskKey, ...], devices: tuple[str, ...], duration: int) -> None:
        self.entry = entry
        self.members = members
        self.devices = devices
        self.duration = duration


@attrs.frozen(kw_only=True)
class _Orders:
    """The orders as numbers: the actions, each device's sequence of action
    numbers, and per member of a group the group's number."""

    actions: tuple[_Action, ...]
    sequences: Mapping[str, tuple[int, ...]]
    group_of: Mapping[TaskKey, int]


def _resolve_orders(problem: Problem, orders: Mapping[str, Sequence[Entry]]) -> _Orders:
    """Number the actions of ``orders`` and check them against the problem.

    Raises :class:`~schedsearch.errors.InvalidScheduleError` for an unknown
    device, block, micro-batch or group, an action listed twice or on a
    device it does not run on, a multi-device action missing from one of
    its devices' orders, and a task instance in no order.
    """
    actions, sequences, listed = _number_actions(problem, orders)
    on_device: dict[str, set[int]] = {}
    group_of: dict[TaskKey, int] = {}
    grouped: list[int] = []
    for eid, action in enumerate(actions):
        if not eid % STRIDE:
            checkpoint(STRIDE)
        if len(action.members) > 1 and isinstance(action.entry, Group):
            grouped.append(eid)
        if len(action.devices) == 1:
            continue  # numbered from its one device's order, so it is in it
        for d in action.devices:
            if d not in on_device:
                on_device[d] = set(sequences.get(d, ()))
            if eid not in on_device[d]:
                raise InvalidScheduleError(
                    f"orders: {entry_label(action.entry)} runs on {list(action.devices)} but is missing from the "
                    f"order of device {d!r}"
                )
    if len(listed) < problem.num_tasks:
        missing = [(b.name, m) for m in range(problem.num_microbatches) for b in problem.graph.blocks
                   if (b.name, m) not in listed]
        shown = ", ".join(f"{b!r} (micro-batch {m})" for b, m in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InvalidScheduleError(f"orders: {len(missing)} task instance(s) are not in any order: {shown}{more}")
    for eid in grouped:
        for key in actions[eid].members:
            group_of[key] = eid
    return _Orders(actions=tuple(actions), sequences=sequences, group_of=group_of)


def _number_actions(
    problem: Problem, orders: Mapping[str, Sequence[Entry]]
) -> tuple[list[_Action], dict[str, tuple[int, ...]], set[TaskKey]]:
    """Each distinct action numbered once (a multi-device action is one
    action on each of its devices), each device's order as numbers, and
    every task instance listed (each a known block and micro-batch)."""
    blocks = problem.graph.by_name()
    devices = set(problem.cluster.device_names)
    n = problem.num_microbatches
    durations = problem.durations
    overridden = bool(problem.duration_overrides)
    # a plain task of a fixed block: its devices and the option's duration (overrides applied per instance)
    fixed = {name: tuple(b.options[0].devices) for name, b in blocks.items() if len(b.options) == 1}
    length = {name: b.options[0].duration for name, b in blocks.items() if len(b.options) == 1}
    # a group of known member blocks: its devices and duration, the same for every instance (micro-batches checked)
    group_shape: dict[tuple[str, ...], tuple[tuple[str, ...], int]] = {}
    actions: list[_Action] = []
    number: dict[object, int] = {}
    seen_task: set[TaskKey] = set()
    sequences: dict[str, tuple[int, ...]] = {}
    for dev, seq in orders.items():
        if dev not in devices:
            raise InvalidScheduleError(f"orders: device {dev!r} is not in the problem's cluster {sorted(devices)}")
        ids: list[int] = []
        listed: set[int] = set()
        for i, entry in enumerate(seq):
            if not i % STRIDE:
                checkpoint(STRIDE)
            if (type(entry) is tuple and len(entry) == 2 and type(entry[0]) is str and type(entry[1]) is int
                    and entry not in number):
                # the common case at once: a first listing of a plain task of a fixed block that runs here
                b, m = entry
                devs = fixed.get(b)
                if devs is not None and 0 <= m < n and dev in devs and entry not in seen_task:
                    eid = number[entry] = len(actions)
                    actions.append(_Action(entry, (entry,), devs, durations(b, m)[0] if overridden else length[b]))
                    seen_task.add(entry)
                    listed.add(eid)
                    ids.append(eid)
                    continue
            if isinstance(entry, Group):
                members = entry.members
                ident: object = entry
            else:
                ident = key = (str(entry[0]), int(entry[1]))
                members = (key,)
            eid = number.get(ident)
            if eid is None:
                eid = number[ident] = len(actions)
                b, m = members[0]
                devs = fixed.get(b) if len(members) == 1 else None
                if devs is not None and 0 <= m < n:  # a known fixed block (the common case): checked here
                    action = _Action(entry, members, devs, durations(b, m)[0] if overridden else length[b])
                elif isinstance(entry, Group):
                    names = tuple(name for name, _ in members)
                    shape = group_shape.get(names)
                    if shape is not None and all(0 <= mb < n for _, mb in members):
                        action = _Action(entry, members, *shape)
                    else:
                        action = _resolve(problem, blocks, entry, members, n)
                        group_shape[names] = (action.devices, action.duration)
                else:
                    action = _resolve(problem, blocks, entry, members, n)
                actions.append(action)
                for key in members:
                    if key in seen_task:
                        raise InvalidScheduleError(f"orders: task {key[0]!r} (micro-batch {key[1]}) appears twice")
                    seen_task.add(key)
                if dev not in action.devices:
                    raise InvalidScheduleError(
                        f"orders: {entry_label(entry)} is listed on device {dev!r} but runs on {list(action.devices)}"
                    )
                listed.add(eid)
            else:  # listed before: on another of its devices, or a repeat
                devs = actions[eid].devices
                if dev not in devs:
                    raise InvalidScheduleError(
                        f"orders: {entry_label(entry)} is listed on device {dev!r} but runs on {list(devs)}"
                    )
                if eid in listed:
                    raise InvalidScheduleError(f"orders: {entry_label(entry)} appears twice on device {dev!r}")
                listed.add(eid)
            ids.append(eid)
        sequences[dev] = tuple(ids)
    return actions, sequences, seen_task


class _AsSoonAsPossible:
    """Run the orders: each device's next action starts as soon as it heads
    the order of every device it runs on, those devices are free, its
    release has passed and its data have arrived.

    Actions are numbers: each one's dependencies are read once from the
    problem's edges as the numbers of the actions they come from, split into
    those that need a transfer (a sized edge between disjoint devices) and
    the others."""

    def __init__(self, problem: Problem, orders: _Orders) -> None:
        self.problem = problem
        self.orders = orders
        self.blocks = problem.graph.by_name()
        self.head = {d: 0 for d in problem.cluster.device_names}  # a device without actions has no order
        self.free = {d: 0 for d in problem.cluster.device_names}
        actions = orders.actions
        self.start_of: list[int | None] = [None] * len(actions)
        self.channels = {c.name: Timeline() for c in problem.cluster.channels}
        self.transfers: list[Transfer] = []
        self._dependencies()

    def _dependencies(self) -> None:
        """Per action: its release, the actions it waits for directly and those whose data it needs moved
        (``(edge, source key, own key, source action)``, in member and edge order)."""
        problem, actions, group_of = self.problem, self.orders.actions, self.orders.group_of
        action_of: dict[TaskKey, int] = {}
        for eid, action in enumerate(actions):
            if not eid % STRIDE:
                checkpoint(STRIDE)
            for key in action.members:
                action_of[key] = eid
        preds = problem.graph.predecessors()
        release_of = problem.release_of
        has_release = bool(problem.releases)
        self.release: list[int] = [0] * len(actions)
        self.direct: list[tuple[int, ...]] = []
        self.moved: list[tuple[tuple[Edge, TaskKey, TaskKey, int], ...]] = []
        # a block whose incoming edges carry nothing waits for its sources directly, wherever they run
        unsized = {b: tuple(e.src for e in edges) for b, edges in preds.items() if all(e.size <= 0 for e in edges)}
        direct_of, moved_of = self.direct.append, self.moved.append
        for eid, action in enumerate(actions):
            if not eid % STRIDE:
                checkpoint(STRIDE)
            members = action.members
            if len(members) == 1:
                (b, m), = members
                sources = unsized.get(b)
                if sources is not None:  # the common case, at once
                    if has_release:
                        self.release[eid] = max(0, release_of(b, m))
                    direct_of(tuple([action_of[src, m] for src in sources]))
                    moved_of(())
                    continue
            direct: list[int] = []
            moved: list[tuple[Edge, TaskKey, TaskKey, int]] = []
            grouped = len(action.members) > 1
            for key in action.members:
                b, m = key
                if has_release:
                    self.release[eid] = max(self.release[eid], release_of(b, m))
                for e in preds[b]:
                    src = (e.src, m)
                    if grouped and group_of.get(src) == eid and group_of.get(key) == eid:
                        continue  # internal order of the group
                    sid = action_of[src]
                    if e.size > 0 and not (set(actions[sid].devices) & set(action.devices)):
                        moved.append((e, src, key, sid))
                    else:
                        direct.append(sid)
            self.direct.append(tuple(direct))
            self.moved.append(tuple(moved))

    def run(self) -> tuple[list[int | None], list[Transfer]]:
        """The start of every action and the transfers; :class:`DeadlockError` when the orders get stuck."""
        remaining = sum(len(v) for v in self.orders.sequences.values())
        names = self.problem.cluster.device_names
        while remaining:
            done = 0
            for dev in names:
                done += self._advance(dev)
            if not done:
                raise self._deadlock()
            remaining -= done
        return self.start_of, self.transfers

    def _advance(self, dev: str) -> int:
        """Start the actions at the head of ``dev``'s order while they can start; how many heads moved."""
        seq = self.orders.sequences.get(dev, ())
        actions, sequences, head, start_of = self.orders.actions, self.orders.sequences, self.head, self.start_of
        moved = 0
        while head[dev] < len(seq):
            eid = seq[head[dev]]
            if start_of[eid] is None:  # else a multi-device action already placed from another device
                action = actions[eid]
                if len(action.devices) > 1 and any(
                        sequences[d][head[d]] != eid for d in action.devices if head[d] < len(sequences[d])):
                    break  # another of its devices has work to do first
                ready = self._ready(eid, action)
                if ready is None:
                    break
                self._place(eid, action, ready)
            head[dev] += 1
            moved += 1
            if not moved & 15:
                checkpoint(16)
        checkpoint(moved & 15)
        return moved

    def _ready(self, eid: int, action: _Action) -> int | None:
        """When ``action`` can start (its incoming transfers booked), or None while a predecessor has not run."""
        start_of, actions = self.start_of, self.orders.actions
        free = self.free
        ready = self.release[eid]
        for d in action.devices:
            if free[d] > ready:
                ready = free[d]
        for sid in self.direct[eid]:
            start = start_of[sid]
            if start is None:
                return None
            end = start + actions[sid].duration
            if end > ready:
                ready = end
        moved = self.moved[eid]
        if moved:
            if any(start_of[sid] is None for *_, sid in moved):
                return None
            for e, src, key, sid in moved:
                ready = max(ready, self._book_transfer(e, src, key, sid, action.devices))
        return ready

    def _book_transfer(self, e: Edge, src: TaskKey, key: TaskKey, sid: int, devices: tuple[str, ...]) -> int:
        """Book edge ``e``'s transfer from ``src`` (action ``sid``) to ``key`` (on ``devices``) on
        the channel between the lead devices where it ends first; its end."""
        source = self.orders.actions[sid]
        lead_src = _lead(self.blocks[src[0]], source.devices)
        lead_dst = _lead(self.blocks[key[0]], devices)
        options = self.problem.cluster.channels_between(lead_src, lead_dst)
        if not options:
            raise InvalidScheduleError(f"edge {e.src!r} -> {e.dst!r}: no channel from {lead_src!r} to {lead_dst!r}")
        sent = self.start_of[sid] + source.duration  # type: ignore[operator]
        name, start, length = earliest_finish(
            ((ch.name, ch.transfer_time(e.size), (self.channels[ch.name],)) for ch in options), sent)
        self.channels[name].book(start, length)
        self.transfers.append(
            transfer_unchecked(src=e.src, dst=e.dst, microbatch=key[1], channel=name, start=start, end=start + length)
        )
        return start + length

    def _place(self, eid: int, action: _Action, start: int) -> None:
        """Run ``action`` from ``start``: its devices are busy until it ends."""
        self.start_of[eid] = start
        for d in action.devices:
            self.free[d] = start + action.duration

    def _deadlock(self) -> DeadlockError:
        """The error naming the action each device is stuck at."""
        sequences = self.orders.sequences
        stuck = [
            f"{d}: {entry_label(self.orders.actions[sequences[d][self.head[d]]].entry)}"
            for d in self.problem.cluster.device_names
            if d in sequences and self.head[d] < len(sequences[d])
        ]
        return DeadlockError(
            "orders cannot run: every device waits (for a dependency or for another device); "
            "next actions: " + "; ".join(stuck)
        )


def _as_schedule(problem: Problem, orders: _Orders, starts: Sequence[int | None], transfers: list[Transfer],
                 name: str) -> Schedule:
    """The timed tasks of every action (a group's members share its times and tag).

    Every value is the problem's or the simulation's (checked names, whole
    durations >= 1, starts >= 0), so the tasks are built without the
    constructor's checks."""
    rows = []
    add = rows.append
    for i, (action, start) in enumerate(zip(orders.actions, starts)):
        if not i % STRIDE:
            checkpoint(STRIDE)
        end = start + action.duration  # type: ignore[operator]
        members = action.members
        if len(members) == 1:
            (b, m), = members
            add((start, action.devices, b, m, end, None))
            continue
        tag = action.entry.tag if isinstance(action.entry, Group) else None
        for b, m in members:
            add((start, action.devices, b, m, end, tag))
    return schedule_of_rows(rows, transfers, name or problem.name)


def _check_valid(problem: Problem, schedule: Schedule) -> None:
    """Raise :class:`~schedsearch.errors.InvalidScheduleError` (with the
    violations) when the validator rejects the schedule of the orders."""
    try:
        assert_valid(problem, schedule, f"schedule {schedule.name!r}" if schedule.name else "schedule")
    except ValidationFailedError as exc:
        # the orders are input, not a solver's answer: a memory capacity they exceed, say
        err = InvalidScheduleError(f"the device orders give an invalid schedule: {exc}")
        err.violations = exc.violations  # type: ignore[attr-defined]
        raise err from None


def _lead(block, devices: tuple[str, ...]) -> str:
    """The lead device of ``block`` running on ``devices`` (its option's first device)."""
    for o in block.options:
        if set(o.devices) == set(devices):
            return o.devices[0]
    return devices[0]


def _resolve(problem: Problem, blocks, entry: Entry, members: tuple[TaskKey, ...], n: int) -> _Action:
    """The :class:`_Action` of ``entry``: checked members, devices (the fixed option) and duration."""
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
        return _Action(entry=entry, members=members, devices=tuple(devs), duration=rule.duration)
    (b, m), = members
    block = blocks[b]
    if len(block.options) != 1:
        raise InvalidScheduleError(
            f"orders: block {b!r} has {len(block.options)} placement options; handcrafted orders need fixed blocks"
        )
    return _Action(entry=entry, members=members, devices=tuple(block.options[0].devices),
                   duration=problem.durations(b, m)[0])
