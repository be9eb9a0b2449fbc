"""A candidate's times, in exact milliseconds: the one home of every time a plan shows or solves with.

A :class:`~schedsearch.plan.pipeline.Pipeline` gives its times as the user
wrote them (floats of milliseconds). :func:`candidate_times` reads them once
for one candidate (a family at one setting, :class:`~schedsearch.plan.planner.Candidate`)
on its stages, as exact fractions (:func:`exact_ms`: the decimal the user
wrote), with the size ratio of each smaller micro-batch applied once, and
holds every task, overlapped group and transfer time of the candidate in a
:class:`CandidateTimes`. Everything else reads that object:

* the integer problem the searches solve (:attr:`CandidateTimes.problem`):
  every duration is its time rounded to whole time units
  (:meth:`CandidateTimes.ticks`), derived once; a transfer runs on the
  channel between its ranks, whose per-transfer time (a fixed
  ``p2p.time_ms``) or latency and bandwidth (``latency_ms``,
  ``bandwidth_bytes_per_s``) make its time (:class:`~schedsearch.problem.Channel`);
  the problem with the memory rounded the other way, whose bounds hold
  for the bytes, is derived from the same times
  (:meth:`CandidateTimes.relaxed_problem`);
* every figure in milliseconds: a plan's makespan re-timed with the
  unrounded times (:func:`retime_ms`), a bound on every plan with them
  (:meth:`CandidateTimes.bound_ms`, :func:`real_bound_ms`), hence the plan
  table, ``plan.json`` and the prediction of a run of the plan.

:func:`named_times` gives the times the time unit is chosen for
(:func:`~schedsearch.units.choose_units`), from the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.placements import chain_pipelines, device_names, stage_mapping
from schedsearch.plan.pipeline import Pipeline, Stage
from schedsearch.problem import Channel, Cluster, Edge, Graph, Problem
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import Schedule, overlap_groups
from schedsearch.units import Units

__all__ = ["CandidateTimes", "candidate_times", "exact_ms", "float_below", "memory_exact", "named_times",
           "rank_pipelines", "real_bound_ms", "retime_ms", "ticks", "transfer_ms"]

#: The stage field holding each block kind's time.
TIME_FIELD = {"F": "forward_ms", "B": "backward_ms", "I": "input_grad_ms", "W": "weight_grad_ms"}


def exact_ms(value: float) -> Fraction:
    """A time as the user wrote it: the shortest decimal that reads back as ``value``, as an exact fraction.

    Examples
    --------
    >>> from schedsearch.plan.times import exact_ms
    >>> exact_ms(0.995), exact_ms(2.0)
    (Fraction(199, 200), Fraction(2, 1))
    """
    return Fraction(repr(float(value)))


def transfer_ms(pipeline: Pipeline, num_bytes: int) -> Fraction:
    """The exact time of one point-to-point transfer of ``num_bytes`` (``pipeline.p2p``): its fixed
    ``time_ms``, or ``latency_ms`` plus the bytes over the bandwidth (0 when transfers are free)."""
    p2p = pipeline.p2p
    if p2p.time_ms is not None:
        return exact_ms(p2p.time_ms)
    size = Fraction(1000 * num_bytes, p2p.bandwidth_bytes_per_s) if p2p.bandwidth_bytes_per_s else Fraction(0)
    return exact_ms(p2p.latency_ms) + size


def size_ratios(pipeline: Pipeline) -> tuple[Fraction, ...] | None:
    """Each micro-batch's size over the largest, exactly (None when all are equal)."""
    if pipeline.size_ratios() is None:
        return None
    sizes = [exact_ms(s) for s in pipeline.microbatch_sizes]
    top = max(sizes)
    return tuple(s / top for s in sizes)


def named_times(pipeline: Pipeline, splits: Iterable[Sequence[Stage]]) -> dict[str, float]:
    """Every time the schedule model rounds, by name, for the time unit's choice
    (:func:`~schedsearch.units.choose_units`): each stage's times of each split of ``splits``, its transfer,
    the F&B pair and each of them at every smaller micro-batch's size ratio."""
    times: dict[str, float] = {}
    for stages in splits:
        n = len(stages)
        for k, s in enumerate(stages):
            for f in TIME_FIELD.values():
                if getattr(s, f) is not None:
                    times[f"{n}-stage split, stage {k} {f}"] = getattr(s, f)
            if not pipeline.p2p.free:
                times[f"{n}-stage split, stage {k} transfer"] = float(transfer_ms(pipeline, s.p2p_bytes))
    if pipeline.fb_overlap_ms is not None:
        times["F&B pair"] = pipeline.fb_overlap_ms
    ratios = size_ratios(pipeline)
    for r in sorted(set(ratios or ())):
        if r < 1:  # a smaller micro-batch's times are rounded too
            times.update({f"{k} at size ratio {float(r):.3g}": float(exact_ms(v) * r) for k, v in list(times.items())
                          if " at size ratio " not in k})
    return times


