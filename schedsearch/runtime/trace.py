"""The measured trace of a run and how it compares with the plan.

Every rank of :func:`schedsearch.runtime.run` times each action of the
runtime's dispatch loop (forwards, backwards, input and weight gradients,
overlapped pairs, the sends and receives the runtime adds, gradient
reductions) and, inside each compute action, the stage call itself; the
time from an action's start to its stage call is the wait for the action's
receive (for a forward that takes its input from another rank, a backward
that takes its gradient from one) or runtime bookkeeping.

One clock. Every rank reads ``time.perf_counter``. After joining the
process group the ranks measure their clock offsets to rank 0 by ping-pong
(the offset of the round trip with the least delay, known to within half
that round trip); every time is moved onto rank 0's clock, and a step's
zero is the earliest rank's start of that step (each rank starts after a
barrier). When every rank runs on one host, ``perf_counter`` is that
host's monotonic clock, the same in every process: the offsets are then
exactly zero, and the measured ones (which are not, by up to half a round
trip) are kept for the record only. Across hosts the measured offsets are
applied, and an order check between two ranks is only as exact as they are.

From a :class:`MeasuredTrace` and the plan (its problem and schedule):

* :func:`measured_schedule`: a :class:`~schedsearch.schedule.Schedule` of
  the same problem whose tasks start and end when the stage calls did, in
  the problem's time unit;
* :func:`order_violations`: the validator's *order* checks of that
  schedule (every task once, no two at once on a rank, every dependency
  respected, each rank's order the plan's), durations not checked. The
  check runs on a copy whose times are the ranks of the measured instants
  (an order-preserving relabelling), so rounding to the time unit can
  neither hide a reordering nor invent one;
* :func:`compare`: per step after the first, the predicted step time (a
  :class:`Prediction`: the plan's makespan as its table shows it, in the
  description's unrounded times, plus the calibrated cost per step; or,
  without a plan document, the schedule's makespan in the problem's time
  unit), the measured one,
  their ratio, the error of every action's start (median, 95th percentile)
  and the difference broken down by cause on the rank that finished last
  (see :class:`Breakdown`).

Needs no torch: the workers record, this module reads.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from schedsearch.actions import Action, Kind, OnAction
from schedsearch._json import short_repr
from schedsearch.errors import FormatError, PlanError
from schedsearch.handcrafted.actions import (
    PlannedActions as PlannedActions,
    planned_actions as planned_actions,
    planned_seconds as planned_seconds,
    seconds_per_unit as seconds_per_unit,
)
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance
from schedsearch.units import MAX_MS
from schedsearch.validate import Violation, validate

__all__ = [
    "ORDER_KINDS",
    "Prediction",
    "Breakdown",
    "Compute",
    "Event",
    "Fidelity",
    "MeasuredTrace",
    "StepFidelity",
    "StepTrace",
    "compare",
    "measured_schedule",
    "order_violations",
    "planned_actions",
    "planned_seconds",
    "row_order_violations",
    "seconds_per_unit",
]

#: The validator's violation kinds that are about order, not time: what a measured schedule is checked for.
ORDER_KINDS = ("missing_task", "duplicate_task", "unknown_task", "option_not_allowed", "device_overlap",
               "dependency", "fixed_order")


#: Largest time (seconds, either sign) a measured record may give: a pipeline's longest time (MAX_MS).
_MAX_S = MAX_MS / 1e3


def _check_record(record: Any, what: str) -> None:
    """A recorded call or action is malformed in itself: refuse it, naming it (a :class:`FormatError`)."""
    rank = record.rank
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise FormatError(f"measured trace: {what}: 'rank' must be an integer >= 0, got {short_repr(rank)}")
    for field in ("start_s", "end_s"):
        value = getattr(record, field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) <= _MAX_S:
            raise FormatError(f"measured trace: {what}: {field!r} must be a time in seconds of at most {_MAX_S:.0e} "
                              f"in size, got {short_repr(value)}")
    if record.end_s < record.start_s:
        raise FormatError(f"measured trace: {what}: ends ({record.end_s!r} s) before it starts ({record.start_s!r} s)")


@attrs.frozen(kw_only=True)
class Event:
    """One action of the runtime's dispatch loop on one rank (seconds from the step's zero).

    ``label`` is the action as the runtime printed it and ``action`` as
    read (micro-batches in the plan's labels): ``F``, ``B``, ``I``, ``W``,
    ``SEND_F``, ``RECV_F``, ``SEND_B``, ``RECV_B``, ``OVERLAP_F_B``,
    ``REDUCE_GRAD``, ...; None when the label is no action's text.
    """

    rank: int
    label: str
    action: Action | None
    start_s: float
    end_s: float

    @property
    def kind(self) -> str:
        """The action's kind (the label itself when it is no action's text)."""
        return self.label if self.action is None else self.action.kind

    @property
    def stage(self) -> int | None:
        """The action's stage; None for an overlapped pair (its members name theirs) or no action."""
        return None if self.action is None or self.action.kind is Kind.OVERLAP_F_B else self.action.stage

    @property
    def microbatch(self) -> int | None:
        return None if self.action is None else self.action.microbatch

    def __attrs_post_init__(self) -> None:
        _check_record(self, f"action {short_repr(self.label)} on rank {short_repr(self.rank)}")

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "label": self.label, "kind": str(self.kind), "stage": self.stage,
                "microbatch": self.microbatch, "start_s": self.start_s, "end_s": self.end_s}


