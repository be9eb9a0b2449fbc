"""Problem model: construction, derived views, JSON, and a table of bad inputs."""

from __future__ import annotations

import pytest

from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Overlap, Problem, Release


def blk(name: str, dev: str = "d0", dur: int = 1, **kw) -> Block:
    return Block(name=name, options=[Option(devices=(dev,), duration=dur)], **kw)


def two_devices(mem: int | None = None, channels=()) -> Cluster:
    return Cluster(devices=[Device(name="d0", memory=mem), Device(name="d1", memory=mem)], channels=channels)


def problem(blocks, edges=(), n=1, cluster=None, **kw) -> Problem:
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=n, cluster=cluster or two_devices(), **kw)


# Each case: (id, builder, error type, message fragment naming entity/field/value)
BAD_INPUTS = [
    ("cycle", lambda: Graph(blocks=[blk("a"), blk("b"), blk("c")], edges=[("a", "b"), ("b", "c"), ("c", "a")]),
     InvalidProblemError, "cycle 'a' -> 'b' -> 'c' -> 'a'"),
    ("self loop", lambda: Edge(src="a", dst="a"), InvalidProblemError, "self-loop"),
    ("edge to unknown block", lambda: Graph(blocks=[blk("a")], edges=[("a", "zz")]),
     InvalidProblemError, "edge 'a' -> 'zz': 'dst' names an unknown block, got 'zz'"),
    ("duplicate block", lambda: Graph(blocks=[blk("a"), blk("a")]), InvalidProblemError, "block 'a': 'name' is a duplicate"),
    ("duplicate edge", lambda: Graph(blocks=[blk("a"), blk("b")], edges=[("a", "b"), ("a", "b")]),
     InvalidProblemError, "is a duplicate edge"),
    ("duration zero", lambda: blk("F3", dur=0), InvalidProblemError, "block 'F3': option 0: 'duration' must be >= 1, got 0"),
    ("duration not int", lambda: blk("F3", dur=1.5), InvalidProblemError, "'duration' must be an integer, got 1.5"),
    ("no options", lambda: Block(name="x", options=[]), InvalidProblemError, "block 'x': 'options'"),
    ("empty block name", lambda: blk(""), InvalidProblemError, "'name' must be a non-empty string"),
    ("negative workspace", lambda: blk("w", workspace=-1), InvalidProblemError, "block 'w': 'workspace' must be >= 0, got -1"),
    ("option repeats device", lambda: Block(name="x", options=[Option(devices=("d0", "d0"), duration=1)]),
     InvalidProblemError, "'devices' must not repeat a device"),
    ("option names missing device", lambda: problem([blk("a", dev="gpu9")]),
     InvalidProblemError, "block 'a': option 0: 'devices' names an unknown device, got 'gpu9'"),
    ("block memory too large", lambda: problem([blk("a", memory=5)], cluster=two_devices(mem=4)),
     InvalidProblemError, "block 'a': 'memory' + 'workspace' = 5 does not fit"),
    ("workspace too large", lambda: problem([blk("a", memory=2, workspace=3)], cluster=two_devices(mem=4)),
     InvalidProblemError, "'memory' + 'workspace' = 5"),
    ("micro-batches zero", lambda: problem([blk("a")], n=0), InvalidProblemError, "'num_microbatches' must be >= 1, got 0"),
    ("channel to unknown device", lambda: Cluster(devices=[Device(name="d0")], channels=[Channel(name="c", endpoints=("d0", "dx"))]),
     InvalidProblemError, "channel 'c': 'endpoints' names an unknown device, got 'dx'"),
    ("channel to itself", lambda: Channel(name="c", endpoints=("d0", "d0")), InvalidProblemError, "two different devices"),
    ("duplicate device", lambda: Cluster(devices=[Device(name="d0"), Device(name="d0")]),
     InvalidProblemError, "device 'd0': 'name' is a duplicate"),
    ("negative capacity", lambda: Device(name="d0", memory=-1), InvalidProblemError, "device 'd0': 'memory' must be >= 0, got -1"),
    ("transfer without channel", lambda: problem([blk("a", "d0"), blk("b", "d1")], edges=[Edge(src="a", dst="b", size=3)]),
     InvalidProblemError, "edge 'a' -> 'b': transfer of 'size' 3 from device 'd0' to device 'd1' needs a channel"),
    ("directed channel wrong way", lambda: problem(
        [blk("a", "d0"), blk("b", "d1")], edges=[Edge(src="a", dst="b", size=1)],
        cluster=two_devices(channels=[Channel(name="c", endpoints=("d1", "d0"), directed=True)])),
     InvalidProblemError, "needs a channel"),
    ("negative transfer size", lambda: Edge(src="a", dst="b", size=-1), InvalidProblemError, "'size' must be >= 0, got -1"),
    ("initial memory over capacity", lambda: problem([blk("a")], cluster=two_devices(mem=2), initial_memory={"d0": 3}),
     InvalidProblemError, "device 'd0': 'initial_memory' 3 exceeds its capacity 2"),
    ("initial memory unknown device", lambda: problem([blk("a")], initial_memory={"gpu": 1}),
     InvalidProblemError, "'initial_memory' names an unknown device, got 'gpu'"),
    ("release of unknown block", lambda: problem([blk("a")], releases=[("zz", 0, 3)]),
     InvalidProblemError, "release: 'block' names an unknown block, got 'zz'"),
    ("release micro-batch out of range", lambda: problem([blk("a")], n=2, releases=[("a", 2, 3)]),
     InvalidProblemError, "'microbatch' must be in 0..1, got 2"),
    ("fixed order repeats", lambda: problem([blk("a")], n=2, fixed_orders=[[("a", 0), ("a", 0)]]),
     InvalidProblemError, "fixed order 0: 'tasks' repeats a task instance"),
    ("override wrong length", lambda: problem([blk("a")], duration_overrides={("a", 0): (1, 2)}),
     InvalidProblemError, "block 'a' (micro-batch 0): 'durations' must give one duration per option (1)"),
    ("unknown objective", lambda: problem([blk("a")], objective="fastest"), InvalidProblemError, "'objective' must be one of"),
]


