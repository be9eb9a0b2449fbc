"""Operator graphs: the solver-free input of the partitioners.

An :class:`OperatorGraph` is a DAG of operators (layers or single operators of
a DNN). Each operator has a latency on an accelerator and on a CPU, a memory
size it occupies on an accelerator, an optional colocation class (operators of
one class must share a device), a forward/backward flag, and the cost of
sending its output to another device. Edges are ``(source, dest)`` pairs of
operator ids; the communication cost belongs to the *source* operator: every
edge out of one operator carries the same tensor.

Units. Unlike the scheduling problem model (integers), the operator graph keeps
the floats of its sources: latencies and communication costs are in the time
unit of the file (milliseconds for the bundled workloads), sizes in bytes. The
partitioners compare float loads; conversion to the integer block model
happens when a partition becomes a scheduling problem.

Assumptions checked at construction (:class:`~schedsearch.errors.
InvalidOperatorGraphError` otherwise): unique ids, finite non-negative numbers,
edges between known operators, no self-loops or repeated edges, acyclic, and
no edge from a backward operator to a forward one.

The files these graphs come from (the dnn-partitioning JSON format,
PipeDream profiles, expert splits) are read by
:mod:`schedsearch.loaders.opgraph`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch._json import short_repr
from schedsearch.errors import InvalidOperatorGraphError

__all__ = [
    "Operator",
    "OperatorGraph",
    "DeviceLimits",
    "PartitionWorkload",
    "Slot",
    "Split",
    "training_graph_from_forward",
    "MAX_DEVICES",
]

#: Most accelerators, and most CPUs, a workload may declare. The
#: partitioners keep tables per device (the DP has ``(k + 1)(l + 1)`` states
#: per ideal, the baselines a device-by-device matrix), so a corrupt count
#: such as ``"maxFPGAs": 1000000`` would exhaust memory or time; the data
#: sets use at most 14 accelerators and 8 CPUs, and real pipelines have at
#: most a few hundred stages.
MAX_DEVICES = 1024


def _check_number(entity: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOperatorGraphError(
            f"{entity}: {field!r} must be a number, got {short_repr(value)}"
        )
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise InvalidOperatorGraphError(
            f"{entity}: {field!r} must be a finite number >= 0, got {short_repr(value)}"
        )
    return number


@attrs.frozen(kw_only=True)
class Operator:
    """One operator (or layer) of a DNN.

    Attributes
    ----------
    id:
        Unique integer id (ids need not be contiguous).
    name:
        Human-readable name.
    accel_latency, cpu_latency:
        Time to run the operator on an accelerator / on a CPU core.
    size:
        Memory the operator takes on an accelerator (bytes).
    output_cost:
        Time to move the operator's output to another device; paid only if
        the operator has an edge to another device (see
        :mod:`schedsearch.partition.cost`).
    color_class:
        Colocation class: operators sharing a class must share a device.
        ``None`` means a class of its own. Backward operators carry the class
        of their forward partner.
    is_backward:
        True for operators of the backward pass.
    supported_on_accel:
        False if the operator can only run on a CPU.

    Examples
    --------
    >>> from schedsearch.partition import Operator
    >>> Operator(id=3, name="matmul", accel_latency=1.5, cpu_latency=12.0, size=2e6)
    Operator(id=3, name='matmul', accel_latency=1.5, cpu_latency=12.0, size=2000000.0, output_cost=0.0,
             color_class=None, is_backward=False, supported_on_accel=True)
    """

    id: int
    name: str = ""
    accel_latency: float = 0.0
    cpu_latency: float = 0.0
    size: float = 0.0
    output_cost: float = 0.0
    color_class: int | None = None
    is_backward: bool = False
    supported_on_accel: bool = True

    def __attrs_post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, int):
            raise InvalidOperatorGraphError(f"operator {self.id!r}: 'id' must be an int")
        for field in ("accel_latency", "cpu_latency", "size", "output_cost"):
            object.__setattr__(
                self, field, _check_number(f"operator {self.id}", field, getattr(self, field))
            )
        if self.color_class is not None and (
            isinstance(self.color_class, bool) or not isinstance(self.color_class, int)
        ):
            raise InvalidOperatorGraphError(
                f"operator {self.id}: 'color_class' must be an int or None, got {self.color_class!r}"
            )


@attrs.frozen(kw_only=True)
class DeviceLimits:
    """The devices a partition may use.

    ``num_accelerators`` identical accelerators (k) and ``num_cpus`` CPU cores
    (l); ``max_accel_memory`` bytes per accelerator (None: unlimited). CPUs
    have no memory limit and pay no communication (the reference model).

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits
    >>> DeviceLimits(num_accelerators=4, num_cpus=1, max_accel_memory=16e9)
    DeviceLimits(num_accelerators=4, num_cpus=1, max_accel_memory=16000000000.0)
    >>> DeviceLimits(num_accelerators=0)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOperatorGraphError: device limits: at least one device is needed, ...
    """

    num_accelerators: int
    num_cpus: int = 0
    max_accel_memory: float | None = None

    def __attrs_post_init__(self) -> None:
        for field in ("num_accelerators", "num_cpus"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidOperatorGraphError(
                    f"device limits: {field!r} must be an int >= 0, got {value!r}"
                )
            if value > MAX_DEVICES:
                raise InvalidOperatorGraphError(
                    f"device limits: {field!r} must be <= {MAX_DEVICES} (MAX_DEVICES), got {value!r}"
                )
        if self.num_accelerators + self.num_cpus == 0:
            raise InvalidOperatorGraphError(
                "device limits: at least one device is needed, got 0 accelerators and 0 CPUs"
            )
        if self.max_accel_memory is not None:
            object.__setattr__(
                self,
                "max_accel_memory",
                _check_number("device limits", "max_accel_memory", self.max_accel_memory),
            )


@attrs.frozen(kw_only=True)
class OperatorGraph:
    """A DAG of operators with per-source communication costs.

    Use :meth:`successors`, :meth:`predecessors` and :meth:`operator` for
    lookups; they are precomputed at construction.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> print(diamond)
    OperatorGraph '': 4 operators, 4 edges (inference)
    >>> diamond.successors(0), diamond.predecessors(3), diamond.operator(1).accel_latency
    ((1, 2), (1, 2), 3.0)
    """

    operators: tuple[Operator, ...] = attrs.field(converter=tuple)
    edges: tuple[tuple[int, int], ...] = attrs.field(
        converter=lambda es: tuple((int(a), int(b)) for a, b in es)
    )
    name: str = ""
    _index: dict = attrs.field(init=False, repr=False, eq=False, hash=False)
    _succ: dict = attrs.field(init=False, repr=False, eq=False, hash=False)
    _pred: dict = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        index: dict[int, Operator] = {}
        for op in self.operators:
            if not isinstance(op, Operator):
                raise InvalidOperatorGraphError(f"operators must be Operator, got {op!r}")
            if op.id in index:
                raise InvalidOperatorGraphError(f"operator {op.id}: duplicate id")
            index[op.id] = op
        succ: dict[int, list[int]] = {i: [] for i in index}
        pred: dict[int, list[int]] = {i: [] for i in index}
        seen: set[tuple[int, int]] = set()
        for a, b in self.edges:
            for end, val in (("source", a), ("dest", b)):
                if val not in index:
                    raise InvalidOperatorGraphError(
                        f"edge {a} -> {b}: unknown {end} operator id {val}"
                    )
            if a == b:
                raise InvalidOperatorGraphError(f"edge {a} -> {b}: self-loop")
            if (a, b) in seen:
                raise InvalidOperatorGraphError(f"edge {a} -> {b}: appears twice")
            seen.add((a, b))
            if index[a].is_backward and not index[b].is_backward:
                raise InvalidOperatorGraphError(
                    f"edge {a} -> {b}: goes from backward operator {a} to forward operator {b}"
                )
            succ[a].append(b)
            pred[b].append(a)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_succ", {k: tuple(v) for k, v in succ.items()})
        object.__setattr__(self, "_pred", {k: tuple(v) for k, v in pred.items()})
        cycle = self._find_cycle()
        if cycle is not None:
            raise InvalidOperatorGraphError(
                f"operator graph {self.name!r}: not acyclic, cycle through operators "
                + " -> ".join(str(c) for c in cycle)
            )

    def _find_cycle(self) -> list[int] | None:
        indeg = {i: len(p) for i, p in self._pred.items()}
        stack = [i for i, d in indeg.items() if d == 0]
        done = 0
        while stack:
            v = stack.pop()
            done += 1
            for w in self._succ[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    stack.append(w)
        if done == len(indeg):
            return None
        # walk predecessors inside the remaining subgraph to exhibit a cycle
        rest = {i for i, d in indeg.items() if d > 0}
        v = min(rest)
        path: list[int] = []
        pos: dict[int, int] = {}
        while v not in pos:
            pos[v] = len(path)
            path.append(v)
            v = next(u for u in self._pred[v] if u in rest)
        cyc = path[pos[v]:] + [v]
        return cyc[::-1]

    # ------------------------------------------------------------------ lookups
    def operator(self, op_id: int) -> Operator:
        """The operator with id ``op_id``."""
        try:
            return self._index[op_id]
        except KeyError:
            raise InvalidOperatorGraphError(
                f"operator graph {self.name!r}: unknown operator id {op_id!r}"
            ) from None

    def __contains__(self, op_id: object) -> bool:
        return op_id in self._index

    def successors(self, op_id: int) -> tuple[int, ...]:
        """Ids of the operators ``op_id`` has an edge to."""
        self.operator(op_id)
        return self._succ[op_id]

    def predecessors(self, op_id: int) -> tuple[int, ...]:
        """Ids of the operators with an edge to ``op_id``."""
        self.operator(op_id)
        return self._pred[op_id]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(op.id for op in self.operators)

    @property
    def num_operators(self) -> int:
        return len(self.operators)

    @property
    def is_training(self) -> bool:
        """True if the graph has backward operators."""
        return any(op.is_backward for op in self.operators)

    def topological_order(self) -> tuple[int, ...]:
        """Operator ids in a topological order (Kahn, smallest id first)."""
        import heapq

        indeg = {i: len(p) for i, p in self._pred.items()}
        heap = [i for i, d in indeg.items() if d == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            v = heapq.heappop(heap)
            order.append(v)
            for w in self._succ[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    heapq.heappush(heap, w)
        return tuple(order)

    def total_accel_latency(self) -> float:
        return math.fsum(op.accel_latency for op in self.operators)

    def __str__(self) -> str:
        kind = "training" if self.is_training else "inference"
        return (
            f"OperatorGraph {self.name!r}: {self.num_operators} operators, "
            f"{len(self.edges)} edges ({kind})"
        )


@attrs.frozen(kw_only=True)
class PartitionWorkload:
    """An operator graph with the devices it is to be split over.

    What the dnn-partitioning files hold (see
    :func:`~schedsearch.loaders.read_dnn_partitioning`); every partitioner
    takes one in place of a graph and its devices.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, PartitionWorkload
    >>> graph = OperatorGraph(operators=[Operator(id=0, accel_latency=1.0)], edges=[], name="one")
    >>> print(PartitionWorkload(graph=graph, devices=DeviceLimits(num_accelerators=2, num_cpus=1)))
    OperatorGraph 'one': 1 operators, 0 edges (inference); 2 accelerators (unlimited each), 1 CPUs
    """

    graph: OperatorGraph
    devices: DeviceLimits
    source: str = ""

    def __str__(self) -> str:
        d = self.devices
        mem = "unlimited" if d.max_accel_memory is None else f"{d.max_accel_memory:.6g} B"
        return (
            f"{self.graph}; {d.num_accelerators} accelerators ({mem} each), "
            f"{d.num_cpus} CPUs"
        )


@attrs.frozen(kw_only=True, order=True)
class Slot:
    """A device of a split: ``kind`` is ``"accel"`` or ``"cpu"``, ``index`` from 0.

    Examples
    --------
    >>> from schedsearch.partition import Slot
    >>> print(Slot(kind="accel", index=1), Slot(kind="cpu", index=0))
    accel1 cpu0
    >>> sorted([Slot(kind="cpu", index=0), Slot(kind="accel", index=1)])[0]
    Slot(kind='accel', index=1)
    """

    kind: str
    index: int

    def __attrs_post_init__(self) -> None:
        if self.kind not in ("accel", "cpu"):
            raise InvalidOperatorGraphError(
                f"slot: 'kind' must be 'accel' or 'cpu', got {self.kind!r}"
            )
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise InvalidOperatorGraphError(f"slot: 'index' must be an int >= 0, got {self.index!r}")

    def __str__(self) -> str:
        return f"{self.kind}{self.index}"


@attrs.frozen(kw_only=True)
class Split:
    """An assignment of operators to devices (not necessarily contiguous).

    ``stages`` lists the devices in pipeline order with the operator ids each
    holds; a device may appear with an empty tuple.

    Examples
    --------
    >>> from schedsearch.partition import Slot, Split
    >>> split = Split.from_assignment({0: Slot(kind="accel", index=0), 1: Slot(kind="accel", index=0),
    ...                                2: Slot(kind="cpu", index=0)})
    >>> [(str(slot), operators) for slot, operators in split.stages]
    [('accel0', (0, 1)), ('cpu0', (2,))]
    """

    stages: tuple[tuple[Slot, tuple[int, ...]], ...] = attrs.field(
        converter=lambda st: tuple((s, tuple(ops)) for s, ops in st)
    )

    def __attrs_post_init__(self) -> None:
        seen_slots: set[Slot] = set()
        seen_ops: set[int] = set()
        for slot, ops in self.stages:
            if slot in seen_slots:
                raise InvalidOperatorGraphError(f"split: device {slot} listed twice")
            seen_slots.add(slot)
            for op in ops:
                if op in seen_ops:
                    raise InvalidOperatorGraphError(
                        f"split: operator {op} assigned to more than one device"
                    )
                seen_ops.add(op)

    @classmethod
    def from_assignment(
        cls, assignment: Mapping[int, Slot], order: Iterable[Slot] | None = None
    ) -> Split:
        """Build a split from ``{operator id: slot}``; slots sorted unless ``order``."""
        groups: dict[Slot, list[int]] = {}
        for op, slot in assignment.items():
            groups.setdefault(slot, []).append(op)
        slots = list(order) if order is not None else sorted(groups)
        for s in groups:
            if s not in slots:
                slots.append(s)
        return cls(stages=[(s, sorted(groups.get(s, ()))) for s in slots])

    def assignment(self) -> dict[int, Slot]:
        """``{operator id: slot}``."""
        return {op: slot for slot, ops in self.stages for op in ops}

    @property
    def slots(self) -> tuple[Slot, ...]:
        return tuple(s for s, _ in self.stages)

    def to_json(self) -> dict[str, Any]:
        """The dnn-partitioning result layout (``fpgas``/``cpus`` node lists)."""
        accel = sorted((s.index, ops) for s, ops in self.stages if s.kind == "accel")
        cpus = sorted((s.index, ops) for s, ops in self.stages if s.kind == "cpu")
        return {
            "fpgas": [{"nodes": list(ops)} for _, ops in accel],
            "cpus": [{"nodes": list(ops)} for _, ops in cpus],
        }


def training_graph_from_forward(graph: OperatorGraph, *, backward_factor: float = 2.0) -> OperatorGraph:
    """Add a mirrored backward pass to a forward-only graph.

    Each forward operator ``v`` gets a backward partner (same colocation
    class, latency ``backward_factor`` times), each edge ``u -> v`` a mirrored
    edge ``v' -> u'``; the gradient ``v'`` sends costs what ``v``'s
    predecessors' outputs cost (largest one).

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, training_graph_from_forward
    >>> forward = OperatorGraph(operators=[Operator(id=0, accel_latency=4.0, output_cost=1.0),
    ...                                    Operator(id=1, accel_latency=2.0, output_cost=1.0)],
    ...                         edges=[(0, 1)])
    >>> training = training_graph_from_forward(forward)
    >>> [(op.id, op.accel_latency, op.color_class, op.is_backward) for op in training.operators]
    [(0, 4.0, 0, False), (1, 2.0, 1, False), (2, 8.0, 0, True), (3, 4.0, 1, True)]
    >>> training.edges  # the gradient of 1 flows back to 0
    ((0, 1), (3, 2))
    """
    if graph.is_training:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: already has backward operators"
        )
    offset = max(graph.ids, default=-1) + 1
    ops = [attrs.evolve(op, color_class=op.color_class if op.color_class is not None else op.id)
           for op in graph.operators]
    cls = {op.id: op.color_class for op in ops}
    for op in graph.operators:
        in_cost = max((graph.operator(p).output_cost for p in graph.predecessors(op.id)),
                      default=0.0)
        ops.append(
            Operator(
                id=op.id + offset,
                name=f"{op.name}'",
                accel_latency=op.accel_latency * backward_factor,
                cpu_latency=op.cpu_latency * backward_factor,
                size=0.0,
                output_cost=in_cost if graph.predecessors(op.id) else 0.0,
                color_class=cls[op.id],
                is_backward=True,
                supported_on_accel=op.supported_on_accel,
            )
        )
    edges = list(graph.edges) + [(b + offset, a + offset) for a, b in graph.edges]
    return OperatorGraph(operators=ops, edges=edges, name=graph.name)