@attrs.frozen(kw_only=True)
class Compute(OnAction):
    """One stage call (the computation of a compute action) on one rank."""

    rank: int
    action: Action
    start_s: float
    end_s: float

    def __attrs_post_init__(self) -> None:
        what = f"stage call {short_repr(str(self.action))} on rank {short_repr(self.rank)}"
        if not isinstance(self.action, Action) or not self.action.kind.is_compute:
            raise FormatError(f"measured trace: {what}: 'action' must be a compute action (F, B, I or W)")
        for field in ("stage", "microbatch"):
            value = getattr(self.action, field)
            if isinstance(value, bool) or not isinstance(value, int):  # any integer: one the plan lacks is reported
                raise FormatError(f"measured trace: {what}: its {field!r} must be an integer, got {short_repr(value)}")
        _check_record(self, what)

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "stage": self.stage, "kind": str(self.kind), "microbatch": self.microbatch,
                "start_s": self.start_s, "end_s": self.end_s}


@attrs.frozen(kw_only=True)
class StepTrace:
    """One step on every rank: ``rank_spans[r]`` is rank ``r``'s ``(start_s, end_s)`` of the step call."""

    rank_spans: tuple[tuple[float, float], ...]
    events: tuple[Event, ...]
    computes: tuple[Compute, ...]

    def __attrs_post_init__(self) -> None:
        spans = self.rank_spans
        if not isinstance(spans, tuple) or not spans:
            raise FormatError(f"measured step: 'rank_spans' must give each rank's (start_s, end_s), got "
                              f"{short_repr(spans)}")
        for r, span in enumerate(spans):
            if not (isinstance(span, tuple) and len(span) == 2 and all(
                    not isinstance(x, bool) and isinstance(x, (int, float)) and abs(x) <= _MAX_S for x in span)
                    and span[0] <= span[1]):
                raise FormatError(f"measured step: rank {r}'s span must be (start_s, end_s), times in seconds of "
                                  f"at most {_MAX_S:.0e} in size with start <= end, got {short_repr(span)}")
        for field, kind in (("events", Event), ("computes", Compute)):
            records = getattr(self, field)
            if not isinstance(records, tuple) or not all(isinstance(x, kind) for x in records):
                raise FormatError(f"measured step: {field!r} must be a tuple of {kind.__name__} records")
            for x in records:
                if x.rank >= len(spans):
                    what = (f"action {short_repr(x.label)}" if isinstance(x, Event)
                            else f"stage call {short_repr(str(x.action))}")
                    raise FormatError(f"measured step: {what} on rank {x.rank}: the step has {len(spans)} rank(s) "
                                      f"(0..{len(spans) - 1})")

    def rank_time_s(self, rank: int) -> float:
        a, b = self.rank_spans[rank]
        return b - a

    @property
    def step_time_s(self) -> float:
        """The slowest rank's step call."""
        return max(b - a for a, b in self.rank_spans)

    def on_rank(self, rank: int) -> tuple[list[Event], list[Compute]]:
        return ([e for e in self.events if e.rank == rank], [c for c in self.computes if c.rank == rank])

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank_spans_s": [list(x) for x in self.rank_spans],
            "events": [e.to_dict() for e in self.events],
            "computes": [c.to_dict() for c in self.computes],
        }


