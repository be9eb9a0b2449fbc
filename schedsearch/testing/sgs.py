"""A serial schedule-generation scheme: a valid plan from any priority order.

:func:`serial_schedule` is the generator behind
:func:`schedsearch.testing.schedules`. It is deliberately simple and
independent of the library's list schedulers (which rank tasks by fixed
rules and pick options greedily): any order of the task instances, any
preferred option per task and any extra idle time give a plan, so a random
draw of those reaches many different valid plans of one problem.

Algorithm
---------
Repeat until every task instance is placed: walk the priority order and
take the first *eligible* task (every predecessor placed: edge sources of
its micro-batch and its fixed-order predecessor) that can be placed; place
it, then start the walk again from the top. A task is placed on its
preferred option if it fits there, else on its first other option that
fits, at the **earliest** time ``s`` such that

* ``s >= ready + delay``, where ``ready`` is the latest of its release,
  its predecessors' ends and its transfers' ends, and ``delay`` its extra
  idle time (``delays``, default 0). For an edge of size > 0 whose ends
  run on disjoint device sets, a transfer is booked first on one channel
  serving ``lead(src) -> lead(dst)`` (``channels`` picks which), in the
  earliest gap of that channel after the source ends;
* its devices are free over ``[s, s + duration)`` (tasks may go into gaps
  before work placed earlier);
* on every device with a capacity the memory level stays within it at
  every time ``>= s`` with the task added (its delta from ``s`` on, its
  workspace over ``[s, s + duration)``): the level of the placed tasks is
  recomputed exactly, so a task may also go into an earlier gap.

Only times in ``{ready} + every event time of the placed tasks after it``
need to be tried: between two events a later start is never better for the
devices (it only covers more) nor for memory (the level it must stay under
is constant there and it covers more of what follows), and after the last
event nothing changes any more. So a task that fits nowhere now never fits
later either; it waits for a later task (a free, say) and is tried again.

The scheme fails (returns None) when no eligible task fits anywhere: memory
is exhausted by the allocations placed so far, or fixed orders and edges
form a cycle. Overlapped groups (:class:`~schedsearch.problem.Overlap`)
are never formed: each member runs alone, which the model always allows.

Every placement is checked against every item placed before it and later
placements never move earlier ones, so a returned plan is valid; the
generator still runs :func:`~schedsearch.validate.validate` on it (a
generator bug would otherwise surface as a false failure in a user's test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schedsearch.errors import SchedSearchError
from schedsearch.problem import Problem, TaskKey
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import validate

__all__ = ["serial_schedule", "topological_order"]


def topological_order(problem: Problem) -> list[TaskKey]:
    """Every task instance, micro-batch by micro-batch, each in the graph's
    topological order (a good fallback priority: micro-batches one after the
    other always fit in memory when each micro-batch frees what it allocates)."""
    order = problem.graph.topological_order()
    return [(b, m) for m in range(problem.num_microbatches) for b in order]


class _Device:
    """Busy intervals and memory events of one device."""

    __slots__ = ("busy", "events", "capacity", "initial")

    def __init__(self, capacity: int | None, initial: int) -> None:
        self.busy: list[tuple[int, int]] = []
        self.events: dict[int, int] = {}
        self.capacity = capacity
        self.initial = initial

    def free(self, start: int, end: int) -> bool:
        return all(e <= start or end <= s for s, e in self.busy)

    def fits(self, start: int, end: int, delta: int, workspace: int) -> bool:
        """The level stays within the capacity at every time >= start with
        ``delta`` added from ``start`` and ``workspace`` over ``[start, end)``."""
        if self.capacity is None:
            return True
        level = self.initial + sum(c for t, c in self.events.items() if t <= start)
        if level + delta + workspace > self.capacity:
            return False
        for t in sorted(t for t in self.events if t > start):
            level += self.events[t]
            if level + delta + (workspace if t < end else 0) > self.capacity:
                return False
        return True

    def times_after(self, ready: int) -> set[int]:
        out = {t for t in self.events if t > ready}
        out.update(e for _, e in self.busy if e > ready)
        return out

    def book(self, start: int, end: int, delta: int, workspace: int) -> None:
        self.busy.append((start, end))
        self.events[start] = self.events.get(start, 0) + delta + workspace
        if workspace:
            self.events[end] = self.events.get(end, 0) - workspace


def _gap(busy: list[tuple[int, int]], ready: int, length: int) -> int:
    """Earliest start >= ready of a ``length``-long interval avoiding ``busy``."""
    if length <= 0:
        return ready
    s = ready
    moved = True
    while moved:
        moved = False
        for a, b in busy:
            if a < s + length and s < b:
                s, moved = b, True
    return s


def serial_schedule(
    problem: Problem,
    order: Sequence[TaskKey] | None = None,
    *,
    options: Mapping[TaskKey, int] | None = None,
    channels: Mapping[tuple[str, str, int], int] | None = None,
    delays: Mapping[TaskKey, int] | None = None,
    name: str = "serial schedule",
) -> Schedule | None:
    """A valid schedule built from a priority order (see the module notes), or None.

    Parameters
    ----------
    order:
        Every task instance, highest priority first (any order; default
        :func:`topological_order`). Task instances it omits are appended in
        the default order.
    options:
        Preferred option index per task instance (default 0); the others are
        tried, in index order, when it does not fit.
    channels:
        Per transfer ``(src, dst, micro-batch)``, which of the channels
        serving it to use (an index, taken modulo their number; default 0).
    delays:
        Extra idle time per task instance after it is ready (released, its
        predecessors and transfers done).

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import serial_schedule
    >>> problem = vshape(2, 2)
    >>> print(serial_schedule(problem))
    Schedule 'serial schedule': 8 tasks, 0 transfers, makespan 9
    >>> plan = serial_schedule(problem, [("F0", 1), ("F1", 1), ("B1", 1), ("B0", 1)])  # micro-batch 1 first
    >>> plan.device_orders()["d1"]
    (('F1', 1), ('B1', 1), ('F1', 0), ('B1', 0))
    """
    blocks = problem.graph.by_name()
    default = topological_order(problem)
    order = _priority_order(default, order)
    options = options or {}
    channels = channels or {}
    delays = delays or {}
    preds = _predecessors(problem, default)

    devices = {d.name: _Device(d.memory, problem.initial_memory_of(d.name)) for d in problem.cluster.devices}
    channel_busy: dict[str, list[tuple[int, int]]] = {c.name: [] for c in problem.cluster.channels}
    placed: dict[TaskKey, TaskInstance] = {}
    transfers: list[Transfer] = []

    def try_place(key: TaskKey) -> bool:
        block = blocks[key[0]]
        durations = problem.durations(*key)
        preferred = options.get(key, 0) % len(block.options)
        for i in [preferred] + [j for j in range(len(block.options)) if j != preferred]:
            option = block.options[i]
            ready = problem.release_of(*key)
            bookings: list[Transfer] = []
            feasible = True
            for pred, size in preds[key]:
                u = placed[pred]
                if size <= 0 or set(u.devices) & set(option.devices):
                    ready = max(ready, u.end)
                    continue
                serving = problem.cluster.channels_between(u.devices[0], option.devices[0])
                if not serving:
                    feasible = False
                    break
                ch = serving[channels.get((pred[0], key[0], key[1]), 0) % len(serving)]
                length = ch.transfer_time(size)
                taken = channel_busy[ch.name] + [(t.start, t.end) for t in bookings if t.channel == ch.name]
                start = _gap(taken, u.end, length)
                bookings.append(Transfer(src=pred[0], dst=key[0], microbatch=key[1], channel=ch.name,
                                         start=start, end=start + length))
                ready = max(ready, start + length)
            if not feasible:
                continue
            ready += max(0, delays.get(key, 0))
            duration = durations[i]
            devs = [devices[d] for d in option.devices]
            candidates = {ready}
            for dev in devs:
                candidates |= dev.times_after(ready)
            for s in sorted(candidates):
                if all(dev.free(s, s + duration) and dev.fits(s, s + duration, block.memory, block.workspace)
                       for dev in devs):
                    for dev in devs:
                        dev.book(s, s + duration, block.memory, block.workspace)
                    for tr in bookings:
                        if tr.end > tr.start:
                            channel_busy[tr.channel].append((tr.start, tr.end))
                    transfers.extend(bookings)
                    placed[key] = TaskInstance(block=key[0], microbatch=key[1], devices=option.devices, start=s,
                                               end=s + duration)
                    return True
        return False

    remaining = list(order)
    while remaining:
        for pos, key in enumerate(remaining):
            if all(p in placed for p, _ in preds[key]) and try_place(key):
                remaining.pop(pos)
                break
        else:
            return None
    schedule = Schedule(tasks=list(placed.values()), transfers=transfers, name=name)
    violations = validate(problem, schedule)
    if violations:  # pragma: no cover - a bug of this generator
        raise SchedSearchError(
            "serial_schedule built an invalid plan (a bug of schedsearch.testing): "
            + "; ".join(str(v) for v in violations[:5])
        )
    return schedule


def _priority_order(default: list[TaskKey], order: Sequence[TaskKey] | None) -> list[TaskKey]:
    """``order`` without repeats, then the task instances it omits in the ``default`` order."""
    if order is None:
        return default
    order = list(dict.fromkeys(order))
    known = set(default)
    unknown = [k for k in order if k not in known]
    if unknown:
        raise SchedSearchError(f"serial_schedule: 'order' names unknown task {unknown[0]!r}")
    seen = set(order)
    return order + [k for k in default if k not in seen]


def _predecessors(problem: Problem, tasks: Sequence[TaskKey]) -> dict[TaskKey, list[tuple[TaskKey, int]]]:
    """Per task instance: ``(predecessor, transfer size)`` of its edges, then of the fixed orders (size 0)."""
    preds: dict[TaskKey, list[tuple[TaskKey, int]]] = {k: [] for k in tasks}
    for m in range(problem.num_microbatches):
        for e in problem.graph.edges:
            preds[(e.dst, m)].append(((e.src, m), e.size))
    for seq in problem.fixed_orders:
        for a, b in zip(seq, seq[1:]):
            preds[b].append((a, 0))
    return preds
