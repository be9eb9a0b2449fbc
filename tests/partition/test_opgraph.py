"""Operator graph model and loaders: real files load, malformed ones fail clearly."""

from __future__ import annotations

import json

import pytest

from schedsearch.errors import FormatError, InvalidOperatorGraphError
from schedsearch.loaders.opgraph import (
    parse_dnn_partitioning,
    parse_pipedream_profile,
    read_dnn_partitioning,
    read_pipedream_profile,
    read_split,
)
from schedsearch.partition.opgraph import (
    DeviceLimits,
    Operator,
    OperatorGraph,
    Slot,
    Split,
    training_graph_from_forward,
)

SMALL = ["LayerGraphs/bert24_inference", "LayerGraphs/resnet50_training",
         "OperatorGraphs/bert_l-3_inference", "OperatorGraphs/bert_l-3_training"]


@pytest.mark.parametrize("name", SMALL)
def test_real_files_load_with_their_device_settings(name, load_workload, reference):
    w = load_workload(name)
    ref = reference[name]
    assert w.graph.num_operators == ref["nodes"]
    assert len(w.graph.edges) == ref["edges"]
    assert w.devices.num_accelerators == ref["maxFPGAs"]
    assert w.devices.num_cpus == ref["maxCPUs"]
    assert w.devices.max_accel_memory == ref["maxSizePerFPGA"]
    assert w.graph.is_training == name.endswith("training")


def test_operator_graph_quirks_are_read(load_workload):
    # OperatorGraphs: ids not contiguous, some nodes without colorClass, booleans as true/false
    g = load_workload("OperatorGraphs/bert_l-3_inference").graph
    assert any(op.color_class is None for op in g.operators)
    assert sorted(g.ids) != list(range(len(g.ids)))
    # the cost of an edge belongs to its source
    src = next(a for a, _ in g.edges)
    assert g.operator(src).output_cost >= 0


def doc(nodes=None, edges=None, **extra):
    base = {
        "maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 100.0,
        "nodes": nodes if nodes is not None else [
            {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10.0, "fpgaLatency": 1.0, "isBackwardNode": 0, "colorClass": 1, "size": 1.0},
            {"id": 2, "supportedOnFpga": 1, "cpuLatency": 20.0, "fpgaLatency": 2.0, "isBackwardNode": 0, "colorClass": 2, "size": 1.0},
            {"id": 3, "supportedOnFpga": 1, "cpuLatency": 20.0, "fpgaLatency": 2.0, "isBackwardNode": 1, "colorClass": 2, "size": 0.0},
        ],
        "edges": edges if edges is not None else [
            {"sourceId": 1, "destId": 2, "cost": 0.5},
            {"sourceId": 2, "destId": 3, "cost": 0.25},
        ],
    }
    base.update(extra)
    return base


def test_small_document_parses():
    w = parse_dnn_partitioning(doc())
    g = w.graph
    assert g.operator(1).output_cost == 0.5 and g.operator(3).output_cost == 0.0
    assert g.operator(3).is_backward and g.operator(3).color_class == 2
    assert g.successors(1) == (2,) and g.predecessors(3) == (2,)
    assert w.devices == DeviceLimits(num_accelerators=2, num_cpus=1, max_accel_memory=100.0)


def _node(i, **kw):
    n = {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 1.0, "isBackwardNode": 0, "size": 0.0}
    n.update(kw)
    return n


