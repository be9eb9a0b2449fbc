"""The independent validator: every violation of a schedule against its problem.

It shares no code with the encoders: it re-derives each rule from the problem
model's definitions (see :mod:`schedsearch.problem`) and checks it on the
timed schedule. Every schedule the library returns has passed it.

Rules checked (violation ``kind`` in brackets):

* every task instance ``(block, m)`` for ``m < num_microbatches`` appears
  exactly once [``missing_task``, ``duplicate_task``, ``unknown_task``];
* its devices are exactly one of the block's options, in the option's
  order (the first is the lead device, where transfers start and end), and
  it lasts that option's duration (overrides applied). When several
  options have the same device tuple, the duration tells them apart; a
  task matching none is reported [``option_not_allowed``,
  ``wrong_duration``];
* it starts no earlier than its release [``release``];
* no two tasks overlap on a device; a multi-device task occupies all of
  its devices [``device_overlap``]. The one exception are the members of a
  *declared overlapped group* (tasks with the same ``overlap`` tag, devices
  and start whose blocks are exactly those of one of the problem's
  :class:`~schedsearch.problem.Overlap`, one task instance of each, of any
  micro-batches except that each of the overlap's ``same_microbatch`` sets
  shares one): they share the device, and each lasts the group's
  duration, which is the overlap's, or the longest member's own duration
  when that is longer [``wrong_duration``]. A tagged task that forms no
  declared group is checked as a plain task;
* for each edge ``u -> v`` and micro-batch ``m``: ``v`` starts no earlier
  than ``u`` ends; when the edge has a size > 0 and the two run on disjoint
  device sets, a transfer on a channel serving ``lead(u) -> lead(v)`` of the
  channel's transfer time lies between them [``dependency``,
  ``missing_transfer``, ``wrong_transfer``] (an edge between two members
  of one overlapped group is the group's internal order and is not checked);
* no transfer that the problem does not call for [``unexpected_transfer``];
* no two transfers overlap on a channel [``channel_overlap``];
* the memory level (initial + deltas at start + workspace while running)
  never exceeds a device's capacity [``memory``];
* fixed orders are kept [``fixed_order``].
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
import weakref
from collections import defaultdict
from collections.abc import Iterator

import attrs

from schedsearch.deadline import STRIDE, checkpoint, counted
from schedsearch.errors import ValidationFailedError

from schedsearch.problem import Channel, Edge, Overlap, Problem, TaskKey
from schedsearch.schedule import Schedule, TaskInstance, Transfer, memory_profile

__all__ = ["Violation", "validate", "assert_valid", "VIOLATION_KINDS"]

VIOLATION_KINDS = (
    "missing_task",
    "duplicate_task",
    "unknown_task",
    "option_not_allowed",
    "wrong_duration",
    "release",
    "device_overlap",
    "dependency",
    "missing_transfer",
    "wrong_transfer",
    "unexpected_transfer",
    "channel_overlap",
    "memory",
    "fixed_order",
)


@attrs.frozen
class Violation:
    """One broken rule: its ``kind`` (see ``VIOLATION_KINDS``) and a message."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


def _label(block: str, mb: int) -> str:
    return f"{block!r} (micro-batch {mb})"


_span = operator.attrgetter("start", "end")


def _overlapping_pairs(items: list) -> list[tuple]:
    """Every pair of half-open ``[start, end)`` items that overlap (a sweep by start)."""
    pairs = []
    active: list = []
    for item in sorted(items, key=_span):
        if active:
            start = item.start
            active = [a for a in active if a.end > start]
            pairs.extend((a, item) for a in active)
        active.append(item)
    return pairs


