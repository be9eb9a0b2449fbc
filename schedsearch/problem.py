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
* Memory (one semantics, followed by every check, metric, encoder, bound,
  the validator and the test oracle; see :class:`Problem`): the level on a
  device starts at its initial memory; a block's ``memory`` delta takes
  effect at its start, on every device of the chosen option; ``workspace``
  is transient memory held on each of those devices from start to end. The
  level never exceeds the device's capacity; the peak is the highest level
  at any instant, initial memory included.
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
import operator
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from schedsearch._json import check_fields, check_header, load_document, short_repr
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
    "MAX_INT",
    "MAX_TOTAL",
    "MAX_MICROBATCHES",
]

#: Version of the JSON documents written by :meth:`Problem.to_json`.
FORMAT_VERSION = 1

#: A task instance: (block name, micro-batch index).
TaskKey = tuple[str, int]

OBJECTIVES = ("makespan", "feasibility", "max_span")

#: Largest magnitude of every integer of the model: durations, memory deltas,
#: workspace, capacities, initial memory, transfer sizes, latencies,
#: time-per-unit factors, releases, overlap durations and stages.
#:
#: Why 2**40 (about 1.1e12): CP-SAT works with int64 but requires every
#: variable's domain to lie within +-2**62 (``kint64max / 2``), and the
#: encoders' horizon is a *sum* of durations, transfer times and the latest
#: release (memory levels are sums of deltas likewise). Values up to 2**40
#: leave a factor 2**21 (two million terms) below :data:`MAX_TOTAL`, and a
#: trillion units is beyond any real duration or amount in the documented
#: units (2**40 microseconds are 12.7 days; 2**40 bytes are 1 TiB). Because a
#: large enough problem could still sum past the solvers' range, the totals
#: themselves are checked against :data:`MAX_TOTAL` (in time linear in the
#: size of the problem).
MAX_INT = 2**40

#: Largest time horizon (sum over every task instance of its longest
#: duration, every transfer's longest time and the latest release) and
#: largest total of memory amounts a problem may add up to: half of CP-SAT's
#: variable bound 2**62, so that the encoders' derived expressions (an end is
#: a start plus a duration, a span an end minus a start) stay within it.
MAX_TOTAL = 2**61

#: Largest number of micro-batches. The exact encodings create a few
#: variables per task instance, so even 10**5 micro-batches are far beyond
#: what they can solve; the limit turns a mistyped count into an immediate
#: error instead of a model that exhausts memory.
MAX_MICROBATCHES = 100_000

_BLOCK_FIELDS = ("name", "kind", "options", "memory", "workspace", "stage")
_OPTION_FIELDS = ("devices", "duration")
_EDGE_FIELDS = ("src", "dst", "size")
_GRAPH_FIELDS = ("blocks", "edges")
_DEVICE_FIELDS = ("name", "memory", "speed_class")
_CHANNEL_FIELDS = ("name", "endpoints", "time_per_unit", "latency", "directed")
_CLUSTER_FIELDS = ("devices", "channels")
_RELEASE_FIELDS = ("block", "microbatch", "time")
_OVERLAP_FIELDS = ("blocks", "duration", "name", "same_microbatch")
_OVERRIDE_FIELDS = ("block", "microbatch", "durations")
_PROBLEM_FIELDS = (
    "format", "version", "name", "objective", "num_microbatches", "graph", "cluster", "initial_memory",
    "releases", "fixed_orders", "duration_overrides", "overlaps", "time_unit_s", "memory_unit_bytes",
)


def _err(entity: str, field: str, message: str, value: Any) -> InvalidProblemError:
    return InvalidProblemError(f"{entity}: {field!r} {message}, got {short_repr(value)}")


