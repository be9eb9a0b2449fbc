"""The solver-free problem model: blocks, graphs, devices, channels, problems.

Conventions
-----------
* All times and memory amounts are integers in documented units (one time
  unit, one memory unit). Loaders that read floats scale them and say by how
  much.
* A :class:`Block` is one unit of work for one micro-batch. Its placement
  *options* each name the tuple of devices it occupies **at the same time** and
  its duration there. One option = fixed placement; several = the solver
  chooses; a multi-device option = a tensor-parallel / full-shard block.
* Memory: a block's ``memory`` delta takes effect at its start, on every
  device of the chosen option; ``workspace`` is transient memory held on each
  of those devices from start to end. The running level on a device, plus its
  initial memory, never exceeds the device's capacity.
* A dependency edge ``src -> dst`` of one micro-batch may carry a transfer
  ``size``. The transfer is paid only when the two ends run on different
  devices (for multi-device options: when their device sets are disjoint); it
  then occupies one channel between the lead devices (first device of each
  option) for ``latency + size * time_per_unit`` time units. A channel carries
  one transfer at a time. Edges of size 0 are pure precedences.
* Task instances are ``(block, micro-batch)`` pairs, micro-batches numbered
  from 0.

This module never imports a solver.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch.errors import FormatError, InvalidProblemError

__all__ = [
    "Option",
    "Block",
    "Edge",
    "Graph",
    "Device",
    "Channel",
    "Cluster",
    "Release",
    "Overlap",
    "Problem",
    "TaskKey",
    "FORMAT_VERSION",
]

#: Version of the JSON documents written by :meth:`Problem.to_json`.
FORMAT_VERSION = 1

#: A task instance: (block name, micro-batch index).
TaskKey = tuple[str, int]

OBJECTIVES = ("makespan", "feasibility", "max_span")


def _err(entity: str, field: str, message: str, value: Any) -> InvalidProblemError:
    return InvalidProblemError(f"{entity}: {field!r} {message}, got {value!r}")


def _check_name(entity: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise _err(entity, "name", "must be a non-empty string", value)


def _check_int(entity: str, field: str, value: Any, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err(entity, field, "must be an integer", value)
    if minimum is not None and value < minimum:
        raise _err(entity, field, f"must be >= {minimum}", value)


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)):
        # a bare device name given where a tuple is expected
        return (value,)
    return tuple(value)


# --------------------------------------------------------------------------
# Blocks and graphs
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Option:
    """One placement option of a block.

    Parameters
    ----------
    devices:
        Devices occupied at the same time (one for a plain block, several for
        a tensor-parallel or full-shard block). Order matters only in that the
        first one is the *lead* device, where transfers start and end.
    duration:
        Time units the block lasts on these devices (>= 1).
    """

    devices: tuple[str, ...] = attrs.field(converter=_tuple)
    duration: int

    def _check(self, entity: str) -> None:
        if not self.devices:
            raise _err(entity, "devices", "must name at least one device", self.devices)
        for d in self.devices:
            if not isinstance(d, str) or not d:
                raise _err(entity, "devices", "must be non-empty device names", self.devices)
        if len(set(self.devices)) != len(self.devices):
            raise _err(entity, "devices", "must not repeat a device", self.devices)
        _check_int(entity, "duration", self.duration, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"devices": list(self.devices), "duration": self.duration}


def _options(value: Iterable[Any]) -> tuple[Option, ...]:
    out = []
    for item in value:
        if isinstance(item, Option):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(Option(devices=item.get("devices", ()), duration=item.get("duration")))
        else:
            devices, duration = item
            out.append(Option(devices=devices, duration=duration))
    return tuple(out)


@attrs.frozen(kw_only=True)
class Block:
    """One unit of work for one micro-batch.

    Parameters
    ----------
    name:
        Unique within its graph.
    kind:
        A tag: ``"F"`` forward, ``"B"`` full backward, ``"I"`` input
        gradient, ``"W"`` weight gradient, or any other tag.
    options:
        Placement options (see :class:`Option`); at least one.
    memory:
        Signed memory delta, applied at the block's start on each device of
        its option (forward blocks allocate, backward blocks free).
    workspace:
        Transient memory (>= 0) held on each device of its option from start
        to end.
    stage:
        Optional pipeline stage index (used by pipeline exports).
    """

    name: str
    kind: str = "F"
    options: tuple[Option, ...] = attrs.field(converter=_options)
    memory: int = 0
    workspace: int = 0
    stage: int | None = None

    def __attrs_post_init__(self) -> None:
        _check_name("block", self.name)
        entity = f"block {self.name!r}"
        if not isinstance(self.kind, str) or not self.kind:
            raise _err(entity, "kind", "must be a non-empty string", self.kind)
        if not self.options:
            raise _err(entity, "options", "must hold at least one placement option", self.options)
        for i, option in enumerate(self.options):
            option._check(f"{entity}: option {i}")
        if len(set(self.options)) != len(self.options):
            raise _err(entity, "options", "must not repeat an option", self.options)
        _check_int(entity, "memory", self.memory)
        _check_int(entity, "workspace", self.workspace, 0)
        if self.stage is not None:
            _check_int(entity, "stage", self.stage, 0)

    @property
    def devices(self) -> frozenset[str]:
        """Every device any option of this block may occupy."""
        return frozenset(d for o in self.options for d in o.devices)

    @property
    def is_fixed(self) -> bool:
        """True when the block has exactly one placement option."""
        return len(self.options) == 1

    @property
    def min_duration(self) -> int:
        return min(o.duration for o in self.options)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "options": [o.to_dict() for o in self.options],
            "memory": self.memory,
            "workspace": self.workspace,
        }
        if self.stage is not None:
            d["stage"] = self.stage
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Block:
        return cls(
            name=d.get("name"),
            kind=d.get("kind", "F"),
            options=d.get("options", ()),
            memory=d.get("memory", 0),
            workspace=d.get("workspace", 0),
            stage=d.get("stage"),
        )


@attrs.frozen(kw_only=True)
class Edge:
    """Dependency ``src -> dst`` within one micro-batch, with a transfer size."""

    src: str
    dst: str
    size: int = 0

    def __attrs_post_init__(self) -> None:
        entity = f"edge {self.src!r} -> {self.dst!r}"
        if not isinstance(self.src, str) or not self.src:
            raise _err(entity, "src", "must be a block name", self.src)
        if not isinstance(self.dst, str) or not self.dst:
            raise _err(entity, "dst", "must be a block name", self.dst)
        if self.src == self.dst:
            raise _err(entity, "dst", "must differ from 'src' (self-loop)", self.dst)
        _check_int(entity, "size", self.size, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "size": self.size}


def _edges(value: Iterable[Any]) -> tuple[Edge, ...]:
    out = []
    for item in value:
        if isinstance(item, Edge):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(Edge(src=item.get("src"), dst=item.get("dst"), size=item.get("size", 0)))
        else:
            out.append(Edge(src=item[0], dst=item[1], size=item[2] if len(item) > 2 else 0))
    return tuple(out)


@attrs.frozen(kw_only=True)
class Graph:
    """The blocks of one micro-batch and their dependency edges (a DAG)."""

    blocks: tuple[Block, ...] = attrs.field(converter=tuple)
    edges: tuple[Edge, ...] = attrs.field(converter=_edges, default=())
    _index: dict[str, Block] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        if not self.blocks:
            raise _err("graph", "blocks", "must hold at least one block", self.blocks)
        names: dict[str, Block] = {}
        for b in self.blocks:
            if not isinstance(b, Block):
                raise _err("graph", "blocks", "must hold Block objects", b)
            if b.name in names:
                raise _err(f"block {b.name!r}", "name", "is a duplicate", b.name)
            names[b.name] = b
        object.__setattr__(self, "_index", names)
        seen: set[tuple[str, str]] = set()
        for e in self.edges:
            entity = f"edge {e.src!r} -> {e.dst!r}"
            if e.src not in names:
                raise _err(entity, "src", "names an unknown block", e.src)
            if e.dst not in names:
                raise _err(entity, "dst", "names an unknown block", e.dst)
            if (e.src, e.dst) in seen:
                raise _err(entity, "dst", "is a duplicate edge", e.dst)
            seen.add((e.src, e.dst))
        cycle = _find_cycle([b.name for b in self.blocks], [(e.src, e.dst) for e in self.edges])
        if cycle:
            path = " -> ".join(repr(n) for n in cycle + [cycle[0]])
            raise InvalidProblemError(f"graph: 'edges' must be acyclic, got the cycle {path}")

    # -- lookups -----------------------------------------------------------

    @property
    def block_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.blocks)

    def block(self, name: str) -> Block:
        """The block called ``name`` (``KeyError`` with the name if absent)."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"graph has no block {name!r}") from None

    def by_name(self) -> dict[str, Block]:
        return dict(self._index)

    def predecessors(self) -> dict[str, tuple[Edge, ...]]:
        """Incoming edges of every block."""
        out: dict[str, list[Edge]] = {b.name: [] for b in self.blocks}
        for e in self.edges:
            out[e.dst].append(e)
        return {k: tuple(v) for k, v in out.items()}

    def successors(self) -> dict[str, tuple[Edge, ...]]:
        """Outgoing edges of every block."""
        out: dict[str, list[Edge]] = {b.name: [] for b in self.blocks}
        for e in self.edges:
            out[e.src].append(e)
        return {k: tuple(v) for k, v in out.items()}

    def topological_order(self) -> tuple[str, ...]:
        """Block names in a topological order (stable: ties keep block order)."""
        indeg = {b.name: 0 for b in self.blocks}
        succ = self.successors()
        for e in self.edges:
            indeg[e.dst] += 1
        ready = [b.name for b in self.blocks if indeg[b.name] == 0]
        order: list[str] = []
        position = {b.name: i for i, b in enumerate(self.blocks)}
        while ready:
            ready.sort(key=position.__getitem__)
            n = ready.pop(0)
            order.append(n)
            for e in succ[n]:
                indeg[e.dst] -= 1
                if indeg[e.dst] == 0:
                    ready.append(e.dst)
        return tuple(order)

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": [b.to_dict() for b in self.blocks],
            "edges": [e.to_dict() for e in self.edges],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Graph:
        return cls(
            blocks=[Block.from_dict(b) for b in d.get("blocks", ())],
            edges=d.get("edges", ()),
        )