def validate(problem: Problem, schedule: Schedule) -> tuple[Violation, ...]:
    """Return every violation of ``schedule`` against ``problem`` (empty = valid).

    Every rule of the model is checked from the schedule alone (no code is
    shared with the encoders), and every violation is reported, not only
    the first.

    Examples
    --------
    >>> from schedsearch import Schedule, TaskInstance, validate
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 1, forward=1, backward=2)  # F0 -> F1 -> B1 -> B0 on d0, d1
    >>> def plan(f1_start):
    ...     return Schedule(tasks=[
    ...         TaskInstance(block="F0", microbatch=0, devices=("d0",), start=0, end=1),
    ...         TaskInstance(block="F1", microbatch=0, devices=("d1",), start=f1_start, end=f1_start + 1),
    ...         TaskInstance(block="B1", microbatch=0, devices=("d1",), start=2, end=4),
    ...         TaskInstance(block="B0", microbatch=0, devices=("d0",), start=4, end=6),
    ...     ])
    >>> validate(problem, plan(1))
    ()
    >>> for violation in validate(problem, plan(0)):
    ...     print(violation)
    [dependency] edge 'F0' -> 'F1', micro-batch 0: 'F1' starts at 0 before 'F0' ends at 1
    """
    last = _LAST_VALID[0]
    if last is not None and last[0]() is problem and last[1]() is schedule:
        return ()  # the very objects just found valid (both are frozen): a plan is checked once
    placed, option, out = _check_tasks(problem, schedule)
    out += _missing_tasks(problem, placed)
    groups, found = _check_groups(problem, placed, option)
    out += found
    out += _device_overlaps(placed, groups)
    transfers, found = _unique_transfers(schedule)
    out += found
    out += _check_edges(problem, placed, groups, transfers)
    out += _channel_overlaps(transfers)
    out += _memory_excursions(problem, placed, schedule)
    out += _fixed_orders(problem, placed)
    if not out:
        _LAST_VALID[0] = (weakref.ref(problem), weakref.ref(schedule))
    return tuple(out)


#: The last (problem, schedule) pair found valid, held weakly: a construction validates its plan and the
#: portfolio offering it asks again about the same two objects.
_LAST_VALID: list[tuple[weakref.ref, weakref.ref] | None] = [None]


#: A group's key (tag, devices, start), as :attr:`TaskInstance.group_key` gives it.
_GroupKey = tuple[str, frozenset[str], int]


@attrs.frozen
class _Groups:
    """The schedule's declared overlapped groups: each one's :class:`Overlap` by its key, and the group key of
    every member (a tagged task outside any declared group is in neither)."""

    rules: dict[_GroupKey, Overlap]
    member_of: dict[TaskKey, _GroupKey]


def _check_tasks(
    problem: Problem, schedule: Schedule
) -> tuple[dict[TaskKey, TaskInstance], dict[TaskKey, int], list[Violation]]:
    """The task instances the problem knows, once each, with the option each
    runs; and the violations of each one alone (unknown, duplicate, option,
    duration outside a group, release)."""
    out: list[Violation] = []
    blocks = problem.graph.by_name()
    n = problem.num_microbatches
    durations_of, release_of = problem.durations, problem.release_of
    placed: dict[TaskKey, TaskInstance] = {}
    chosen_option: dict[TaskKey, int] = {}  # task -> index of its option
    options_on: dict[tuple[str, tuple[str, ...]], list[int]] = {}  # (block, devices) -> its options there
    has_release = bool(problem.releases)
    for seen, t in enumerate(schedule.tasks):
        if not seen % STRIDE:
            checkpoint(STRIDE)
        b, mb = t.block, t.microbatch
        if b not in blocks or not 0 <= mb < n:
            out.append(Violation("unknown_task", f"task {_label(b, mb)} is not in the problem"))
            continue
        key = (b, mb)
        if key in placed:
            out.append(Violation("duplicate_task", f"task {_label(*key)} appears more than once"))
            continue
        placed[key] = t
        block = blocks[b]
        same_devices = options_on.get((b, t.devices))
        if same_devices is None:
            same_devices = options_on[(b, t.devices)] = [i for i, o in enumerate(block.options)
                                                         if o.devices == t.devices]
        if not same_devices:
            out.append(
                Violation(
                    "option_not_allowed",
                    f"task {_label(*key)} runs on {t.devices}, which is not one of its options "
                    f"{[o.devices for o in block.options]} (devices in the option's order, lead first)",
                )
            )
            continue
        durations = durations_of(b, mb)
        duration = t.end - t.start
        exact = [i for i in same_devices if durations[i] == duration]
        if t.overlap is not None:
            # a member of an overlapped group lasts the group's duration: checked with the groups
            chosen_option[key] = (exact or same_devices)[0]
        else:
            if exact:
                chosen_option[key] = exact[0]
            else:
                chosen_option[key] = same_devices[0]
                expected = sorted({durations[i] for i in same_devices})
                out.append(
                    Violation(
                        "wrong_duration",
                        f"task {_label(*key)} lasts {t.duration} on {t.devices}, expected "
                        f"{expected[0] if len(expected) == 1 else 'one of ' + str(expected)}",
                    )
                )
        if has_release:
            release = release_of(b, mb)
            if t.start < release:
                out.append(Violation("release", f"task {_label(*key)} starts at {t.start} before its release {release}"))
    return placed, chosen_option, out