@attrs.frozen(kw_only=True)
class MeasuredTrace:
    """What every rank recorded, on one clock.

    ``clock_offsets_s[r]``: rank ``r``'s clock minus rank 0's, as measured
    (``clock_rtt_s[r]`` the round trip it was measured with);
    ``one_host``: every rank ran on one host, so the offsets applied were
    zero (see the module docstring).
    """

    num_ranks: int
    steps: tuple[StepTrace, ...]
    clock_offsets_s: tuple[float, ...]
    clock_rtt_s: tuple[float, ...]
    one_host: bool = False

    def __attrs_post_init__(self) -> None:
        for k, st in enumerate(self.steps):
            if not isinstance(st, StepTrace) or len(st.rank_spans) != self.num_ranks:
                got = len(st.rank_spans) if isinstance(st, StepTrace) else short_repr(st)
                raise FormatError(f"measured trace: step {k} must be a StepTrace of its {short_repr(self.num_ranks)} "
                                  f"ranks, got {got}")

    def step(self, step: int) -> StepTrace:
        """Step ``step`` (counted from 0, or from the end when negative); a :class:`FormatError` naming
        the step when the trace has no such step."""
        n = len(self.steps)
        if isinstance(step, bool) or not isinstance(step, int) or not -n <= step < n:
            held = f"0..{n - 1}, or -{n}..-1 from the end" if n else "none"
            raise FormatError(f"measured trace: no step {short_repr(step)}: it holds {n} step(s) ({held})")
        return self.steps[step]

    @classmethod
    def from_reports(
        cls, traces: Sequence[Sequence[Mapping[str, Any]]], offsets: Sequence[float], rtts: Sequence[float],
        relabel: Sequence[int] | None = None, one_host: bool = False,
    ) -> MeasuredTrace:
        """Assemble the workers' raw records.

        ``traces[r]`` is rank ``r``'s list of steps, each
        ``{"span": (start, end), "actions": [(label, start, end)],
        "computes": [(stage, kind, mb, start, end)]}`` on its own clock;
        ``relabel[k]`` is the plan's micro-batch that the runtime ran as
        ``k`` (None: the same labels); ``one_host``: apply zero offsets.
        """
        n = len(traces)
        applied = [0.0] * n if one_host else list(offsets)
        num_steps = min(len(trace) for trace in traces)

        def mb(k: int | None) -> int | None:
            return k if k is None or relabel is None else relabel[k]

        steps = []
        for k in range(num_steps):
            raw = [trace[k] for trace in traces]
            zero = min(raw[r]["span"][0] - applied[r] for r in range(n))
            spans, events, computes = [], [], []
            for r in range(n):
                shift = applied[r] + zero
                a, b = raw[r]["span"]
                spans.append((a - shift, b - shift))
                for label, s, e in raw[r]["actions"]:
                    events.append(Event(rank=r, label=label, action=_read_label(label, mb),
                                        start_s=s - shift, end_s=e - shift))
                for stage, kind, m, s, e in raw[r]["computes"]:
                    computes.append(Compute(rank=r, action=Action(stage, kind, mb(m)),
                                            start_s=s - shift, end_s=e - shift))
            steps.append(StepTrace(rank_spans=tuple(spans), events=tuple(events), computes=tuple(computes)))
        return cls(num_ranks=n, steps=tuple(steps), clock_offsets_s=tuple(offsets), clock_rtt_s=tuple(rtts),
                   one_host=one_host)

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_ranks": self.num_ranks,
            "clock_offsets_s": list(self.clock_offsets_s),
            "clock_rtt_s": list(self.clock_rtt_s),
            "one_host": self.one_host,
            "steps": [s.to_dict() for s in self.steps],
        }

    def chrome_trace(self, step: int, *, name: str = "measured") -> dict[str, Any]:
        """Chrome / Perfetto trace of one step: per rank, its actions and (nested) stage calls."""
        st = self.step(step)
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": name}},
        ]
        for r in range(self.num_ranks):
            events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": r, "args": {"name": f"rank{r}"}})
            a, b = st.rank_spans[r]
            events.append({"ph": "X", "name": "step", "pid": 0, "tid": r, "ts": 1e6 * a, "dur": 1e6 * (b - a),
                           "cat": "step"})
        for e in st.events:
            events.append({"ph": "X", "name": e.label, "pid": 0, "tid": e.rank, "ts": 1e6 * e.start_s,
                           "dur": 1e6 * (e.end_s - e.start_s), "cat": "action",
                           "args": {"kind": e.kind, "stage": e.stage, "microbatch": e.microbatch}})
        for c in st.computes:
            events.append({"ph": "X", "name": f"{c.kind}{c.stage}·m{c.microbatch}", "pid": 0, "tid": c.rank,
                           "ts": 1e6 * c.start_s, "dur": 1e6 * (c.end_s - c.start_s), "cat": "compute",
                           "args": {"kind": c.kind, "stage": c.stage, "microbatch": c.microbatch}})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"schedsearch": "measured run", "step": step,
                              "clock_offsets_s": list(self.clock_offsets_s)}}


