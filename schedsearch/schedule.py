"""The solver-free schedule model and the metrics computed from it.

A :class:`Schedule` is an immutable list of timed task instances and
transfers. Every metric is computed from the schedule (and, for memory, the
problem's memory deltas), never copied from a solver.

Bubble definitions (see the project's design notes); each is the *worst*
device's idle time under that definition:

1. ``global``: makespan minus busy time (the DualPipe README's and the 1F1B
   formula's convention);
2. ``span``: last end minus first start minus busy time on the device (the
   zero-bubble papers' convention);
3. ``repetend``: period minus busy time per period (Tessel's convention; see
   :func:`repetend_bubble`).

The bubble *rate* is the bubble divided by the makespan.

This module never imports a solver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from schedsearch._json import check_fields, check_header, load_document, short_repr
from schedsearch.deadline import STRIDE, checkpoint, counted
from schedsearch.errors import InvalidOptionsError, InvalidScheduleError

if TYPE_CHECKING:  # pragma: no cover
    from schedsearch.problem import Problem

__all__ = [
    "TaskInstance",
    "Transfer",
    "Schedule",
    "Metrics",
    "metrics",
    "memory_profile",
    "peak_memory",
    "busy_time",
    "bubble",
    "repetend_bubble",
    "overlap_groups",
    "device_spans",
    "max_span",
    "objective_value",
    "SCHEDULE_FORMAT_VERSION",
]

SCHEDULE_FORMAT_VERSION = 1

_TASK_FIELDS = ("block", "microbatch", "devices", "start", "end", "overlap")
_TASK_REQUIRED = ("block", "microbatch", "devices", "start", "end")
_TRANSFER_FIELDS = ("src", "dst", "microbatch", "channel", "start", "end")
_SCHEDULE_FIELDS = ("format", "version", "name", "makespan", "tasks", "transfers")


def _int_field(entity: str, field: str, value: Any, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidScheduleError(f"{entity}: {field!r} must be an integer, got {short_repr(value)}")
    if minimum is not None and value < minimum:
        raise InvalidScheduleError(f"{entity}: {field!r} must be >= {minimum}, got {value!r}")


def _name_field(entity: str, field: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidScheduleError(f"{entity}: {field!r} must be a non-empty string, got {short_repr(value)}")


def _tuple_of_str(value: Any) -> Any:
    """Device names as a tuple (a bare name becomes a 1-tuple); another
    shape is kept as it is for the task's check to report."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return value