def _missing_tasks(problem: Problem, placed: dict[TaskKey, TaskInstance]) -> list[Violation]:
    """Every task instance of the problem the schedule lacks."""
    return [
        Violation("missing_task", f"task {_label(b.name, m)} is not scheduled")
        for m in counted(range(problem.num_microbatches), len(problem.graph.blocks))
        for b in problem.graph.blocks
        if (b.name, m) not in placed
    ]


def _check_groups(
    problem: Problem, placed: dict[TaskKey, TaskInstance], option: dict[TaskKey, int]
) -> tuple[_Groups, list[Violation]]:
    """The declared overlapped groups of the schedule, and the durations that break the rules.

    A declared group lasts its overlap's duration (or its longest member's
    own, when longer); a tagged task outside any declared group is a plain
    task and lasts its option's duration.
    """
    out: list[Violation] = []
    tagged: dict[_GroupKey, list[TaskInstance]] = defaultdict(list)
    device_sets: dict[tuple[str, ...], frozenset[str]] = {}  # each task's devices as a set, built once per tuple
    for t in counted(placed.values()):
        if t.overlap is not None:
            devices = device_sets.get(t.devices)
            if devices is None:
                devices = device_sets[t.devices] = frozenset(t.devices)
            tagged[(t.overlap, devices, t.start)].append(t)
    groups = _Groups(rules={}, member_of={})
    shapes: dict[tuple[str, ...], tuple[Overlap | None, tuple[tuple[int, ...], ...], int | None]] = {}
    durations, member_of = problem.durations, groups.member_of
    for gkey, members in tagged.items():
        names = tuple(m.block for m in members)
        shape = shapes.get(names)
        if shape is None:
            shape = shapes[names] = _group_shape(problem, names)
        rule, tied, known_length = shape
        if rule is not None and any(len({members[i].microbatch for i in positions}) > 1 for positions in tied):
            rule = None  # its members must share a micro-batch: not a group the problem declares
        if rule is not None:
            groups.rules[gkey] = rule
            lasts = rule.duration
            for m in members:
                key = (m.block, m.microbatch)
                member_of[key] = gkey
                if known_length is None:
                    lasts = max(lasts, durations(m.block, m.microbatch)[option.get(key, 0)])
            if known_length is not None:
                lasts = known_length
            for m in members:
                if m.end - m.start != lasts:
                    out.append(
                        Violation(
                            "wrong_duration",
                            f"task {_label(*m.key)} lasts {m.duration} in the overlapped group "
                            f"{rule.name or '+'.join(rule.blocks)!r}, which lasts {lasts}",
                        )
                    )
            continue
        for m in members:
            if m.key not in option:
                continue  # its option was already reported
            want = durations(m.block, m.microbatch)[option[m.key]]
            if m.duration != want:
                out.append(
                    Violation(
                        "wrong_duration",
                        f"task {_label(*m.key)} lasts {m.duration} on {m.devices}, expected {want} (it is tagged "
                        f"overlapped {m.overlap!r}, but its group {sorted(names)} is not an overlap the problem declares)",
                    )
                )
    return groups, out


