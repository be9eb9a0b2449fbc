"""Loaders of operator graphs: the files the partitioners read.

:func:`read_dnn_partitioning`
    the JSON format of Tarnawski et al. (nodes with ``fpgaLatency``,
    ``cpuLatency``, ``size``, ``colorClass``, ``isBackwardNode``,
    ``supportedOnFpga``; edges with the per-source ``cost``; device settings
    ``maxFPGAs``, ``maxCPUs``, ``maxSizePerFPGA``).
:func:`read_pipedream_profile`
    PipeDream profiler ``graph.txt`` files (forward/backward compute times in
    ms, activation and parameter bytes); communication cost is the output
    activation size divided by a bandwidth, CPU latency a fixed multiple of
    the accelerator latency (both are parameters, the profile has neither).
:func:`read_split`
    a device split in the same JSON layout (``fpgas``/``cpus`` lists of node
    lists), e.g. the human-expert splits shipped with the workloads.

Each ``read_*`` has a ``parse_*`` twin that takes the parsed document (or
the text) instead of a path. They build the solver-free data of
:mod:`schedsearch.partition.opgraph`; errors name the file, the entity, the
field and the value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedsearch._io import read_text
from schedsearch._json import short_repr
from schedsearch.errors import FormatError, InvalidOperatorGraphError
from schedsearch.partition.opgraph import (
    MAX_DEVICES,
    DeviceLimits,
    Operator,
    OperatorGraph,
    PartitionWorkload,
    Slot,
    Split,
    _check_number,
)

__all__ = [
    "read_dnn_partitioning",
    "parse_dnn_partitioning",
    "read_pipedream_profile",
    "parse_pipedream_profile",
    "read_split",
    "parse_split",
    "find_expert_split",
]


def _flag(entity: str, field: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidOperatorGraphError(
        f"{entity}: {field!r} must be true/false or 0/1, got {short_repr(value)}"
    )


#: Largest magnitude of an integer field (an id, a count, a colour class) the loaders read.
_MAX_ID = 2**63


def _int_field(entity: str, field: str, value: Any) -> int:
    """``value`` as an integer (a float with an integral value counts) of at most 2**63 in size; refused
    naming the entity and field otherwise."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_ID:
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > _MAX_ID:
        raise InvalidOperatorGraphError(f"{entity}: {field!r} must be an integer, got {short_repr(value)} (at most "
                                        f"2**63 in size)")
    return value