@pytest.mark.parametrize("build,error,fragment", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_named(build, error, fragment):
    with pytest.raises(error) as info:
        build()
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_multi_device_transfer_uses_lead_devices():
    # a full-shard block on both devices shares a device with anything: no transfer, no channel needed
    shard = Block(name="s", options=[Option(devices=("d0", "d1"), duration=1)])
    p = problem([blk("a", "d0"), shard], edges=[Edge(src="a", dst="s", size=4)])
    assert p.graph.block("s").devices == {"d0", "d1"}


def test_derived_views():
    p = problem([blk("a", "d0", 2), blk("b", "d1", 3)], edges=[("a", "b")], n=3,
                duration_overrides={("b", 1): (5,)}, releases=[("a", 2, 7)])
    assert p.tasks[:2] == (("a", 0), ("b", 0)) and len(p.tasks) == 6
    assert p.durations("b", 1) == (5,) and p.durations("b", 0) == (3,)
    assert p.release_of("a", 2) == 7 and p.release_of("a", 0) == 0
    assert not p.interchangeable_microbatches()
    assert p.graph.topological_order() == ("a", "b")
    assert "2 blocks x 3 micro-batches" in str(p)


def test_json_round_trip_keeps_everything():
    cluster = two_devices(mem=6, channels=[Channel(name="c", endpoints=("d0", "d1"), time_per_unit=2, latency=1)])
    p = problem(
        [Block(name="a", kind="F", options=[(("d0",), 2), (("d1",), 3)], memory=2, workspace=1, stage=0), blk("b", "d1")],
        edges=[Edge(src="a", dst="b", size=2)], n=2, cluster=cluster, initial_memory={"d1": 1},
        releases=[("b", 1, 4)], fixed_orders=[[("a", 1), ("a", 0)]], duration_overrides={("a", 0): (1, 1)}, name="rt",
    )
    q = Problem.from_json(p.to_json())
    assert q == p
    assert q.to_dict() == p.to_dict()


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("[1, 2]", "must be a JSON object"),
        ("{", "not valid JSON"),
        ('{"format": "other"}', "'format' must be 'schedsearch.problem'"),
        ('{"format": "schedsearch.problem", "version": 99}', "'version' 99 is not supported"),
        ('{"format": "schedsearch.problem", "version": 1}', "missing field 'graph'"),
    ],
)
def test_bad_documents(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        Problem.from_json(text)


# --------------------------------------------------------------------------
# Problem documents of the wrong shape: every case names the field and the
# value, and raises the library's own error (FormatError for the structure of
# a document, InvalidProblemError for a value), never a Python internal.
# --------------------------------------------------------------------------


def _document() -> dict:
    """A small problem document using every section (channels, releases, orders, overrides, overlaps)."""
    cluster = two_devices(mem=8, channels=[Channel(name="c", endpoints=("d0", "d1"))])
    p = problem(
        [blk("a", "d0", 2, memory=1), blk("b", "d0", 3, memory=-1), blk("c", "d1", 1)],
        edges=[Edge(src="a", dst="b"), Edge(src="b", dst="c", size=1)], n=2, cluster=cluster,
        initial_memory={"d0": 1}, releases=[("a", 1, 4)], fixed_orders=[[("a", 0), ("a", 1)]],
        duration_overrides={("c", 1): (2,)}, overlaps=[Overlap(blocks=("a", "b"), duration=4, name="ab")],
    )
    return p.to_dict()


def _set(path, value):
    """A mutation setting ``document[path...] = value``."""
    def mutate(d):
        *head, last = path
        for key in head:
            d = d[key]
        d[last] = value
    return mutate


def _delete(path):
    def mutate(d):
        *head, last = path
        for key in head:
            d = d[key]
        del d[last]
    return mutate


# (id, mutation, error type, message fragment)
BAD_DOCUMENTS = [
    # shapes
    ("edges null", _set(("graph", "edges"), None), InvalidProblemError, "graph: 'edges' must be a list of edges, got None"),
    ("edges object", _set(("graph", "edges"), {"src": "a"}), InvalidProblemError, "graph: 'edges' must be a list"),
    ("edge a number", _set(("graph", "edges", 0), 7), InvalidProblemError, "graph: edge 0: must be an object {src, dst, size}"),
    ("edge list of one", _set(("graph", "edges", 0), ["a"]), InvalidProblemError, "graph: edge 0: must be"),
    ("options a string", _set(("graph", "blocks", 0, "options"), "d0"), InvalidProblemError,
     "block 'a': 'options' must be a list of placement options, got 'd0'"),
    ("option a string", _set(("graph", "blocks", 0, "options"), ["d0"]), InvalidProblemError,
     "block 'a': option 0: must be an object {devices, duration} or a [devices, duration] pair, got 'd0'"),
    ("option devices null", _set(("graph", "blocks", 0, "options", 0, "devices"), None), InvalidProblemError,
     "block 'a': option 0: 'devices' must be a list of device names, got None"),
    ("channel a list", _set(("cluster", "channels", 0), ["d0", "d1"]), InvalidProblemError,
     "cluster: channel 0: must be an object {name, endpoints, time_per_unit, latency, directed}, got ['d0', 'd1']"),
    ("channels null", _set(("cluster", "channels"), None), InvalidProblemError, "cluster: 'channels' must be a list"),
    ("channel endpoints a number", _set(("cluster", "channels", 0, "endpoints"), 3), InvalidProblemError,
     "channel 'c': 'endpoints' must be two device names, got 3"),
    ("device a number", _set(("cluster", "devices", 1), 5), InvalidProblemError,
     "cluster: device 1: must be an object {name, memory, speed_class} or a device name, got 5"),
    ("devices a string", _set(("cluster", "devices"), "d0"), InvalidProblemError, "cluster: 'devices' must be a list"),
    ("speed class a list", _set(("cluster", "devices", 0, "speed_class"), [1]), InvalidProblemError,
     "device 'd0': 'speed_class' must be a string or null, got [1]"),
    ("initial memory a list", _set(("initial_memory",), [1, 2]), InvalidProblemError,
     "problem: 'initial_memory' must map device names to amounts, got [1, 2]"),
    ("initial memory null", _set(("initial_memory",), None), InvalidProblemError, "'initial_memory' must map"),
    ("graph a string", _set(("graph",), "g"), InvalidProblemError, "problem: 'graph' must be an object {blocks, edges}, got 'g'"),
    ("cluster null", _set(("cluster",), None), InvalidProblemError, "problem: 'cluster' must be an object"),
    ("blocks null", _set(("graph", "blocks"), None), InvalidProblemError, "graph: 'blocks' must be a list of block objects, got None"),
    ("block a string", _set(("graph", "blocks", 0), "a"), InvalidProblemError,
     "graph: block 0: must be an object {name, kind, options, memory, workspace, stage}, got 'a'"),
    ("releases an object", _set(("releases",), {"a": 1}), InvalidProblemError, "problem: 'releases' must be a list"),
    ("release of two", _set(("releases", 0), ["a", 1]), InvalidProblemError,
     "problem: release 0: must be an object {block, microbatch, time}"),
    ("release block a list", _set(("releases", 0, "block"), ["a"]), InvalidProblemError, "'block' must be a block name, got ['a']"),
    ("fixed orders a string", _set(("fixed_orders",), "a"), InvalidProblemError, "problem: 'fixed_orders' must be a list"),
    ("fixed order pair of three", _set(("fixed_orders", 0, 0), ["a", 0, 1]), InvalidProblemError,
     "fixed order 0: 'tasks' must be [block, micro-batch] pairs, got ['a', 0, 1]"),
    ("fixed order float micro-batch", _set(("fixed_orders", 0, 0), ["a", 1.5]), InvalidProblemError,
     "fixed order 0: 'microbatch' must be in 0..1, got 1.5"),
    ("fixed order bool micro-batch", _set(("fixed_orders", 0, 0), ["a", True]), InvalidProblemError,
     "'microbatch' must be in 0..1, got True"),
    ("override durations a number", _set(("duration_overrides", 0, "durations"), 3), InvalidProblemError,
     "duration override 0: 'durations' must be a list of durations, one per option, got 3"),
    ("overrides null", _set(("duration_overrides",), None), InvalidProblemError, "'duration_overrides' must be a list"),
    ("overlap a number", _set(("overlaps", 0), 1), InvalidProblemError, "problem: overlap 0: must be an object"),
    ("overlap same_microbatch null", _set(("overlaps", 0, "same_microbatch"), None), InvalidProblemError,
     "overlap 'ab': 'same_microbatch' must be a list of lists of member blocks, got None"),
    ("name a number", _set(("name",), 5), InvalidProblemError, "problem: 'name' must be a string, got 5"),
    ("objective a list", _set(("objective",), ["makespan"]), InvalidProblemError, "'objective' must be one of"),
    # unknown fields, at every level
    ("unknown problem field", _set(("microbatches",), 2), FormatError,
     "problem document: unknown field 'microbatches' (known: format, version, name, objective, num_microbatches"),
    ("unknown graph field", _set(("graph", "nodes"), []), FormatError, "graph: unknown field 'nodes' (known: blocks, edges)"),
    ("unknown block field", _set(("graph", "blocks", 0, "memroy"), 2), FormatError,
     "block 'a': unknown field 'memroy' (known: name, kind, options, memory, workspace, stage)"),
    ("unknown option field", _set(("graph", "blocks", 0, "options", 0, "time"), 2), FormatError,
     "block 'a': option 0: unknown field 'time' (known: devices, duration)"),
    ("unknown edge field", _set(("graph", "edges", 1, "bytes"), 2), FormatError,
     "graph: edge 1: unknown field 'bytes' (known: src, dst, size)"),
    ("unknown cluster field", _set(("cluster", "links"), []), FormatError, "cluster: unknown field 'links' (known: devices, channels)"),
    ("unknown device field", _set(("cluster", "devices", 0, "capacity"), 4), FormatError,
     "cluster: device 0: unknown field 'capacity' (known: name, memory, speed_class)"),
    ("unknown channel field", _set(("cluster", "channels", 0, "bandwidth"), 4), FormatError,
     "cluster: channel 0: unknown field 'bandwidth' (known: name, endpoints, time_per_unit, latency, directed)"),
    ("unknown release field", _set(("releases", 0, "at"), 4), FormatError,
     "problem: release 0: unknown field 'at' (known: block, microbatch, time)"),
    ("unknown overlap field", _set(("overlaps", 0, "kind"), "F&B"), FormatError,
     "problem: overlap 0: unknown field 'kind' (known: blocks, duration, name, same_microbatch)"),
    ("unknown override field", _set(("duration_overrides", 0, "mb"), 1), FormatError,
     "problem: duration override 0: unknown field 'mb' (known: block, microbatch, durations)"),
    # missing fields
    ("missing graph", _delete(("graph",)), FormatError, "problem document: missing field 'graph'"),
    ("missing blocks", _delete(("graph", "blocks")), FormatError, "graph: missing field 'blocks'"),
    ("missing block name", _delete(("graph", "blocks", 0, "name")), FormatError, "block: missing field 'name'"),
    ("missing option duration", _delete(("graph", "blocks", 0, "options", 0, "duration")), FormatError,
     "block 'a': option 0: missing field 'duration'"),
    ("missing edge dst", _delete(("graph", "edges", 0, "dst")), FormatError, "graph: edge 0: missing field 'dst'"),
    ("missing devices", _delete(("cluster", "devices")), FormatError, "cluster: missing field 'devices'"),
    ("missing channel endpoints", _delete(("cluster", "channels", 0, "endpoints")), FormatError,
     "cluster: channel 0: missing field 'endpoints'"),
    ("missing release time", _delete(("releases", 0, "time")), FormatError, "problem: release 0: missing field 'time'"),
    # the version is the integer 1 (True == 1 and 1.0 == 1 in Python)
    ("version string", _set(("version",), "1"), FormatError, "'version' '1' is not supported (this library reads the integer 1)"),
    ("version float", _set(("version",), 1.0), FormatError, "'version' 1.0 is not supported"),
    ("version true", _set(("version",), True), FormatError, "'version' True is not supported"),
    # integers the solvers cannot take: each field names the supported range
    ("duration 2**62", _set(("graph", "blocks", 0, "options", 0, "duration"), 2**62), InvalidProblemError,
     "block 'a': option 0: 'duration' must be <= 1099511627776 (MAX_INT = 2**40"),
    ("memory -2**62", _set(("graph", "blocks", 0, "memory"), -2**62), InvalidProblemError,
     "block 'a': 'memory' must be >= -1099511627776 (-2**40"),
    ("workspace 2**62", _set(("graph", "blocks", 0, "workspace"), 2**62), InvalidProblemError,
     "block 'a': 'workspace' must be <= 1099511627776"),
    ("stage 2**62", _set(("graph", "blocks", 0, "stage"), 2**62), InvalidProblemError, "block 'a': 'stage' must be <= 1099511627776"),
    ("size 2**62", _set(("graph", "edges", 1, "size"), 2**62), InvalidProblemError,
     "edge 'b' -> 'c': 'size' must be <= 1099511627776"),
    ("capacity 2**62", _set(("cluster", "devices", 0, "memory"), 2**62), InvalidProblemError,
     "device 'd0': 'memory' must be <= 1099511627776"),
    ("latency 2**62", _set(("cluster", "channels", 0, "latency"), 2**62), InvalidProblemError,
     "channel 'c': 'latency' must be <= 1099511627776"),
    ("time per unit 2**62", _set(("cluster", "channels", 0, "time_per_unit"), 2**62), InvalidProblemError,
     "channel 'c': 'time_per_unit' must be <= 1099511627776"),
    ("release 2**62", _set(("releases", 0, "time"), 2**62), InvalidProblemError,
     "release of block 'a' (micro-batch 1): 'time' must be <= 1099511627776"),
    ("initial memory 2**62", _set(("initial_memory",), {"d0": 2**62}), InvalidProblemError,
     "initial memory of device 'd0': 'amount' must be <= 1099511627776"),
    ("overlap duration 2**62", _set(("overlaps", 0, "duration"), 2**62), InvalidProblemError,
     "overlap 'ab': 'duration' must be <= 1099511627776"),
    ("override 2**62", _set(("duration_overrides", 0, "durations"), [2**62]), InvalidProblemError,
     "block 'c' (micro-batch 1): 'duration' must be <= 1099511627776"),
    ("micro-batches 10**6", _set(("num_microbatches",), 10**6), InvalidProblemError,
     "problem: 'num_microbatches' must be <= 100000 (MAX_MICROBATCHES"),
    ("micro-batches a float", _set(("num_microbatches",), 2.0), InvalidProblemError,
     "problem: 'num_microbatches' must be an integer, got 2.0"),
]


@pytest.mark.parametrize("mutate,error,fragment", [c[1:] for c in BAD_DOCUMENTS], ids=[c[0] for c in BAD_DOCUMENTS])
def test_bad_document_is_named(mutate, error, fragment):
    import json

    document = _document()
    mutate(document)
    with pytest.raises(error) as info:
        Problem.from_json(json.dumps(document))
    assert fragment in str(info.value)
    with pytest.raises(error):  # the same from a dict
        Problem.from_dict(document)


def test_the_document_of_the_table_is_valid():
    import json

    p = Problem.from_json(json.dumps(_document()))
    assert p.overlaps and p.releases and p.fixed_orders and p.duration_overrides and p.cluster.channels
    assert Problem.from_json(p.to_json()) == p


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"format": "schedsearch.problem", "format": "x"}', "the field 'format' appears twice"),
        ('{"version": ' + "1" * 5000 + "}", "cannot be read"),
        ("null", "must be a JSON object, got NoneType"),
    ],
    ids=["100000 nested lists", "duplicate key", "5000-digit integer", "null"],
)
def test_unreadable_documents(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        Problem.from_json(text)


def test_from_json_refuses_non_text():
    with pytest.raises(FormatError, match="must be JSON text"):
        Problem.from_json(42)


# Totals: every value within MAX_INT, but the sum past what CP-SAT can hold.
def test_horizon_and_memory_totals_are_bounded():
    from schedsearch.problem import MAX_INT, MAX_TOTAL

    cluster = two_devices(channels=[Channel(name="c", endpoints=("d0", "d1"), time_per_unit=MAX_INT)])
    with pytest.raises(InvalidProblemError, match=r"the time horizon .* adds up to \d+, more than the supported "
                                                  + str(MAX_TOTAL)):
        problem([blk("a", "d0"), blk("b", "d1")], edges=[Edge(src="a", dst="b", size=MAX_INT)], cluster=cluster)
    with pytest.raises(InvalidProblemError, match="the time horizon"):
        problem([blk(f"b{i}", dur=MAX_INT) for i in range(30)], n=100_000)
    with pytest.raises(InvalidProblemError, match="the memory amounts .* add up to"):
        problem([blk(f"b{i}", memory=MAX_INT) for i in range(30)], n=100_000)
    # at the limit of each value, a small problem is fine
    ok = problem([blk("a", "d0", MAX_INT, memory=MAX_INT)], cluster=two_devices(mem=MAX_INT))
    assert ok.graph.block("a").min_duration == MAX_INT


def test_a_huge_micro_batch_count_fails_at_once():
    import json
    import time

    document = _document()
    document["num_microbatches"] = 10**6
    t0 = time.perf_counter()
    with pytest.raises(InvalidProblemError, match="must be <= 100000"):
        Problem.from_json(json.dumps(document))
    with pytest.raises(InvalidProblemError, match="must be <= 100000"):
        problem([blk("a")], n=10**9)
    assert time.perf_counter() - t0 < 1.0


def test_checks_are_linear_in_the_size_of_the_problem():
    """Many edges, channels and options: the checks look channels up by pair
    (a scan of every channel per edge and option pair was quadratic)."""
    import time

    k = 300
    devices = [Device(name=f"d{i}") for i in range(k)]
    channels = [Channel(name=f"c{i}", endpoints=(f"d{i}", f"d{i + 1}")) for i in range(k - 1)]
    blocks = [Block(name=f"b{i}", options=[((f"d{i}",), 1)]) for i in range(k)]
    edges = [Edge(src=f"b{i}", dst=f"b{i + 1}", size=1) for i in range(k - 1)]
    t0 = time.perf_counter()
    p = Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=100_000,
                cluster=Cluster(devices=devices, channels=channels))
    assert time.perf_counter() - t0 < 2.0
    assert p.cluster.channels_between("d1", "d0")[0].name == "c0"