def ticks(ms: Fraction, units: Units, *, zero: bool = False) -> int:
    """``ms`` in whole time units, by the rule the time unit was chosen with (:meth:`Units.ticks
    <schedsearch.units.Units.ticks>`: the nearest, at least 1); ``zero`` lets a time of 0 ms stay 0."""
    return 0 if zero and ms == 0 else units.ticks(float(ms))


def _task_ms(stage_ms: Sequence[Mapping[str, Fraction]], ratio: Sequence[Fraction] | None, second_half: int,
             block: Any, microbatch: int) -> Fraction:
    """The rule of a task instance's time: its stage's time of its kind times the size ratio of the
    pipeline's micro-batch it carries (DualPipe's second pipeline, suffix ``.up``, carries the second half)."""
    ms = stage_ms[block.stage][block.kind]
    if ratio is None:
        return ms
    offset = second_half if block.name.endswith(".up") else 0
    return ms * ratio[offset + microbatch]


def _edge_ms(problem: Problem, send_ms: Sequence[Fraction]) -> dict[tuple[str, str], Fraction]:
    """Each edge's transfer time: the sending stage's (the forward's stage: its output, or the gradient of
    it, crosses) when the two ends run on different ranks, else 0."""
    graph = problem.graph
    device_of = {b.name: b.options[0].devices[0] for b in graph.blocks}
    out = {}
    for e in graph.edges:
        sender = graph.block(e.src if e.src.startswith("F") else e.dst).stage
        out[(e.src, e.dst)] = send_ms[sender] if device_of[e.src] != device_of[e.dst] else Fraction(0)
    return out


