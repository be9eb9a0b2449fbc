"""Baselines: the incremental tracker agrees with the evaluator; every baseline returns valid splits."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opgraph_strategies import device_limits, operator_graphs
from schedsearch.opgraph import DeviceLimits, Slot
from schedsearch.partition import evaluate_split, partition_dp
from schedsearch.partition.contract import contract
from schedsearch.partition.heuristics import (
    LoadTracker,
    partition_annealing,
    partition_evolutionary,
    partition_greedy,
    partition_heft,
    partition_met,
)


@given(operator_graphs(unsupported=True), device_limits(), st.integers(0, 10_000))
def test_tracker_matches_the_evaluator_after_random_moves(graph, devices, seed):
    cg = contract(graph, merge_trivial=False)
    tr = LoadTracker(cg, devices)
    rng = random.Random(seed)
    slots = [Slot(kind="accel", index=i) for i in range(devices.num_accelerators)] + [
        Slot(kind="cpu", index=i) for i in range(devices.num_cpus)]
    for v in range(cg.num_nodes):
        tr.set(v, rng.randrange(tr.num_devices))
    for _ in range(10):
        tr.set(rng.randrange(cg.num_nodes), rng.randrange(tr.num_devices))
    assign = {op: slots[tr.assign[v]] for v in range(cg.num_nodes) for op in cg.members[v]}
    cost = evaluate_split(graph, assign, devices)
    assert tr.max_load() == pytest.approx(cost.max_load, abs=1e-9)
    for slot, load in cost.loads:
        assert tr.load(slots.index(slot)) == pytest.approx(load, abs=1e-9)
    assert (tr.violations() == 0) == all("colocation" in v for v in cost.violations)


def test_met_is_the_one_accelerator_split(load_workload, reference):
    r = partition_met(load_workload("LayerGraphs/bert24_inference"))
    assert float(f"{r.max_load:.6g}") == reference["LayerGraphs/bert24_inference"]["one_accelerator"]["maxLoad"]


@pytest.mark.parametrize("name", ["LayerGraphs/bert24_training", "OperatorGraphs/bert_l-3_inference"])
def test_baselines_return_valid_splits_no_better_than_the_dp(name, load_workload):
    w = load_workload(name)
    best = partition_dp(w).max_load
    greedy = partition_greedy(w)
    results = [
        greedy,
        partition_heft(w),
        partition_annealing(w, iterations=3000, seed=1),
        partition_evolutionary(w, generations=1000, seed=1),
    ]
    for r in results:
        cost = evaluate_split(w.graph, r.split, w.devices)
        assert cost.max_load == pytest.approx(r.max_load, rel=1e-12)
        assert not [v for v in cost.violations if "devices used" in v or "not assigned" in v]
        if r.method != "heft":
            assert r.stats["acyclic"] and cost.violations == ()
            assert r.max_load >= best - 1e-9
    # SA and the EA start from Greedy and keep their best
    assert results[2].max_load <= greedy.max_load and results[3].max_load <= greedy.max_load
    assert "makespan" in results[1].stats


def test_search_baselines_are_reproducible(load_workload):
    w = load_workload("LayerGraphs/bert24_inference")
    for fn, kw in ((partition_annealing, dict(iterations=500)), (partition_evolutionary, dict(generations=300))):
        a, b = fn(w, seed=7, **kw), fn(w, seed=7, **kw)
        assert a.split == b.split


def test_greedy_respects_memory():
    from schedsearch.opgraph import Operator, OperatorGraph

    g = OperatorGraph(operators=[Operator(id=i, accel_latency=1.0, size=2.0) for i in range(4)],
                      edges=[(0, 1), (1, 2), (2, 3)])
    r = partition_greedy(g, DeviceLimits(num_accelerators=4, max_accel_memory=2.0))
    assert r.cost.violations == () and r.max_load == 1.0