def _group_shape(
    problem: Problem, names: tuple[str, ...]
) -> tuple[Overlap | None, tuple[tuple[int, ...], ...], int | None]:
    """The overlap that tasks of blocks ``names`` (in this order) tagged together form when their
    micro-batches allow it, the positions in ``names`` of each of its ``same_microbatch`` sets (whose
    members must share a micro-batch), and how long every such group lasts when that is known from the
    blocks alone (each member block has one option and no instance overrides its duration; else None);
    None when they form none the problem declares (one instance per member block)."""
    if len(names) < 2 or len(set(names)) != len(names):
        return None, (), None
    rule = problem.overlap_for(names)
    if rule is None:
        return None, (), None
    tied = tuple(tuple(names.index(b) for b in tied) for tied in rule.same_microbatch)
    blocks = problem.graph.by_name()
    if problem.duration_overrides or any(len(blocks[b].options) != 1 for b in names):
        return rule, tied, None
    return rule, tied, max(rule.duration, *(blocks[b].options[0].duration for b in names))


def _device_overlaps(placed: dict[TaskKey, TaskInstance], groups: _Groups) -> list[Violation]:
    """Every pair of tasks that overlap on a device, members of one declared group excepted (a sweep by start,
    as :func:`_overlapping_pairs`, that skips the pairs inside a group as it finds them)."""
    member_of = groups.member_of
    per_device: dict[str, list[TaskInstance]] = defaultdict(list)
    for t in counted(placed.values()):
        for d in t.devices:
            per_device[d].append(t)
    out: list[Violation] = []
    for d, tasks in per_device.items():
        checkpoint(len(tasks))
        active: list[TaskInstance] = []
        for t in sorted(tasks, key=_span):
            if active:
                start = t.start
                active = [a for a in active if a.end > start]
                if active:
                    g = member_of.get((t.block, t.microbatch)) if member_of else None
                    out += [
                        Violation(
                            "device_overlap",
                            f"device {d!r}: task {_label(*a.key)} [{a.start}, {a.end}) overlaps "
                            f"task {_label(*t.key)} [{t.start}, {t.end})",
                        )
                        for a in active
                        if g is None or g != member_of.get((a.block, a.microbatch))
                    ]
            active.append(t)
    return out


def _unique_transfers(schedule: Schedule) -> tuple[dict[tuple[str, str, int], Transfer], list[Violation]]:
    """The schedule's transfers by edge and micro-batch, the first of each; a repeat is a violation."""
    out: list[Violation] = []
    transfers: dict[tuple[str, str, int], Transfer] = {}
    for tr in schedule.transfers:
        if tr.key in transfers:
            out.append(Violation("unexpected_transfer", f"transfer {tr.src!r} -> {tr.dst!r} (micro-batch {tr.microbatch}) appears more than once"))
            continue
        transfers[tr.key] = tr
    return transfers, out


def _check_edges(
    problem: Problem,
    placed: dict[TaskKey, TaskInstance],
    groups: _Groups,
    transfers: dict[tuple[str, str, int], Transfer],
) -> list[Violation]:
    """Every edge of every micro-batch: its precedence, and its transfer when
    the two ends run on disjoint devices; then the transfers no edge calls for."""
    out: list[Violation] = []
    expected: set[tuple[str, str, int]] = set()
    channels = {c.name: c for c in problem.cluster.channels}
    member_of = groups.member_of
    disjoint: _DevicePairs = {}
    rules = groups.rules
    for e in problem.graph.edges:
        src, dst, sized = e.src, e.dst, e.size > 0
        backwards: dict[int, bool] = {}  # per overlap (by identity): it runs e's two ends against e's order
        checkpoint(problem.num_microbatches)
        for m in range(problem.num_microbatches):
            u, v = placed.get((src, m)), placed.get((dst, m))
            if u is None or v is None:
                continue
            if v.start < u.end:  # late, unless the two are members of one group (which share a start)
                g = member_of.get((src, m)) if u.overlap is not None and v.overlap is not None else None
                if g is None or g != member_of.get((dst, m)):
                    out.append(_late(e, m, u, v))
                else:
                    rule = rules[g]
                    wrong = backwards.get(id(rule))
                    if wrong is None:
                        wrong = backwards[id(rule)] = rule.blocks.index(e.dst) < rule.blocks.index(e.src)
                    if wrong:
                        out.append(_backwards(rule, e, m))
            if sized and _disjoint(u.devices, v.devices, disjoint):
                key = (e.src, e.dst, m)
                expected.add(key)
                out += _check_transfer(e, m, u, v, transfers.get(key), channels)
    out += [
        Violation(
            "unexpected_transfer",
            f"transfer {tr.src!r} -> {tr.dst!r} (micro-batch {tr.microbatch}) on {tr.channel!r} "
            f"is not called for by the problem",
        )
        for key, tr in transfers.items()
        if key not in expected
    ]
    return out


