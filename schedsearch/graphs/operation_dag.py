"""Device-independent operation DAGs: a seeded random generator, a JSON form,
and their placement on identical machines joined by channels.

An :class:`OperationDag` is a DAG of operations, each with a compute time,
a memory delta and a transient workspace, whose edges carry transfer sizes.
:meth:`OperationDag.on_machines` turns it into a flexible job-shop
:class:`~schedsearch.problem.Problem`: one micro-batch, one block per
operation with one option per machine (the same duration on each: identical
machines), the DAG's edges with their sizes, and the cluster of
:func:`machine_cluster`.

Random generator (:func:`random_dag`)
-------------------------------------
Operations ``n0 .. n{n-1}`` are created in topological order. Operation
``v > 0`` draws an in-degree ``k`` uniformly from ``1 .. max_in`` (``0`` with
probability ``root_probability``) and takes ``k`` distinct predecessors,
uniformly among the ``window`` operations created just before it whose
out-degree is still below ``max_out`` (fewer if fewer are eligible). So every
in- and out-degree is at most ``max_in`` / ``max_out``, and ``window``
controls the width of the graph (a small window gives long chains, a large
one a wide graph; the default, no window, draws from every earlier
operation). Compute times, output sizes (memory), workspaces and transfer
sizes are drawn uniformly from their inclusive ranges.

Memory: each operation allocates its output (``+output``) at its start. With
``free_outputs`` (the default) the output is freed at the start of the
operation's last successor in creation order (``-output`` added to that
successor's delta), so the level rises and falls as in training or
inference; an output without successors stays allocated. Without
``free_outputs`` the deltas are the outputs alone (the level only rises).

The same arguments and seed always give the same DAG (Python's
``random.Random``).

This module imports no solver.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch._json import load_document, short_repr
from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem

__all__ = [
    "DagNode",
    "OperationDag",
    "random_dag",
    "machine_cluster",
    "machine_names",
    "DAG_FORMAT_VERSION",
]

DAG_FORMAT_VERSION = 1


def _int(entity: str, field: str, value: Any, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProblemError(f"{entity}: {field!r} must be an integer, got {short_repr(value)}")
    if minimum is not None and value < minimum:
        raise InvalidProblemError(f"{entity}: {field!r} must be >= {minimum}, got {short_repr(value)}")


@attrs.frozen(kw_only=True)
class DagNode:
    """One operation: compute time (>= 1), memory delta, workspace (>= 0)."""

    name: str
    duration: int
    memory: int = 0
    workspace: int = 0
    kind: str = "op"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidProblemError(f"operation: 'name' must be a non-empty string, got {short_repr(self.name)}")
        entity = f"operation {short_repr(self.name)}"
        _int(entity, "duration", self.duration, 1)
        _int(entity, "memory", self.memory)
        _int(entity, "workspace", self.workspace, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "duration": self.duration,
            "memory": self.memory,
            "workspace": self.workspace,
            "kind": self.kind,
        }


def _records(field: str, value: Any) -> Iterable[Any]:
    """``value`` as the records of ``field`` (a list or tuple); refused naming the field otherwise."""
    if not isinstance(value, (list, tuple)):
        raise InvalidProblemError(f"operation DAG: {field!r} must be a list, got {short_repr(value)}")
    return value


def _nodes(value: Iterable[Any]) -> tuple[DagNode, ...]:
    out = []
    for item in _records("nodes", value):
        if isinstance(item, DagNode):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(
                DagNode(
                    name=item.get("name"),
                    duration=item.get("duration"),
                    memory=item.get("memory", 0),
                    workspace=item.get("workspace", 0),
                    kind=item.get("kind", "op"),
                )
            )
        else:
            raise InvalidProblemError(f"operation DAG: 'nodes' must hold objects, got {short_repr(item)}")
    return tuple(out)


def _edges(value: Iterable[Any]) -> tuple[Edge, ...]:
    out = []
    for item in _records("edges", value):
        if isinstance(item, Edge):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(Edge(src=item.get("src"), dst=item.get("dst"), size=item.get("size", 0)))
        elif isinstance(item, (list, tuple)) and len(item) in (2, 3):
            out.append(Edge(src=item[0], dst=item[1], size=item[2] if len(item) > 2 else 0))
        else:
            raise InvalidProblemError(f"operation DAG: an edge must be an object or a [src, dst] or [src, dst, size] "
                                      f"list, got {short_repr(item)}")
    return tuple(out)


def machine_names(num_machines: int) -> tuple[str, ...]:
    """Device names ``d0 .. d{n-1}``."""
    return tuple(f"d{i}" for i in range(num_machines))


def machine_cluster(
    num_machines: int,
    *,
    channels: int = 1,
    directed: bool = False,
    time_per_unit: int = 1,
    latency: int = 0,
    memory: int | None = None,
) -> Cluster:
    """Identical machines ``d0 ..`` with ``channels`` channels per pair of machines.

    Undirected channels serve both directions; with ``directed=True`` the
    channels of a pair alternate direction (``a -> b``, ``b -> a``, ...), so
    ``channels`` must be even: ``channels=2, directed=True`` is one channel
    each way (a full-duplex link). Channels are named ``c{a}-{b}.{k}``
    (``c{a}>{b}.{k}`` when directed).
    """
    _int("machine cluster", "num_machines", num_machines, 1)
    _int("machine cluster", "channels", channels, 0)
    if directed and channels % 2:
        raise InvalidProblemError(
            f"machine cluster: 'channels' must be even when 'directed' (one direction each in turn), got {channels}"
        )
    names = machine_names(num_machines)
    devices = [Device(name=n, memory=memory) for n in names]
    out = []
    for a in range(num_machines):
        for b in range(a + 1, num_machines):
            for k in range(channels):
                if directed:
                    src, dst = (a, b) if k % 2 == 0 else (b, a)
                    out.append(
                        Channel(
                            name=f"c{src}>{dst}.{k // 2}", endpoints=(names[src], names[dst]),
                            time_per_unit=time_per_unit, latency=latency, directed=True,
                        )
                    )
                else:
                    out.append(
                        Channel(name=f"c{a}-{b}.{k}", endpoints=(names[a], names[b]), time_per_unit=time_per_unit, latency=latency)
                    )
    return Cluster(devices=devices, channels=out)


@attrs.frozen(kw_only=True)
class OperationDag:
    """A DAG of operations with transfer sizes on its edges."""

    nodes: tuple[DagNode, ...] = attrs.field(converter=_nodes)
    edges: tuple[Edge, ...] = attrs.field(converter=_edges, default=())
    name: str = ""

    def __attrs_post_init__(self) -> None:
        # the Graph constructor checks names, unknown ends, duplicates and cycles
        self._graph_on(("d0",))

    def _graph_on(self, machines: tuple[str, ...]) -> Graph:
        blocks = [
            Block(
                name=n.name,
                kind=n.kind,
                options=[Option(devices=(m,), duration=n.duration) for m in machines],
                memory=n.memory,
                workspace=n.workspace,
            )
            for n in self.nodes
        ]
        return Graph(blocks=blocks, edges=self.edges)

    @property
    def total_work(self) -> int:
        return sum(n.duration for n in self.nodes)

    def critical_path(self) -> int:
        """Longest chain of compute times (transfers excluded)."""
        by_name = {n.name: n for n in self.nodes}
        graph = self._graph_on(("d0",))
        longest: dict[str, int] = {}
        preds = graph.predecessors()
        for name in graph.topological_order():
            longest[name] = by_name[name].duration + max((longest[e.src] for e in preds[name]), default=0)
        return max(longest.values())

    def degrees(self) -> tuple[int, int]:
        """Largest in-degree and largest out-degree."""
        ins: dict[str, int] = {}
        outs: dict[str, int] = {}
        for e in self.edges:
            ins[e.dst] = ins.get(e.dst, 0) + 1
            outs[e.src] = outs.get(e.src, 0) + 1
        return max(ins.values(), default=0), max(outs.values(), default=0)

    def on_machines(self, cluster: Cluster, *, name: str | None = None) -> Problem:
        """The flexible job-shop Problem of this DAG on ``cluster``'s devices."""
        graph = self._graph_on(cluster.device_names)
        return Problem(graph=graph, num_microbatches=1, cluster=cluster, name=self.name if name is None else name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "schedsearch.dag",
            "version": DAG_FORMAT_VERSION,
            "name": self.name,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OperationDag:
        if not isinstance(d, Mapping):
            raise FormatError(f"DAG document: must be a JSON object, got {type(d).__name__}")
        if d.get("format") != "schedsearch.dag":
            raise FormatError(f"DAG document: 'format' must be 'schedsearch.dag', got {short_repr(d.get('format'))}")
        if d.get("version") != DAG_FORMAT_VERSION:
            raise FormatError(
                f"DAG document: 'version' {short_repr(d.get('version'))} is not supported (this library reads {DAG_FORMAT_VERSION})"
            )
        if "nodes" not in d:
            raise FormatError("DAG document: missing field 'nodes'")
        return cls(nodes=d["nodes"], edges=d.get("edges", ()), name=d.get("name", ""))

    @classmethod
    def from_json(cls, text: str) -> OperationDag:
        return cls.from_dict(load_document(text, "DAG document"))


def _range(field: str, value: tuple[int, int], minimum: int | None) -> tuple[int, int]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise InvalidProblemError(f"random DAG: {field!r} must be a (low, high) pair, got {value!r}") from None
    _int("random DAG", field, lo, minimum)
    _int("random DAG", field, hi, minimum)
    if hi < lo:
        raise InvalidProblemError(f"random DAG: {field!r} must have low <= high, got {value!r}")
    return lo, hi


def random_dag(
    num_nodes: int,
    *,
    seed: int = 0,
    max_in: int = 3,
    max_out: int = 3,
    window: int | None = None,
    root_probability: float = 0.02,
    duration: tuple[int, int] = (1, 10),
    memory: tuple[int, int] = (0, 4),
    workspace: tuple[int, int] = (0, 2),
    size: tuple[int, int] = (1, 4),
    free_outputs: bool = True,
    name: str | None = None,
) -> OperationDag:
    """A seeded random operation DAG (see the module notes).

    Examples
    --------
    >>> dag = random_dag(200, seed=1)
    >>> len(dag.nodes), max(dag.degrees()) <= 3
    (200, True)
    >>> random_dag(200, seed=1) == dag
    True
    """
    _int("random DAG", "num_nodes", num_nodes, 1)
    _int("random DAG", "max_in", max_in, 1)
    _int("random DAG", "max_out", max_out, 1)
    if window is not None:
        _int("random DAG", "window", window, 1)
    if not 0 <= root_probability <= 1:
        raise InvalidProblemError(f"random DAG: 'root_probability' must be in [0, 1], got {root_probability!r}")
    duration = _range("duration", duration, 1)
    memory = _range("memory", memory, None)
    workspace = _range("workspace", workspace, 0)
    size = _range("size", size, 0)
    rng = random.Random(seed)
    durations, outputs, workspaces = [], [], []
    edges: list[Edge] = []
    out_degree = [0] * num_nodes
    last_successor: dict[int, int] = {}
    for v in range(num_nodes):
        durations.append(rng.randint(*duration))
        outputs.append(rng.randint(*memory))
        workspaces.append(rng.randint(*workspace))
        if v == 0:
            continue
        k = 0 if rng.random() < root_probability else rng.randint(1, max_in)
        first = 0 if window is None else max(0, v - window)
        eligible = [u for u in range(first, v) if out_degree[u] < max_out]
        for u in sorted(rng.sample(eligible, min(k, len(eligible)))):
            out_degree[u] += 1
            last_successor[u] = v
            edges.append(Edge(src=f"n{u}", dst=f"n{v}", size=rng.randint(*size)))
    deltas = list(outputs)
    if free_outputs:
        for u, v in last_successor.items():
            deltas[v] -= outputs[u]
    nodes = [
        DagNode(name=f"n{v}", duration=durations[v], memory=deltas[v], workspace=workspaces[v])
        for v in range(num_nodes)
    ]
    return OperationDag(nodes=nodes, edges=edges, name=f"random{num_nodes}-s{seed}" if name is None else name)