def _overlap_tag(inst: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidScheduleError(
            f"task {inst.block!r} (micro-batch {inst.microbatch}): 'overlap' must be a non-empty string or None, "
            f"got {value!r}"
        )


@attrs.frozen(kw_only=True)
class TaskInstance:
    """Block ``block`` of micro-batch ``microbatch`` on ``devices`` during ``[start, end)``.

    ``overlap`` marks a member of an overlapped group (see
    :class:`~schedsearch.problem.Overlap`): the tasks with the same tag, the
    same devices and the same start form one group, which occupies the
    devices once, over ``[start, end)``. ``None`` (the default) for a plain
    task.

    Examples
    --------
    >>> from schedsearch import TaskInstance
    >>> task = TaskInstance(block="F0", microbatch=1, devices=("d0",), start=2, end=5)
    >>> task.key, task.duration
    (('F0', 1), 3)
    """

    block: str
    microbatch: int
    devices: tuple[str, ...] = attrs.field(converter=_tuple_of_str)
    start: int
    end: int
    overlap: str | None = attrs.field(default=None, validator=_overlap_tag)

    def __attrs_post_init__(self) -> None:
        entity = f"task {short_repr(self.block)} (micro-batch {short_repr(self.microbatch)})"
        _name_field(entity, "block", self.block)
        if not isinstance(self.devices, tuple) or not all(isinstance(d, str) and d for d in self.devices):
            raise InvalidScheduleError(f"{entity}: 'devices' must be a list of device names, got "
                                       f"{short_repr(self.devices)}")
        _int_field(entity, "microbatch", self.microbatch, 0)
        _int_field(entity, "start", self.start, 0)
        _int_field(entity, "end", self.end)
        if self.end <= self.start:
            raise InvalidScheduleError(f"{entity}: 'end' must be > 'start' ({self.start}), got {self.end}")
        if not self.devices:
            raise InvalidScheduleError(f"{entity}: 'devices' must name at least one device, got ()")

    @property
    def key(self) -> tuple[str, int]:
        return (self.block, self.microbatch)

    @property
    def group_key(self) -> tuple[str, frozenset[str], int] | None:
        """Identity of the overlapped group this task belongs to (None for a plain task)."""
        if self.overlap is None:
            return None
        return (self.overlap, frozenset(self.devices), self.start)

    @property
    def duration(self) -> int:
        return self.end - self.start

    def shifted(self, offset: int, microbatch_offset: int = 0) -> TaskInstance:
        return attrs.evolve(
            self,
            start=self.start + offset,
            end=self.end + offset,
            microbatch=self.microbatch + microbatch_offset,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "block": self.block,
            "microbatch": self.microbatch,
            "devices": list(self.devices),
            "start": self.start,
            "end": self.end,
        }
        if self.overlap is not None:
            d["overlap"] = self.overlap
        return d


@attrs.frozen(kw_only=True)
class Transfer:
    """Transfer along edge ``src -> dst`` of micro-batch ``microbatch`` on ``channel``.

    It occupies the channel during ``[start, end)``; a zero-length transfer
    (``end == start``) is allowed for channels without latency.

    Examples
    --------
    >>> from schedsearch import Transfer
    >>> Transfer(src="F0", dst="F1", microbatch=0, channel="link", start=1, end=3).key
    ('F0', 'F1', 0)
    """

    src: str
    dst: str
    microbatch: int
    channel: str
    start: int
    end: int

    def __attrs_post_init__(self) -> None:
        entity = f"transfer {short_repr(self.src)} -> {short_repr(self.dst)} (micro-batch {short_repr(self.microbatch)})"
        _name_field(entity, "src", self.src)
        _name_field(entity, "dst", self.dst)
        _name_field(entity, "channel", self.channel)
        _int_field(entity, "microbatch", self.microbatch, 0)
        _int_field(entity, "start", self.start, 0)
        _int_field(entity, "end", self.end)
        if self.end < self.start:
            raise InvalidScheduleError(f"{entity}: 'end' must be >= 'start' ({self.start}), got {self.end}")

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.src, self.dst, self.microbatch)

    def shifted(self, offset: int, microbatch_offset: int = 0) -> Transfer:
        return attrs.evolve(
            self,
            start=self.start + offset,
            end=self.end + offset,
            microbatch=self.microbatch + microbatch_offset,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "dst": self.dst,
            "microbatch": self.microbatch,
            "channel": self.channel,
            "start": self.start,
            "end": self.end,
        }


def _entries(value: Any, what: str) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise InvalidScheduleError(f"schedule: {what!r} must be a list, got {short_repr(value)}")
    return tuple(value)


def _built(value: Iterable[Any], what: str, cls: type, fields: tuple[str, ...], required: tuple[str, ...]) -> list:
    """The entries of ``value`` as ``cls`` objects (objects given as mappings are built, fields checked)."""
    out = []
    for i, item in enumerate(counted(_entries(value, f"{what}s"))):
        if isinstance(item, Mapping):
            check_fields(f"schedule: {what} {i}", item, fields, required)
            item = cls(**item)
        elif not isinstance(item, cls):
            raise InvalidScheduleError(
                f"schedule: {what} {i}: must be an object {{{', '.join(fields)}}}, got {short_repr(item)}"
            )
        out.append(item)
    return out


def _sorted_tasks(value: Iterable[Any]) -> tuple[TaskInstance, ...]:
    return _in_order(_built(value, "task", TaskInstance, _TASK_FIELDS, _TASK_REQUIRED), _task_order)


def _sorted_transfers(value: Iterable[Any]) -> tuple[Transfer, ...]:
    return _in_order(_built(value, "transfer", Transfer, _TRANSFER_FIELDS, _TRANSFER_FIELDS), _transfer_order)


def _in_order(items: Iterable[Any], order: Callable[[Any], tuple]) -> tuple:
    """``items`` sorted by ``order`` (stable, as ``sorted``), the keys computed and the result built as counted
    work (:func:`~schedsearch.deadline.counted`): the sort of the keys itself runs without a checkpoint."""
    items = list(items)
    keys = [order(item) for item in counted(items)]
    return tuple(items[i] for i in counted(sorted(range(len(items)), key=keys.__getitem__)))