def _check_name(entity: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise _err(entity, "name", "must be a non-empty string", value)


def _check_int(
    entity: str, field: str, value: Any, minimum: int | None = None, maximum: int | None = MAX_INT
) -> None:
    """``value`` must be an int (not a bool) in ``minimum .. maximum``; values
    below ``-MAX_INT`` are refused too (see :data:`MAX_INT`)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err(entity, field, "must be an integer", value)
    if minimum is not None and value < minimum:
        raise _err(entity, field, f"must be >= {minimum}", value)
    if maximum is not None and value > maximum:
        if maximum == MAX_INT:
            limit = "MAX_INT = 2**40, the largest value the solvers are given"
        elif maximum == MAX_MICROBATCHES:
            limit = "MAX_MICROBATCHES, the largest number supported"
        else:
            limit = "the supported maximum"
        raise _err(entity, field, f"must be <= {maximum} ({limit})", value)
    if value < -MAX_INT:
        raise _err(entity, field, f"must be >= {-MAX_INT} (-2**40, the largest magnitude the solvers are given)",
                   value)


def _items(value: Any) -> tuple[Any, ...] | None:
    """The items of a list-like value (list, tuple or another non-string,
    non-mapping iterable), or None when ``value`` is not list-like."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        return None
    return tuple(value)


def _tuple(value: Any) -> Any:
    """A tuple of names; a bare name becomes a 1-tuple. Anything else is
    returned as is, for the owner's check to report with its name."""
    if isinstance(value, str):
        # a bare device name given where a tuple is expected
        return (value,)
    items = _items(value)
    return value if items is None else items


def _index(value: Any) -> Any:
    """An integer index as a Python int (numpy integers included); anything
    else (bools, floats, strings) as is, for the owner's check to report."""
    if isinstance(value, bool) or isinstance(value, int):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def _fits(item: Mapping[Any, Any], known: tuple[str, ...], required: tuple[str, ...]) -> bool:
    return all(k in known for k in item) and all(k in item for k in required)


def _bad_item(entity: str, item: Any, known: tuple[str, ...], required: tuple[str, ...], shape: str) -> Exception:
    """The error for an item a converter left unconverted: an unknown or missing
    field of a mapping (:class:`FormatError`) or a wrong shape
    (:class:`InvalidProblemError`)."""
    if isinstance(item, Mapping):
        try:
            check_fields(entity, item, known, required)
        except FormatError as exc:
            return exc
    return InvalidProblemError(f"{entity}: must be {shape}, got {short_repr(item)}")


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

    Examples
    --------
    >>> from schedsearch.problem import Option
    >>> Option(devices=("d0", "d1"), duration=3)  # a tensor-parallel option led by d0
    Option(devices=('d0', 'd1'), duration=3)
    >>> Option(devices="d0", duration=2).devices  # a bare name is one device
    ('d0',)
    """

    devices: tuple[str, ...] = attrs.field(converter=_tuple)
    duration: int

    def _check(self, entity: str) -> None:
        if not isinstance(self.devices, tuple):
            raise _err(entity, "devices", "must be a list of device names", self.devices)
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


_OPTION_SHAPE = "an object {devices, duration} or a [devices, duration] pair"


def _options(value: Any) -> Any:
    """Options from :class:`Option` objects, ``{devices, duration}`` objects or
    ``(devices, duration)`` pairs. Items of another shape (and a value that is
    not a list) are kept as they are; :class:`Block` reports them by name."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _OPTION_FIELDS, _OPTION_FIELDS):
            out.append(Option(devices=item["devices"], duration=item["duration"]))
        elif not isinstance(item, (Option, Mapping, str)) and (pair := _items(item)) is not None and len(pair) == 2:
            out.append(Option(devices=pair[0], duration=pair[1]))
        else:
            out.append(item)
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

    Examples
    --------
    A backward block that may run on ``d0`` (3 units) or ``d1`` (4 units)
    and frees one unit of activation memory:

    >>> from schedsearch import Block
    >>> block = Block(name="B0", kind="B", options=[("d0", 3), ("d1", 4)], memory=-1)
    >>> sorted(block.devices), block.is_fixed, block.min_duration
    (['d0', 'd1'], False, 3)

    Bad values are refused with the entity, the field and the value:

    >>> Block(name="F3", options=[("d0", 0)])
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidProblemError: block 'F3': option 0: 'duration' must be >= 1, got 0
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
        if not isinstance(self.options, tuple):
            raise _err(entity, "options", "must be a list of placement options", self.options)
        if not self.options:
            raise _err(entity, "options", "must hold at least one placement option", self.options)
        for i, option in enumerate(self.options):
            if not isinstance(option, Option):
                raise _bad_item(f"{entity}: option {i}", option, _OPTION_FIELDS, _OPTION_FIELDS, _OPTION_SHAPE)
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
        """A block from its JSON object (see :meth:`to_dict`); unknown fields are refused."""
        if not isinstance(d, Mapping):
            raise InvalidProblemError(f"block: must be an object {{{', '.join(_BLOCK_FIELDS)}}}, got {short_repr(d)}")
        name = d.get("name")
        check_fields(f"block {short_repr(name)}" if "name" in d else "block", d, _BLOCK_FIELDS, ("name", "options"))
        return cls(
            name=name,
            kind=d.get("kind", "F"),
            options=d.get("options", ()),
            memory=d.get("memory", 0),
            workspace=d.get("workspace", 0),
            stage=d.get("stage"),
        )


@attrs.frozen(kw_only=True)
class Edge:
    """Dependency ``src -> dst`` within one micro-batch, with a transfer size.

    The transfer (``size`` units) is paid only when the two blocks run on
    disjoint devices; ``size = 0`` is a pure precedence.

    Examples
    --------
    >>> from schedsearch import Edge
    >>> Edge(src="F0", dst="F1", size=4)
    Edge(src='F0', dst='F1', size=4)
    """

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


_EDGE_SHAPE = "an object {src, dst, size} or a [src, dst] or [src, dst, size] list"


def _edges(value: Any) -> Any:
    """Edges from :class:`Edge` objects, ``{src, dst, size}`` objects or
    ``(src, dst[, size])`` lists; other items (and a value that is not a list)
    are kept as they are for :class:`Graph` to report."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _EDGE_FIELDS, ("src", "dst")):
            out.append(Edge(src=item["src"], dst=item["dst"], size=item.get("size", 0)))
        elif not isinstance(item, (Edge, Mapping, str)) and (seq := _items(item)) is not None and len(seq) in (2, 3):
            out.append(Edge(src=seq[0], dst=seq[1], size=seq[2] if len(seq) > 2 else 0))
        else:
            out.append(item)
    return tuple(out)


def _list(value: Any) -> Any:
    """A list-like value as a tuple; anything else as is (its owner reports it)."""
    items = _items(value)
    return value if items is None else items


@attrs.frozen(kw_only=True)
class Graph:
    """The blocks of one micro-batch and their dependency edges (a DAG).

    Edges may be given as :class:`Edge` objects or ``(src, dst[, size])``
    tuples; unknown blocks, duplicates and cycles are refused.

    Examples
    --------
    >>> from schedsearch import Block, Graph
    >>> graph = Graph(
    ...     blocks=[Block(name="B", kind="B", options=[("d1", 2)]), Block(name="F", options=[("d0", 1)])],
    ...     edges=[("F", "B", 4)],
    ... )
    >>> graph.topological_order()
    ('F', 'B')
    >>> graph.block("F").options
    (Option(devices=('d0',), duration=1),)
    """

    blocks: tuple[Block, ...] = attrs.field(converter=_list)
    edges: tuple[Edge, ...] = attrs.field(converter=_edges, default=())
    _index: dict[str, Block] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.blocks, tuple):
            raise _err("graph", "blocks", "must be a list of blocks", self.blocks)
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
        if not isinstance(self.edges, tuple):
            raise _err("graph", "edges", "must be a list of edges", self.edges)
        for i, e in enumerate(self.edges):
            if not isinstance(e, Edge):
                raise _bad_item(f"graph: edge {i}", e, _EDGE_FIELDS, ("src", "dst"), _EDGE_SHAPE)
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
        """A graph from its JSON object (see :meth:`to_dict`); unknown fields are refused."""
        if not isinstance(d, Mapping):
            raise InvalidProblemError(f"graph: must be an object {{blocks, edges}}, got {short_repr(d)}")
        check_fields("graph", d, _GRAPH_FIELDS, ("blocks",))
        raw = d["blocks"]
        items = _items(raw)
        if items is None:
            raise _err("graph", "blocks", "must be a list of block objects", raw)
        blocks = []
        for i, b in enumerate(items):
            if not isinstance(b, Mapping):
                raise InvalidProblemError(
                    f"graph: block {i}: must be an object {{{', '.join(_BLOCK_FIELDS)}}}, got {short_repr(b)}"
                )
            blocks.append(Block.from_dict(b))
        return cls(blocks=blocks, edges=d.get("edges", ()))


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
    """A device with a memory capacity (``None`` = unbounded) and a speed class tag.

    Examples
    --------
    >>> from schedsearch import Device
    >>> Device(name="gpu0", memory=16)
    Device(name='gpu0', memory=16, speed_class=None)
    """

    name: str
    memory: int | None = None
    speed_class: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_name("device", self.name)
        if self.memory is not None:
            _check_int(f"device {self.name!r}", "memory", self.memory, 0)
        if self.speed_class is not None and not isinstance(self.speed_class, str):
            raise _err(f"device {self.name!r}", "speed_class", "must be a string or null", self.speed_class)

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

    Examples
    --------
    >>> from schedsearch import Channel
    >>> link = Channel(name="link", endpoints=("d0", "d1"), latency=1, time_per_unit=2)
    >>> link.transfer_time(4), link.serves("d1", "d0")
    (9, True)
    """

    name: str
    endpoints: tuple[str, str] = attrs.field(converter=_tuple)
    time_per_unit: int = 1
    latency: int = 0
    directed: bool = False

    def __attrs_post_init__(self) -> None:
        _check_name("channel", self.name)
        entity = f"channel {self.name!r}"
        if (not isinstance(self.endpoints, tuple) or len(self.endpoints) != 2
                or not all(isinstance(d, str) and d for d in self.endpoints)):
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


_DEVICE_SHAPE = "an object {name, memory, speed_class} or a device name"
_CHANNEL_SHAPE = "an object {name, endpoints, time_per_unit, latency, directed}"


def _devices(value: Any) -> Any:
    """Devices from :class:`Device` objects, ``{name, memory, speed_class}``
    objects or bare names; other items (and a value that is not a list) are
    kept as they are for :class:`Cluster` to report."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _DEVICE_FIELDS, ("name",)):
            out.append(Device(name=item["name"], memory=item.get("memory"), speed_class=item.get("speed_class")))
        elif isinstance(item, str):
            out.append(Device(name=item))
        else:
            out.append(item)
    return tuple(out)


def _channels(value: Any) -> Any:
    """Channels from :class:`Channel` objects or their JSON objects; other
    items are kept as they are for :class:`Cluster` to report."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _CHANNEL_FIELDS, ("name", "endpoints")):
            out.append(
                Channel(
                    name=item["name"],
                    endpoints=item["endpoints"],
                    time_per_unit=item.get("time_per_unit", 1),
                    latency=item.get("latency", 0),
                    directed=item.get("directed", False),
                )
            )
        else:
            out.append(item)
    return tuple(out)


@attrs.frozen(kw_only=True)
class Cluster:
    """Devices (ordered: the index is the rank) and channels between them.

    Examples
    --------
    >>> from schedsearch import Channel, Cluster, Device
    >>> cluster = Cluster(
    ...     devices=[Device(name="d0", memory=8), Device(name="d1", memory=8)],
    ...     channels=[Channel(name="link", endpoints=("d0", "d1"))],
    ... )
    >>> cluster.device_names, cluster.rank("d1")
    (('d0', 'd1'), 1)
    >>> [c.name for c in cluster.channels_between("d1", "d0")]
    ['link']
    """

    devices: tuple[Device, ...] = attrs.field(converter=_devices)
    channels: tuple[Channel, ...] = attrs.field(converter=_channels, default=())
    _device_index: dict[str, Device] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)
    _routes: dict[tuple[str, str], tuple[Channel, ...]] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.devices, tuple):
            raise _err("cluster", "devices", "must be a list of devices", self.devices)
        if not self.devices:
            raise _err("cluster", "devices", "must hold at least one device", self.devices)
        if not isinstance(self.channels, tuple):
            raise _err("cluster", "channels", "must be a list of channels", self.channels)
        for i, d in enumerate(self.devices):
            if not isinstance(d, Device):
                raise _bad_item(f"cluster: device {i}", d, _DEVICE_FIELDS, ("name",), _DEVICE_SHAPE)
        for i, c in enumerate(self.channels):
            if not isinstance(c, Channel):
                raise _bad_item(f"cluster: channel {i}", c, _CHANNEL_FIELDS, ("name", "endpoints"), _CHANNEL_SHAPE)
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
        object.__setattr__(self, "_device_index", {d.name: d for d in self.devices})
        routes: dict[tuple[str, str], list[Channel]] = {}
        for c in self.channels:
            a, b = c.endpoints
            routes.setdefault((a, b), []).append(c)
            if not c.directed:
                routes.setdefault((b, a), []).append(c)
        object.__setattr__(self, "_routes", {k: tuple(v) for k, v in routes.items()})

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> Device:
        try:
            return self._device_index[name]
        except (KeyError, TypeError):
            raise KeyError(f"cluster has no device {name!r}") from None

    def rank(self, name: str) -> int:
        """Index of a device in the cluster's device order."""
        return self.device_names.index(name)

    def channel(self, name: str) -> Channel:
        for c in self.channels:
            if c.name == name:
                return c
        raise KeyError(f"cluster has no channel {name!r}")

    def channels_between(self, src: str, dst: str) -> tuple[Channel, ...]:
        """Channels that can carry a transfer from ``src`` to ``dst`` (in the cluster's channel order)."""
        try:
            return self._routes.get((src, dst), ())
        except TypeError:  # an unhashable name names no device
            return ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": [d.to_dict() for d in self.devices],
            "channels": [c.to_dict() for c in self.channels],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cluster:
        """A cluster from its JSON object (see :meth:`to_dict`); unknown fields are refused."""
        if not isinstance(d, Mapping):
            raise InvalidProblemError(f"cluster: must be an object {{devices, channels}}, got {short_repr(d)}")
        check_fields("cluster", d, _CLUSTER_FIELDS, ("devices",))
        return cls(devices=d["devices"], channels=d.get("channels", ()))


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
        entity = f"release of block {short_repr(self.block)} (micro-batch {short_repr(self.microbatch)})"
        if not isinstance(self.block, str) or not self.block:
            raise _err(entity, "block", "must be a block name", self.block)
        _check_int(entity, "microbatch", self.microbatch, 0)
        _check_int(entity, "time", self.time, 0)


