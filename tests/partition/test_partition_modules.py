"""Module splitting: modules, boundary families, and the DP across modules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from opgraph_strategies import device_limits, operator_graphs
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition import evaluate_split, partition_dp
from schedsearch.partition.contraction import contract
from schedsearch.partition.ideals import enumerate_ideals
from schedsearch.partition.modules import find_modules, module_boundaries, partition_modules
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph


def diamonds(count: int) -> OperatorGraph:
    """a0 -> (b0, c0) -> a1 -> (b1, c1) -> a2 ...: a chain of diamonds."""
    ops, edges = [], []
    for i in range(count):
        a, b, c = 3 * i, 3 * i + 1, 3 * i + 2
        ops += [Operator(id=a, accel_latency=1.0, output_cost=0.5), Operator(id=b, accel_latency=2.0, output_cost=0.25),
                Operator(id=c, accel_latency=3.0, output_cost=0.25)]
        edges += [(a, b), (a, c), (b, 3 * i + 3), (c, 3 * i + 3)]
    ops.append(Operator(id=3 * count, accel_latency=1.0))
    return OperatorGraph(operators=ops, edges=edges)


def test_single_channel_modules_of_a_diamond_chain():
    g = diamonds(3)
    cg = contract(g, merge_trivial=False)
    mods = find_modules(cg)
    as_ops = [tuple(sorted(op for v in m for op in cg.members[v])) for m in mods]
    # the inner joints a1, a2 are articulation points (one-node modules); the ends are not
    assert as_ops == [(0, 1, 2), (3,), (4, 5), (6,), (7, 8, 9)]
    boundaries, linearised = module_boundaries(cg, mods)
    # here every ideal is a boundary: the DP across modules is exact
    assert sorted(boundaries) == sorted(enumerate_ideals(cg.preds)) and linearised == 0
    devices = DeviceLimits(num_accelerators=3)
    assert partition_modules(g, devices, merge_trivial=False).max_load == partition_dp(
        g, devices, merge_trivial=False).max_load


def test_multi_channel_modules_join_through_few_edges():
    g = diamonds(3)
    cg = contract(g, merge_trivial=False)
    mods = find_modules(cg, channels=2)  # 3-edge-connected components: every node alone here
    assert sorted(len(m) for m in mods) == [1] * cg.num_nodes
    with pytest.raises(InvalidOperatorGraphError, match="'channels' must be >= 1"):
        find_modules(cg, channels=0)


def test_large_modules_are_linearised():
    # 12 independent operators between a source and a sink: 2^12 + 2 ideals in one module
    ops = [Operator(id=i, accel_latency=1.0) for i in range(14)]
    edges = [(0, i) for i in range(1, 13)] + [(i, 13) for i in range(1, 13)]
    cg = contract(OperatorGraph(operators=ops, edges=edges), merge_trivial=False)
    mods = find_modules(cg)
    boundaries, linearised = module_boundaries(cg, mods, module_ideal_limit=100)
    assert linearised == 1 and len(boundaries) == 15


@pytest.mark.parametrize("name", ["LayerGraphs/bert24_training", "LayerGraphs/resnet50_inference",
                                  "OperatorGraphs/bert_l-3_inference"])
def test_modules_reach_the_optimum_on_real_workloads(name, load_workload, reference):
    w = load_workload(name)
    r = partition_modules(w)
    assert float(f"{r.max_load:.6g}") == reference[name]["dp"]["maxLoad"]
    assert r.cost.violations == () and r.cost.max_load == pytest.approx(r.max_load, rel=1e-9)
    # the modules enumerate no more ideals than the whole lattice of the same contraction (under a memory limit
    # the modules keep zero-latency leaves that hold memory apart, so they may count more than the reference's DP)
    whole = enumerate_ideals(contract(w.graph, memory_limited=w.devices.max_accel_memory is not None).preds)
    assert r.stats["modules"] > 1 and r.stats["ideals"] <= len(whole)


@settings(max_examples=30)
@given(operator_graphs(), device_limits())
def test_modules_never_beat_the_dp(graph, devices):
    try:
        exact = partition_dp(graph, devices, merge_trivial=False).max_load
    except InvalidOperatorGraphError:
        return
    for channels in (1, 2):
        r = partition_modules(graph, devices, channels=channels, merge_trivial=False)
        assert r.max_load >= exact - 1e-9
        cost = evaluate_split(graph, r.split, devices)
        assert cost.feasible and cost.max_load == pytest.approx(r.max_load, abs=1e-9)