def _find_cycle(nodes: list[str], edges: list[tuple[str, str]]) -> list[str] | None:
    """Return the nodes of one directed cycle, or None (iterative DFS)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    colour = {n: 0 for n in nodes}  # 0 new, 1 on stack, 2 done
    parent: dict[str, str] = {}
    for root in nodes:
        if colour[root]:
            continue
        stack = [(root, iter(succ[root]))]
        colour[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
            elif colour[nxt] == 0:
                colour[nxt] = 1
                parent[nxt] = node
                stack.append((nxt, iter(succ[nxt])))
            elif colour[nxt] == 1:
                cycle = [node]
                while cycle[-1] != nxt:
                    cycle.append(parent[cycle[-1]])
                return list(reversed(cycle))
    return None


# --------------------------------------------------------------------------
# Cluster
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Device:
    """A device with a memory capacity (``None`` = unbounded) and a speed class tag."""

    name: str
    memory: int | None = None
    speed_class: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_name("device", self.name)
        if self.memory is not None:
            _check_int(f"device {self.name!r}", "memory", self.memory, 0)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "memory": self.memory}
        if self.speed_class is not None:
            d["speed_class"] = self.speed_class
        return d


@attrs.frozen(kw_only=True)
class Channel:
    """A communication channel between two devices; one transfer at a time.

    A transfer of ``size`` units takes ``latency + size * time_per_unit`` time
    units. An undirected channel serves both directions; a directed one only
    ``endpoints[0] -> endpoints[1]``.
    """

    name: str
    endpoints: tuple[str, str] = attrs.field(converter=_tuple)
    time_per_unit: int = 1
    latency: int = 0
    directed: bool = False

    def __attrs_post_init__(self) -> None:
        _check_name("channel", self.name)
        entity = f"channel {self.name!r}"
        if len(self.endpoints) != 2 or not all(isinstance(d, str) and d for d in self.endpoints):
            raise _err(entity, "endpoints", "must be two device names", self.endpoints)
        if self.endpoints[0] == self.endpoints[1]:
            raise _err(entity, "endpoints", "must name two different devices", self.endpoints)
        _check_int(entity, "time_per_unit", self.time_per_unit, 0)
        _check_int(entity, "latency", self.latency, 0)
        if not isinstance(self.directed, bool):
            raise _err(entity, "directed", "must be a boolean", self.directed)

    def serves(self, src: str, dst: str) -> bool:
        """True when this channel can carry a transfer from ``src`` to ``dst``."""
        a, b = self.endpoints
        if (src, dst) == (a, b):
            return True
        return not self.directed and (src, dst) == (b, a)

    def transfer_time(self, size: int) -> int:
        return self.latency + size * self.time_per_unit

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "endpoints": list(self.endpoints),
            "time_per_unit": self.time_per_unit,
            "latency": self.latency,
            "directed": self.directed,
        }


def _devices(value: Iterable[Any]) -> tuple[Device, ...]:
    out = []
    for item in value:
        if isinstance(item, Device):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(
                Device(
                    name=item.get("name"),
                    memory=item.get("memory"),
                    speed_class=item.get("speed_class"),
                )
            )
        else:
            out.append(Device(name=item))
    return tuple(out)


def _channels(value: Iterable[Any]) -> tuple[Channel, ...]:
    out = []
    for item in value:
        if isinstance(item, Channel):
            out.append(item)
        else:
            out.append(
                Channel(
                    name=item.get("name"),
                    endpoints=item.get("endpoints", ()),
                    time_per_unit=item.get("time_per_unit", 1),
                    latency=item.get("latency", 0),
                    directed=item.get("directed", False),
                )
            )
    return tuple(out)


@attrs.frozen(kw_only=True)
class Cluster:
    """Devices (ordered: the index is the rank) and channels between them."""

    devices: tuple[Device, ...] = attrs.field(converter=_devices)
    channels: tuple[Channel, ...] = attrs.field(converter=_channels, default=())

    def __attrs_post_init__(self) -> None:
        if not self.devices:
            raise _err("cluster", "devices", "must hold at least one device", self.devices)
        names: set[str] = set()
        for d in self.devices:
            if d.name in names:
                raise _err(f"device {d.name!r}", "name", "is a duplicate", d.name)
            names.add(d.name)
        cnames: set[str] = set()
        for c in self.channels:
            if c.name in cnames:
                raise _err(f"channel {c.name!r}", "name", "is a duplicate", c.name)
            cnames.add(c.name)
            for d in c.endpoints:
                if d not in names:
                    raise _err(f"channel {c.name!r}", "endpoints", "names an unknown device", d)

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(f"cluster has no device {name!r}")

    def rank(self, name: str) -> int:
        """Index of a device in the cluster's device order."""
        return self.device_names.index(name)

    def channel(self, name: str) -> Channel:
        for c in self.channels:
            if c.name == name:
                return c
        raise KeyError(f"cluster has no channel {name!r}")

    def channels_between(self, src: str, dst: str) -> tuple[Channel, ...]:
        """Channels that can carry a transfer from ``src`` to ``dst``."""
        return tuple(c for c in self.channels if c.serves(src, dst))

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": [d.to_dict() for d in self.devices],
            "channels": [c.to_dict() for c in self.channels],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cluster:
        return cls(devices=d.get("devices", ()), channels=d.get("channels", ()))