_DevicePairs = dict[tuple[tuple[str, ...], tuple[str, ...]], bool]


def _disjoint(a: tuple[str, ...], b: tuple[str, ...], known: _DevicePairs) -> bool:
    """Whether device tuples ``a`` and ``b`` share no device (each pair worked out once, kept in ``known``)."""
    found = known.get((a, b))
    if found is None:
        found = known[(a, b)] = not (set(a) & set(b))
    return found


def _backwards(rule: Overlap, e: Edge, m: int) -> Violation:
    """The violation of a group that runs edge ``e``'s two members (micro-batch ``m``) in the wrong order."""
    return Violation(
        "dependency",
        f"edge {e.src!r} -> {e.dst!r}, micro-batch {m}: the overlapped group "
        f"{rule.name or '+'.join(rule.blocks)!r} runs {e.dst!r} before {e.src!r}",
    )


def _late(e: Edge, m: int, u: TaskInstance, v: TaskInstance) -> Violation:
    """The violation of ``v`` (micro-batch ``m``) starting before ``u``, its predecessor along ``e``, ends."""
    return Violation(
        "dependency",
        f"edge {e.src!r} -> {e.dst!r}, micro-batch {m}: {e.dst!r} starts at {v.start} before {e.src!r} ends at {u.end}",
    )


def _check_transfer(
    e: Edge, m: int, u: TaskInstance, v: TaskInstance, tr: Transfer | None, channels: dict[str, Channel]
) -> list[Violation]:
    """The transfer edge ``e`` needs in micro-batch ``m``: present, on a
    channel serving the lead devices, of the channel's transfer time, between
    the end of ``u`` and the start of ``v``."""
    label = f"edge {e.src!r} -> {e.dst!r}, micro-batch {m}"
    if tr is None:
        return [Violation("missing_transfer", f"{label}: runs on {u.devices} and {v.devices} but has no transfer")]
    ch = channels.get(tr.channel)
    if ch is None:
        return [Violation("wrong_transfer", f"{label}: transfer names unknown channel {tr.channel!r}")]
    out: list[Violation] = []
    # the lead device is the first device of the task's option (its devices are in the option's order)
    lead_u, lead_v = u.devices[0], v.devices[0]
    a, b = ch.endpoints
    if not ((lead_u, lead_v) == (a, b) or (not ch.directed and (lead_u, lead_v) == (b, a))):
        out.append(
            Violation(
                "wrong_transfer",
                f"{label}: channel {ch.name!r} ({a!r}-{b!r}) does not serve {lead_u!r} -> {lead_v!r}",
            )
        )
    want = ch.latency + e.size * ch.time_per_unit
    if tr.end - tr.start != want:
        out.append(
            Violation("wrong_transfer", f"{label}: transfer lasts {tr.end - tr.start} on {ch.name!r}, expected {want}")
        )
    if tr.start < u.end:
        out.append(Violation("dependency", f"{label}: transfer starts at {tr.start} before {e.src!r} ends at {u.end}"))
    if v.start < tr.end:
        out.append(Violation("dependency", f"{label}: {e.dst!r} starts at {v.start} before its transfer ends at {tr.end}"))
    return out