def test_python_values_of_the_wrong_shape_are_named():
    """The same holds for objects built in Python (the converters keep what they
    cannot convert, for the owner to report by name)."""
    cases = [
        (lambda: Block(name="x", options=None), "block 'x': 'options' must be a list of placement options, got None"),
        (lambda: Graph(blocks=None), "graph: 'blocks' must be a list of blocks, got None"),
        (lambda: Cluster(devices=None), "cluster: 'devices' must be a list of devices, got None"),
        (lambda: problem([blk("a")], initial_memory=5), "'initial_memory' must map device names to amounts, got 5"),
        (lambda: problem([blk("a")], duration_overrides={"a": (1,)}), "'duration_overrides' must be a list"),
        (lambda: problem([blk("a")], fixed_orders=[[("a", "0")]]), "'microbatch' must be in 0..0, got '0'"),
        (lambda: problem([blk("a")], initial_memory=[(["d0"], 1)]), "'initial_memory' names an unknown device, got ['d0']"),
        (lambda: Overlap(blocks=None, duration=2), "overlap: 'blocks' must be a list of block names, got None"),
        (lambda: Release(block=None, microbatch=0, time=1), "'block' must be a block name, got None"),
    ]
    for build, fragment in cases:
        with pytest.raises(InvalidProblemError) as info:
            build()
        assert fragment in str(info.value)