# --------------------------------------------------------------------------
# Problem
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Release:
    """Task ``(block, microbatch)`` may not start before ``time``."""

    block: str
    microbatch: int
    time: int

    def __attrs_post_init__(self) -> None:
        entity = f"release of block {self.block!r} (micro-batch {self.microbatch})"
        _check_int(entity, "microbatch", self.microbatch, 0)
        _check_int(entity, "time", self.time, 0)


@attrs.frozen(kw_only=True)
class Overlap:
    """Blocks that may run together as one *overlapped group* on their device.

    A schedule may run one task instance of each of ``blocks`` (of any
    micro-batches, except that the blocks of each ``same_microbatch`` set
    come from one micro-batch) as a group: all start together on the
    blocks' common device(s) and all end together when the group ends; the
    group occupies the device as one task (DualPipe's overlapped
    forward-and-backward pair ``F&B``, or a weight and input gradient fused
    into one full backward). The group lasts ``duration``, or its longest
    member's own duration (per-micro-batch overrides applied) when that is
    longer. Running the blocks separately stays allowed; a task joins at
    most one group. An edge between two members of one micro-batch is the
    group's internal order when it follows the order of ``blocks`` (the
    group runs them in that order); a group whose members have an edge
    against that order, or are consecutive in a fixed order, cannot run.
    Every other dependency, memory delta (applied at the group's start),
    workspace (held while the group runs) and transfer is that of its
    members.

    Parameters
    ----------
    blocks:
        Two or more distinct block names, each with exactly one placement
        option, all on the same devices; the order is the order in which
        the group runs them (first the forward of an ``F&B`` pair).
    duration:
        Time units the group lasts (at least the longest member's
        duration).
    name:
        A tag for the group (``"F&B"``, ``"B"``, ...).
    same_microbatch:
        Sets of member blocks whose task instances in a group must come
        from one micro-batch (a full backward ``I + W`` is one
        micro-batch's); empty by default: any micro-batches.
    """

    blocks: tuple[str, ...] = attrs.field(converter=_tuple)
    duration: int
    name: str = ""
    same_microbatch: tuple[tuple[str, ...], ...] = attrs.field(
        converter=lambda v: tuple(_tuple(x) for x in v), default=()
    )

    def __attrs_post_init__(self) -> None:
        entity = f"overlap {self.name or '+'.join(map(str, self.blocks))!r}"
        if len(self.blocks) < 2:
            raise _err(entity, "blocks", "must name at least two blocks", self.blocks)
        for b in self.blocks:
            if not isinstance(b, str) or not b:
                raise _err(entity, "blocks", "must be block names", self.blocks)
        if len(set(self.blocks)) != len(self.blocks):
            raise _err(entity, "blocks", "must not repeat a block", self.blocks)
        _check_int(entity, "duration", self.duration, 1)
        if not isinstance(self.name, str):
            raise _err(entity, "name", "must be a string", self.name)
        seen: set[str] = set()
        for tied in self.same_microbatch:
            if len(tied) < 2 or any(b not in self.blocks for b in tied) or len(set(tied)) != len(tied):
                raise _err(entity, "same_microbatch", "must hold sets of two or more distinct member blocks", tied)
            if seen & set(tied):
                raise _err(entity, "same_microbatch", "must not name a block in two sets", tied)
            seen |= set(tied)

    @property
    def key(self) -> frozenset[str]:
        return frozenset(self.blocks)

    def microbatch_classes(self) -> tuple[tuple[str, ...], ...]:
        """The member blocks partitioned into sets that share a micro-batch
        in a group (``same_microbatch`` sets and single blocks), in the order
        of ``blocks``."""
        out: list[tuple[str, ...]] = []
        placed: set[str] = set()
        for b in self.blocks:
            if b in placed:
                continue
            tied = next((t for t in self.same_microbatch if b in t), (b,))
            out.append(tuple(x for x in self.blocks if x in tied))
            placed |= set(tied)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"blocks": list(self.blocks), "duration": self.duration, "name": self.name}
        if self.same_microbatch:
            d["same_microbatch"] = [list(t) for t in self.same_microbatch]
        return d