def parse_dnn_partitioning(document: Mapping[str, Any], *, name: str = "") -> PartitionWorkload:
    """Build a :class:`PartitionWorkload` from a parsed dnn-partitioning document.

    Raises
    ------
    FormatError
        The document lacks a required key or has the wrong shape.
    InvalidOperatorGraphError
        Bad values: negative latency, edges out of one node with different
        costs, unknown ids, backward-to-forward edges, cycles.

    Examples
    --------
    A chain of three operators, to split over two accelerators and a CPU:

    >>> from schedsearch.loaders import parse_dnn_partitioning
    >>> document = {
    ...     "maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 100,
    ...     "nodes": [{"id": i, "fpgaLatency": 2, "cpuLatency": 20, "size": 10, "isBackwardNode": False}
    ...               for i in range(3)],
    ...     "edges": [{"sourceId": 0, "destId": 1, "cost": 1}, {"sourceId": 1, "destId": 2, "cost": 0.5}],
    ... }
    >>> workload = parse_dnn_partitioning(document, name="chain3")
    >>> print(workload)
    OperatorGraph 'chain3': 3 operators, 2 edges (inference); 2 accelerators (100 B each), 1 CPUs
    >>> workload.graph.operator(1).output_cost
    0.5
    """
    if not isinstance(document, Mapping):
        raise FormatError(f"{name or 'document'}: top level must be a JSON object")
    for key in ("nodes", "edges", "maxFPGAs", "maxCPUs"):
        if key not in document:
            raise FormatError(f"{name or 'document'}: missing top-level key {key!r}")
    # the device counts first: a corrupt count must fail before any work
    counts = {}
    for key in ("maxFPGAs", "maxCPUs"):
        value = _int_field(name or "document", key, document[key])
        if not 0 <= value <= MAX_DEVICES:
            raise InvalidOperatorGraphError(
                f"{name or 'document'}: {key!r} must be an integer in 0..{MAX_DEVICES} (MAX_DEVICES), got {value!r}"
            )
        counts[key] = value
    nodes, edges = document["nodes"], document["edges"]
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise FormatError(f"{name or 'document'}: 'nodes' and 'edges' must be lists")
    costs: dict[int, float] = {}
    edge_list: list[tuple[int, int]] = []
    for i, e in enumerate(edges):
        if not isinstance(e, Mapping):
            raise FormatError(f"edge #{i}: must be an object, got {short_repr(e)}")
        for key in ("sourceId", "destId", "cost"):
            if key not in e:
                raise FormatError(f"edge #{i}: missing key {key!r}")
        src = _int_field(f"edge #{i}", "sourceId", e["sourceId"])
        dst = _int_field(f"edge #{i}", "destId", e["destId"])
        cost = _check_number(f"edge {src} -> {dst}", "cost", e["cost"])
        if src in costs and abs(costs[src] - cost) > 1e-6:
            raise InvalidOperatorGraphError(
                f"node {src}: edges out of it have different 'cost' values "
                f"({costs[src]!r} and {cost!r}); the cost belongs to the source node"
            )
        costs.setdefault(src, cost)
        edge_list.append((src, dst))
    ops = []
    for i, n in enumerate(nodes):
        if not isinstance(n, Mapping):
            raise FormatError(f"node #{i}: must be an object, got {short_repr(n)}")
        if "id" not in n:
            raise FormatError(f"node #{i}: missing key 'id'")
        nid = _int_field(f"node #{i}", "id", n["id"])
        ent = f"node {nid}"
        for key in ("fpgaLatency", "cpuLatency", "isBackwardNode"):
            if key not in n:
                raise FormatError(f"{ent}: missing key {key!r}")
        cc = n.get("colorClass")
        ops.append(
            Operator(
                id=nid,
                name=str(n.get("name", "")),
                accel_latency=_check_number(ent, "fpgaLatency", n["fpgaLatency"]),
                cpu_latency=_check_number(ent, "cpuLatency", n["cpuLatency"]),
                size=_check_number(ent, "size", n.get("size", 0.0)),
                output_cost=costs.get(nid, 0.0),
                color_class=None if cc is None else _int_field(ent, "colorClass", cc),
                is_backward=_flag(ent, "isBackwardNode", n["isBackwardNode"]),
                supported_on_accel=_flag(ent, "supportedOnFpga", n.get("supportedOnFpga", True)),
            )
        )
    known = {op.id for op in ops}
    for src in costs:
        if src not in known:
            raise InvalidOperatorGraphError(f"edge {src} -> ...: unknown source operator id {src}")
    graph = OperatorGraph(operators=ops, edges=edge_list, name=name)
    max_mem = document.get("maxSizePerFPGA")
    devices = DeviceLimits(
        num_accelerators=counts["maxFPGAs"],
        num_cpus=counts["maxCPUs"],
        max_accel_memory=None if max_mem is None else _check_number(name or "document", "maxSizePerFPGA", max_mem),
    )
    return PartitionWorkload(graph=graph, devices=devices, source=name)


