"""From a partition to a scheduling problem: one block per stage per direction.

A split puts the operators of an :class:`~schedsearch.partition.opgraph.OperatorGraph`
on devices in pipeline order. :func:`split_to_problem` turns it into a
:class:`~schedsearch.problem.Problem`:

* **Blocks.** Stage ``i`` (the ``i``-th non-empty device of the split)
  gets a forward block ``F{i}`` with the summed forward latency of its
  operators on that device's kind (accelerator or CPU latency) and, for a
  training graph, a backward block ``B{i}`` with the summed backward
  latency; both are fixed on the stage's device. ``F{i}`` allocates one
  unit of memory (the micro-batch's stashed activations) and ``B{i}``
  frees it, the pipeline convention; ``max_in_flight`` caps how many
  micro-batches a device may hold (None: unbounded).
* **Edges.** Block ``X`` precedes block ``Y`` when some operator of ``X``
  feeds some operator of ``Y``; the transfer size is the summed output
  cost of ``X``'s operators that feed ``Y`` (each tensor once per
  receiving stage, the partition's cost model; 0 between the two blocks
  of one stage, which share a device). ``F{i} -> B{i}`` is added
  for every training stage (the backward needs its own forward).
  Communication that a partitioner charged to a device's load becomes
  transfers on channels here, which the schedule may overlap with compute.
* **Devices and channels.** One device per stage (named after the split's
  slot, ``accel0``, ``cpu0``, ...), one undirected channel per pair of
  stages that exchange data (one transfer at a time, ``time_per_unit=1``).
* **Integer time.** Latencies and costs are floats; the problem needs
  integers. Everything is divided by ``time_unit`` (by default the largest
  block latency over ``resolution``) and rounded, durations to at least 1;
  :attr:`StagedProblem.time_unit` says by how much.

The block graph must be acyclic: a split whose stages feed each other both
ways (possible for non-contiguous splits) is rejected with a clear error.

:func:`partition_and_schedule` runs partitioner, conversion and a search
strategy (passed in: :func:`schedsearch.search.optimal` or any function
``search(problem, **options) -> SearchResult``) in one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.options import Rule, check_keywords, check_options, check_partition_options
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload, Slot, Split
from schedsearch.partition.result import PartitionResult
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem

__all__ = ["StagedProblem", "split_to_problem", "PipelineResult", "partition_and_schedule"]


@attrs.frozen(kw_only=True)
class StagedProblem:
    """A scheduling problem built from a split, with the way back.

    Attributes
    ----------
    problem:
        The block-level problem.
    time_unit:
        Operator-graph time per problem time unit (durations = latency /
        time_unit, rounded).
    stage_slots:
        The split's device of each stage, in pipeline order.
    block_operators:
        Operator ids of each block.

    Examples
    --------
    Latencies of 0.5 and 1.5 in units of 0.5 are blocks of 1 and 3; a
    makespan of 8 units is 4.0 in the graph's time:

    >>> from schedsearch.partition import Operator, OperatorGraph, Slot, Split, split_to_problem
    >>> graph = OperatorGraph(operators=[Operator(id=0, accel_latency=0.5), Operator(id=1, accel_latency=1.5)],
    ...                       edges=[(0, 1)])
    >>> one_each = Split(stages=[(Slot(kind="accel", index=0), (0,)), (Slot(kind="accel", index=1), (1,))])
    >>> staged = split_to_problem(graph, one_each, num_microbatches=2, time_unit=0.5)
    >>> [block.options[0].duration for block in staged.problem.graph.blocks], staged.to_graph_time(8)
    ([1, 3], 4.0)
    >>> staged.block_operators
    {'F0': (0,), 'F1': (1,)}
    """

    problem: Problem
    time_unit: float
    stage_slots: tuple[Slot, ...]
    block_operators: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)

    def to_graph_time(self, units: int | float) -> float:
        """Problem time units in the operator graph's unit."""
        return units * self.time_unit