def _read_label(label: str, mb: Callable[[int | None], int | None]) -> Action | None:
    """The action torch printed as ``label``, its micro-batches renamed by ``mb``; None when it is none."""
    try:
        action = Action.parse(label)
    except FormatError:
        return None
    if action.kind is Kind.OVERLAP_F_B:
        return Action.overlap(*(attrs.evolve(a, microbatch=mb(a.microbatch)) for a in action.sub_actions))
    return attrs.evolve(action, microbatch=mb(action.microbatch))


# --------------------------------------------------------------------------
# The measured schedule and its order checks
# --------------------------------------------------------------------------


def _step_of(problem: Problem, trace: MeasuredTrace | StepTrace, step: int) -> StepTrace:
    """Step ``step`` of ``trace`` (``trace`` itself when it is one step), checked to be a step of a run of
    ``problem``'s devices: one rank per device. Refused (:class:`FormatError`) otherwise."""
    if isinstance(trace, MeasuredTrace):
        st = trace.step(step)
    elif isinstance(trace, StepTrace):
        st = trace
    else:
        raise FormatError(f"measured trace: must be a MeasuredTrace or a StepTrace, got {type(trace).__name__}")
    devices = len(problem.cluster.device_names)
    if len(st.rank_spans) != devices:
        raise FormatError(f"measured trace: its step records {len(st.rank_spans)} rank(s), the plan's problem "
                          f"{problem.name!r} runs on {devices} device(s): a trace of another run")
    return st


def _order_times(computes: Sequence[Compute]) -> list[tuple[int, int]]:
    """Each call's ``(start, end)`` as the ranks of the measured instants: an order-preserving relabelling.

    At one instant, the calls that end there come first, then each call that lasted no time (a clock's
    resolution can make a short call last zero; in record order, one after the other), then the calls
    that start there: the half-open intervals' order, exactly, with every call at least one step long.
    """
    keys: list[tuple[tuple, tuple]] = []
    for k, c in enumerate(computes):
        if c.start_s == c.end_s:
            keys.append(((c.start_s, 1, k, 0), (c.start_s, 1, k, 1)))
        else:
            keys.append(((c.start_s, 2), (c.end_s, 0)))
    rank = {key: i for i, key in enumerate(sorted({key for pair in keys for key in pair}))}
    return [(rank[a], rank[b]) for a, b in keys]


def _measured_tasks(problem: Problem, schedule: Schedule, step: StepTrace,
                    order: Sequence[tuple[int, int]] | None, unit_s: float | None) -> list[TaskInstance]:
    planned = planned_actions(problem, schedule)
    first: dict[Action, int] = {}
    for k, c in enumerate(step.computes):
        first.setdefault(c.action, k)  # a repeat is reported by the order check as a missing/duplicate
    out = []
    for t in schedule.tasks:
        k = first.get(planned.tasks[t.key])
        if k is None:
            continue
        c = step.computes[k]
        if order is not None:
            start, end = order[k]
        else:
            start = max(0, math.floor(c.start_s / unit_s))  # type: ignore[operator]
            end = max(start + 1, round(c.end_s / unit_s))  # type: ignore[operator]
        devices = (problem.cluster.device_names[c.rank],)
        out.append(TaskInstance(block=t.block, microbatch=t.microbatch, devices=devices, start=start, end=end,
                                overlap=t.overlap))
    return out


def measured_schedule(problem: Problem, schedule: Schedule, trace: MeasuredTrace, step: int = -1) -> Schedule:
    """The tasks of ``schedule`` timed as step ``step`` of ``trace`` ran them, in the problem's time unit.

    Each task starts when its stage call started (rounded down to the time
    unit) and ends when it ended (rounded, at least one unit later). The
    durations are what was measured, not the problem's: check it with
    :func:`order_violations`, not :func:`~schedsearch.validate.validate`.

    Raises
    ------
    FormatError
        When ``trace`` has no step ``step``, or records another number of
        ranks than the problem has devices.
    """
    unit = seconds_per_unit(problem, "measured schedule")
    tasks = _measured_tasks(problem, schedule, _step_of(problem, trace, step), None, unit)
    return Schedule(tasks=tasks, name=f"{schedule.name or problem.name} (measured)")


