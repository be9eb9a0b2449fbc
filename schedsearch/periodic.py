"""Periodic schedules: a repetend with its warmup and cooldown (solver-free).

Conventions
-----------
A :class:`Repetend` of period ``P`` and fold ``k`` (micro-batches per
period, 1 for Tessel's repetends) holds every block of the graph ``k``
times. Each of its tasks ``r`` (block ``b_r``) has one placement (devices,
duration), a micro-batch *offset* ``o_r >= 0`` and a *phase* ``0 <= t_r <
P``; the ``k`` offsets of a block are distinct modulo ``k``. Instance ``j``
(``j = 0, 1, ...``) of the repetend runs task ``r`` on micro-batch ``k j +
o_r``, starting at ``repetend_start + j P + t_r`` (Tessel, Eq. 3, for
``k = 1``, with the sign chosen so that offsets are non-increasing along
dependencies: a forward block works on a later micro-batch than the
backward blocks that run beside it). Equivalently block ``b`` of micro-batch
``m`` starts at ``repetend_start + P (m - o_r) / k + t_r`` for the task
``r`` of ``b`` with ``o_r = m (mod k)``: a modulo schedule of initiation
interval ``P / k`` per micro-batch. The smallest ``o_r // k`` is 0.

Phases lie in one period but a task may end after it: instance ``j + 1``
starts ``P`` after instance ``j`` while instance ``j``'s last tasks still run
(Tessel's compaction ``E_R + W_R`` is built in: ``P`` is the distance
between consecutive instances, not the length of one instance, which is
:attr:`Repetend.span`).

A steady state is valid when, for every device ``d``:

* no two tasks overlap modulo ``P`` (each occupies ``[t_r, t_r + p_r)``
  taken modulo ``P``);
* for each edge ``u -> v`` and the tasks ``r``, ``q`` of ``u`` and ``v``
  with ``o_r = o_q (mod k)`` (same micro-batch): ``k t_q - P o_q >= k t_r -
  P o_r + k p_r``; for ``k = 1``: ``t_q + P (o_r - o_q) >= t_r + p_r``,
  hence ``o_r >= o_q`` (Tessel's Property 4.2) and the micro-batches of one
  block run in order (Property 4.1);
* memory: the *entry level* ``E_d = initial_d + sum_r (o_r // k) m_r``
  (the deltas of the warmup, whose tasks all start before instance 0) plus
  the deltas started so far in the instance plus the running task's
  workspace never exceeds the capacity. The net change of one micro-batch,
  ``sum_b m_b``, must be ``<= 0`` on a device with a capacity, so instance
  0 is the fullest.

With ``O`` the largest offset, a schedule of ``n >= O + 1`` micro-batches
has ``R = (n - 1 - O) // k + 1`` instances, and, with ``rho = (n - 1 - O)
mod k`` (Tessel, Eq. 5 and 6 for ``k = 1``):

* warmup: task ``(b_r, o_r - k i)`` for ``i >= 1`` while it is ``>= 0``;
* instances ``0 .. R-1`` of the repetend;
* cooldown: the remaining tasks ``(b_r, k j + o_r)``, ``j >= R``, below
  ``n``.

A :class:`PeriodicSchedule` stores the warmup and, for each ``rho``, the
cooldown as timed schedules for ``R = 1``; :meth:`PeriodicSchedule.unroll`
shifts that cooldown by ``(R - 1) P`` in time and ``(R - 1) k``
micro-batches, inserts the instances, and then *tightens*: every task moves
to the earliest start its dependencies and its predecessor on each of its
devices allow, keeping every device's order. Tightening never breaks a
rule: starts only move earlier, every dependency and device order is kept,
and the memory level on a device depends only on the order of the tasks
there.

This module never imports a solver.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch.errors import FormatError, InvalidScheduleError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, repetend_bubble
from schedsearch.validate import Violation

__all__ = [
    "RepetendTask",
    "Repetend",
    "PeriodicSchedule",
    "check_repetend",
    "tighten",
    "warmup_keys",
    "cooldown_keys",
    "PERIODIC_FORMAT_VERSION",
]

PERIODIC_FORMAT_VERSION = 1


def _int(entity: str, field: str, value: Any, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidScheduleError(f"{entity}: {field!r} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidScheduleError(f"{entity}: {field!r} must be >= {minimum}, got {value!r}")


def _devices(value: Iterable[str] | str) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class RepetendTask:
    """Block ``block`` in the repetend: micro-batch offset, phase and placement."""

    block: str
    offset: int
    phase: int
    devices: tuple[str, ...] = attrs.field(converter=_devices)
    duration: int

    def __attrs_post_init__(self) -> None:
        entity = f"repetend task {self.block!r}"
        _int(entity, "offset", self.offset, 0)
        _int(entity, "phase", self.phase, 0)
        _int(entity, "duration", self.duration, 1)
        if not self.devices:
            raise InvalidScheduleError(f"{entity}: 'devices' must name at least one device, got ()")

    def to_dict(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "offset": self.offset,
            "phase": self.phase,
            "devices": list(self.devices),
            "duration": self.duration,
        }


def _repetend_tasks(value: Iterable[Any]) -> tuple[RepetendTask, ...]:
    tasks = [t if isinstance(t, RepetendTask) else RepetendTask(**t) for t in value]
    return tuple(sorted(tasks, key=lambda t: (t.phase, t.devices, t.block, t.offset)))


@attrs.frozen(kw_only=True)
class Repetend:
    """One period of a steady state: every block ``fold`` times, with offset and phase.

    Parameters
    ----------
    period:
        Time between the starts of consecutive instances (>= 1).
    tasks:
        ``fold`` :class:`RepetendTask` per block, phases in ``[0, period)``,
        the offsets of a block distinct modulo ``fold``.
    fold:
        Micro-batches per period (1 = Tessel's repetend: each block once).
    """

    period: int
    tasks: tuple[RepetendTask, ...] = attrs.field(converter=_repetend_tasks)
    fold: int = 1

    def __attrs_post_init__(self) -> None:
        _int("repetend", "period", self.period, 1)
        _int("repetend", "fold", self.fold, 1)
        if not self.tasks:
            raise InvalidScheduleError("repetend: 'tasks' must hold at least one task, got ()")
        residues: dict[str, set[int]] = {}
        for t in self.tasks:
            if t.phase >= self.period:
                raise InvalidScheduleError(
                    f"repetend task {t.block!r}: 'phase' must be < the period {self.period}, got {t.phase}"
                )
            seen = residues.setdefault(t.block, set())
            if t.offset % self.fold in seen:
                raise InvalidScheduleError(
                    f"repetend: block {t.block!r} has two tasks with offsets equal modulo the fold {self.fold}"
                )
            seen.add(t.offset % self.fold)
        for block, seen in residues.items():
            if len(seen) != self.fold:
                raise InvalidScheduleError(
                    f"repetend: block {block!r} must appear {self.fold} time(s) (the fold), got {len(seen)}"
                )
        low = min(t.offset // self.fold for t in self.tasks)
        if low != 0:
            raise InvalidScheduleError(f"repetend: the smallest offset // fold must be 0, got {low}")

    @property
    def blocks(self) -> tuple[str, ...]:
        """Block names, each once, in order of first phase."""
        return tuple(dict.fromkeys(t.block for t in self.tasks))

    @property
    def offsets(self) -> dict[str, tuple[int, ...]]:
        """Micro-batch offsets of every block (one per fold), ascending."""
        out: dict[str, list[int]] = {}
        for t in self.tasks:
            out.setdefault(t.block, []).append(t.offset)
        return {b: tuple(sorted(v)) for b, v in out.items()}

    @property
    def max_offset(self) -> int:
        return max(t.offset for t in self.tasks)

    @property
    def num_microbatches(self) -> int:
        """Micro-batches from 0 that instance 0 reaches (Tessel's repetend size ``N_R``)."""
        return self.max_offset + 1

    @property
    def rate(self) -> float:
        """Period per micro-batch: ``period / fold``."""
        return self.period / self.fold

    @property
    def span(self) -> int:
        """Length of one instance: last end minus first start (may exceed the period)."""
        return max(t.phase + t.duration for t in self.tasks) - min(t.phase for t in self.tasks)

    def busy(self) -> dict[str, int]:
        """Busy time per device in one period."""
        out: dict[str, int] = {}
        for t in self.tasks:
            for d in t.devices:
                out[d] = out.get(d, 0) + t.duration
        return out

    def bubble(self, devices: Iterable[str] | None = None) -> int:
        """Tessel's repetend bubble: period minus busy time, worst device."""
        busy = self.busy()
        if devices is not None:
            busy = {d: busy.get(d, 0) for d in devices}
        return repetend_bubble(self.period, busy)

    def latency(self) -> int:
        """Time from the first start to the last end of one micro-batch (worst residue)."""
        worst = 0
        for c in range(self.fold):
            mine = [t for t in self.tasks if t.offset % self.fold == c]
            starts = [t.phase - self.period * (t.offset // self.fold) for t in mine]
            worst = max(worst, max(s + t.duration for s, t in zip(starts, mine)) - min(starts))
        return worst

    def entry_memory(self, problem: Problem) -> dict[str, int]:
        """Memory level on each device when instance 0 starts (after the warmup)."""
        blocks = problem.graph.by_name()
        level = {d: problem.initial_memory_of(d) for d in problem.cluster.device_names}
        for t in self.tasks:
            for d in t.devices:
                level[d] = level.get(d, 0) + (t.offset // self.fold) * blocks[t.block].memory
        return level

    def to_dict(self) -> dict[str, Any]:
        return {"period": self.period, "fold": self.fold, "tasks": [t.to_dict() for t in self.tasks]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Repetend:
        try:
            return cls(period=d["period"], tasks=d["tasks"], fold=d.get("fold", 1))
        except (KeyError, TypeError) as exc:
            raise FormatError(f"repetend document: malformed ({exc})") from None

    def __str__(self) -> str:
        parts = ", ".join(f"{t.block}@{t.phase}+{t.offset}" for t in self.tasks)
        fold = f", fold {self.fold}" if self.fold > 1 else ""
        return f"Repetend(period {self.period}{fold}, span {self.span}, N_R {self.num_microbatches}: {parts})"


def check_repetend(problem: Problem, repetend: Repetend) -> tuple[Violation, ...]:
    """Every violation of the steady-state rules (see the module docstring).

    Independent of the encoders: it walks one period of the steady state
    unit by unit. Kinds: ``missing_task``, ``unknown_task``,
    ``option_not_allowed``, ``wrong_duration``, ``dependency``,
    ``device_overlap``, ``memory``.
    """
    out: list[Violation] = []
    blocks = problem.graph.by_name()
    P, k = repetend.period, repetend.fold
    seen: set[str] = set()
    for t in repetend.tasks:
        if t.block not in blocks:
            out.append(Violation("unknown_task", f"repetend task {t.block!r} is not a block of the problem"))
            continue
        seen.add(t.block)
        b = blocks[t.block]
        match = [o for o in b.options if set(o.devices) == set(t.devices)]
        if not match:
            out.append(Violation("option_not_allowed", f"repetend task {t.block!r} runs on {t.devices}, not an option"))
        elif match[0].duration != t.duration:
            out.append(
                Violation("wrong_duration", f"repetend task {t.block!r} lasts {t.duration}, expected {match[0].duration}")
            )
    for name in blocks:
        if name not in seen:
            out.append(Violation("missing_task", f"block {name!r} is not in the repetend"))
    if out:
        return tuple(out)
    task = {(t.block, t.offset % k): t for t in repetend.tasks}
    for e in problem.graph.edges:
        for c in range(k):
            u, v = task[(e.src, c)], task[(e.dst, c)]
            # both run micro-batch m = o (mod k): start = phase + P (m - o) / k
            scaled_u = k * u.phase - P * u.offset
            scaled_v = k * v.phase - P * v.offset
            if scaled_v < scaled_u + k * u.duration:
                out.append(
                    Violation(
                        "dependency",
                        f"edge {e.src!r} -> {e.dst!r} (residue {c}): {e.dst!r} (phase {v.phase}, offset {v.offset}) "
                        f"starts before {e.src!r} (phase {u.phase}, offset {u.offset}) ends",
                    )
                )
    for d in problem.cluster.device_names:
        owner: dict[int, str] = {}
        for t in repetend.tasks:
            if d not in t.devices:
                continue
            if t.duration > P:
                out.append(Violation("device_overlap", f"device {d!r}: task {t.block!r} lasts {t.duration} > period {P}"))
                continue
            for step in range(t.phase, t.phase + t.duration):
                slot = step % P
                if slot in owner:
                    out.append(
                        Violation(
                            "device_overlap",
                            f"device {d!r}: tasks {owner[slot]!r} and {t.block!r} both run at phase {slot}",
                        )
                    )
                    break
                owner[slot] = t.block
    entry = repetend.entry_memory(problem)
    for dev in problem.cluster.devices:
        d, cap = dev.name, dev.memory
        if cap is None:
            continue
        on = [t for t in repetend.tasks if d in t.devices]
        net = sum(blocks[t.block].memory for t in on)
        if net > 0:
            out.append(Violation("memory", f"device {d!r}: each period leaves {net} more memory behind"))
            continue
        level = entry[d]
        if level > cap:
            out.append(Violation("memory", f"device {d!r}: entry level {level} exceeds capacity {cap}"))
        for t in sorted(on, key=lambda t: t.phase):
            b = blocks[t.block]
            level += b.memory
            if level + b.workspace > cap:
                out.append(
                    Violation(
                        "memory",
                        f"device {d!r}: level {level + b.workspace} at phase {t.phase} ({t.block!r}) "
                        f"exceeds capacity {cap}",
                    )
                )
    return tuple(out)


def tighten(schedule: Schedule, problem: Problem) -> Schedule:
    """Move every task to its earliest start, keeping each device's order.

    A task starts at the latest end among its dependency predecessors (same
    micro-batch) and its predecessor on each of its devices. Tasks are
    visited by their current start, which is a topological order of these
    constraints, so one pass suffices. Transfers are not supported (the
    repetend search does not produce any).
    """
    if schedule.transfers:
        raise InvalidScheduleError("tighten: schedules with transfers are not supported")
    preds: dict[str, list[str]] = {b.name: [] for b in problem.graph.blocks}
    for e in problem.graph.edges:
        preds[e.dst].append(e.src)
    end: dict[tuple[str, int], int] = {}
    device_free: dict[str, int] = {}
    out: list[TaskInstance] = []
    for t in schedule.tasks:  # sorted by start
        start = 0
        for src in preds.get(t.block, ()):
            e = end.get((src, t.microbatch))
            if e is not None and e > start:
                start = e
        for d in t.devices:
            f = device_free.get(d, 0)
            if f > start:
                start = f
        finish = start + (t.end - t.start)
        end[t.key] = finish
        for d in t.devices:
            device_free[d] = finish
        out.append(TaskInstance(block=t.block, microbatch=t.microbatch, devices=t.devices, start=start, end=finish))
    return Schedule(tasks=out, name=schedule.name)


def warmup_keys(repetend: Repetend) -> list[tuple[str, int]]:
    """Tasks of the warmup: ``(b_r, o_r - k i)`` for ``i >= 1`` while ``>= 0``."""
    k = repetend.fold
    return [(t.block, t.offset - k * i) for t in repetend.tasks for i in range(1, t.offset // k + 1)]


def cooldown_keys(repetend: Repetend, residue: int = 0) -> list[tuple[str, int]]:
    """Tasks of the cooldown after one instance, for ``n = O + 1 + residue``:
    ``(b_r, k j + o_r)`` for ``j >= 1`` up to micro-batch ``O + residue``."""
    k, O = repetend.fold, repetend.max_offset
    return [
        (t.block, k * j + t.offset)
        for t in repetend.tasks
        for j in range(1, (O + residue - t.offset) // k + 1)
    ]


def _schedule_field(value: Any) -> Schedule:
    if isinstance(value, Schedule):
        return value
    return Schedule(tasks=value)


def _schedules_field(value: Any) -> tuple[Schedule, ...]:
    if isinstance(value, Schedule):
        return (value,)
    return tuple(_schedule_field(v) for v in value)


@attrs.frozen(kw_only=True)
class PeriodicSchedule:
    """Warmup, repetend and cooldown: a schedule for any number of micro-batches.

    Parameters
    ----------
    problem:
        The problem the schedule was searched for (its graph and cluster;
        its ``num_microbatches`` is not used by :meth:`unroll`).
    repetend:
        The steady state.
    warmup:
        Timed warmup tasks (see :func:`warmup_keys`).
    repetend_start:
        Start time of instance 0.
    cooldowns:
        One timed cooldown per residue ``rho`` in ``0 .. fold - 1``: the
        cooldown of the schedule with one instance and ``O + 1 + rho``
        micro-batches (see :func:`cooldown_keys`). A single schedule is
        accepted for ``fold == 1``.
    """

    problem: Problem
    repetend: Repetend
    warmup: Schedule = attrs.field(converter=_schedule_field)
    repetend_start: int
    cooldowns: tuple[Schedule, ...] = attrs.field(converter=_schedules_field)
    name: str = ""

    def __attrs_post_init__(self) -> None:
        _int("periodic schedule", "repetend_start", self.repetend_start, 0)
        rep = self.repetend
        if len(self.cooldowns) != rep.fold:
            raise InvalidScheduleError(
                f"periodic schedule: 'cooldowns' must hold one schedule per residue ({rep.fold}), "
                f"got {len(self.cooldowns)}"
            )
        parts = [("warmup", self.warmup, warmup_keys(rep))]
        parts += [(f"cooldowns[{rho}]", c, cooldown_keys(rep, rho)) for rho, c in enumerate(self.cooldowns)]
        for label, sched, keys in parts:
            want, got = set(keys), {t.key for t in sched.tasks}
            if got != want or len(sched.tasks) != len(want):
                raise InvalidScheduleError(
                    f"periodic schedule: {label!r} must hold exactly the tasks the offsets give; "
                    f"missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}"
                )

    # -- figures -------------------------------------------------------------

    @property
    def period(self) -> int:
        return self.repetend.period

    @property
    def fold(self) -> int:
        return self.repetend.fold

    @property
    def rate(self) -> float:
        """Period per micro-batch."""
        return self.repetend.rate

    @property
    def offsets(self) -> dict[str, tuple[int, ...]]:
        return self.repetend.offsets

    @property
    def cooldown(self) -> Schedule:
        """The cooldown of the smallest unrolled schedule (residue 0)."""
        return self.cooldowns[0]

    @property
    def min_microbatches(self) -> int:
        """Smallest ``n`` :meth:`unroll` accepts: the largest offset plus one."""
        return self.repetend.max_offset + 1

    def repetend_bubble(self) -> int:
        """Tessel's bubble of the steady state (period minus busy time, worst device)."""
        return self.repetend.bubble(self.problem.cluster.device_names)

    def problem_for(self, num_microbatches: int) -> Problem:
        """The problem with ``num_microbatches`` micro-batches (to validate an unrolled schedule)."""
        return self.problem.with_(num_microbatches=num_microbatches)

    # -- unrolling -----------------------------------------------------------

    def layout(self, num_microbatches: int) -> tuple[int, int]:
        """``(R, rho)``: instances and cooldown residue of an ``n``-micro-batch schedule."""
        if isinstance(num_microbatches, bool) or not isinstance(num_microbatches, int):
            raise InvalidScheduleError(f"unroll: 'num_microbatches' must be an integer, got {num_microbatches!r}")
        if num_microbatches < self.min_microbatches:
            raise InvalidScheduleError(
                f"unroll: 'num_microbatches' must be >= {self.min_microbatches} (largest offset + 1), "
                f"got {num_microbatches}"
            )
        extra = num_microbatches - self.min_microbatches
        return extra // self.fold + 1, extra % self.fold

    def parts(self, num_microbatches: int) -> dict[tuple[str, int], tuple[str, int]]:
        """Part of every task of the unrolled schedule: ``("warmup", -1)``,
        ``("repetend", j)`` for instance ``j``, or ``("cooldown", -1)``."""
        R, rho = self.layout(num_microbatches)
        k = self.fold
        out: dict[tuple[str, int], tuple[str, int]] = {}
        for t in self.warmup.tasks:
            out[t.key] = ("warmup", -1)
        for j in range(R):
            for rt in self.repetend.tasks:
                out[(rt.block, k * j + rt.offset)] = ("repetend", j)
        for t in self.cooldowns[rho].tasks:
            out[(t.block, t.microbatch + k * (R - 1))] = ("cooldown", -1)
        return out

    def marks(self, num_microbatches: int) -> dict[tuple[str, int], dict[str, Any]]:
        """Per-task trace arguments naming its part (for Chrome traces)."""
        out = {}
        for key, (part, j) in self.parts(num_microbatches).items():
            out[key] = {"part": part} if j < 0 else {"part": part, "instance": j}
        return out

    def concatenated(self, num_microbatches: int) -> Schedule:
        """Warmup, the instances and the shifted cooldown, before tightening."""
        R, rho = self.layout(num_microbatches)
        P, k = self.repetend.period, self.fold
        tasks = list(self.warmup.tasks)
        base = self.repetend_start
        for j in range(R):
            at = base + j * P
            for rt in self.repetend.tasks:
                s = at + rt.phase
                tasks.append(
                    TaskInstance(
                        block=rt.block, microbatch=k * j + rt.offset, devices=rt.devices, start=s, end=s + rt.duration
                    )
                )
        shift = (R - 1) * P
        for t in self.cooldowns[rho].tasks:
            tasks.append(t.shifted(shift, k * (R - 1)))
        return Schedule(tasks=tasks, name=self.name)

    def unroll(self, num_microbatches: int, tighten_schedule: bool = True) -> Schedule:
        """A schedule of ``num_microbatches`` micro-batches (time linear in it).

        Raises :class:`~schedsearch.errors.InvalidScheduleError` when
        ``num_microbatches`` is below :attr:`min_microbatches`.
        """
        schedule = self.concatenated(num_microbatches)
        if tighten_schedule:
            schedule = tighten(schedule, self.problem)
        return schedule

    def repetend_window(self, num_microbatches: int, instance: int | None = None) -> tuple[int, int]:
        """Time window ``[first start, last end)`` of one instance in the unrolled
        (tightened) schedule; the middle instance by default."""
        R, _ = self.layout(num_microbatches)
        j = R // 2 if instance is None else instance
        if not 0 <= j < R:
            raise InvalidScheduleError(f"repetend_window: 'instance' must be in 0..{R - 1}, got {instance}")
        schedule = self.unroll(num_microbatches)
        keys = {(rt.block, self.fold * j + rt.offset) for rt in self.repetend.tasks}
        mine = [t for t in schedule.tasks if t.key in keys]
        return min(t.start for t in mine), max(t.end for t in mine)

    # -- documents -----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "schedsearch.periodic",
            "version": PERIODIC_FORMAT_VERSION,
            "name": self.name,
            "problem": self.problem.to_dict(),
            "repetend": self.repetend.to_dict(),
            "repetend_start": self.repetend_start,
            "warmup": [t.to_dict() for t in self.warmup.tasks],
            "cooldowns": [[t.to_dict() for t in c.tasks] for c in self.cooldowns],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PeriodicSchedule:
        if d.get("format") != "schedsearch.periodic":
            raise FormatError(f"periodic document: 'format' must be 'schedsearch.periodic', got {d.get('format')!r}")
        if d.get("version") != PERIODIC_FORMAT_VERSION:
            raise FormatError(
                f"periodic document: 'version' {d.get('version')!r} is not supported "
                f"(this library reads {PERIODIC_FORMAT_VERSION})"
            )
        try:
            return cls(
                problem=Problem.from_dict(d["problem"]),
                repetend=Repetend.from_dict(d["repetend"]),
                warmup=d["warmup"],
                repetend_start=d["repetend_start"],
                cooldowns=[Schedule(tasks=c) for c in d["cooldowns"]],
                name=d.get("name", ""),
            )
        except KeyError as exc:
            raise FormatError(f"periodic document: missing field {exc.args[0]!r}") from None
        except TypeError as exc:
            raise FormatError(f"periodic document: malformed task ({exc})") from None

    @classmethod
    def from_json(cls, text: str) -> PeriodicSchedule:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(f"periodic document: not valid JSON ({exc})") from None
        if not isinstance(data, Mapping):
            raise FormatError("periodic document: must be a JSON object")
        return cls.from_dict(data)

    def __str__(self) -> str:
        fold = f" for {self.fold} micro-batches" if self.fold > 1 else ""
        return (
            f"PeriodicSchedule{f' {self.name!r}' if self.name else ''}: period {self.period}{fold}, "
            f"N_R {self.repetend.num_microbatches}, warmup {len(self.warmup.tasks)} tasks, "
            f"cooldown {len(self.cooldown.tasks)} tasks, n >= {self.min_microbatches}"
        )