def split_to_problem(
    graph: OperatorGraph,
    split: Split | PartitionResult,
    *,
    num_microbatches: int,
    time_unit: float | None = None,
    resolution: int = 20,
    max_in_flight: int | None = None,
    name: str = "",
) -> StagedProblem:
    """Build the block-level problem of ``split`` (see the module docstring).

    One block per stage, one device per stage's slot, an edge per crossing
    tensor: the partition's answer becomes a schedule search.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_dp, split_to_problem
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> split = partition_dp(graph, DeviceLimits(num_accelerators=2))
    >>> problem = split_to_problem(graph, split, num_microbatches=4, time_unit=1.0).problem
    >>> [(block.name, block.options) for block in problem.graph.blocks]
    [('F0', (Option(devices=('accel0',), duration=6),)), ('F1', (Option(devices=('accel1',), duration=6),))]
    >>> problem.graph.edges
    (Edge(src='F0', dst='F1', size=1),)
    """
    if isinstance(split, PartitionResult):
        split = split.split
    if resolution < 1:
        raise InvalidOperatorGraphError(f"split_to_problem: 'resolution' must be >= 1, got {resolution!r}")
    assignment = split.assignment()
    missing = [op.id for op in graph.operators if op.id not in assignment]
    if missing:
        raise InvalidOperatorGraphError(
            f"split_to_problem: {len(missing)} operators not in the split, e.g. {missing[:5]}"
        )
    stages = [(slot, ops) for slot, ops in split.stages if ops]
    stage_of_slot = {slot: i for i, (slot, _) in enumerate(stages)}
    training = graph.is_training

    def block_of(op_id: int) -> str:
        i = stage_of_slot[assignment[op_id]]
        return f"{'B' if graph.operator(op_id).is_backward else 'F'}{i}"

    latency: dict[str, float] = {}
    members: dict[str, list[int]] = {}
    for i, (slot, ops) in enumerate(stages):
        for op_id in ops:
            op = graph.operator(op_id)
            b = block_of(op_id)
            lat = op.cpu_latency if slot.kind == "cpu" else op.accel_latency
            latency[b] = latency.get(b, 0.0) + lat
            members.setdefault(b, []).append(op_id)
        if training:
            for b in (f"F{i}", f"B{i}"):
                latency.setdefault(b, 0.0)
                members.setdefault(b, [])
    # transfers between blocks: each source operator once per receiving block
    size: dict[tuple[str, str], float] = {}
    for op in graph.operators:
        src = block_of(op.id)
        dests = {block_of(t) for t in graph.successors(op.id)} - {src}
        for dst in dests:
            # within one stage (F_i -> B_i) the tensor stays on its device
            cost = op.output_cost if dst[1:] != src[1:] else 0.0
            size[(src, dst)] = size.get((src, dst), 0.0) + cost
    if training:
        for i in range(len(stages)):
            size.setdefault((f"F{i}", f"B{i}"), 0.0)
    if time_unit is None:
        largest = max(latency.values(), default=0.0)
        time_unit = largest / resolution if largest > 0 else 1.0
    if not (isinstance(time_unit, (int, float)) and math.isfinite(time_unit) and time_unit > 0):
        raise InvalidOperatorGraphError(f"split_to_problem: 'time_unit' must be > 0, got {time_unit!r}")
    cycle = _cycle(list(latency), list(size))
    if cycle:
        raise InvalidOperatorGraphError(
            "split_to_problem: the stages feed each other in a cycle ("
            + " -> ".join(cycle + [cycle[0]])
            + "); use a contiguous split (dp, dpl, slicegraph, modules)"
        )
    slot_name = {i: str(slot) for i, (slot, _) in enumerate(stages)}
    blocks = []
    for b in sorted(latency, key=lambda x: (int(x[1:]), x[0] != "F")):
        i = int(b[1:])
        kind = b[0]
        memory = 0
        if training:
            memory = 1 if kind == "F" else -1
        blocks.append(Block(
            name=b, kind=kind,
            options=[Option(devices=(slot_name[i],), duration=max(1, round(latency[b] / time_unit)))],
            memory=memory, stage=i,
        ))
    edges = [Edge(src=a, dst=b, size=int(round(c / time_unit))) for (a, b), c in sorted(size.items())]
    pairs = sorted({tuple(sorted((slot_name[int(a[1:])], slot_name[int(b[1:])])))
                    for (a, b) in size if a[1:] != b[1:]})
    devices = [Device(name=slot_name[i], memory=max_in_flight if training else None)
               for i in range(len(stages))]
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=1) for a, b in pairs]
    problem = Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=num_microbatches,
        cluster=Cluster(devices=devices, channels=channels),
        name=name or f"{graph.name or 'graph'} in {len(stages)} stages",
    )
    return StagedProblem(
        problem=problem, time_unit=float(time_unit), stage_slots=tuple(s for s, _ in stages),
        block_operators={b: tuple(sorted(m)) for b, m in members.items()},
    )