def _tied_sets(value: Any) -> Any:
    items = _items(value)
    if items is None:
        return value
    return tuple(_tuple(x) for x in items)


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
    same_microbatch: tuple[tuple[str, ...], ...] = attrs.field(converter=_tied_sets, default=())

    def __attrs_post_init__(self) -> None:
        if isinstance(self.name, str) and self.name:
            entity = f"overlap {self.name!r}"
        elif isinstance(self.blocks, tuple):
            entity = f"overlap {short_repr('+'.join(map(str, self.blocks)))}"
        else:
            entity = "overlap"
        if not isinstance(self.blocks, tuple):
            raise _err(entity, "blocks", "must be a list of block names", self.blocks)
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
        if not isinstance(self.same_microbatch, tuple) or not all(isinstance(t, tuple) for t in self.same_microbatch):
            raise _err(entity, "same_microbatch", "must be a list of lists of member blocks", self.same_microbatch)
        seen: set[str] = set()
        for tied in self.same_microbatch:
            if not all(isinstance(b, str) for b in tied) or len(tied) < 2 or any(b not in self.blocks for b in tied) or len(set(tied)) != len(tied):
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


_OVERLAP_SHAPE = "an object {blocks, duration, name, same_microbatch} or a [blocks, duration(, name)] list"
_RELEASE_SHAPE = "an object {block, microbatch, time} or a [block, microbatch, time] list"
_OVERRIDE_SHAPE = "an object {block, microbatch, durations} or a [block, microbatch, durations] list"