def _task_order(t: TaskInstance) -> tuple:
    """A schedule's order of its tasks: by start, then devices, block and micro-batch."""
    return (t.start, t.devices, t.block, t.microbatch)


def _transfer_order(t: Transfer) -> tuple:
    """A schedule's order of its transfers: by start, then channel, edge and micro-batch."""
    return (t.start, t.channel, t.src, t.dst, t.microbatch)


_setattr = object.__setattr__
_new = object.__new__


def _filled(cls: type, **fields: Any) -> Any:
    """An instance of the frozen attrs class ``cls`` with ``fields`` set as they are (no converters or checks)."""
    obj = _new(cls)
    for name, value in fields.items():
        _setattr(obj, name, value)
    return obj


def transfer_unchecked(*, src: str, dst: str, microbatch: int, channel: str, start: int, end: int) -> Transfer:
    """A :class:`Transfer` of values the library has already checked (internal): only the times and the
    micro-batch are looked at (cheaply); a value the constructor would refuse goes through it, so it raises
    the constructor's error."""
    if not (type(start) is int and type(end) is int and 0 <= start <= end and type(microbatch) is int
            and microbatch >= 0):
        return Transfer(src=src, dst=dst, microbatch=microbatch, channel=channel, start=start, end=end)
    return _filled(Transfer, src=src, dst=dst, microbatch=microbatch, channel=channel, start=start, end=end)


#: A task as a row of checked values, in a schedule's order: ``(start, devices, block, microbatch, end, overlap)``.
TaskRow = tuple[int, tuple[str, ...], str, int, int, "str | None"]


def schedule_of_rows(rows: Iterable[TaskRow], transfers: Iterable[Transfer] = (), name: str = "") -> Schedule:
    """A :class:`Schedule` of task rows (internal): for the simulators that time hundreds of thousands of tasks.

    Each row holds values the library has checked (``block`` a block name,
    ``overlap`` a tag or None); the rows are sorted as they are (a row leads
    with the schedule's sort key, and the row's place breaks ties, so the
    order is the constructor's stable sort) and only then made task
    objects, without a key per task. A row whose times or micro-batch are not whole numbers
    in range, or whose devices are not a tuple, goes through the
    constructor, so it raises its error or is converted as it converts it.
    """
    keyed = []
    add = keyed.append
    for i, (start, devices, block, microbatch, end, overlap) in enumerate(rows):
        if not i % STRIDE:
            checkpoint(STRIDE)
        if not (type(start) is int and type(end) is int and 0 <= start < end and type(microbatch) is int
                and microbatch >= 0 and type(devices) is tuple and devices):
            # the constructor's checks: it raises its error, or gives the values as it converts them
            task = TaskInstance(block=block, microbatch=microbatch, devices=devices, start=start, end=end,
                                overlap=overlap)
            start, devices, microbatch, end = task.start, task.devices, task.microbatch, task.end
        add((start, devices, block, microbatch, i, end, overlap))
    keyed.sort()  # one comparison of tuples per step (a row's place is unique: nothing after it is compared)
    tasks = []
    put = tasks.append
    new, set_ = _new, _setattr
    for i, (start, devices, block, microbatch, _, end, overlap) in enumerate(keyed):
        if not i % STRIDE:
            checkpoint(STRIDE)
        task = new(TaskInstance)
        set_(task, "block", block)
        set_(task, "microbatch", microbatch)
        set_(task, "devices", devices)
        set_(task, "start", start)
        set_(task, "end", end)
        set_(task, "overlap", overlap)
        put(task)
    schedule = new(Schedule)
    set_(schedule, "tasks", tuple(tasks))
    set_(schedule, "transfers", _in_order(transfers, _transfer_order))
    set_(schedule, "name", name)
    return schedule