def _load_json(path: str | Path) -> Any:
    path = Path(path)
    text = read_text(path, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not valid JSON: {exc}") from exc
    except RecursionError:
        raise FormatError(f"{path}: nested too deeply to read") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's conversion limit
        raise FormatError(f"{path}: cannot be read ({exc})") from None


def _in_file(path: Path, exc: FormatError | InvalidOperatorGraphError) -> Exception:
    """The same error with the file's path in front (once)."""
    text = str(exc)
    if text.startswith(str(path)):
        return exc
    return type(exc)(f"{path}: {text.removeprefix(f'{path.stem}: ')}")


def read_dnn_partitioning(path: str | Path) -> PartitionWorkload:
    """Read a dnn-partitioning JSON file (see :func:`parse_dnn_partitioning`);
    errors name the file.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_dnn_partitioning
    >>> document = {
    ...     "maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 100,
    ...     "nodes": [{"id": i, "fpgaLatency": 2, "cpuLatency": 20, "size": 10, "isBackwardNode": False}
    ...               for i in range(3)],
    ...     "edges": [{"sourceId": 0, "destId": 1, "cost": 1}, {"sourceId": 1, "destId": 2, "cost": 0.5}],
    ... }
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "chain3.json"
    ...     _ = path.write_text(json.dumps(document))
    ...     workload = read_dnn_partitioning(path)
    >>> workload.devices
    DeviceLimits(num_accelerators=2, num_cpus=1, max_accel_memory=100.0)
    """
    path = Path(path)
    try:
        return parse_dnn_partitioning(_load_json(path), name=path.stem)
    except (FormatError, InvalidOperatorGraphError) as exc:
        raise _in_file(path, exc) from None


def parse_split(document: Mapping[str, Any], *, name: str = "split") -> Split:
    """Read a split in the dnn-partitioning result layout.

    ``{"fpgas": [{"nodes": [...]}, ...], "cpus": [{"nodes": [...]}, ...]}``;
    other keys (``load``, ``maxLoad``) are ignored.

    Examples
    --------
    >>> from schedsearch.loaders import parse_split
    >>> split = parse_split({"fpgas": [{"nodes": [0, 1]}, {"nodes": [2]}], "cpus": [], "maxLoad": 5})
    >>> [(str(slot), ops) for slot, ops in split.stages]
    [('accel0', (0, 1)), ('accel1', (2,))]
    """
    if not isinstance(document, Mapping):
        raise FormatError(f"{name}: top level must be a JSON object")
    stages = []
    for key, kind in (("fpgas", "accel"), ("cpus", "cpu")):
        devices = document.get(key, [])
        if not isinstance(devices, list):
            raise FormatError(f"{name}: {key!r} must be a list")
        for i, dev in enumerate(devices):
            if not isinstance(dev, Mapping) or not isinstance(dev.get("nodes"), list):
                raise FormatError(f"{name}: {key}[{i}] must be an object with a 'nodes' list")
            ids = [_int_field(f"{name}: {key}[{i}]", "nodes", v) for v in dev["nodes"]]
            stages.append((Slot(kind=kind, index=i), ids))
    return Split(stages=stages)


def read_split(path: str | Path) -> Split:
    """Read a split file (see :func:`parse_split`).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_split
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "split.json"
    ...     _ = path.write_text(json.dumps({"fpgas": [{"nodes": [0]}], "cpus": [{"nodes": [1, 2]}]}))
    ...     split = read_split(path)
    >>> [(str(slot), ops) for slot, ops in split.stages]
    [('accel0', (0,)), ('cpu0', (1, 2))]
    """
    path = Path(path)
    try:
        return parse_split(_load_json(path), name=path.name)
    except (FormatError, InvalidOperatorGraphError) as exc:
        raise _in_file(path, exc) from None


def find_expert_split(path: str | Path) -> Path | None:
    """The human-expert split shipped beside a dnn-partitioning workload, if any.

    Looks for ``human-experts/<name>_expert.json`` in the parents of
    ``path`` (up to three levels), then for the inference split of the same
    model (``<model>_inference_expert.json``), which :func:`~schedsearch.
    partition.cost.complete_split` extends to the backward operators.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import find_expert_split
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     root = Path(folder)
    ...     (root / "workloads").mkdir()
    ...     (root / "human-experts").mkdir()
    ...     _ = (root / "human-experts" / "bert_training_expert.json").write_text("{}")
    ...     print(find_expert_split(root / "workloads" / "bert_training.json").name)
    ...     print(find_expert_split(root / "workloads" / "gpt_training.json"))
    bert_training_expert.json
    None
    """
    path = Path(path)
    stem = path.stem
    model = stem.rsplit("_", 1)[0]
    for parent in list(path.resolve().parents)[:3]:
        folder = parent / "human-experts"
        for name in (f"{stem}_expert.json", f"{model}_inference_expert.json"):
            if (folder / name).is_file():
                return folder / name
    return None


# ---------------------------------------------------------------- PipeDream profiles
_PD_METRIC = re.compile(r"(\w+)=(\[[^\]]*\]|[^,]+)")


def _pd_number(text: str, where: str) -> float:
    text = text.strip()
    if text.startswith("["):
        parts = [p for p in text[1:-1].split(";") if p.strip()]
        return math.fsum(_pd_number(p, where) for p in parts)
    try:
        value = float(text)
    except ValueError:
        raise FormatError(f"{where}: not a number: {short_repr(text)}") from None
    return value


def parse_pipedream_profile(
    text: str,
    *,
    name: str = "",
    training: bool = True,
    bandwidth_bytes_per_ms: float = 1e7,
    cpu_slowdown: float = 10.0,
    size_includes_activations: bool = False,
) -> OperatorGraph:
    """Build an operator graph from a PipeDream profile (``graph.txt``).

    Each profile node ``nodeN -- desc -- forward_compute_time=..,
    backward_compute_time=.., activation_size=.., parameter_size=..`` becomes
    a forward operator (latency = forward time); with ``training`` also a
    backward operator (latency = backward time) in the same colocation
    class, with mirrored edges (gradient of the same size). The output cost
    of an operator is its activation size (summed if a list) divided by
    ``bandwidth_bytes_per_ms``; CPU latency is ``cpu_slowdown`` times the
    accelerator latency; size is the parameter bytes (plus activations if
    ``size_includes_activations``). A backward operator sends the gradients
    of its partner's inputs: its output cost is the summed activation size of
    the partner's predecessors over the bandwidth (exact with one
    predecessor). Operator ids are assigned in file order
    (forward ``0..n-1``, backward ``n..2n-1``); names keep the profile ids.

    Examples
    --------
    >>> from schedsearch.loaders import parse_pipedream_profile
    >>> profile = "\\n".join([
    ...     "node1 -- Linear(8, 8) -- forward_compute_time=2.000, backward_compute_time=4.000, "
    ...     "activation_size=10000000.0, parameter_size=256.000",
    ...     "node2 -- ReLU() -- forward_compute_time=1.000, backward_compute_time=1.000, "
    ...     "activation_size=10000000.0, parameter_size=0.000",
    ...     "\\tnode1 -- node2",
    ... ])
    >>> graph = parse_pipedream_profile(profile, name="tiny")
    >>> print(graph)
    OperatorGraph 'tiny': 4 operators, 2 edges (training)
    >>> [(op.name, op.accel_latency, op.output_cost) for op in graph.operators][:2]
    [('node1: Linear(8, 8)', 2.0, 1.0), ('node2: ReLU()', 1.0, 1.0)]
    """
    if bandwidth_bytes_per_ms <= 0:
        raise InvalidOperatorGraphError(
            f"pipedream profile: 'bandwidth_bytes_per_ms' must be > 0, got {bandwidth_bytes_per_ms!r}"
        )
    if cpu_slowdown < 0:
        raise InvalidOperatorGraphError(
            f"pipedream profile: 'cpu_slowdown' must be >= 0, got {cpu_slowdown!r}"
        )
    records, raw_edges = _pd_lines(text, name)
    number = {rec[0]: i for i, rec in enumerate(records)}
    for a, b in raw_edges:
        for val in (a, b):
            if val not in number:
                raise InvalidOperatorGraphError(
                    f"{name or 'profile'}: edge {short_repr(a)} -- {short_repr(b)}: unknown node id {short_repr(val)}"
                )
    ops = []
    for i, (node_id, desc, m) in enumerate(records):
        fwd = m["forward_compute_time"]
        act = m["activation_size"]
        size = m["parameter_size"] + (act if size_includes_activations else 0.0)
        ops.append(
            Operator(
                id=i,
                name=f"{node_id}: {desc}",
                accel_latency=fwd,
                cpu_latency=fwd * cpu_slowdown,
                size=size,
                output_cost=act / bandwidth_bytes_per_ms,
                color_class=i,
            )
        )
    edges = [(number[a], number[b]) for a, b in raw_edges]
    if training:
        bwd_ops, bwd_edges = _pd_backward(records, edges, bandwidth_bytes_per_ms, cpu_slowdown)
        ops += bwd_ops
        edges = edges + bwd_edges
    return OperatorGraph(operators=ops, edges=edges, name=name)


def _pd_lines(text: str, name: str) -> tuple[list[tuple[str, str, dict[str, float]]], list[tuple[str, str]]]:
    """The node lines ``(id, description, metrics)`` and the edge lines ``(src id, dst id)`` of a profile,
    in file order."""
    records: list[tuple[str, str, dict[str, float]]] = []
    raw_edges: list[tuple[str, str]] = []
    seen_ids: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name or 'profile'}:{lineno}"
        if line.startswith("\t"):
            parts = line.strip().split(" -- ")
            if len(parts) != 2:
                raise FormatError(f"{where}: edge line must be 'src -- dst', got {short_repr(line.strip())}")
            raw_edges.append((parts[0].strip(), parts[1].strip()))
            continue
        parts = line.split(" -- ")
        metric_idx = next(
            (i for i in range(len(parts) - 1, 0, -1) if "forward_compute_time=" in parts[i]), None
        )
        if metric_idx is None or metric_idx < 1:
            raise FormatError(f"{where}: node line lacks 'forward_compute_time=': {line[:80]!r}")
        node_id = parts[0].strip()
        desc = " -- ".join(parts[1:metric_idx]).strip()
        metrics = {k: _pd_number(v, where) for k, v in _PD_METRIC.findall(parts[metric_idx])}
        for key in ("forward_compute_time", "backward_compute_time", "activation_size",
                    "parameter_size"):
            if key not in metrics:
                raise FormatError(f"{where}: node {node_id}: missing {key!r}")
        if node_id in seen_ids:
            raise InvalidOperatorGraphError(f"{where}: node {node_id}: duplicate id")
        seen_ids.add(node_id)
        records.append((node_id, desc, metrics))
    return records, raw_edges