def _overlaps(value: Any) -> Any:
    """Overlaps from :class:`Overlap` objects, their JSON objects or
    ``(blocks, duration[, name])`` lists; other items are kept as they are
    for :class:`Problem` to report."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _OVERLAP_FIELDS, ("blocks", "duration")):
            out.append(Overlap(blocks=item["blocks"], duration=item["duration"], name=item.get("name", ""),
                               same_microbatch=item.get("same_microbatch", ())))
        elif not isinstance(item, (Overlap, Mapping, str)) and (seq := _items(item)) is not None and len(seq) in (2, 3):
            out.append(Overlap(blocks=seq[0], duration=seq[1], name=seq[2] if len(seq) > 2 else ""))
        else:
            out.append(item)
    return tuple(out)


def _pairs(value: Any) -> Any:
    """``{device: amount}`` (or ``(device, amount)`` pairs) as pairs sorted by
    device; another shape is kept as it is for :class:`Problem` to report."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        items = _items(value)
        if items is None:
            return value
        pairs = []
        for item in items:
            pair = None if isinstance(item, (str, Mapping)) else _items(item)
            if pair is None or len(pair) != 2:
                return value
            pairs.append(pair)
    return tuple(sorted(((k, v) for k, v in pairs), key=lambda kv: str(kv[0])))


def _releases(value: Any) -> Any:
    """Releases from :class:`Release` objects, ``{block, microbatch, time}``
    objects or ``(block, microbatch, time)`` lists; other items are kept as
    they are for :class:`Problem` to report."""
    items = _items(value)
    if items is None:
        return value
    out: list[Any] = []
    for item in items:
        if isinstance(item, Mapping) and _fits(item, _RELEASE_FIELDS, _RELEASE_FIELDS):
            out.append(Release(block=item["block"], microbatch=_index(item["microbatch"]), time=item["time"]))
        elif not isinstance(item, (Release, Mapping, str)) and (seq := _items(item)) is not None and len(seq) == 3:
            out.append(Release(block=seq[0], microbatch=_index(seq[1]), time=seq[2]))
        else:
            out.append(item)
    return tuple(out)