@attrs.frozen(kw_only=True, eq=False)
class CandidateTimes:
    """Every time of one candidate in exact milliseconds, and its integer problem derived from them.

    ``stage_ms[s][kind]`` is stage ``s``'s time of a block kind (``"F"``,
    ``"B"``, ``"I"``, ``"W"``; the largest micro-batch's), ``ratio`` each
    micro-batch's size over the largest (None: all alike), ``overlap_ms``
    the F&B pair's own time, ``send_ms[s]`` the time of the transfer at
    stage ``s``'s boundary (of the bytes it sends; 0 when transfers are
    free) and ``latency_ms`` the link's latency when it has a bandwidth
    (None: every transfer takes the same time). :attr:`task`,
    :attr:`overlap` and :attr:`edge` give them per task instance,
    overlapped group and edge of :attr:`problem`, whose every duration is
    :func:`ticks` of them in ``units`` (its time unit is ``unit_ms``).
    :attr:`memory_exact` says whether its memory amounts are whole memory
    units (then its memory is the bytes' exactly); otherwise
    :meth:`relaxed_problem` is the problem whose bounds hold for the bytes.
    """

    units: Units
    unit_ms: Fraction
    stage_ms: tuple[Mapping[str, Fraction], ...]
    ratio: tuple[Fraction, ...] | None
    overlap_ms: Fraction | None
    send_ms: tuple[Fraction, ...]
    latency_ms: Fraction | None
    second_half: int
    problem: Problem
    memory_exact: bool
    #: what :meth:`relaxed_problem` is built from, when asked: (pipeline, candidate, stages, units)
    source: tuple[Any, ...] = attrs.field(default=(), repr=False)
    _cache: dict[str, Any] = attrs.field(factory=dict, init=False, repr=False)

    # ------------------------------------------------------------ times per instance
    def task_ms(self, block: Any, microbatch: int) -> Fraction:
        """The time of ``block`` (a block of :attr:`problem`) at its instance ``microbatch``."""
        return _task_ms(self.stage_ms, self.ratio, self.second_half, block, microbatch)

    @property
    def task(self) -> dict[tuple[str, int], Fraction]:
        """Each task instance's time by ``(block, micro-batch)``."""
        if "task" not in self._cache:
            m = self.problem.num_microbatches
            self._cache["task"] = {(b.name, k): self.task_ms(b, k) for b in self.problem.graph.blocks for k in range(m)}
        return self._cache["task"]

    @property
    def overlap(self) -> dict[frozenset[str], Fraction]:
        """Each overlapped group's own time by its blocks: ``"F&B"`` the pair's, ``"B"`` the stage's full backward."""
        if "overlap" not in self._cache:
            out = {}
            for ov in self.problem.overlaps:
                if ov.name == "F&B":
                    out[ov.key] = self.overlap_ms
                elif ov.name == "B":
                    out[ov.key] = self.stage_ms[self.problem.graph.block(ov.blocks[0]).stage]["B"]
                else:
                    raise AssertionError(f"{self.problem.name}: no time for the overlapped group {ov.name!r}")
            self._cache["overlap"] = out
        return self._cache["overlap"]

    @property
    def edge(self) -> dict[tuple[str, str], Fraction]:
        """Each edge's transfer time by ``(src, dst)`` (0: the two ends on one rank, or transfers are free)."""
        if "edge" not in self._cache:
            self._cache["edge"] = _edge_ms(self.problem, self.send_ms)
        return self._cache["edge"]

    def group(self, members: Sequence[tuple[str, int]]) -> Fraction:
        """An overlapped group's time: its own, or its longest member's when that is longer."""
        own = self.overlap[frozenset(b for b, _ in members)]
        return max([own] + [self.task[k] for k in members])

    # ------------------------------------------------------------ the rounding
    def _pairs(self) -> list[tuple[int, Fraction]]:
        """Each distinct (time in the problem's units, time in ms) of its tasks, overlapped groups and
        transfers (alike micro-batches repeat the same pairs). Computed once."""
        if "pairs" not in self._cache:
            problem = self.problem
            durations = problem.durations
            pairs = [(durations(b, m)[0], t) for (b, m), t in self.task.items()]
            pairs += [(ov.duration, self.overlap[ov.key]) for ov in problem.overlaps]
            device_of = {b.name: b.options[0].devices[0] for b in problem.graph.blocks}
            for e in problem.graph.edges:
                units = 0
                if e.size:
                    channel = problem.cluster.channels_between(device_of[e.src], device_of[e.dst])[0]
                    units = channel.transfer_time(e.size)
                pairs.append((units, self.edge[(e.src, e.dst)]))
            self._cache["pairs"] = list(
                {(units, real.numerator, real.denominator): (units, real) for units, real in pairs}.values())
        return self._cache["pairs"]

    def exact(self) -> bool:
        """Whether every time of the problem is its time in ms exactly (units x unit = ms): then a plan of the
        integer problem, its times read in units, is a plan of the real times as it stands."""
        return all(units * self.unit_ms == real for units, real in self._pairs())

    def scale(self) -> Fraction:
        """The largest (rounded time in ms) / (real time) over every time of the problem (at least 1)."""
        out = Fraction(1)
        for units, real in self._pairs():
            if units and real:
                out = max(out, units * self.unit_ms / real)
            elif units:  # a time the integers hold and reality does not: no scale bounds it
                raise AssertionError(f"a real time of 0 ms became {units} time units")
        return out

    # ------------------------------------------------------------ bounds
    def relaxed_problem(self) -> Problem:
        """The problem with the memory rounded the other way (amounts down, budget up: every plan that fits in
        bytes fits it) and the same times; without a budget when its constructor refuses the rounded one.
        :attr:`problem` itself when the memory is exact. Built once, when first asked."""
        if self.memory_exact:
            return self.problem
        if "relaxed" not in self._cache:
            fields = {f.name: getattr(self, f.name) for f in attrs.fields(CandidateTimes) if f.init}
            try:
                self._cache["relaxed"] = _integer_problem(*self.source, fields, relaxed_memory=True)
            except InvalidProblemError:
                self._cache["relaxed"] = with_capacities(self.problem, None)
        return self._cache["relaxed"]

    def bound_ms(self, bound_ticks: int | None) -> Fraction | None:
        """:func:`real_bound_ms` of this candidate: of the search's bound ``bound_ticks`` when the memory counts
        exactly (:attr:`memory_exact`), else of the bound of :meth:`relaxed_problem`."""
        if self.memory_exact:
            return real_bound_ms(self, bound_ticks)
        return real_bound_ms(self, bound_ticks, self.relaxed_problem())


def rank_pipelines(candidate: Any, num_ranks: int) -> tuple[list[list[int]], list[str] | None]:
    """The rank of each stage, per pipeline of ``candidate`` (DualPipe: two opposite ones), and their suffixes."""
    if candidate.record.two_pipelines:
        return [list(range(num_ranks)), list(range(num_ranks - 1, -1, -1))], [".down", ".up"]
    return [list(stage_mapping(candidate.layout, num_ranks, candidate.num_stages(num_ranks)))], None