def _overlaps(value: Iterable[Any]) -> tuple[Overlap, ...]:
    out = []
    for item in value:
        if isinstance(item, Overlap):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(Overlap(blocks=item.get("blocks", ()), duration=item.get("duration"), name=item.get("name", ""),
                               same_microbatch=item.get("same_microbatch", ())))
        else:
            blocks, duration, *rest = item
            out.append(Overlap(blocks=blocks, duration=duration, name=rest[0] if rest else ""))
    return tuple(out)


def _pairs(value: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), v) for k, v in items))


def _releases(value: Iterable[Any]) -> tuple[Release, ...]:
    out = []
    for item in value:
        if isinstance(item, Release):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(
                Release(block=item.get("block"), microbatch=item.get("microbatch"), time=item.get("time"))
            )
        else:
            out.append(Release(block=item[0], microbatch=item[1], time=item[2]))
    return tuple(out)


def _orders(value: Iterable[Iterable[Any]]) -> tuple[tuple[TaskKey, ...], ...]:
    return tuple(tuple((str(b), int(m)) for b, m in seq) for seq in value)


def _duration_overrides(value: Any) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    if isinstance(value, Mapping):
        items = [(b, m, d) for (b, m), d in value.items()]
    else:
        items = [tuple(x) for x in value]
    return tuple(sorted((str(b), m, tuple(d)) for b, m, d in items))