def _orders(value: Any) -> Any:
    """Fixed orders: lists of ``(block, micro-batch)`` pairs. Pairs keep their
    values (numpy integers become ints); a wrong shape is kept as it is for
    :class:`Problem` to report."""
    orders = _items(value)
    if orders is None:
        return value
    out: list[Any] = []
    for order in orders:
        keys = None if isinstance(order, (str, Mapping)) else _items(order)
        if keys is None:
            out.append(order)
            continue
        seq: list[Any] = []
        for key in keys:
            pair = None if isinstance(key, (str, Mapping)) else _items(key)
            seq.append((pair[0], _index(pair[1])) if pair is not None and len(pair) == 2 else key)
        out.append(tuple(seq))
    return tuple(out)


def _duration_overrides(value: Any) -> Any:
    """Overrides as ``(block, micro-batch, durations)`` triples sorted by task,
    from ``{(block, micro-batch): durations}``, ``{block, microbatch,
    durations}`` objects or triples; a wrong shape is kept as it is for
    :class:`Problem` to report."""
    if isinstance(value, Mapping):
        items: list[Any] = []
        for key, d in value.items():
            pair = None if isinstance(key, str) else _items(key)
            if pair is None or len(pair) != 2:
                return value
            items.append((pair[0], pair[1], d))
    else:
        raw = _items(value)
        if raw is None:
            return value
        items = []
        for item in raw:
            if isinstance(item, Mapping) and _fits(item, _OVERRIDE_FIELDS, _OVERRIDE_FIELDS):
                items.append((item["block"], item["microbatch"], item["durations"]))
            elif not isinstance(item, (Mapping, str)) and (seq := _items(item)) is not None and len(seq) == 3:
                items.append(tuple(seq))
            else:
                items.append(item)
    out: list[Any] = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 3:
            b, m, d = item
            durations = None if isinstance(d, (str, Mapping)) else _items(d)
            out.append((b, _index(m), d if durations is None else durations))
        else:
            out.append(item)

    def order(item: Any) -> tuple[str, int]:
        if isinstance(item, tuple) and len(item) == 3 and isinstance(item[1], int):
            return (str(item[0]), item[1])
        return ("", -1)

    return tuple(sorted(out, key=order))


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
    time_unit_s, memory_unit_bytes:
        What one time unit and one memory unit are in seconds and bytes
        (None: abstract units). They are data, not part of the search: every
        export (trace, report, pictures, timelines) reads them to show real
        times and sizes, and :func:`schedsearch.plan` and the profiler set
        them.

    Memory
    ------
    On each device the level starts at its initial memory and changes at
    each task's start: by the block's ``memory`` delta, plus its
    ``workspace``, which is given back at the task's end. At an instant
    ``t`` it is::

        initial + sum(memory of the tasks there with start <= t)
                + sum(workspace of the tasks there with start <= t < end)

    (a group's members all count at the group's start, their workspace
    over the group). It never exceeds the device's capacity, and the
    initial memory alone counts: a capacity below it holds no plan. A
    schedule's peak on a device is the highest level at any instant,
    initial memory included, so never below it; a plan of peak ``P`` fits
    capacity ``P``. Frees may come first: a block whose activation needs
    more than the capacity less the initial memory may still run after
    other blocks free memory. The constructor refuses only what no order
    can fit (:meth:`memory_refusal`); whether a capacity can be met is
    otherwise a question for a search or a proven bound.

    Examples
    --------
    A forward on ``d0``, its backward on ``d1``, a 4-unit activation sent
    over one link, two micro-batches:

    >>> from schedsearch import Block, Channel, Cluster, Device, Graph, Problem
    >>> problem = Problem(
    ...     graph=Graph(blocks=[Block(name="F", options=[("d0", 1)], memory=1),
    ...                         Block(name="B", kind="B", options=[("d1", 2)])],
    ...                 edges=[("F", "B", 4)]),
    ...     num_microbatches=2,
    ...     cluster=Cluster(devices=[Device(name="d0", memory=2), Device(name="d1")],
    ...                     channels=[Channel(name="link", endpoints=("d0", "d1"))]),
    ...     name="tiny",
    ... )
    >>> print(problem)
    tiny: 2 blocks x 2 micro-batches, 1 edges, devices [d0(mem=2), d1(mem=inf)], 1 channels
    >>> problem.tasks
    (('F', 0), ('B', 0), ('F', 1), ('B', 1))
    >>> Problem.from_json(problem.to_json()) == problem
    True
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
    time_unit_s: float | None = None
    memory_unit_bytes: float | None = None
    _override_index: dict[TaskKey, tuple[int, ...]] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )
    _release_index: dict[TaskKey, int] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)
    _option_durations: dict[str, tuple[int, ...]] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )
    _overlap_index: dict[frozenset[str], Overlap] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        # Every check below runs in time linear in the size of the problem
        # (blocks, options, edges, devices, channels, releases, orders,
        # overrides, overlaps); nothing is enumerated per micro-batch. The
        # memory check walks the graph below a block only for a block that
        # does not fit with no free before it.
        _check_int("problem", "num_microbatches", self.num_microbatches, 1, MAX_MICROBATCHES)
        if not isinstance(self.graph, Graph):
            raise _err("problem", "graph", "must be a Graph", type(self.graph).__name__)
        if not isinstance(self.cluster, Cluster):
            raise _err("problem", "cluster", "must be a Cluster", type(self.cluster).__name__)
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:
            raise _err("problem", "objective", f"must be one of {OBJECTIVES}", self.objective)
        if not isinstance(self.name, str):
            raise _err("problem", "name", "must be a string", self.name)
        for field in ("time_unit_s", "memory_unit_bytes"):
            value = getattr(self, field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise _err("problem", field, "must be a positive finite number (or null)", value)
            object.__setattr__(self, field, float(value))
        self._check_shapes()
        devices = {d.name: d for d in self.cluster.devices}
        seen_init: set[str] = set()
        for dev, amount in self.initial_memory:
            if not isinstance(dev, str) or dev not in devices:
                raise _err("problem", "initial_memory", "names an unknown device", dev)
            if dev in seen_init:
                raise _err("problem", "initial_memory", "names a device twice", dev)
            seen_init.add(dev)
            _check_int(f"initial memory of device {dev!r}", "amount", amount, 0)
        blocks = self.graph.by_name()
        self._check_options(blocks, devices)
        transfers = self._check_channels(blocks)
        self._check_tasks(blocks)
        self._check_overlaps(blocks)
        self._check_totals(transfers)
        refusal = self.memory_refusal()
        if refusal is not None:
            raise InvalidProblemError(refusal)
        object.__setattr__(self, "_override_index", {(b, m): d for b, m, d in self.duration_overrides})
        object.__setattr__(self, "_option_durations",
                           {b.name: tuple(o.duration for o in b.options) for b in self.graph.blocks})
        rel: dict[TaskKey, int] = {}
        for r in self.releases:
            rel[(r.block, r.microbatch)] = max(rel.get((r.block, r.microbatch), 0), r.time)
        object.__setattr__(self, "_release_index", rel)
        object.__setattr__(self, "_overlap_index", {ov.key: ov for ov in self.overlaps})  # keys checked distinct

    def _check_shapes(self) -> None:
        """The containers hold items of the right kind (converters keep what
        they cannot convert, so that it is reported here with its name)."""
        if not isinstance(self.initial_memory, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 for p in self.initial_memory
        ):
            raise _err("problem", "initial_memory", "must map device names to amounts", self.initial_memory)
        if not isinstance(self.releases, tuple):
            raise _err("problem", "releases", "must be a list of releases", self.releases)
        for i, r in enumerate(self.releases):
            if not isinstance(r, Release):
                raise _bad_item(f"problem: release {i}", r, _RELEASE_FIELDS, _RELEASE_FIELDS, _RELEASE_SHAPE)
        if not isinstance(self.fixed_orders, tuple):
            raise _err("problem", "fixed_orders", "must be a list of lists of [block, micro-batch] pairs",
                       self.fixed_orders)
        for i, order in enumerate(self.fixed_orders):
            if not isinstance(order, tuple):
                raise _err(f"fixed order {i}", "tasks", "must be a list of [block, micro-batch] pairs", order)
            for key in order:
                if not isinstance(key, tuple) or len(key) != 2:
                    raise _err(f"fixed order {i}", "tasks", "must be [block, micro-batch] pairs", key)
        if not isinstance(self.duration_overrides, tuple):
            raise _err("problem", "duration_overrides", "must be a list of duration overrides",
                       self.duration_overrides)
        for i, item in enumerate(self.duration_overrides):
            if isinstance(item, tuple) and len(item) == 3 and not isinstance(item[2], tuple):
                raise _err(f"duration override {i}", "durations", "must be a list of durations, one per option",
                           item[2])
            if not (isinstance(item, tuple) and len(item) == 3):
                raise _bad_item(f"problem: duration override {i}", item, _OVERRIDE_FIELDS, _OVERRIDE_FIELDS,
                                _OVERRIDE_SHAPE)
        if not isinstance(self.overlaps, tuple):
            raise _err("problem", "overlaps", "must be a list of overlaps", self.overlaps)
        for i, ov in enumerate(self.overlaps):
            if not isinstance(ov, Overlap):
                raise _bad_item(f"problem: overlap {i}", ov, _OVERLAP_FIELDS, ("blocks", "duration"), _OVERLAP_SHAPE)

    def _check_totals(self, transfers: dict[tuple[str, str], int]) -> None:
        """The horizon and the memory total stay within :data:`MAX_TOTAL`."""
        n = self.num_microbatches
        per_mb = sum(max(o.duration for o in b.options) for b in self.graph.blocks)
        per_mb += sum(transfers.values()) + sum(ov.duration for ov in self.overlaps)
        horizon = (n * per_mb + sum(max(d) for _, _, d in self.duration_overrides)
                   + max((r.time for r in self.releases), default=0))
        if horizon > MAX_TOTAL:
            raise InvalidProblemError(
                f"problem: the time horizon (every task instance's longest duration, every transfer's longest "
                f"time and the latest release) adds up to {horizon}, more than the supported {MAX_TOTAL} (2**61, "
                f"half of CP-SAT's variable range); use a coarser time unit or fewer micro-batches"
            )
        memory = n * sum(abs(b.memory) + b.workspace for b in self.graph.blocks)
        memory += sum(amount for _, amount in self.initial_memory)
        if memory > MAX_TOTAL:
            raise InvalidProblemError(
                f"problem: the memory amounts (every task instance's memory delta and workspace, and the initial "
                f"memory) add up to {memory}, more than the supported {MAX_TOTAL} (2**61, half of CP-SAT's "
                f"variable range); use a coarser memory unit or fewer micro-batches"
            )

    def _check_options(self, blocks: dict[str, Block], devices: dict[str, Device]) -> None:
        for b in self.graph.blocks:
            for i, o in enumerate(b.options):
                for d in o.devices:
                    if d not in devices:
                        raise _err(f"block {b.name!r}: option {i}", "devices", "names an unknown device", d)

    def memory_refusal(self, capacities: Mapping[str, int | None] | None = None, *,
                       overlaps: bool = True) -> str | None:
        """Why no schedule keeps memory within ``capacities``, or None when this check finds no reason.

        ``capacities`` maps device names to capacities (None: unbounded);
        the devices it leaves out keep their own (default: every device its
        own). The constructor raises with this reason for the problem's own
        capacities; searches that walk capacities down (the Pareto front,
        the least capacity) call it for the capacity they are about to try.
        ``overlaps=False`` answers for the problem without its overlap
        declarations (what :func:`~schedsearch.rewrite.reduced_problem`
        asks before dropping them).

        It is a necessary condition of the memory semantics (see the class
        docstring), so a reason is a proof that no order fits:

        * the level starts at the initial memory, so a device's initial
          memory above its capacity is over it from the start;
        * let ``k`` be the first instance (least start) of a block ``b``.
          At its start the level on each device ``d`` of its option is the
          initial memory, plus ``k``'s delta and workspace (``k`` runs at
          least one time unit), plus the deltas and held workspace of the
          other instances started by then. Those add up to no less than the
          frees (negative deltas) of all the other instances that may run
          on ``d`` and may start that early; the frees of ``b``'s other
          instances among them, ``k``'s delta and those frees add up to
          ``max(memory, 0)`` plus the frees of every instance of ``b``.
          An instance of a block reachable from ``b`` by edges cannot start
          that early: it starts after its own instance of ``b`` ends, so
          after ``k`` starts (edges between two blocks of one declared
          overlap are left out: a group may run them together). Releases
          and fixed orders are ignored: they only make the level larger.
          So ``b`` needs an option whose every device has ``initial +
          max(memory, 0) + workspace + the frees that may come first <=
          capacity``.

        Examples
        --------
        One device holding 2 at the start; ``b1`` frees 1 and ``b0``
        allocates 1, no edge: running ``b1`` first keeps the level at 2, so
        capacity 2 is not refused, capacity 1 is (the initial memory alone
        is over it):

        >>> from schedsearch import Block, Cluster, Device, Graph, Problem
        >>> p = Problem(graph=Graph(blocks=[Block(name="b0", options=[("d0", 1)], memory=1),
        ...                                 Block(name="b1", options=[("d0", 1)], memory=-1)]),
        ...             num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=4)]),
        ...             initial_memory={"d0": 2})
        >>> p.memory_refusal({"d0": 2}) is None
        True
        >>> p.memory_refusal({"d0": 1})
        "device 'd0': 'initial_memory' 2 exceeds its capacity 1"

        With an edge ``b0 -> b1`` the free comes after the allocation:

        >>> print(p.with_(graph=Graph(blocks=p.graph.blocks, edges=[("b0", "b1")])).memory_refusal({"d0": 2}))
        ... # doctest: +NORMALIZE_WHITESPACE
        block 'b0': 'memory' + 'workspace' = 1 does not fit on any device it may run on, even after every
        free that may run before it (capacities {'d0': 2}, initial memory {'d0': 2}, frees that may come
        first {'d0': 0})
        """
        caps = {d.name: d.memory for d in self.cluster.devices}
        if capacities is not None:
            if not isinstance(capacities, Mapping):
                raise _err("memory_refusal", "capacities", "must map device names to capacities", capacities)
            for d, cap in capacities.items():
                if d not in caps:
                    raise _err("memory_refusal", "capacities", "names an unknown device", d)
                if cap is not None:
                    _check_int(f"memory_refusal: device {d!r}", "capacity", cap, 0)
            caps.update(capacities)
        init = dict(self.initial_memory)
        for d, cap in caps.items():
            if cap is not None and init.get(d, 0) > cap:
                return f"device {d!r}: 'initial_memory' {init[d]} exceeds its capacity {cap}"
        n = self.num_microbatches
        frees: dict[str, int] = {}  # per device: the frees of every instance that may run there (<= 0)
        for b in self.graph.blocks:
            if b.memory < 0:
                for d in b.devices:
                    frees[d] = frees.get(d, 0) + n * b.memory
        successors: dict[str, list[str]] | None = None
        blocks = self.graph.by_name()
        for b in self.graph.blocks:
            alone = max(b.memory, 0) + b.workspace

            def fits(extra: Mapping[str, int], need: int = alone) -> bool:
                return any(all(caps[d] is None or init.get(d, 0) + need + extra.get(d, 0) <= caps[d]
                               for d in o.devices) for o in b.options)

            if fits({}):  # fits with no free before it (the common case: no graph walk)
                continue
            if successors is None:
                successors = self._hard_successors(overlaps)
            later: set[str] = set()
            stack = [b.name]
            while stack:
                for nxt in successors[stack.pop()]:
                    if nxt not in later:
                        later.add(nxt)
                        stack.append(nxt)
            first = {d: frees.get(d, 0) - sum(n * blocks[c].memory for c in later
                                              if blocks[c].memory < 0 and d in blocks[c].devices)
                     for d in b.devices}
            if fits(first):
                continue
            on = sorted(b.devices)
            return (
                f"block {b.name!r}: 'memory' + 'workspace' = {alone} does not fit on any device it may run on, "
                f"even after every free that may run before it (capacities { {d: caps[d] for d in on} }, "
                f"initial memory { {d: init.get(d, 0) for d in on} }, frees that may come first "
                f"{ {d: first[d] for d in on} })"
            )
        return None

    def _hard_successors(self, overlaps: bool = True) -> dict[str, list[str]]:
        """Successors along edges that force a later start (every edge but, with ``overlaps``, those
        between two blocks of one declared overlap, which a group may run together)."""
        out: dict[str, list[str]] = {b.name: [] for b in self.graph.blocks}
        declared = self.overlaps if overlaps else ()
        for e in self.graph.edges:
            if not any(e.src in ov.blocks and e.dst in ov.blocks for ov in declared):
                out[e.src].append(e.dst)
        return out

    def _check_channels(self, blocks: dict[str, Block]) -> dict[tuple[str, str], int]:
        """Every transfer has a channel; returns the longest time of each edge's transfer."""
        longest: dict[tuple[str, str], int] = {}
        for e in self.graph.edges:
            if e.size == 0:
                continue
            for oa in blocks[e.src].options:
                for ob in blocks[e.dst].options:
                    if not set(oa.devices).isdisjoint(ob.devices):
                        continue
                    a, b = oa.devices[0], ob.devices[0]
                    channels = self.cluster.channels_between(a, b)
                    if not channels:
                        raise InvalidProblemError(
                            f"edge {e.src!r} -> {e.dst!r}: transfer of 'size' {e.size} from device "
                            f"{a!r} to device {b!r} needs a channel, but the cluster has none "
                            f"between them"
                        )
                    worst = max(c.transfer_time(e.size) for c in channels)
                    longest[(e.src, e.dst)] = max(longest.get((e.src, e.dst), 0), worst)
        return longest

    def _check_tasks(self, blocks: dict[str, Block]) -> None:
        n = self.num_microbatches

        def check_key(entity: str, block: str, mb: int) -> None:
            if not isinstance(block, str) or block not in blocks:
                raise _err(entity, "block", "names an unknown block", block)
            if isinstance(mb, bool) or not isinstance(mb, int) or not 0 <= mb < n:
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
        return self._overlap_index.get(blocks if isinstance(blocks, frozenset) else frozenset(blocks))

    @property
    def tasks(self) -> tuple[TaskKey, ...]:
        """Every task instance, micro-batch major, blocks in graph order."""
        return tuple((b.name, m) for m in range(self.num_microbatches) for b in self.graph.blocks)

    @property
    def num_tasks(self) -> int:
        """How many task instances there are (``len(problem.tasks)`` without listing them).

        >>> from schedsearch.placements import vshape
        >>> problem = vshape(4, 8)
        >>> problem.num_tasks, len(problem.tasks)
        (64, 64)
        """
        return self.num_microbatches * len(self.graph.blocks)

    def initial_memory_of(self, device: str) -> int:
        return dict(self.initial_memory).get(device, 0)

    def capacity(self, device: str) -> int | None:
        return self.cluster.device(device).memory

    def durations(self, block: str, microbatch: int) -> tuple[int, ...]:
        """Durations of each option of a task instance (overrides applied)."""
        found = self._override_index.get((block, microbatch)) or self._option_durations.get(block)
        if found is not None:
            return found
        return tuple(o.duration for o in self.graph.block(block).options)  # an unknown block: the graph says so

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
            **({"time_unit_s": self.time_unit_s} if self.time_unit_s is not None else {}),
            **({"memory_unit_bytes": self.memory_unit_bytes} if self.memory_unit_bytes is not None else {}),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Problem:
        """A problem from its JSON document (see :meth:`to_dict`).

        A document whose structure is wrong (not an object, a wrong
        ``format`` or ``version``, a missing or an unknown field at any level)
        raises :class:`~schedsearch.errors.FormatError`; a value of the wrong
        type, shape or range raises
        :class:`~schedsearch.errors.InvalidProblemError`. Both name the field.
        """
        check_header(d, "problem", FORMAT_VERSION)
        check_fields("problem document", d, _PROBLEM_FIELDS, ("graph", "num_microbatches", "cluster"))
        if not isinstance(d["graph"], Mapping):
            raise _err("problem", "graph", "must be an object {blocks, edges}", d["graph"])
        if not isinstance(d["cluster"], Mapping):
            raise _err("problem", "cluster", "must be an object {devices, channels}", d["cluster"])
        num_microbatches = d["num_microbatches"]
        # checked before the graph is built: a huge count must fail at once
        _check_int("problem", "num_microbatches", num_microbatches, 1, MAX_MICROBATCHES)
        return cls(
            graph=Graph.from_dict(d["graph"]),
            num_microbatches=num_microbatches,
            cluster=Cluster.from_dict(d["cluster"]),
            initial_memory=d.get("initial_memory", {}),
            releases=d.get("releases", ()),
            fixed_orders=d.get("fixed_orders", ()),
            duration_overrides=d.get("duration_overrides", ()),
            objective=d.get("objective", "makespan"),
            name=d.get("name", ""),
            overlaps=d.get("overlaps", ()),
            time_unit_s=d.get("time_unit_s"),
            memory_unit_bytes=d.get("memory_unit_bytes"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Problem:
        """A problem from JSON text (see :meth:`from_dict`); text that is not
        JSON, nests too deeply or repeats a key raises
        :class:`~schedsearch.errors.FormatError`."""
        return cls.from_dict(load_document(text, "problem document"))