def _rank_parameters(pipes: Sequence[Sequence[int]], stages: Sequence[Stage], rank: int) -> int:
    """The parameter bytes ``rank`` holds: every stage it runs, in every pipeline."""
    return sum(stages[s].parameter_bytes for pipe in pipes for s, d in enumerate(pipe) if d == rank)


def memory_exact(pipeline: Pipeline, candidate: Any, stages: Sequence[Stage], units: Units) -> bool:
    """True when every memory amount of the candidate's problem is a whole number of memory units.

    Then the integer problem's memory is the byte problem's: a level of
    whole units is within ``floor(budget / unit)`` units exactly when its
    bytes are within the budget.
    """
    if pipeline.memory_budget_bytes is None:
        return True
    pipes, _ = rank_pipelines(candidate, pipeline.num_ranks)
    amounts = [s.activation_bytes for s in stages]
    amounts += [_rank_parameters(pipes, stages, r) for r in range(pipeline.num_ranks)]
    return all(a % units.memory_unit_bytes == 0 for a in amounts)


def candidate_times(pipeline: Pipeline, candidate: Any, stages: Sequence[Stage], units: Units) -> CandidateTimes:
    """The times of ``candidate`` (a :class:`~schedsearch.plan.planner.Candidate`) on ``stages``, read once,
    and its integer problem in ``units`` derived from them (see
    :func:`~schedsearch.plan.planner.build_problem` for its shape).

    Examples
    --------
    Stage times of 0.995 and 1.99 ms on a 0.5 ms unit are 2 and 4 units:

    >>> from schedsearch import Pipeline
    >>> from schedsearch.plan.planner import Candidate
    >>> from schedsearch.plan.times import candidate_times
    >>> from schedsearch.units import choose_units
    >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 0.995, "backward_ms": 1.99}] * 2)
    >>> times = candidate_times(pipeline, Candidate(family="1f1b"), pipeline.stages, choose_units({"F": 0.995}, []))
    >>> times.task[("F0", 0)], times.problem.durations("F0", 0), times.unit_ms
    (Fraction(199, 200), (2,), Fraction(1, 2))
    """
    p2p = pipeline.p2p
    fields = dict(
        units=units,
        unit_ms=exact_ms(units.time_unit_ms),
        stage_ms=tuple({kind: exact_ms(getattr(s, field)) for kind, field in TIME_FIELD.items()
                        if getattr(s, field) is not None} for s in stages),
        ratio=size_ratios(pipeline),
        overlap_ms=None if pipeline.fb_overlap_ms is None else exact_ms(pipeline.fb_overlap_ms),
        send_ms=tuple(Fraction(0) if p2p.free else transfer_ms(pipeline, s.p2p_bytes) for s in stages),
        latency_ms=None if p2p.time_ms is not None or not p2p.bandwidth_bytes_per_s else exact_ms(p2p.latency_ms),
        second_half=pipeline.num_microbatches // 2 if candidate.record.two_pipelines else 0,
    )
    return CandidateTimes(**fields, problem=_integer_problem(pipeline, candidate, stages, units, fields),
                          memory_exact=memory_exact(pipeline, candidate, stages, units),
                          source=(pipeline, candidate, tuple(stages), units))


def _integer_problem(pipeline: Pipeline, candidate: Any, stages: Sequence[Stage], units: Units,
                     times: Mapping[str, Any], *, relaxed_memory: bool = False) -> Problem:
    """The integer problem of ``times`` (the fields of a :class:`CandidateTimes`): every duration its time in
    whole units, memory in memory units (amounts up and the budget down, or with ``relaxed_memory`` the
    other way round)."""
    P = pipeline.num_ranks
    unit, stage_ms = units, times["stage_ms"]
    pipes, suffixes = rank_pipelines(candidate, P)
    amount = units.capacity if relaxed_memory else units.memory
    kwargs: dict[str, Any] = {
        "forward": [ticks(ms["F"], unit) for ms in stage_ms],
        "backward": [ticks(ms["B"], unit) for ms in stage_ms],
        "forward_memory": [amount(s.activation_bytes) for s in stages],
    }
    if candidate.split_backward:
        kwargs.update(split_backward=True, input_grad=[ticks(ms["I"], unit) for ms in stage_ms],
                      weight_grad=[ticks(ms["W"], unit) for ms in stage_ms])
        if candidate.record.full_backward:
            kwargs["full_backward"] = True
            if candidate.overlap:
                kwargs["overlap_forward_backward"] = ticks(times["overlap_ms"], unit)
    budget = None if pipeline.memory_budget_bytes is None else (units.memory if relaxed_memory else units.capacity)(
        pipeline.memory_budget_bytes)
    m = pipeline.num_microbatches // 2 if candidate.record.two_pipelines else pipeline.num_microbatches
    problem = chain_pipelines(pipes, P, m, memory=budget, free_at_end=True, suffixes=suffixes,
                              name=f"{pipeline.name or 'pipeline'} {candidate.label}", **kwargs)
    names = device_names(P)
    params = {names[r]: amount(_rank_parameters(pipes, stages, r)) for r in range(P)}
    overrides = []
    if times["ratio"] is not None:  # the micro-batches smaller than the largest: their own durations
        for b in problem.graph.blocks:
            for k in range(problem.num_microbatches):
                ms = _task_ms(stage_ms, times["ratio"], times["second_half"], b, k)
                if ms != stage_ms[b.stage][b.kind]:
                    overrides.append((b.name, k, (ticks(ms, unit),) * len(b.options)))
    problem = problem.with_(initial_memory={d: v for d, v in params.items() if v},
                            time_unit_s=units.time_unit_ms / 1e3, memory_unit_bytes=units.memory_unit_bytes,
                            duration_overrides=overrides)
    return _with_transfers(problem, times)


