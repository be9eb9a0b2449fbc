"""The max-load cost of a split, computed directly on the operator graph.

This module is the independent check of every partitioner: it shares no code
with the dynamic programs (which work on contracted supernodes, ideals and
hyperedge counts). The cost model is the one of Tarnawski et al.:

* an accelerator's load = sum of the accelerator latencies of its operators
  + communication: for every operator ``s`` with output cost ``c_s`` whose
  *edge group* (``s`` and its successors) spans two or more devices, each
  accelerator in the group pays ``c_s`` once (the sender once, every
  receiving device once, however many edges go there);
* a CPU's load = sum of the CPU latencies of its operators (CPUs pay no
  communication);
* max-load = the largest load (time per sample in steady state).

Feasibility (reported as violations, not raised): every operator assigned
once, operators of one colocation class on one device, accelerators hold
only operators supported there and at most ``max_accel_memory`` bytes, at
most the available number of devices of each kind.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, Slot, Split

__all__ = ["SplitCost", "evaluate_split", "complete_split", "one_device_split"]


@attrs.frozen(kw_only=True)
class SplitCost:
    """Loads of a split.

    ``loads``, ``compute`` and ``communication`` map each device of the
    split (as listed) to its figures; ``memory`` maps accelerators to bytes.

    Examples
    --------
    >>> from schedsearch.partition import Slot, SplitCost
    >>> gpu = Slot(kind="accel", index=0)
    >>> cost = SplitCost(max_load=7.0, loads=((gpu, 7.0),), compute=((gpu, 6.0),), communication=((gpu, 1.0),),
    ...                  memory=((gpu, 2.0),))
    >>> cost.feasible, cost.load_of(gpu)
    (True, 7.0)
    """

    max_load: float
    loads: tuple[tuple[Slot, float], ...]
    compute: tuple[tuple[Slot, float], ...]
    communication: tuple[tuple[Slot, float], ...]
    memory: tuple[tuple[Slot, float], ...]
    violations: tuple[str, ...] = ()

    @property
    def feasible(self) -> bool:
        return not self.violations

    def load_of(self, slot: Slot) -> float:
        return dict(self.loads)[slot]


def evaluate_split(
    graph: OperatorGraph, split: Split | Mapping[int, Slot], devices: DeviceLimits | None = None
) -> SplitCost:
    """Compute every device's load of ``split`` (see the module docstring).

    It shares no code with the partitioners: every partition result is
    re-evaluated by it. Broken limits are reported in ``violations``.

    Examples
    --------
    Layers of 4, 2, 3 and 3 units, each sending an output that costs 1; the
    cut between layers 1 and 2 costs both devices 1:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, Slot, evaluate_split
    >>> layers = [Operator(id=i, accel_latency=t, size=1.0, output_cost=1.0) for i, t in enumerate([4, 2, 3, 3])]
    >>> graph = OperatorGraph(operators=layers, edges=[(0, 1), (1, 2), (2, 3)])
    >>> gpu0, gpu1 = Slot(kind="accel", index=0), Slot(kind="accel", index=1)
    >>> cost = evaluate_split(graph, {0: gpu0, 1: gpu0, 2: gpu1, 3: gpu1})
    >>> cost.max_load, [(str(slot), load) for slot, load in cost.communication]
    (7.0, [('accel0', 1.0), ('accel1', 1.0)])
    >>> evaluate_split(graph, {0: gpu0, 1: gpu0, 2: gpu1, 3: gpu1},
    ...                DeviceLimits(num_accelerators=2, max_accel_memory=1.0)).violations[0]
    'device accel0: memory 2 B exceeds the limit 1 B'
    """
    if isinstance(split, Split):
        assignment = split.assignment()
        slots = list(split.slots)
    else:
        assignment = dict(split)
        slots = sorted(set(assignment.values()))
    violations: list[str] = []
    for op_id in assignment:
        if op_id not in graph:
            violations.append(f"operator {op_id}: not in the graph")
    missing = [op.id for op in graph.operators if op.id not in assignment]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        violations.append(f"{len(missing)} operators not assigned: {shown}")
    compute: dict[Slot, list[float]] = {s: [] for s in slots}
    comm: dict[Slot, list[float]] = {s: [] for s in slots}
    memory: dict[Slot, list[float]] = {s: [] for s in slots if s.kind == "accel"}
    for op in graph.operators:
        slot = assignment.get(op.id)
        if slot is None:
            continue
        if slot.kind == "cpu":
            compute[slot].append(op.cpu_latency)
        else:
            compute[slot].append(op.accel_latency)
            memory[slot].append(op.size)
            if not op.supported_on_accel:
                violations.append(f"operator {op.id}: not supported on an accelerator, placed on {slot}")
    for op in graph.operators:
        src = assignment.get(op.id)
        succs = graph.successors(op.id)
        if src is None or not succs:
            continue
        group = {src} | {assignment[t] for t in succs if t in assignment}
        if len(group) < 2:
            continue
        for slot in group:
            if slot.kind == "accel":
                comm[slot].append(op.output_cost)
    by_class: dict[int, set[Slot]] = {}
    for op in graph.operators:
        if op.color_class is not None and op.id in assignment:
            by_class.setdefault(op.color_class, set()).add(assignment[op.id])
    for cc, where in sorted(by_class.items()):
        if len(where) > 1:
            violations.append(
                f"colocation class {cc}: split over devices {', '.join(sorted(map(str, where)))}"
            )
    if devices is not None:
        for kind, limit in (("accel", devices.num_accelerators), ("cpu", devices.num_cpus)):
            used = [s for s in slots if s.kind == kind and (compute[s] or comm[s])]
            if len(used) > limit:
                violations.append(f"{len(used)} {kind} devices used, only {limit} available")
        if devices.max_accel_memory is not None:
            for slot, sizes in memory.items():
                total = math.fsum(sizes)
                if total > devices.max_accel_memory:
                    violations.append(
                        f"device {slot}: memory {total:.6g} B exceeds the limit "
                        f"{devices.max_accel_memory:.6g} B"
                    )
    comp_t = {s: math.fsum(v) for s, v in compute.items()}
    comm_t = {s: math.fsum(v) for s, v in comm.items()}
    loads = {s: comp_t[s] + comm_t[s] for s in slots}
    return SplitCost(
        max_load=max(loads.values(), default=0.0),
        loads=tuple((s, loads[s]) for s in slots),
        compute=tuple((s, comp_t[s]) for s in slots),
        communication=tuple((s, comm_t[s]) for s in slots),
        memory=tuple((s, math.fsum(v)) for s, v in memory.items()),
        violations=tuple(violations),
    )


def complete_split(graph: OperatorGraph, split: Split) -> Split:
    """Assign unlisted operators to the device of their colocation class.

    Expert splits list forward operators only; the backward partner (same
    class) goes where its forward partner is. Raises
    :class:`~schedsearch.errors.InvalidOperatorGraphError` if an unlisted
    operator's class is on no device or on several.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, Slot, Split, complete_split
    >>> from schedsearch.partition import training_graph_from_forward
    >>> forward = OperatorGraph(operators=[Operator(id=0, accel_latency=1.0), Operator(id=1, accel_latency=1.0)],
    ...                         edges=[(0, 1)])
    >>> expert = Split(stages=[(Slot(kind="accel", index=0), (0,)), (Slot(kind="accel", index=1), (1,))])
    >>> split = complete_split(training_graph_from_forward(forward), expert)
    >>> [(str(slot), operators) for slot, operators in split.stages]  # backwards 2 and 3 join their forwards
    [('accel0', (0, 2)), ('accel1', (1, 3))]
    """
    assignment = split.assignment()
    for op_id in assignment:
        if op_id not in graph:
            raise InvalidOperatorGraphError(f"split: operator {op_id} is not in the graph")
    by_class: dict[int, set[Slot]] = {}
    for op in graph.operators:
        if op.color_class is not None and op.id in assignment:
            by_class.setdefault(op.color_class, set()).add(assignment[op.id])
    extra: dict[int, Slot] = {}
    for op in graph.operators:
        if op.id in assignment:
            continue
        where = by_class.get(op.color_class, set()) if op.color_class is not None else set()
        if len(where) != 1:
            raise InvalidOperatorGraphError(
                f"split: operator {op.id} is not assigned and its colocation class "
                f"{op.color_class} is on {len(where)} devices"
            )
        extra[op.id] = next(iter(where))
    if not extra:
        return split
    stages = [(slot, tuple(sorted(list(ops) + [o for o, s in extra.items() if s == slot])))
              for slot, ops in split.stages]
    return Split(stages=stages)


def one_device_split(graph: OperatorGraph, kind: str = "accel") -> Split:
    """Everything on one device (``accel0`` or ``cpu0``).

    The reference split: a pipeline is worth it only when it beats this.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, evaluate_split, one_device_split
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, cpu_latency=5 * t)
    ...                                  for i, t in enumerate([4, 2])], edges=[(0, 1)])
    >>> on_gpu, on_cpu = one_device_split(graph), one_device_split(graph, "cpu")
    >>> evaluate_split(graph, on_gpu).max_load, evaluate_split(graph, on_cpu).max_load
    (6.0, 30.0)
    """
    return Split(stages=[(Slot(kind=kind, index=0), graph.ids)])