def order_violations(problem: Problem, schedule: Schedule, trace: MeasuredTrace | StepTrace,
                     step: int = -1) -> tuple[Violation, ...]:
    """The validator's order checks of the measured step against the plan (empty: the order is the plan's).

    Reported: a stage call the plan does not have (``unknown_task``) or
    that ran more than once (``duplicate_task``), each naming the rank,
    stage, kind and micro-batch; the validator's order checks of the
    measured schedule, transfers and durations left out (a planned task
    that never ran, two tasks at once on a rank, a task that starts before
    a task it depends on ends, a task on another rank than planned); and a
    rank whose stage calls ran in another order than the plan's actions
    there (``fixed_order``; an overlapped pair's members count as two
    actions, the forward first, as :func:`planned_actions` splits them).
    Times are the ranks of the measured instants (equal instants share
    one; a call that ends where another starts comes before it, and a call
    that lasted no time sits between them), so the check is exact.

    A record is checked when it is made (:class:`Compute`, :class:`StepTrace`):
    a negative rank, a rank the step does not have, a time that is not a
    finite number or an end before the start is refused there, naming the
    record. Here a :class:`~schedsearch.errors.FormatError` refuses a step
    ``trace`` does not hold and a trace of another number of ranks than the
    problem has devices; whatever else a well-formed trace records is
    reported, never raised.
    """
    st = _step_of(problem, trace, step)
    planned = planned_actions(problem, schedule)
    tasks = _measured_tasks(problem, schedule, st, _order_times(st.computes), None)
    measured = Schedule(tasks=tasks, name="measured order")
    found = [v for v in validate(problem, measured) if v.kind in ORDER_KINDS]
    return tuple(_call_violations(st, planned)) + tuple(found) + tuple(_rank_order_violations(st, planned))


def _call_text(c: Compute) -> str:
    return f"stage {c.stage} {c.kind} of micro-batch {c.microbatch} on rank {c.rank}"


def _call_violations(st: StepTrace, planned: PlannedActions) -> list[Violation]:
    """Stage calls the plan does not have, and stage calls run more than once."""
    out = []
    seen: dict[Action, list[Compute]] = {}
    for c in sorted(st.computes, key=lambda c: (c.start_s, c.end_s, c.rank)):
        seen.setdefault(c.action, []).append(c)
    for key, calls in seen.items():
        if key not in planned.spans:
            for c in calls:
                out.append(Violation("unknown_task", f"{_call_text(c)}: the plan has no such action "
                                                     f"(at {c.start_s:.6f} s)"))
        elif len(calls) > 1:
            where = ", ".join(f"rank {c.rank} at {c.start_s:.6f} s" for c in calls)
            out.append(Violation("duplicate_task", f"stage {key.stage} {key.kind} of micro-batch {key.microbatch} ran "
                                                   f"{len(calls)} times ({where}); the plan runs it once"))
    return out


def _rank_order_violations(st: StepTrace, planned: PlannedActions) -> list[Violation]:
    """Per rank, where the stage calls ran in another order than the plan's actions.

    The plan's order on a rank is that of :func:`planned_actions`' spans: an
    overlapped pair's members one after the other, the forward first. Only
    the first call of each planned action is compared, with the plan's
    actions that ran (missing, repeated and unknown calls are reported
    apart).
    """
    out = []
    for r in sorted(set(planned.rank_of)):
        mine = {k for k in planned.spans if planned.rank_of[k.stage] == r}
        ran: list[Action] = []
        for c in sorted((c for c in st.computes if c.rank == r), key=lambda c: (c.start_s, c.end_s)):
            if c.action in mine and c.action not in ran:
                ran.append(c.action)
        done = set(ran)
        want = [k for k in sorted(mine, key=lambda k: (planned.spans[k], k)) if k in done]
        i = next((i for i, (a, b) in enumerate(zip(ran, want)) if a != b), None)
        if i is None:
            continue
        got, exp = ran[i], want[i]
        out.append(Violation("fixed_order", f"rank {r}: its stage call {i} was stage {got.stage} {got.kind} of "
                                            f"micro-batch {got.microbatch}, the plan runs stage {exp.stage} {exp.kind} "
                                            f"of micro-batch {exp.microbatch} there"))
    return out