def _pd_backward(records: list[tuple[str, str, dict[str, float]]], edges: list[tuple[int, int]],
                 bandwidth_bytes_per_ms: float, cpu_slowdown: float) -> tuple[list[Operator], list[tuple[int, int]]]:
    """The backward operators (ids ``n..2n-1``, each in its forward partner's colocation class) and their
    mirrored edges."""
    n = len(records)
    # Backward operator b' sends the gradients of b's inputs to the backward
    # partners of b's predecessors; one cost per source, so b' pays the sum of
    # its predecessors' activation sizes (exact when b has one predecessor).
    in_bytes: dict[int, float] = {}
    for a, b in edges:
        in_bytes[b] = in_bytes.get(b, 0.0) + records[a][2]["activation_size"]
    ops = []
    for i, (node_id, desc, m) in enumerate(records):
        bwd = m["backward_compute_time"]
        ops.append(
            Operator(
                id=n + i,
                name=f"{node_id}': backward of {desc}",
                accel_latency=bwd,
                cpu_latency=bwd * cpu_slowdown,
                size=0.0,
                output_cost=in_bytes[i] / bandwidth_bytes_per_ms if i in in_bytes else 0.0,
                color_class=i,
                is_backward=True,
            )
        )
    return ops, [(n + b, n + a) for a, b in edges]


def read_pipedream_profile(path: str | Path, **options: Any) -> OperatorGraph:
    """Read a PipeDream ``graph.txt`` (see :func:`parse_pipedream_profile`).

    ``options`` go to :func:`parse_pipedream_profile` (``training``,
    ``bandwidth_bytes_per_ms``, ...); the graph is named after the file's
    folder, the model's name in PipeDream's layout.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.loaders import read_pipedream_profile
    >>> line = ("node1 -- Linear(8, 8) -- forward_compute_time=2.000, backward_compute_time=4.000, "
    ...         "activation_size=1000.0, parameter_size=256.000")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "mlp" / "graph.txt"
    ...     path.parent.mkdir()
    ...     _ = path.write_text(line + "\\n")
    ...     graph = read_pipedream_profile(path, training=False)
    >>> graph.operators[0].accel_latency, graph.is_training
    (2.0, False)
    """
    path = Path(path)
    text = read_text(path, str(path))
    label = path.parent.name if path.name == "graph.txt" else path.stem
    try:
        return parse_pipedream_profile(text, name=label, **options)
    except (FormatError, InvalidOperatorGraphError) as exc:
        raise _in_file(path, exc) from None
