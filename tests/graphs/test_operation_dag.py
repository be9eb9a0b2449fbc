"""Random operation DAGs and machine clusters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.graphs import DagNode, OperationDag, machine_cluster, random_dag
from schedsearch.problem import Edge


@given(st.integers(1, 80), st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 4), st.one_of(st.none(), st.integers(1, 20)))
def test_degrees_stay_within_the_limits_and_the_seed_fixes_the_graph(n, seed, max_in, max_out, window):
    dag = random_dag(n, seed=seed, max_in=max_in, max_out=max_out, window=window)
    assert len(dag.nodes) == n
    ins, outs = dag.degrees()
    assert ins <= max_in and outs <= max_out
    assert random_dag(n, seed=seed, max_in=max_in, max_out=max_out, window=window) == dag
    for e in dag.edges:
        assert int(e.src[1:]) < int(e.dst[1:])
        if window is not None:
            assert int(e.dst[1:]) - int(e.src[1:]) <= window


def test_values_come_from_their_ranges_and_outputs_are_freed_by_the_last_successor():
    dag = random_dag(50, seed=7, duration=(2, 5), memory=(1, 3), workspace=(0, 1), size=(3, 3), free_outputs=False)
    assert all(2 <= n.duration <= 5 and 1 <= n.memory <= 3 and 0 <= n.workspace <= 1 for n in dag.nodes)
    assert all(e.size == 3 for e in dag.edges)
    freed = random_dag(50, seed=7, duration=(2, 5), memory=(1, 3), workspace=(0, 1), size=(3, 3))
    assert [n.duration for n in freed.nodes] == [n.duration for n in dag.nodes]
    last = {}
    for e in dag.edges:
        last[e.src] = max(last.get(e.src, e.dst), e.dst, key=lambda s: int(s[1:]))
    expected = {n.name: n.memory for n in dag.nodes}
    for src, dst in last.items():
        expected[dst] -= dag.nodes[int(src[1:])].memory
    assert {n.name: n.memory for n in freed.nodes} == expected
    # what stays allocated at the end: the outputs nobody consumes
    sinks = {n.name for n in dag.nodes} - set(last)
    assert sum(n.memory for n in freed.nodes) == sum(dag.nodes[int(s[1:])].memory for s in sinks)


def test_critical_path_and_work_by_hand():
    dag = OperationDag(
        nodes=[DagNode(name="a", duration=2), DagNode(name="b", duration=5), DagNode(name="c", duration=1)],
        edges=[Edge(src="a", dst="c", size=9), Edge(src="b", dst="c")],
    )
    assert dag.total_work == 8 and dag.critical_path() == 6


def test_on_machines_gives_every_operation_every_machine():
    dag = random_dag(10, seed=2)
    p = dag.on_machines(machine_cluster(3, channels=2, directed=True, memory=50))
    assert p.num_microbatches == 1 and p.name == dag.name
    for b, n in zip(p.graph.blocks, dag.nodes):
        assert [(o.devices, o.duration) for o in b.options] == [((f"d{i}",), n.duration) for i in range(3)]
        assert (b.memory, b.workspace) == (n.memory, n.workspace)
    assert p.graph.edges == dag.edges


def test_json_round_trip_and_errors():
    dag = random_dag(12, seed=5)
    assert OperationDag.from_json(dag.to_json()) == dag
    with pytest.raises(FormatError, match="'format' must be 'schedsearch.dag'"):
        OperationDag.from_json('{"nodes": []}')
    with pytest.raises(FormatError, match="not valid JSON"):
        OperationDag.from_json("{")
    with pytest.raises(FormatError, match="'version' 9 is not supported"):
        OperationDag.from_dict({"format": "schedsearch.dag", "version": 9, "nodes": []})
    with pytest.raises(InvalidProblemError, match="operation 'x': 'duration' must be >= 1, got 0"):
        DagNode(name="x", duration=0)
    with pytest.raises(InvalidProblemError, match="must be acyclic"):
        OperationDag(nodes=[DagNode(name="a", duration=1), DagNode(name="b", duration=1)],
                     edges=[Edge(src="a", dst="b"), Edge(src="b", dst="a")])
    with pytest.raises(InvalidProblemError, match="'duration' must have low <= high"):
        random_dag(5, duration=(3, 2))
    with pytest.raises(InvalidProblemError, match="'root_probability' must be in"):
        random_dag(5, root_probability=2)


def test_machine_cluster_channels():
    shared = machine_cluster(3, channels=1)
    assert [c.endpoints for c in shared.channels] == [("d0", "d1"), ("d0", "d2"), ("d1", "d2")]
    assert not any(c.directed for c in shared.channels)
    duplex = machine_cluster(2, channels=2, directed=True, latency=1, time_per_unit=2)
    assert [(c.name, c.endpoints, c.directed) for c in duplex.channels] == [
        ("c0>1.0", ("d0", "d1"), True),
        ("c1>0.0", ("d1", "d0"), True),
    ]
    assert duplex.channels[0].transfer_time(3) == 7
    with pytest.raises(InvalidProblemError, match="'channels' must be even when 'directed'"):
        machine_cluster(2, channels=1, directed=True)
    with pytest.raises(InvalidProblemError, match="'num_machines' must be >= 1"):
        machine_cluster(0)