@attrs.frozen(kw_only=True)
class Problem:
    """A graph times a number of micro-batches on a cluster.

    Parameters
    ----------
    graph:
        The blocks of one micro-batch.
    num_microbatches:
        Number of micro-batches (>= 1); task instances are ``(block, m)``
        for ``m`` in ``range(num_microbatches)``.
    cluster:
        Devices and channels.
    initial_memory:
        Memory already held on a device at time 0 (parameters, optimizer
        state, activations left by an earlier phase). Missing devices hold 0.
    releases:
        Earliest start times of particular task instances.
    fixed_orders:
        Sequences of task instances that must run in the given order (each
        starts no earlier than the previous one ends).
    duration_overrides:
        ``(block, microbatch, durations)``: durations (one per option, in
        option order) of one task instance that differ from the block's, for
        micro-batches of different sizes.
    objective:
        ``"makespan"`` (minimise the last end), ``"max_span"`` (minimise the
        longest device span: on each device, its last end minus its first
        start; the zero-bubble papers' objective) or ``"feasibility"``.
    name:
        Free-form label.
    overlaps:
        Overlapped groups a schedule may use (see :class:`Overlap`); empty
        by default. A problem that declares some needs a backend with the
        ``"overlaps"`` feature to be searched exactly.
    """

    graph: Graph
    num_microbatches: int
    cluster: Cluster
    initial_memory: tuple[tuple[str, int], ...] = attrs.field(converter=_pairs, factory=tuple)
    releases: tuple[Release, ...] = attrs.field(converter=_releases, default=())
    fixed_orders: tuple[tuple[TaskKey, ...], ...] = attrs.field(converter=_orders, default=())
    duration_overrides: tuple[tuple[str, int, tuple[int, ...]], ...] = attrs.field(
        converter=_duration_overrides, default=()
    )
    objective: str = "makespan"
    name: str = ""
    overlaps: tuple[Overlap, ...] = attrs.field(converter=_overlaps, default=())
    _override_index: dict[TaskKey, tuple[int, ...]] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )
    _release_index: dict[TaskKey, int] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        _check_int("problem", "num_microbatches", self.num_microbatches, 1)
        if not isinstance(self.graph, Graph):
            raise _err("problem", "graph", "must be a Graph", type(self.graph).__name__)
        if not isinstance(self.cluster, Cluster):
            raise _err("problem", "cluster", "must be a Cluster", type(self.cluster).__name__)
        if self.objective not in OBJECTIVES:
            raise _err("problem", "objective", f"must be one of {OBJECTIVES}", self.objective)
        devices = {d.name: d for d in self.cluster.devices}
        seen_init: set[str] = set()
        for dev, amount in self.initial_memory:
            if dev not in devices:
                raise _err("problem", "initial_memory", "names an unknown device", dev)
            if dev in seen_init:
                raise _err("problem", "initial_memory", "names a device twice", dev)
            seen_init.add(dev)
            _check_int(f"initial memory of device {dev!r}", "amount", amount, 0)
            cap = devices[dev].memory
            if cap is not None and amount > cap:
                raise InvalidProblemError(
                    f"device {dev!r}: 'initial_memory' {amount} exceeds its capacity {cap}"
                )
        blocks = self.graph.by_name()
        self._check_options(blocks, devices)
        self._check_channels(blocks)
        self._check_tasks(blocks)
        self._check_overlaps(blocks)
        object.__setattr__(self, "_override_index", {(b, m): d for b, m, d in self.duration_overrides})
        rel: dict[TaskKey, int] = {}
        for r in self.releases:
            rel[(r.block, r.microbatch)] = max(rel.get((r.block, r.microbatch), 0), r.time)
        object.__setattr__(self, "_release_index", rel)

    def _check_options(self, blocks: dict[str, Block], devices: dict[str, Device]) -> None:
        init = dict(self.initial_memory)
        for b in self.graph.blocks:
            fits = False
            need = max(b.memory, 0) + b.workspace
            for i, o in enumerate(b.options):
                for d in o.devices:
                    if d not in devices:
                        raise _err(f"block {b.name!r}: option {i}", "devices", "names an unknown device", d)
                if all(
                    devices[d].memory is None or init.get(d, 0) + need <= devices[d].memory
                    for d in o.devices
                ):
                    fits = True
            if not fits:
                caps = {d: devices[d].memory for o in b.options for d in o.devices}
                raise InvalidProblemError(
                    f"block {b.name!r}: 'memory' + 'workspace' = {need} does not fit on any device "
                    f"it may run on (capacities {caps}, initial memory "
                    f"{ {d: init.get(d, 0) for d in caps} })"
                )

    def _check_channels(self, blocks: dict[str, Block]) -> None:
        for e in self.graph.edges:
            if e.size == 0:
                continue
            for oa in blocks[e.src].options:
                for ob in blocks[e.dst].options:
                    if set(oa.devices) & set(ob.devices):
                        continue
                    a, b = oa.devices[0], ob.devices[0]
                    if not self.cluster.channels_between(a, b):
                        raise InvalidProblemError(
                            f"edge {e.src!r} -> {e.dst!r}: transfer of 'size' {e.size} from device "
                            f"{a!r} to device {b!r} needs a channel, but the cluster has none "
                            f"between them"
                        )

    def _check_tasks(self, blocks: dict[str, Block]) -> None:
        n = self.num_microbatches

        def check_key(entity: str, block: str, mb: int) -> None:
            if block not in blocks:
                raise _err(entity, "block", "names an unknown block", block)
            if not isinstance(mb, int) or not 0 <= mb < n:
                raise _err(entity, "microbatch", f"must be in 0..{n - 1}", mb)

        for r in self.releases:
            check_key("release", r.block, r.microbatch)
        seen: set[TaskKey] = set()
        for i, order in enumerate(self.fixed_orders):
            for b, m in order:
                check_key(f"fixed order {i}", b, m)
                if (b, m) in seen:
                    raise _err(f"fixed order {i}", "tasks", "repeats a task instance", (b, m))
                seen.add((b, m))
        seen_override: set[TaskKey] = set()
        for b, m, durations in self.duration_overrides:
            check_key("duration override", b, m)
            if (b, m) in seen_override:
                raise _err("duration override", "tasks", "repeats a task instance", (b, m))
            seen_override.add((b, m))
            entity = f"block {b!r} (micro-batch {m})"
            if len(durations) != len(blocks[b].options):
                raise _err(entity, "durations", f"must give one duration per option ({len(blocks[b].options)})", durations)
            for d in durations:
                _check_int(entity, "duration", d, 1)

    def _check_overlaps(self, blocks: dict[str, Block]) -> None:
        seen: set[frozenset[str]] = set()
        for ov in self.overlaps:
            entity = f"overlap {ov.name or '+'.join(ov.blocks)!r}"
            devices: set[str] | None = None
            longest = 0
            for name in ov.blocks:
                if name not in blocks:
                    raise _err(entity, "blocks", "names an unknown block", name)
                b = blocks[name]
                if not b.is_fixed:
                    raise _err(entity, "blocks", "must name blocks with exactly one placement option", name)
                devs = set(b.options[0].devices)
                if devices is None:
                    devices = devs
                elif devs != devices:
                    raise InvalidProblemError(
                        f"{entity}: 'blocks' must all run on the same devices, but {name!r} runs on "
                        f"{sorted(devs)} and {ov.blocks[0]!r} on {sorted(devices)}"
                    )
                longest = max(longest, b.options[0].duration)
            if ov.duration < longest:
                raise _err(entity, "duration", f"must be >= the longest member's duration ({longest})", ov.duration)
            if ov.key in seen:
                raise _err(entity, "blocks", "are declared twice", ov.blocks)
            seen.add(ov.key)

    # -- derived views ------------------------------------------------------

    def overlap_for(self, blocks: Iterable[str]) -> Overlap | None:
        """The declared :class:`Overlap` whose blocks are exactly ``blocks`` (any order), or None."""
        key = frozenset(blocks)
        for ov in self.overlaps:
            if ov.key == key:
                return ov
        return None

    @property
    def tasks(self) -> tuple[TaskKey, ...]:
        """Every task instance, micro-batch major, blocks in graph order."""
        return tuple((b.name, m) for m in range(self.num_microbatches) for b in self.graph.blocks)

    def initial_memory_of(self, device: str) -> int:
        return dict(self.initial_memory).get(device, 0)

    def capacity(self, device: str) -> int | None:
        return self.cluster.device(device).memory

    def durations(self, block: str, microbatch: int) -> tuple[int, ...]:
        """Durations of each option of a task instance (overrides applied)."""
        found = self._override_index.get((block, microbatch))
        if found is not None:
            return found
        return tuple(o.duration for o in self.graph.block(block).options)

    def release_of(self, block: str, microbatch: int) -> int:
        return self._release_index.get((block, microbatch), 0)

    def interchangeable_microbatches(self) -> bool:
        """True when all micro-batches are alike (no releases, orders or overrides
        that tell them apart), so ordering them is a valid symmetry break."""
        return not (self.releases or self.fixed_orders or self.duration_overrides)

    def with_(self, **changes: Any) -> Problem:
        """A copy with some fields changed (validated again)."""
        return attrs.evolve(self, **changes)

    def __str__(self) -> str:
        caps = ", ".join(
            f"{d.name}(mem={'inf' if d.memory is None else d.memory})" for d in self.cluster.devices
        )
        label = f"{self.name}: " if self.name else ""
        return (
            f"{label}{len(self.graph.blocks)} blocks x {self.num_microbatches} micro-batches, "
            f"{len(self.graph.edges)} edges, devices [{caps}], {len(self.cluster.channels)} channels"
        )

    # -- JSON ---------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "schedsearch.problem",
            "version": FORMAT_VERSION,
            "name": self.name,
            "objective": self.objective,
            "num_microbatches": self.num_microbatches,
            "graph": self.graph.to_dict(),
            "cluster": self.cluster.to_dict(),
            "initial_memory": dict(self.initial_memory),
            "releases": [
                {"block": r.block, "microbatch": r.microbatch, "time": r.time} for r in self.releases
            ],
            "fixed_orders": [[list(t) for t in order] for order in self.fixed_orders],
            "duration_overrides": [
                {"block": b, "microbatch": m, "durations": list(d)} for b, m, d in self.duration_overrides
            ],
            **({"overlaps": [o.to_dict() for o in self.overlaps]} if self.overlaps else {}),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Problem:
        if d.get("format") != "schedsearch.problem":
            raise FormatError(f"problem document: 'format' must be 'schedsearch.problem', got {d.get('format')!r}")
        if d.get("version") != FORMAT_VERSION:
            raise FormatError(
                f"problem document: 'version' {d.get('version')!r} is not supported (this library reads {FORMAT_VERSION})"
            )
        try:
            return cls(
                graph=Graph.from_dict(d["graph"]),
                num_microbatches=d["num_microbatches"],
                cluster=Cluster.from_dict(d["cluster"]),
                initial_memory=d.get("initial_memory", {}),
                releases=d.get("releases", ()),
                fixed_orders=d.get("fixed_orders", ()),
                duration_overrides=[
                    (o["block"], o["microbatch"], o["durations"]) for o in d.get("duration_overrides", ())
                ],
                objective=d.get("objective", "makespan"),
                name=d.get("name", ""),
                overlaps=d.get("overlaps", ()),
            )
        except KeyError as exc:
            raise FormatError(f"problem document: missing field {exc.args[0]!r}") from None

    @classmethod
    def from_json(cls, text: str) -> Problem:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(f"problem document: not valid JSON ({exc})") from None
        if not isinstance(data, Mapping):
            raise FormatError("problem document: must be a JSON object")
        return cls.from_dict(data)
