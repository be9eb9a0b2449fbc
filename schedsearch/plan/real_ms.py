"""The plan's figures in the user's milliseconds: the unrounded times of an integer problem.

:func:`schedsearch.plan` solves integer problems whose times are the stage
times rounded to one time unit (:mod:`schedsearch.units`). The figures it
shows are of the unrounded times: :func:`retime_ms` re-times a plan's order
with them (exact fractions) and :func:`real_bound_ms` turns a bound of the
integer problem into a bound on every plan with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs

from schedsearch.plan.pipeline import Pipeline, Stage
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, overlap_groups
from schedsearch.units import Units

__all__ = ["RealTimes", "exact_ms", "float_below", "real_bound_ms", "real_times", "retime_ms"]

_TIME_FIELD = {"F": "forward_ms", "B": "backward_ms", "I": "input_grad_ms", "W": "weight_grad_ms"}

def exact_ms(value: float) -> Fraction:
    """A time as the user wrote it: the shortest decimal that reads back as ``value``, as an exact fraction.

    Examples
    --------
    >>> from schedsearch.plan.real_ms import exact_ms
    >>> exact_ms(0.995), exact_ms(2.0)
    (Fraction(199, 200), Fraction(2, 1))
    """
    return Fraction(repr(float(value)))


@attrs.frozen(kw_only=True)
class RealTimes:
    """The unrounded times of one candidate's integer problem, in milliseconds (exact fractions).

    ``task`` gives each task instance's time (the stage time, times the
    micro-batch's size ratio), ``group`` each overlapped group's own time
    by its tag and members (``"F&B"``: ``fb_overlap_ms``; ``"B"``: the
    stage's full backward) and ``edge`` each edge's transfer time (0 when
    the ranks are the same or transfers are free). :meth:`scale` is the
    largest ratio of a rounded time (in ms) to its real one.
    """

    problem: Problem
    unit_ms: Fraction
    task: dict[tuple[str, int], Fraction]
    edge: dict[tuple[str, str], Fraction]
    overlap: dict[frozenset[str], Fraction]
    _distinct: list[tuple[int, Fraction]] = attrs.field(factory=list, init=False, eq=False, repr=False)

    def group(self, members: Sequence[tuple[str, int]]) -> Fraction:
        """An overlapped group's real time: its own, or its longest member's when that is longer."""
        own = self.overlap[frozenset(b for b, _ in members)]
        return max([own] + [self.task[k] for k in members])

    def _pairs(self) -> list[tuple[int, Fraction]]:
        """Each distinct (rounded time in units, real time in ms) of the problem's tasks, overlapped groups and
        edges (alike micro-batches repeat the same pairs; keyed by whole numbers, cheap to hash). Computed
        once."""
        if not self._distinct:
            durations = self.problem.durations
            pairs = [(durations(b, m)[0], t) for (b, m), t in self.task.items()]
            pairs += [(ov.duration, self.overlap[ov.key]) for ov in self.problem.overlaps]
            pairs += [(e.size, self.edge[(e.src, e.dst)]) for e in self.problem.graph.edges]
            self._distinct.extend(
                {(ticks, real.numerator, real.denominator): (ticks, real) for ticks, real in pairs}.values())
        return list(self._distinct)

    def exact(self) -> bool:
        """Whether every time of the problem is its real time exactly (rounded time x unit = real time): then
        a plan of the integer problem, its times read in units, is a plan of the real times as it stands."""
        return all(ticks * self.unit_ms == real for ticks, real in self._pairs())

    def scale(self) -> Fraction:
        """The largest (rounded time in ms) / (real time) over every time of the problem (at least 1)."""
        out = Fraction(1)
        for ticks, real in self._pairs():
            if ticks and real:
                out = max(out, ticks * self.unit_ms / real)
            elif ticks:  # a time the integers hold and reality does not: no scale bounds it
                raise AssertionError(f"a real time of 0 ms became {ticks} time units")
        return out


def real_times(pipeline: Pipeline, candidate: Any, stages: Sequence[Stage], problem: Problem,
               units: Units) -> RealTimes:
    """The unrounded times of ``problem``, the integer problem of ``candidate`` (a
    :class:`~schedsearch.plan.planner.Candidate`) on ``stages``
    (:func:`~schedsearch.plan.planner.build_problem`)."""
    sizes = pipeline.microbatch_sizes
    top = None if sizes is None else max(exact_ms(s) for s in sizes)
    half = pipeline.num_microbatches // 2
    task: dict[tuple[str, int], Fraction] = {}
    for b in problem.graph.blocks:
        ms = exact_ms(getattr(stages[b.stage], _TIME_FIELD[b.kind]))
        offset = half if candidate.record.two_pipelines and b.name.endswith(".up") else 0
        for m in range(problem.num_microbatches):
            task[(b.name, m)] = ms if top is None else ms * exact_ms(sizes[offset + m]) / top
    overlap: dict[frozenset[str], Fraction] = {}
    for ov in problem.overlaps:
        if ov.name == "F&B":
            overlap[ov.key] = exact_ms(pipeline.fb_overlap_ms)
        elif ov.name == "B":
            overlap[ov.key] = exact_ms(stages[problem.graph.block(ov.blocks[0]).stage].backward_ms)
        else:
            raise AssertionError(f"{candidate.label}: no real time for the overlapped group {ov.name!r}")
    device_of = {b.name: b.options[0].devices[0] for b in problem.graph.blocks}
    edge: dict[tuple[str, str], Fraction] = {}
    for e in problem.graph.edges:
        real = Fraction(0)
        if e.size:
            sender = problem.graph.block(e.src if e.src.startswith("F") else e.dst).stage
            real = exact_ms(pipeline.p2p.transfer_ms(stages[sender].p2p_bytes))
        elif device_of[e.src] != device_of[e.dst] and not pipeline.p2p.free:
            sender = problem.graph.block(e.src if e.src.startswith("F") else e.dst).stage
            assert pipeline.p2p.transfer_ms(stages[sender].p2p_bytes) == 0, "a transfer rounded to 0"
        edge[(e.src, e.dst)] = real
    return RealTimes(problem=problem, unit_ms=exact_ms(units.time_unit_ms), task=task, edge=edge, overlap=overlap)


def retime_ms(schedule: Schedule, times: RealTimes) -> Fraction:
    """The makespan in real milliseconds of ``schedule``'s order: each device's and each channel's sequence
    and every dependency kept, every task (overlapped group) and transfer started as soon as possible
    with its real time.

    The order is the schedule's: tasks by start on each device, transfers by start on each channel.
    Memory follows: each device runs the same sequence, so its level passes through the same values
    (amounts in the integer problem are rounded up, its budget down: the bytes fit).
    """
    groups = overlap_groups(schedule)
    # nodes are numbers: the overlapped groups, the other tasks, then the transfers (the order ties keep)
    node_of: dict[tuple[str, int], int] = {}
    length: list[Fraction] = []
    for members in groups.values():
        for t in members:
            node_of[t.key] = len(length)
        length.append(times.group([t.key for t in members]))
    for t in schedule.tasks:
        if t.overlap is None:  # not in a group
            key = (t.block, t.microbatch)
            node_of[key] = len(length)
            length.append(times.task[key])
    rank: list[tuple[int, int]] = [(0, 0)] * len(length)
    for t in schedule.tasks:
        rank[node_of[(t.block, t.microbatch)]] = (t.start, 1)
    preds: list[list[int]] = [[] for _ in length]
    transfer_node: dict[tuple[str, str, int], int] = {}
    for tr in schedule.transfers:
        node = len(length)
        transfer_node[tr.key] = node
        length.append(times.edge[(tr.src, tr.dst)])
        preds.append([node_of[(tr.src, tr.microbatch)]])
        rank.append((tr.start, 0))
    for e in times.problem.graph.edges:
        for m in range(times.problem.num_microbatches):
            u, v = node_of[(e.src, m)], node_of[(e.dst, m)]
            if u == v:  # inside one overlapped group: the group's own order
                continue
            tr = transfer_node.get((e.src, e.dst, m))
            preds[v].append(tr if tr is not None else u)
    sequences: dict[str, list[tuple[int, int]]] = {}
    for t in schedule.tasks:
        node = node_of[(t.block, t.microbatch)]
        for d in t.devices:
            sequences.setdefault(d, []).append((t.start, node))
    for tr in schedule.transfers:
        sequences.setdefault("channel " + tr.channel, []).append((tr.start, transfer_node[tr.key]))
    for seq in sequences.values():
        nodes = list(dict.fromkeys(n for _, n in sorted(seq, key=lambda x: (x[0], rank[x[1]]))))
        for a, b in zip(nodes, nodes[1:]):
            preds[b].append(a)
    scale = math.lcm(*{x.denominator for x in length})  # whole numbers: exact and fast
    whole: dict[tuple[int, int], int] = {}  # each distinct length once (keyed by whole numbers, cheap to hash)
    size = []
    for x in length:
        key = (x.numerator, x.denominator)
        if key not in whole:
            whole[key] = x.numerator * (scale // x.denominator)
        size.append(whole[key])
    end: list[int | None] = [None] * len(length)
    for node in sorted(range(len(length)), key=rank.__getitem__):
        start = max((end[p] for p in preds[node]), default=0)
        end[node] = start + size[node]
    return Fraction(max(end, default=0), scale)  # type: ignore[type-var]


def float_below(value: Fraction) -> float:
    """The largest float <= ``value`` (a bound shown must not exceed the exact one)."""
    out = float(value)
    return math.nextafter(out, -math.inf) if out > value else out


def real_bound_ms(times: RealTimes, bound_ticks: int | None, relaxed: Problem | None = None) -> Fraction | None:
    """A lower bound, in real milliseconds, on every plan with the unrounded times and bytes.

    ``bound_ticks`` is a proven lower bound of the integer problem
    ``times.problem``. Let ``c`` be the largest ratio of a rounded time (in
    ms) to its real time (:meth:`RealTimes.scale`, at least 1). Take any plan
    of the real problem and keep its order (each device's and each channel's
    sequence, its overlapped groups) but give every task, group and transfer
    its rounded time, each started as soon as possible: every time grew by a
    factor of at most ``c``, so every start, which is a longest path through
    the order, did too, and the makespan is at most ``c`` times the real one;
    the starts are whole units. Each device runs the same sequence, so its
    memory passes through the same levels. When the integer problem counts
    memory exactly (every amount a whole number of memory units, or no
    budget), that re-timed plan is a plan of the integer problem, so
    ``bound_ticks <= c x real makespan / unit``: ``bound_ticks x unit / c``
    bounds every real plan. Otherwise the integer memory is stricter than
    the bytes (amounts rounded up, the budget down): pass as ``relaxed`` the
    problem with the memory rounded the other way (amounts down, the budget
    up; every plan in bytes fits it, and the argument above holds for it)
    and the bound is :func:`~schedsearch.bounds.lower_bound` of that one.

    Examples
    --------
    Stage times of 0.995 and 1.99 ms on a 0.5 ms unit become 2 and 4 units
    (``c`` = 1 / 0.995): a bound of 30 units (15 ms) reads 14.925 ms.

    >>> from schedsearch import Pipeline
    >>> from schedsearch.plan.planner import Candidate, build_problem
    >>> from schedsearch.plan.real_ms import real_bound_ms, real_times
    >>> from schedsearch.units import choose_units
    >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 0.995, "backward_ms": 1.99}] * 2)
    >>> units = choose_units({"F": 0.995, "B": 1.99}, [])
    >>> problem = build_problem(pipeline, Candidate(family="1f1b"), pipeline.stages, units)
    >>> times = real_times(pipeline, Candidate(family="1f1b"), pipeline.stages, problem, units)
    >>> units.time_unit_ms, real_bound_ms(times, 30)
    (0.5, Fraction(597, 40))
    """
    if relaxed is None:
        if bound_ticks is None:
            return None
        ticks = bound_ticks
    else:
        from schedsearch.bounds import lower_bound

        ticks = lower_bound(relaxed).value
    return ticks * times.unit_ms / times.scale()
