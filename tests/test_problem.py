"""Problem model: construction, derived views, JSON, and a table of bad inputs."""

from __future__ import annotations

import pytest

from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem


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