def _cycle(nodes: list[str], edges: list[tuple[str, str]]) -> list[str] | None:
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    colour = dict.fromkeys(nodes, 0)
    for root in nodes:
        if colour[root]:
            continue
        stack = [(root, iter(succ[root]))]
        path = [root]
        colour[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[nxt] == 1:
                return path[path.index(nxt):]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
                path.append(nxt)
    return None


@attrs.frozen(kw_only=True)
class PipelineResult:
    """Partition, the problem built from it, and the search result.

    Returned by :func:`partition_and_schedule`; ``problem`` and
    ``schedule`` reach into the parts.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_and_schedule
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> from schedsearch.search import list_schedule
    >>> pipeline = partition_and_schedule(graph, DeviceLimits(num_accelerators=2), search=list_schedule,
    ...                                   num_microbatches=4, time_unit=1.0)
    >>> pipeline.partition.max_load, pipeline.problem.num_microbatches, pipeline.schedule.makespan
    (7.0, 4, 31)
    """

    partition: PartitionResult
    staged: StagedProblem
    search: Any  # schedsearch.result.SearchResult (not imported: partition sits below search)

    @property
    def problem(self) -> Problem:
        return self.staged.problem

    @property
    def schedule(self):
        return self.search.schedule

    def __str__(self) -> str:
        s = self.search
        lines = [str(self.partition), f"problem: {self.staged.problem.name}, time unit "
                 f"{self.staged.time_unit:.6g} (graph time per problem unit)", str(s)]
        if s.objective is not None:
            n = self.staged.problem.num_microbatches
            lines.append(
                f"makespan {s.objective} units = {self.staged.to_graph_time(s.objective):.6g}; "
                f"{self.staged.to_graph_time(s.objective) / n:.6g} per micro-batch over {n} micro-batches "
                f"(partition max-load {self.partition.max_load:.6g}, communication included there)"
            )
        return "\n".join(lines)


def partition_and_schedule(
    workload: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    search: Callable[..., Any],
    num_microbatches: int,
    method: str = "dp",
    partition_options: Mapping[str, Any] | None = None,
    time_unit: float | None = None,
    resolution: int = 20,
    max_in_flight: int | None = None,
    **search_options: Any,
) -> PipelineResult:
    """Partition ``workload``, build its block problem, and search a schedule.

    Parameters
    ----------
    search:
        The strategy, e.g. :func:`schedsearch.search.optimal`; called as
        ``search(problem, **search_options)``.
    method, partition_options:
        The partitioner (see :data:`schedsearch.partition.methods.METHODS`)
        and its options.
    time_unit, resolution, max_in_flight:
        See :func:`split_to_problem`.

    Examples
    --------
    Two stages of 6 units and a 1-unit transfer: 4 micro-batches take
    4 x 6 + 1 + 6 = 31, which the exact search proves optimal.

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_and_schedule
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> from schedsearch.search import optimal
    >>> pipeline = partition_and_schedule(graph, DeviceLimits(num_accelerators=2), search=optimal,
    ...                                   num_microbatches=4, time_unit=1.0, time_limit_s=10, workers=1)
    >>> pipeline.search.status.value, pipeline.search.objective
    ('OPTIMAL', 31)
    """
    from schedsearch.partition.methods import METHODS, method_options, partition

    check_options("partition_and_schedule", {
        "search": (search, Rule.function(none=False)), "num_microbatches": (num_microbatches, Rule.integer(1)),
        "method": (method, Rule.choice(sorted(METHODS))),
        "partition_options": (partition_options, Rule.instance(Mapping, "a mapping of the method's options",
                                                               none=True)),
        "time_unit": (time_unit, Rule.number(above=0, none=True)), "resolution": (resolution, Rule.integer(1)),
        "max_in_flight": (max_in_flight, Rule.integer(1, none=True)),
    })
    check_partition_options(f"partition_and_schedule (method {method!r})", dict(partition_options or {}),
                            method_options(method))
    check_keywords("partition_and_schedule", search, search_options, "search option")
    if isinstance(workload, PartitionWorkload):
        graph, devices = workload.graph, devices if devices is not None else workload.devices
    else:
        graph = workload
    part = partition(graph, devices, method=method, **dict(partition_options or {}))
    staged = split_to_problem(graph, part, num_microbatches=num_microbatches, time_unit=time_unit,
                              resolution=resolution, max_in_flight=max_in_flight)
    return PipelineResult(partition=part, staged=staged, search=search(staged.problem, **search_options))