def row_order_violations(rows: Sequence[Sequence[Action]], step: StepTrace) -> tuple[str, ...]:
    """Per rank, where the stage calls' order differs from the plan row's (no problem needed).

    ``rows[r]``: rank ``r``'s compute actions in the plan's order (an
    overlapped pair's members one after the other). Returns one message
    per rank that ran another order, naming the first difference.
    """
    out = []
    for r, row in enumerate(rows):
        ran = [c.action for c in sorted((c for c in step.computes if c.rank == r), key=lambda c: c.start_s)]
        want = list(row)
        if ran == want:
            continue
        i = next((i for i, (a, b) in enumerate(zip(ran, want)) if a != b), min(len(ran), len(want)))
        got = str(ran[i]) if i < len(ran) else "nothing"
        exp = str(want[i]) if i < len(want) else "nothing"
        out.append(f"rank {r}: action {i} ran {got}, the plan has {exp} ({len(ran)} actions ran, {len(want)} planned)")
    return tuple(out)


# --------------------------------------------------------------------------
# Predicted against measured
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Breakdown:
    """Where a step's measured time differs from the prediction, on the rank that finished last.

    On that rank the step call's time is split into ``compute`` (the stage
    calls), ``receive wait`` (from a compute action's start to its stage
    call when the action takes a tensor from another rank),
    ``communication`` (the send and receive actions, which post the
    transfers) and ``overhead`` (the rest: gaps between actions, the
    runtime's bookkeeping inside them, the wait for the last sends after
    the final action). The prediction splits the makespan into the rank's
    planned compute and its planned idle time. The differences (measured
    less planned; ``receive_wait_s`` less the planned idle time; seconds)
    sum to the step time less the planned one (``planned["step_s"]``: the
    schedule's makespan in the problem's time unit; the prediction's
    makespan differs from it by the rounding to that unit, and a
    calibrated cost per step shows in ``overhead_s``).
    """

    rank: int
    compute_s: float
    communication_s: float
    receive_wait_s: float
    overhead_s: float
    measured: Mapping[str, float]
    planned: Mapping[str, float]

    @property
    def total_s(self) -> float:
        return self.compute_s + self.communication_s + self.receive_wait_s + self.overhead_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "compute_s": self.compute_s,
            "communication_s": self.communication_s,
            "receive_wait_s": self.receive_wait_s,
            "overhead_s": self.overhead_s,
            "total_s": self.total_s,
            "measured": dict(self.measured),
            "planned": dict(self.planned),
        }


@attrs.frozen(kw_only=True)
class StepFidelity:
    """One step: predicted and measured time, start errors, the breakdown and the order check.

    ``call_excess_median_s`` and ``call_excess_p95_s``: how much longer
    than planned the stage calls lasted (median, 95th percentile; with
    emulated compute, how late the sleeping process woke up).
    """

    step: int
    predicted_s: float
    measured_s: float
    start_error_median_s: float
    start_error_p95_s: float
    breakdown: Breakdown
    order_violations: tuple[str, ...]
    call_excess_median_s: float = 0.0
    call_excess_p95_s: float = 0.0

    @property
    def ratio(self) -> float:
        return self.measured_s / self.predicted_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "predicted_s": self.predicted_s,
            "measured_s": self.measured_s,
            "ratio": self.ratio,
            "start_error_median_s": self.start_error_median_s,
            "start_error_p95_s": self.start_error_p95_s,
            "call_excess_median_s": self.call_excess_median_s,
            "call_excess_p95_s": self.call_excess_p95_s,
            "breakdown": self.breakdown.to_dict(),
            "order_violations": list(self.order_violations),
        }