def _with_transfers(problem: Problem, times: Mapping[str, Any]) -> Problem:
    """``problem`` with each edge between ranks a transfer on the channel between the two ranks.

    Without a bandwidth every transfer takes the same time (``p2p.time_ms``,
    or the latency): each is one message (size 1) and the channel's time
    per message is that time in units. With a bandwidth the channel has the
    latency (in units) and carries one size unit per time unit: a
    transfer's size is its bytes in what the link moves in one time unit,
    rounded so that latency plus size is the transfer's time rounded once
    (the latency is one unit less when a transfer's bytes would round to
    nothing: a size of 0 is no transfer).
    """
    unit = times["units"]
    edge_units = {e: ticks(ms, unit, zero=True) for e, ms in _edge_ms(problem, times["send_ms"]).items()}
    sized = {e: t for e, t in edge_units.items() if t}
    if not sized:
        return problem
    if times["latency_ms"] is None:  # one time per transfer
        (per_message,) = set(sized.values())
        sizes = {e: 1 for e in sized}
        link = {"time_per_unit": per_message, "latency": 0}
    else:
        latency = min(unit.ticks_or_zero(float(times["latency_ms"])), min(sized.values()) - 1)
        sizes = {e: t - latency for e, t in sized.items()}
        link = {"time_per_unit": 1, "latency": latency}
    device_of = {b.name: b.options[0].devices[0] for b in problem.graph.blocks}
    pairs = sorted({tuple(sorted((device_of[a], device_of[b]))) for a, b in sized})
    edges = [Edge(src=e.src, dst=e.dst, size=sizes.get((e.src, e.dst), 0)) for e in problem.graph.edges]
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), **link) for a, b in pairs]
    return problem.with_(graph=Graph(blocks=problem.graph.blocks, edges=edges),
                         cluster=Cluster(devices=problem.cluster.devices, channels=channels))


def retime_ms(schedule: Schedule, times: CandidateTimes) -> Fraction:
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
    task = times.task
    for t in schedule.tasks:
        if t.overlap is None:  # not in a group
            key = (t.block, t.microbatch)
            node_of[key] = len(length)
            length.append(task[key])
    rank: list[tuple[int, int]] = [(0, 0)] * len(length)
    for t in schedule.tasks:
        rank[node_of[(t.block, t.microbatch)]] = (t.start, 1)
    preds: list[list[int]] = [[] for _ in length]
    transfer_node: dict[tuple[str, str, int], int] = {}
    edge = times.edge
    for tr in schedule.transfers:
        node = len(length)
        transfer_node[tr.key] = node
        length.append(edge[(tr.src, tr.dst)])
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


def real_bound_ms(times: CandidateTimes, bound_ticks: int | None, relaxed: Problem | None = None) -> Fraction | None:
    """A lower bound, in real milliseconds, on every plan with the unrounded times and bytes.

    ``bound_ticks`` is a proven lower bound of the integer problem
    ``times.problem``. Let ``c`` be the largest ratio of a rounded time (in
    ms) to its real time (:meth:`CandidateTimes.scale`, at least 1). Take any plan
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
    >>> from schedsearch.plan.planner import Candidate
    >>> from schedsearch.plan.times import candidate_times, real_bound_ms
    >>> from schedsearch.units import choose_units
    >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 0.995, "backward_ms": 1.99}] * 2)
    >>> units = choose_units({"F": 0.995, "B": 1.99}, [])
    >>> times = candidate_times(pipeline, Candidate(family="1f1b"), pipeline.stages, units)
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