def _channel_overlaps(transfers: dict[tuple[str, str, int], Transfer]) -> list[Violation]:
    """Every pair of transfers of positive length that overlap on a channel."""
    per_channel: dict[str, list[Transfer]] = defaultdict(list)
    for tr in transfers.values():
        if tr.end > tr.start:
            per_channel[tr.channel].append(tr)
    return [
        Violation(
            "channel_overlap",
            f"channel {ch_name!r}: transfer {a.src!r} -> {a.dst!r} (micro-batch {a.microbatch}) "
            f"[{a.start}, {a.end}) overlaps transfer {tr.src!r} -> {tr.dst!r} "
            f"(micro-batch {tr.microbatch}) [{tr.start}, {tr.end})",
        )
        for ch_name, trs in per_channel.items()
        for a, tr in _overlapping_pairs(trs)
    ]


def _memory_excursions(problem: Problem, placed: dict[TaskKey, TaskInstance], schedule: Schedule) -> list[Violation]:
    """One violation per excursion of a device's memory level above its capacity (with its peak).

    The level is of the tasks in ``placed`` (each known task instance once): the schedule's own tasks when
    they are exactly those."""
    out: list[Violation] = []
    if not any(d.memory is not None for d in problem.cluster.devices):
        return out
    tasks = schedule if len(placed) == len(schedule.tasks) else Schedule(tasks=list(placed.values()))
    profile = memory_profile(problem, tasks)
    for d in problem.cluster.devices:
        if d.memory is None:
            continue
        steps = profile.get(d.name, [])
        checkpoint(len(steps))

        inside = False
        for i, (time, level) in enumerate(steps):
            if level > d.memory and not inside:
                inside = True
                peak = level
                for _, later in steps[i:]:
                    if later <= d.memory:
                        break
                    peak = max(peak, later)
                out.append(
                    Violation(
                        "memory",
                        f"device {d.name!r}: memory level {level} exceeds capacity {d.memory} at time {time}"
                        f" (peak {peak})",
                    )
                )
            elif level <= d.memory:
                inside = False
    return out


def _fixed_orders(problem: Problem, placed: dict[TaskKey, TaskInstance]) -> list[Violation]:
    """Every consecutive pair of a fixed order whose second task starts before the first ends."""
    out: list[Violation] = []
    for i, order in enumerate(problem.fixed_orders):
        for (b0, m0), (b1, m1) in zip(order, order[1:]):
            t0, t1 = placed.get((b0, m0)), placed.get((b1, m1))
            if t0 is not None and t1 is not None and t1.start < t0.end:
                out.append(
                    Violation(
                        "fixed_order",
                        f"fixed order {i}: {_label(b1, m1)} starts at {t1.start} before {_label(b0, m0)} ends at {t0.end}",
                    )
                )
    return out


def assert_valid(problem: Problem, schedule: Schedule, what: str = "schedule") -> Schedule:
    """Return ``schedule`` if it validates; raise :class:`ValidationFailedError` otherwise."""
    violations = validate(problem, schedule)
    if violations:  # the first three in the message (a line each); every one in the error's ``violations``
        shown = "\n  ".join(str(v) for v in violations[:3])
        more = f"\n  ... and {len(violations) - 3} more" if len(violations) > 3 else ""
        raise ValidationFailedError(
            f"{what} fails validation with {len(violations)} violation(s):\n  {shown}{more}", violations
        )
    return schedule


_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("schedsearch_validation_deferred", default=False)


@contextlib.contextmanager
def validation_deferred() -> Iterator[None]:
    """Within it, :func:`~schedsearch.handcrafted.simulate.schedule_from_orders` leaves the validation to
    its caller (internal: the planner's).

    For a caller that validates the plan it returns once, against the
    problem it returns it for (the validator takes about as long as the
    simulation at scale): the constructions run inside it return their
    schedule unvalidated, and the caller must run
    :func:`~schedsearch.validate.validate` on it before using it.

    Examples
    --------
    >>> from schedsearch import validate
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.validate import validation_deferred
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 4)
    >>> with validation_deferred():
    ...     schedule = one_f_one_b(problem)
    >>> validate(problem, schedule)
    ()
    """
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def validation_is_deferred() -> bool:
    """Whether the code runs inside :func:`validation_deferred` (a construction's schedule is then unchecked:
    whatever trusts a construction to have validated its plan, a search's pool say, must check it itself)."""
    return _DEFERRED.get()