def _non_negative_ms(where: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_MS:
        raise PlanError(f"{where}: {field!r} must be a time in milliseconds from 0 to {MAX_MS:.0e}, got "
                        f"{short_repr(value)}")
    return float(value)


@attrs.frozen(kw_only=True)
class Prediction:
    """The step time a run of a plan is predicted to take, in milliseconds, and the parts it is made of.

    ``makespan_ms`` is the plan's makespan and ``source`` says which one:
    ``"plan table"`` (the figure the plan's table shows: its order re-timed
    with the description's unrounded times, read from the plan document
    ``schedsearch plan`` writes) or ``"problem"`` (the schedule's makespan
    times the problem's time unit: the rounded times, what an emulated run
    sleeps). ``step_overhead_ms`` is what a step costs beyond its actions
    as a calibration measured it (the pipeline's ``step_overhead_ms``; 0
    when it was not calibrated). The prediction is their sum.

    Examples
    --------
    >>> from schedsearch.runtime.trace import Prediction
    >>> prediction = Prediction.from_plan_document({"prediction": {"makespan_ms": 139.25, "step_overhead_ms": 28.5}})
    >>> prediction.step_ms, prediction.source
    (167.75, 'plan table')
    """

    makespan_ms: float
    step_overhead_ms: float = 0.0
    source: str = "problem"

    @property
    def step_ms(self) -> float:
        return self.makespan_ms + self.step_overhead_ms

    @classmethod
    def of_schedule(cls, problem: Problem, schedule: Schedule) -> Prediction:
        """The schedule's makespan in the problem's time unit, no cost per step (``source`` ``"problem"``)."""
        return cls(makespan_ms=1e3 * seconds_per_unit(problem, "predicted against measured") * schedule.makespan)

    @classmethod
    def from_plan_document(cls, meta: Mapping[str, Any], where: str = "plan document") -> Prediction | None:
        """The prediction a plan document's metadata records (``meta["prediction"]``, written by
        :meth:`~schedsearch.plan.planner.PlanResult.metadata`), or None when it records none."""
        doc = meta.get("prediction") if isinstance(meta, Mapping) else None
        if doc is None:
            return None
        if not isinstance(doc, Mapping):
            raise PlanError(f"{where}: 'prediction' must be a table of times in ms, got {doc!r}")
        return cls(makespan_ms=_non_negative_ms(f"{where}: prediction", "makespan_ms", doc.get("makespan_ms")),
                   step_overhead_ms=_non_negative_ms(f"{where}: prediction", "step_overhead_ms",
                                                     doc.get("step_overhead_ms", 0.0)),
                   source="plan table")

    def to_dict(self) -> dict[str, Any]:
        return {"step_ms": self.step_ms, "makespan_ms": self.makespan_ms, "makespan_source": self.source,
                "step_overhead_ms": self.step_overhead_ms}


@attrs.frozen(kw_only=True)
class Fidelity:
    """Predicted against measured over the steps after the first (all steps when there is one).

    ``predicted_step_s`` is ``prediction``'s step time in seconds;
    ``step_time_s`` is the median of the steps' measured times;
    ``breakdown`` is the median step's (the lower middle one for an even
    count), so it sums to that step's difference from the planned step.
    """

    predicted_step_s: float
    steps: tuple[StepFidelity, ...]
    time_unit_s: float
    prediction: Prediction | None = None

    @property
    def step_time_s(self) -> float:
        return statistics.median(s.measured_s for s in self.steps)

    @property
    def ratio(self) -> float:
        return self.step_time_s / self.predicted_step_s

    @property
    def median_step(self) -> StepFidelity:
        ordered = sorted(self.steps, key=lambda s: s.measured_s)
        return ordered[(len(ordered) - 1) // 2]

    @property
    def start_error_median_s(self) -> float:
        return statistics.median(s.start_error_median_s for s in self.steps)

    @property
    def start_error_p95_s(self) -> float:
        return statistics.median(s.start_error_p95_s for s in self.steps)

    @property
    def order_ok(self) -> bool:
        return not any(s.order_violations for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicted_step_s": self.predicted_step_s,
            "prediction": None if self.prediction is None else self.prediction.to_dict(),
            "step_time_s": self.step_time_s,
            "ratio": self.ratio,
            "start_error_median_s": self.start_error_median_s,
            "start_error_p95_s": self.start_error_p95_s,
            "call_excess_median_s": statistics.median(s.call_excess_median_s for s in self.steps),
            "call_excess_p95_s": statistics.median(s.call_excess_p95_s for s in self.steps),
            "breakdown": self.median_step.breakdown.to_dict(),
            "order_ok": self.order_ok,
            "time_unit_s": self.time_unit_s,
            "steps": [s.to_dict() for s in self.steps],
        }

    def __str__(self) -> str:
        b = self.median_step.breakdown
        return (
            f"predicted {1e3 * self.predicted_step_s:.2f} ms, measured {1e3 * self.step_time_s:.2f} ms "
            f"(median of {len(self.steps)} step(s)), ratio {self.ratio:.3f}; action start error median "
            f"{1e3 * self.start_error_median_s:.2f} ms, p95 {1e3 * self.start_error_p95_s:.2f} ms; stage calls "
            f"{1e3 * self.median_step.call_excess_median_s:+.2f} ms over plan (median); difference on rank "
            f"{b.rank}: compute {1e3 * b.compute_s:+.2f} ms, communication {1e3 * b.communication_s:+.2f} ms, "
            f"receive wait {1e3 * b.receive_wait_s:+.2f} ms, overhead {1e3 * b.overhead_s:+.2f} ms; order "
            f"{'as planned' if self.order_ok else 'NOT as planned'}"
        )


def _percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation between order statistics."""
    xs = sorted(values)
    if not xs:
        return 0.0
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _receives(key: Action, rank_of: Sequence[int]) -> bool:
    """True when the runtime's action ``key`` waits for a tensor from another rank."""
    stage, kind = key.stage, key.kind
    if kind is Kind.FORWARD:
        return stage > 0 and rank_of[stage - 1] != rank_of[stage]
    if kind in (Kind.FULL_BACKWARD, Kind.BACKWARD_INPUT):
        return stage < len(rank_of) - 1 and rank_of[stage + 1] != rank_of[stage]
    return False


def _breakdown(st: StepTrace, rank: int, planned: PlannedActions, unit: float) -> Breakdown:
    events, computes = st.on_rank(rank)
    start, end = st.rank_spans[rank]
    compute = sum(c.end_s - c.start_s for c in computes)
    comm = sum(e.end_s - e.start_s for e in events if e.kind.startswith(("SEND_", "RECV_")))
    wait = 0.0
    for e in events:
        if e.action is None or not e.action.is_compute:
            continue
        inside = sorted((c for c in computes if e.start_s <= c.start_s and c.end_s <= e.end_s),
                        key=lambda c: c.start_s)
        at = e.start_s
        for c in inside:
            if _receives(c.action, planned.rank_of):
                wait += max(0.0, c.start_s - at)
            at = c.end_s
    overhead = (end - start) - compute - comm - wait
    planned_compute = unit * sum(b - a for k, (a, b) in planned.spans.items() if planned.rank_of[k.stage] == rank)
    planned_idle = unit * planned.makespan - planned_compute
    return Breakdown(
        rank=rank,
        compute_s=compute - planned_compute,
        communication_s=comm,
        receive_wait_s=wait - planned_idle,
        overhead_s=overhead,
        measured={"step_s": end - start, "compute_s": compute, "communication_s": comm, "receive_wait_s": wait,
                  "overhead_s": overhead},
        planned={"step_s": unit * planned.makespan, "compute_s": planned_compute, "idle_s": planned_idle},
    )


def compare(problem: Problem, schedule: Schedule, trace: MeasuredTrace, *, warmup: int = 1,
            prediction: Prediction | None = None) -> Fidelity:
    """Predicted against measured for every step after ``warmup`` (all steps when there are no more).

    The predicted step time is ``prediction``'s (default: the schedule's
    makespan in the problem's time unit, :meth:`Prediction.of_schedule`);
    the action start errors and the breakdown are against the schedule's
    own times in the problem's unit.

    Raises
    ------
    PlanError
        When the problem has no time unit in seconds, or ``warmup`` is not
        an integer >= 0.
    FormatError
        When the trace holds no step, or records another number of ranks
        than the problem has devices.
    """
    unit = seconds_per_unit(problem, "predicted against measured")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise PlanError(f"compare: 'warmup' must be an integer >= 0, got {short_repr(warmup)}")
    if not isinstance(trace, MeasuredTrace) or not trace.steps:
        raise FormatError(f"compare: needs a MeasuredTrace of at least one step, got "
                          f"{f'{len(trace.steps)} steps' if isinstance(trace, MeasuredTrace) else type(trace).__name__}")
    _step_of(problem, trace, 0)
    planned = planned_actions(problem, schedule)
    if prediction is None:
        prediction = Prediction.of_schedule(problem, schedule)
        predicted = unit * planned.makespan
    else:
        predicted = prediction.step_ms / 1e3
    first = warmup if len(trace.steps) > warmup else 0
    out = []
    for k in range(first, len(trace.steps)):
        st = trace.steps[k]
        errors, excess = [], []
        for c in st.computes:
            span = planned.spans.get(c.action)
            if span is not None:
                errors.append(abs(c.start_s - unit * span[0]))
                excess.append((c.end_s - c.start_s) - unit * (span[1] - span[0]))
        slowest = max(range(trace.num_ranks), key=st.rank_time_s)
        out.append(
            StepFidelity(
                step=k,
                predicted_s=predicted,
                measured_s=st.step_time_s,
                start_error_median_s=_percentile(errors, 0.5),
                start_error_p95_s=_percentile(errors, 0.95),
                breakdown=_breakdown(st, slowest, planned, unit),
                order_violations=tuple(str(v) for v in order_violations(problem, schedule, st)),
                call_excess_median_s=_percentile(excess, 0.5),
                call_excess_p95_s=_percentile(excess, 0.95),
            )
        )
    return Fidelity(predicted_step_s=predicted, steps=tuple(out), time_unit_s=unit, prediction=prediction)