@attrs.frozen(kw_only=True)
class Schedule:
    """Timed task instances and transfers (sorted by start time).

    A schedule is plain data: :func:`~schedsearch.validate.validate` checks
    it against a problem and :func:`metrics` measures it.

    Examples
    --------
    1F1B's order for one micro-batch on two devices:

    >>> from schedsearch import Schedule, TaskInstance
    >>> schedule = Schedule(tasks=[
    ...     TaskInstance(block="F0", microbatch=0, devices=("d0",), start=0, end=1),
    ...     TaskInstance(block="F1", microbatch=0, devices=("d1",), start=1, end=2),
    ...     TaskInstance(block="B1", microbatch=0, devices=("d1",), start=2, end=4),
    ...     TaskInstance(block="B0", microbatch=0, devices=("d0",), start=4, end=6),
    ... ])
    >>> print(schedule)
    Schedule: 4 tasks, 0 transfers, makespan 6
    >>> schedule.device_orders()["d1"]
    (('F1', 0), ('B1', 0))
    >>> Schedule.from_json(schedule.to_json()) == schedule
    True
    """

    tasks: tuple[TaskInstance, ...] = attrs.field(converter=_sorted_tasks)
    transfers: tuple[Transfer, ...] = attrs.field(converter=_sorted_transfers, default=())
    name: str = ""

    @property
    def makespan(self) -> int:
        """Last end time (time starts at 0); 0 for an empty schedule."""
        ends = [t.end for t in self.tasks] + [t.end for t in self.transfers]
        return max(ends, default=0)

    @property
    def devices(self) -> tuple[str, ...]:
        """Devices used, in order of first appearance."""
        seen: dict[str, None] = {}
        for t in self.tasks:
            for d in t.devices:
                seen.setdefault(d, None)
        return tuple(seen)

    def by_key(self) -> dict[tuple[str, int], TaskInstance]:
        """Task instances by (block, micro-batch); the last wins on duplicates."""
        return {t.key: t for t in self.tasks}

    def on_device(self, device: str) -> tuple[TaskInstance, ...]:
        """Tasks occupying ``device``, by start time."""
        return tuple(t for t in self.tasks if device in t.devices)

    def device_orders(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """The order of task instances on each device."""
        out: dict[str, list[tuple[str, int]]] = {}
        for t in self.tasks:
            for d in t.devices:
                out.setdefault(d, []).append(t.key)
        return {d: tuple(v) for d, v in out.items()}

    def shifted(self, offset: int, microbatch_offset: int = 0) -> Schedule:
        return Schedule(
            tasks=[t.shifted(offset, microbatch_offset) for t in self.tasks],
            transfers=[t.shifted(offset, microbatch_offset) for t in self.transfers],
            name=self.name,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "schedsearch.schedule",
            "version": SCHEDULE_FORMAT_VERSION,
            "name": self.name,
            "makespan": self.makespan,
            "tasks": [t.to_dict() for t in self.tasks],
            "transfers": [t.to_dict() for t in self.transfers],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schedule:
        """A schedule from its JSON document (see :meth:`to_dict`).

        A wrong structure (not an object, a wrong ``format`` or ``version``,
        a missing or an unknown field) raises
        :class:`~schedsearch.errors.FormatError`; a value of the wrong type
        or range, or a ``makespan`` that disagrees with the tasks, raises
        :class:`~schedsearch.errors.InvalidScheduleError`.
        """
        check_header(d, "schedule", SCHEDULE_FORMAT_VERSION)
        check_fields("schedule document", d, _SCHEDULE_FIELDS, ("tasks",))
        name = d.get("name", "")
        if not isinstance(name, str):
            raise InvalidScheduleError(f"schedule: 'name' must be a string, got {short_repr(name)}")
        schedule = cls(tasks=d["tasks"], transfers=d.get("transfers", ()), name=name)
        if "makespan" in d:
            # informative only, but a value that disagrees with the tasks is a corrupted document
            _int_field("schedule", "makespan", d["makespan"], 0)
            if d["makespan"] != schedule.makespan:
                raise InvalidScheduleError(
                    f"schedule: 'makespan' {d['makespan']} disagrees with its tasks and transfers, "
                    f"whose last end is {schedule.makespan}"
                )
        return schedule

    @classmethod
    def from_json(cls, text: str | bytes) -> Schedule:
        """A schedule from JSON text (see :meth:`from_dict`)."""
        return cls.from_dict(load_document(text, "schedule document"))

    def __str__(self) -> str:
        return (
            f"Schedule{f' {self.name!r}' if self.name else ''}: {len(self.tasks)} tasks, "
            f"{len(self.transfers)} transfers, makespan {self.makespan}"
        )


# --------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------


def overlap_groups(schedule: Schedule) -> dict[tuple[str, frozenset[str], int], tuple[TaskInstance, ...]]:
    """The overlapped groups of a schedule: group identity -> its member tasks.

    A group is the set of tasks sharing an ``overlap`` tag, their devices
    and their start (see :class:`TaskInstance`).
    """
    out: dict[tuple[str, frozenset[str], int], list[TaskInstance]] = {}
    for t in schedule.tasks:
        g = t.group_key
        if g is not None:
            out.setdefault(g, []).append(t)
    return {g: tuple(v) for g, v in out.items()}


def busy_time(schedule: Schedule, devices: Iterable[str] | None = None) -> dict[str, int]:
    """Busy time per device (a multi-device task counts on each of its devices).

    An overlapped group counts once, for its own span (its longest member).
    """
    out: dict[str, int] = {d: 0 for d in (devices or ())}
    group_span: dict[tuple[str, frozenset[str], int], int] = {}
    for t in schedule.tasks:
        duration = t.end - t.start
        if t.overlap is not None:
            g = (t.overlap, frozenset(t.devices), t.start)  # its group_key
            group_span[g] = max(group_span.get(g, 0), duration)
            continue
        for d in t.devices:
            out[d] = out.get(d, 0) + duration
    for (_, devs, _), span in group_span.items():
        for d in devs:
            out[d] = out.get(d, 0) + span
    return out


def memory_profile(problem: Problem, schedule: Schedule) -> dict[str, list[tuple[int, int]]]:
    """Memory level on each device after all events at each event time.

    Returns, per device of the problem's cluster, the list of ``(time,
    level)`` steps: the level holds from ``time`` until the next step. The
    first step is ``(0, level after the events at time 0)``: the initial
    memory when nothing starts at 0 (the level starts at the initial memory
    before any event; :func:`peak_memory` counts it). Memory deltas apply at
    a task's start; workspace is held over ``[start, end)`` (see
    :class:`~schedsearch.problem.Problem`). Tasks naming unknown blocks are
    ignored (the validator reports them).
    """
    events: dict[str, dict[int, int]] = {d: {} for d in problem.cluster.device_names}
    # per block: what its start adds (its memory and its workspace) and its workspace
    held = {b.name: (b.memory + b.workspace, b.workspace) for b in problem.graph.blocks}
    for i, t in enumerate(schedule.tasks):
        if not i % STRIDE:
            checkpoint(STRIDE)
        b = held.get(t.block)
        if b is None:
            continue
        at_start, workspace = b
        for d in t.devices:
            ev = events.get(d)
            if ev is None:
                ev = events[d] = {}
            start = t.start
            ev[start] = ev.get(start, 0) + at_start
            if workspace:
                ev[t.end] = ev.get(t.end, 0) - workspace
    out: dict[str, list[tuple[int, int]]] = {}
    for d, ev in events.items():
        checkpoint(len(ev))
        level = problem.initial_memory_of(d) if d in problem.cluster.device_names else 0
        steps = [(0, level)]

        for time in sorted(ev):
            level += ev[time]
            if time == 0:
                steps[0] = (0, level)
            else:
                steps.append((time, level))
        out[d] = steps
    return out


def peak_memory(problem: Problem, schedule: Schedule) -> dict[str, int]:
    """Peak memory level per device: the highest level at any instant, initial memory included.

    The level starts at the initial memory, so the peak is never below it,
    even when a task that frees memory starts at time 0:

    >>> from schedsearch import Block, Cluster, Device, Graph, Problem
    >>> p = Problem(graph=Graph(blocks=[Block(name="b0", options=[("d0", 1)], memory=-1)]),
    ...             num_microbatches=1, cluster=Cluster(devices=[Device(name="d0")]), initial_memory={"d0": 1})
    >>> peak_memory(p, Schedule(tasks=[TaskInstance(block="b0", microbatch=0, devices=("d0",), start=0, end=1)]))
    {'d0': 1}
    """
    names = set(problem.cluster.device_names)
    return {d: max([problem.initial_memory_of(d) if d in names else 0] + [level for _, level in steps])
            for d, steps in memory_profile(problem, schedule).items()}


def bubble(schedule: Schedule, definition: str = "global", devices: Iterable[str] | None = None) -> int:
    """Worst device's bubble under ``definition`` (``"global"`` or ``"span"``).

    ``devices`` defaults to the devices the schedule uses; pass the
    cluster's devices to count an idle device's whole makespan as bubble.
    """
    devs = tuple(devices) if devices is not None else schedule.devices
    if not devs:
        return 0
    return _bubble(schedule, definition, devs, busy_time(schedule, devs))


def _bubble(schedule: Schedule, definition: str, devs: tuple[str, ...], busy: Mapping[str, int]) -> int:
    """:func:`bubble` of the devices ``devs`` (not empty), given their busy times."""
    if definition == "global":
        span = schedule.makespan
        return max(span - busy.get(d, 0) for d in devs)
    if definition == "span":
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for t in schedule.tasks:
            for d in t.devices:
                if t.start < first.get(d, t.start + 1):
                    first[d] = t.start
                if t.end > last.get(d, 0):
                    last[d] = t.end
        worst = 0
        for d in devs:
            if d in first:
                worst = max(worst, last[d] - first[d] - busy[d])
        return worst
    raise InvalidOptionsError(f"bubble: 'definition' must be 'global' or 'span', got {definition!r}")


def device_spans(schedule: Schedule, devices: Iterable[str] | None = None) -> dict[str, int]:
    """Per device: its last end minus its first start (0 for a device without tasks).

    ``devices`` defaults to the devices the schedule uses.
    """
    devs = tuple(devices) if devices is not None else schedule.devices
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for t in schedule.tasks:
        for d in t.devices:
            first[d] = min(first.get(d, t.start), t.start)
            last[d] = max(last.get(d, t.end), t.end)
    return {d: last[d] - first[d] if d in first else 0 for d in devs}


def max_span(schedule: Schedule) -> int:
    """The longest device span (the ``"max_span"`` objective); 0 for an empty schedule."""
    return max(device_spans(schedule).values(), default=0)


def objective_value(schedule: Schedule, objective: str) -> int:
    """The value of a problem objective for ``schedule``.

    ``"makespan"`` and ``"feasibility"`` give the makespan (a feasibility
    search reports the makespan of what it found); ``"max_span"`` the
    longest device span.
    """
    if objective in ("makespan", "feasibility"):
        return schedule.makespan
    if objective == "max_span":
        return max_span(schedule)
    raise InvalidOptionsError(f"objective_value: 'objective' must be 'makespan', 'max_span' or 'feasibility', got {objective!r}")


def repetend_bubble(period: int, busy_per_period: Mapping[str, int]) -> int:
    """Tessel's repetend bubble: period minus busy time per period, worst device."""
    if not busy_per_period:
        return period
    return max(period - b for b in busy_per_period.values())


@attrs.frozen(kw_only=True)
class Metrics:
    """Figures computed from a schedule (and its problem, for memory)."""

    makespan: int
    busy: Mapping[str, int]
    peak_memory: Mapping[str, int]
    bubble_global: int
    bubble_span: int

    @property
    def bubble_rate(self) -> float:
        """Global bubble divided by the makespan."""
        return self.bubble_global / self.makespan if self.makespan else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan": self.makespan,
            "busy": dict(self.busy),
            "peak_memory": dict(self.peak_memory),
            "bubble_global": self.bubble_global,
            "bubble_span": self.bubble_span,
            "bubble_rate": self.bubble_rate,
        }

    def __str__(self) -> str:
        peaks = ", ".join(f"{d}={v}" for d, v in self.peak_memory.items())
        return (
            f"makespan {self.makespan}, bubble (global) {self.bubble_global} "
            f"(rate {self.bubble_rate:.3f}), bubble (span) {self.bubble_span}, peak memory [{peaks}]"
        )


def metrics(problem: Problem, schedule: Schedule) -> Metrics:
    """Compute every metric of ``schedule`` for ``problem``.

    The makespan, busy time per device, peak memory per device (initial
    memory included) and the global and span bubbles; the problem is needed
    for the memory deltas.

    Examples
    --------
    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.vshape(2, 2, forward=1, backward=2)
    >>> figures = metrics(problem, handcrafted.one_f_one_b(problem))
    >>> print(figures)
    makespan 9, bubble (global) 3 (rate 0.333), bubble (span) 3, peak memory [d0=2, d1=1]
    >>> dict(figures.busy)
    {'d0': 6, 'd1': 6}
    """
    devs = tuple(problem.cluster.device_names)
    busy = busy_time(schedule, devs)
    return Metrics(
        makespan=schedule.makespan,
        busy=busy,
        peak_memory=peak_memory(problem, schedule),
        bubble_global=_bubble(schedule, "global", devs, busy) if devs else 0,
        bubble_span=_bubble(schedule, "span", devs, busy) if devs else 0,
    )
