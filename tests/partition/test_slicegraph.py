"""SliceGraph: segment costs, segmentation DP, orders, and optimality over all orders."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given

from opgraph_strategies import brute_force_contiguous, device_limits, operator_graphs
from schedsearch.errors import InvalidOperatorGraphError, InvalidOptionsError
from schedsearch.partition import evaluate_split, partition_dp
from schedsearch.partition.contraction import contract
from schedsearch.partition.opgraph import DeviceLimits, Slot
from schedsearch.partition.slicegraph import (
    SegmentCosts,
    brkga,
    kahn_dfs_order,
    partition_slicegraph,
    priority_order,
    slice_order,
)


def all_topological_orders(cg):
    n = cg.num_nodes
    for perm in itertools.permutations(range(n)):
        pos = {v: i for i, v in enumerate(perm)}
        if all(pos[u] < pos[v] for v in range(n) for u in cg.preds[v]):
            yield list(perm)


@given(operator_graphs(max_forward=5, training=False, colocate=False), device_limits())
def test_slicegraph_over_all_orders_equals_brute_force(graph, devices):
    cg = contract(graph, merge_trivial=False)
    best = math.inf
    for order in all_topological_orders(cg):
        sol = slice_order(cg, order, devices)
        if sol is not None:
            best = min(best, sol.max_load)
    brute = brute_force_contiguous(graph, devices)
    assert best == pytest.approx(brute, abs=1e-9) if math.isfinite(brute) else math.isinf(best)
    if math.isfinite(brute):
        assert partition_dp(graph, devices, merge_trivial=False).max_load == pytest.approx(brute, abs=1e-9)


@given(operator_graphs(max_forward=5))
def test_every_segment_cost_matches_the_evaluator(graph):
    cg = contract(graph, merge_trivial=False)
    order = kahn_dfs_order(cg)
    costs = SegmentCosts(cg, order, None)
    n = cg.num_nodes
    inside, outside = Slot(kind="accel", index=0), Slot(kind="accel", index=1)
    for i in range(n):
        for j in range(i + 1, n + 1):
            seg = {op for v in order[i:j] for op in cg.members[v]}
            assign = {op.id: inside if op.id in seg else outside for op in graph.operators}
            load = evaluate_split(graph, assign).load_of(inside)
            assert costs.accel[i, j] == pytest.approx(load, abs=1e-9)
            cpu = sum(graph.operator(op).cpu_latency for op in seg)
            assert costs.cpu[i, j] == pytest.approx(cpu, abs=1e-9)
    assert all(costs.accel[i, i] == 0 for i in range(n + 1))


def test_orders_are_topological_and_checked(load_workload):
    cg = contract(load_workload("LayerGraphs/resnet50_inference").graph)
    rng = random.Random(3)
    for _ in range(5):
        order = priority_order(cg, [rng.random() for _ in range(cg.num_nodes)])
        pos = {v: i for i, v in enumerate(order)}
        assert sorted(order) == list(range(cg.num_nodes))
        assert all(pos[u] < pos[v] for v in range(cg.num_nodes) for u in cg.preds[v])
    with pytest.raises(InvalidOperatorGraphError, match="before its predecessor"):
        SegmentCosts(cg, list(reversed(range(cg.num_nodes))), None)


def test_dfs_order_segmentation_is_the_dpl(load_workload, reference):
    for name in ("LayerGraphs/gnmt_inference", "OperatorGraphs/bert_l-3_inference"):
        r = partition_slicegraph(load_workload(name), search="dfs")
        assert float(f"{r.max_load:.6g}") == reference[name]["dpl"]["maxLoad"]
        assert r.cost.max_load == pytest.approx(r.max_load, rel=1e-9)


def test_brkga_improves_on_gnmt_and_is_reproducible(load_workload, reference):
    w = load_workload("LayerGraphs/gnmt_inference")
    a = partition_slicegraph(w, search="brkga", population=10, generations=5, seed=1)
    b = partition_slicegraph(w, search="brkga", population=10, generations=5, seed=1)
    assert a.max_load == b.max_load and a.split == b.split
    # never worse than the linear order (33.0326), never better than the DP optimum (32.9107)
    assert reference["LayerGraphs/gnmt_inference"]["dp"]["maxLoad"] - 1e-4 <= a.max_load <= 33.0327
    assert a.cost.violations == () and a.cost.max_load == pytest.approx(a.max_load, rel=1e-9)
    assert a.stats["orders_evaluated"] > 10


def test_random_restarts(load_workload):
    w = load_workload("LayerGraphs/resnet50_training")
    r = partition_slicegraph(w, search="random", restarts=5, seed=0)
    assert r.stats["orders_evaluated"] == 6
    assert r.max_load >= partition_dp(w).max_load - 1e-9
    with pytest.raises(InvalidOptionsError, match="partition_slicegraph: 'search' must be one of"):
        partition_slicegraph(w, search="tabu")


def test_brkga_keeps_its_seed_orders():
    from schedsearch.partition.opgraph import Operator, OperatorGraph

    g = OperatorGraph(operators=[Operator(id=i, accel_latency=1.0 + i, output_cost=0.5) for i in range(4)],
                      edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    cg = contract(g, merge_trivial=False)
    best, evaluations = brkga(cg, DeviceLimits(num_accelerators=2), population=4, generations=2,
                              rng=random.Random(0), seed_orders=[kahn_dfs_order(cg)])
    assert evaluations >= 4 and math.isfinite(best.value)