BAD = [
    # (document, error type, message fragment)
    (doc(edges=[{"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.7}]),
     InvalidOperatorGraphError, "node 1: edges out of it have different 'cost'"),
    (doc(nodes=[_node(1), _node(2, isBackwardNode=1)], edges=[{"sourceId": 2, "destId": 1, "cost": 0.0}]),
     InvalidOperatorGraphError, "from backward operator 2 to forward operator 1"),
    (doc(edges=[{"sourceId": 1, "destId": 9, "cost": 0.0}]),
     InvalidOperatorGraphError, "unknown dest operator id 9"),
    (doc(edges=[{"sourceId": 7, "destId": 1, "cost": 0.0}]),
     InvalidOperatorGraphError, "unknown source operator id 7"),
    (doc(nodes=[_node(1, fpgaLatency=-1.0)], edges=[]),
     InvalidOperatorGraphError, "node 1: 'fpgaLatency' must be a finite number >= 0, got -1.0"),
    (doc(nodes=[_node(1), _node(2)], edges=[{"sourceId": 1, "destId": 2, "cost": 0.0}, {"sourceId": 2, "destId": 1, "cost": 0.0}]),
     InvalidOperatorGraphError, "not acyclic"),
    (doc(nodes=[_node(1), _node(1)], edges=[]), InvalidOperatorGraphError, "operator 1: duplicate id"),
    (doc(nodes=[_node(1)], edges=[{"sourceId": 1, "destId": 1, "cost": 0.0}]),
     InvalidOperatorGraphError, "self-loop"),
    (doc(nodes=[_node(1, supportedOnFpga="yes")], edges=[]),
     InvalidOperatorGraphError, "'supportedOnFpga' must be true/false or 0/1"),
    (doc(nodes=[{"id": 1, "cpuLatency": 1.0, "isBackwardNode": 0}], edges=[]),
     FormatError, "node 1: missing key 'fpgaLatency'"),
    ({"nodes": [], "edges": []}, FormatError, "missing top-level key 'maxFPGAs'"),
    (doc(maxFPGAs=0, maxCPUs=0), InvalidOperatorGraphError, "at least one device"),
    (doc(edges=[{"sourceId": 1, "destId": 2}]), FormatError, "edge #0: missing key 'cost'"),
    (doc(maxFPGAs=10**6), InvalidOperatorGraphError, "'maxFPGAs' must be an integer in 0..1024 (MAX_DEVICES), got 1000000"),
    (doc(maxCPUs=-1), InvalidOperatorGraphError, "'maxCPUs' must be an integer in 0..1024 (MAX_DEVICES), got -1"),
    (doc(maxFPGAs="6"), InvalidOperatorGraphError, "'maxFPGAs' must be an integer, got '6'"),
    (doc(maxSizePerFPGA=-1), InvalidOperatorGraphError, "'maxSizePerFPGA' must be a finite number >= 0, got -1"),
]


@pytest.mark.parametrize("document,error,fragment", BAD, ids=[b[2][:30] for b in BAD])
def test_malformed_documents_fail_clearly(document, error, fragment):
    with pytest.raises(error, match=None) as info:
        parse_dnn_partitioning(document)
    assert fragment in str(info.value)


def test_unreadable_files_are_format_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(FormatError, match="not valid JSON"):
        read_dnn_partitioning(bad)
    with pytest.raises(FormatError, match="cannot read"):
        read_dnn_partitioning(tmp_path / "missing.json")
    assert issubclass(FormatError, ValueError)


def test_expert_split_reads(dnn_data):
    split = read_split(dnn_data / "human-experts" / "bert24_inference_expert.json")
    assert [s for s, _ in split.stages][:2] == [Slot(kind="accel", index=0), Slot(kind="accel", index=1)]
    assert split.assignment()[1] == Slot(kind="accel", index=0)
    assert split.assignment()[32] == Slot(kind="accel", index=5)
    with pytest.raises(InvalidOperatorGraphError, match="operator 3 assigned to more than one device"):
        Split(stages=[(Slot(kind="accel", index=0), (3,)), (Slot(kind="accel", index=1), (3,))])


PROFILE = """\
node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, activation_size=100.0, parameter_size=0.000
node2 -- Conv2d(3, 8) -- forward_compute_time=2.000, backward_compute_time=4.000, activation_size=[200.0; 300.0], parameter_size=64.000
node3 -- Linear -- forward_compute_time=1.000, backward_compute_time=3.000, activation_size=50.0, parameter_size=32.000
\tnode1 -- node2
\tnode2 -- node3
"""


def test_pipedream_profile_parses_with_mirrored_backward():
    g = parse_pipedream_profile(PROFILE, name="tiny", bandwidth_bytes_per_ms=100.0, cpu_slowdown=5.0)
    assert g.num_operators == 6 and len(g.edges) == 4
    conv = g.operator(1)
    assert conv.accel_latency == 2.0 and conv.cpu_latency == 10.0 and conv.size == 64.0
    assert conv.output_cost == 5.0  # (200 + 300) bytes / 100 bytes per ms
    conv_b = g.operator(4)
    assert conv_b.is_backward and conv_b.color_class == conv.color_class and conv_b.accel_latency == 4.0
    assert g.successors(5) == (4,) and g.successors(4) == (3,)
    assert conv_b.output_cost == 1.0  # gradient of node1's output (100 bytes)
    inference = parse_pipedream_profile(PROFILE, training=False)
    assert inference.num_operators == 3 and not inference.is_training


def test_pipedream_profile_errors():
    with pytest.raises(InvalidOperatorGraphError, match="unknown node id 'node9'"):
        parse_pipedream_profile(PROFILE + "\tnode3 -- node9\n")
    with pytest.raises(FormatError, match="lacks 'forward_compute_time='"):
        parse_pipedream_profile("node1 -- Input0 -- nothing here\n")
    with pytest.raises(FormatError, match="missing 'parameter_size'"):
        parse_pipedream_profile("node1 -- X -- forward_compute_time=1, backward_compute_time=1, activation_size=1\n")


def test_real_pipedream_profiles_load(shared_data):
    g = read_pipedream_profile(shared_data / "pipedream-profiles/profiler/image_classification/profiles/resnet50/graph.txt")
    # forward + backward compute of the profile = one-accelerator load of the
    # LayerGraphs resnet50 training workload built from the same profile (462.381)
    assert g.total_accel_latency() == pytest.approx(462.381, abs=1e-3)
    assert g.is_training and g.num_operators == 2 * 177


def test_training_graph_from_forward():
    g = OperatorGraph(operators=[Operator(id=0, accel_latency=1.0, output_cost=2.0),
                                 Operator(id=1, accel_latency=3.0)], edges=[(0, 1)])
    t = training_graph_from_forward(g, backward_factor=2.0)
    assert t.operator(3).accel_latency == 6.0 and t.operator(3).is_backward
    assert t.successors(3) == (2,) and t.operator(3).output_cost == 2.0
    with pytest.raises(InvalidOperatorGraphError, match="already has backward"):
        training_graph_from_forward(t)


def test_split_json_round_trip(tmp_path):
    split = Split(stages=[(Slot(kind="accel", index=0), (1, 2)), (Slot(kind="cpu", index=0), (3,))])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(split.to_json()))
    assert read_split(path).assignment() == split.assignment()


# Files that used to raise Python internals (UnicodeDecodeError, RecursionError)
# or allocate per-device tables for a million devices: one clear line naming the file.
# (id, file name, bytes, reader, error type, fragment)
BAD_FILES = [
    ("UTF-16 JSON", "w.json", json.dumps(doc()).encode("utf-16"), "dnn", FormatError, "the file is UTF-16 text"),
    ("deep JSON", "w.json", b"[" * 100_000 + b"]" * 100_000, "dnn", FormatError, "nested too deeply"),
    ("maxFPGAs 10**6", "w.json", json.dumps(doc(maxFPGAs=10**6)).encode(), "dnn", InvalidOperatorGraphError,
     "'maxFPGAs' must be an integer in 0..1024 (MAX_DEVICES), got 1000000"),
    ("Latin-1 JSON", "w.json", b'{"nodes": [], "name": "' + bytes([0xE9]) + b'"}', "dnn", FormatError,
     "line 1: not UTF-8 text"),
    ("UTF-16 profile", "graph.txt", "node1 -- x -- forward_compute_time=1.0".encode("utf-16"), "pipedream", FormatError,
     "the file is UTF-16 text"),
    ("profile without times", "graph.txt", b"node1 -- x\n", "pipedream", FormatError,
     "node line lacks 'forward_compute_time='"),
]


@pytest.mark.parametrize("name,data,reader,error,fragment", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_files_name_the_file(tmp_path, name, data, reader, error, fragment):
    import time

    path = tmp_path / name
    path.write_bytes(data)
    t0 = time.perf_counter()
    with pytest.raises(error) as info:
        (read_dnn_partitioning if reader == "dnn" else read_pipedream_profile)(path)
    assert time.perf_counter() - t0 < 1.0
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_device_limits_refuse_a_million_devices():
    with pytest.raises(InvalidOperatorGraphError, match="'num_accelerators' must be <= 1024"):
        DeviceLimits(num_accelerators=10**6)
    with pytest.raises(InvalidOperatorGraphError, match="'num_cpus' must be <= 1024"):
        DeviceLimits(num_accelerators=1, num_cpus=10**6)
