"""The exact contiguous DP and DPL: reference optima, independent re-evaluation, brute force."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from opgraph_strategies import brute_force_contiguous, device_limits, operator_graphs
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition import evaluate_split, partition_dp, partition_dpl
from schedsearch.partition.contraction import contract
from schedsearch.partition.dp import solve_contracted
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph, Slot

QUICK = ["LayerGraphs/bert24_inference", "LayerGraphs/bert24_training", "LayerGraphs/resnet50_inference",
         "LayerGraphs/resnet50_training", "OperatorGraphs/bert_l-3_inference",
         "OperatorGraphs/bert_l-3_training", "OperatorGraphs/bert_l-6_inference",
         "OperatorGraphs/resnet50_inference", "OperatorGraphs/resnet50_training"]
SLOW = ["LayerGraphs/gnmt_inference", "LayerGraphs/gnmt_training", "OperatorGraphs/bert_l-6_training",
        "OperatorGraphs/bert_l-12_inference", "OperatorGraphs/bert_L-12_training"]
DPL_ALL = QUICK + SLOW + ["LayerGraphs/inceptionv3_inference", "LayerGraphs/inceptionv3_training"]


def same_printed(ours: float, ref: float) -> bool:
    """The reference prints doubles with 6 significant digits (C++ default stream precision)."""
    return float(f"{ours:.6g}") == ref and abs(ours - ref) <= 5e-6 * abs(ref)


def check_result(result, workload):
    """The split is feasible, uses the allowed devices and re-evaluates to the same max-load."""
    cost = evaluate_split(workload.graph, result.split, workload.devices)
    assert cost.violations == ()
    assert cost.max_load == pytest.approx(result.max_load, rel=1e-9)
    assert result.cost.max_load == pytest.approx(result.max_load, rel=1e-9)
    assert sum(1 for s in result.split.slots if s.kind == "accel") <= workload.devices.num_accelerators
    assert sum(1 for s in result.split.slots if s.kind == "cpu") <= workload.devices.num_cpus


@pytest.mark.parametrize("name", QUICK)
def test_dp_optimum_equals_the_reference(name, load_workload, reference):
    w = load_workload(name)
    result = partition_dp(w)
    assert result.optimal
    assert same_printed(result.max_load, reference[name]["dp"]["maxLoad"])
    check_result(result, w)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_dp_optimum_equals_the_reference_large(name, load_workload, reference):
    w = load_workload(name)
    result = partition_dp(w)
    assert same_printed(result.max_load, reference[name]["dp"]["maxLoad"])
    check_result(result, w)


@pytest.mark.slow
def test_inception_v3_inference_is_solved_within_the_reference_bounds(load_workload, reference):
    name = "LayerGraphs/inceptionv3_inference"
    w = load_workload(name)
    result = partition_dp(w)
    # the reference DP ran out of memory; its bounds: [51.0419, 51.5519] (DPL = 51.5519)
    assert 51.0419 - 1e-4 <= result.max_load <= reference[name]["dpl"]["maxLoad"] + 1e-4
    assert result.stats["ideals"] == 36596
    check_result(result, w)


@pytest.mark.parametrize("name", DPL_ALL)
def test_dpl_equals_the_reference(name, load_workload, reference):
    w = load_workload(name)
    result = partition_dpl(w)
    assert same_printed(result.max_load, reference[name]["dpl"]["maxLoad"])
    check_result(result, w)


@pytest.mark.parametrize("name", ["LayerGraphs/resnet50_training", "OperatorGraphs/bert_l-3_inference"])
def test_pruning_does_not_change_the_optimum(name, load_workload):
    w = load_workload(name)
    pruned = partition_dp(w, upper_bound=partition_dpl(w).max_load)
    full = partition_dp(w, upper_bound=math.inf)
    assert pruned.max_load == full.max_load
    assert pruned.stats["pairs"] < full.stats["pairs"]


def test_a_too_low_upper_bound_falls_back_to_the_full_search(load_workload):
    w = load_workload("LayerGraphs/bert24_inference")
    assert partition_dp(w, upper_bound=1.0).max_load == pytest.approx(17.7899, abs=1e-4)


@given(operator_graphs(unsupported=True), device_limits())
def test_dp_equals_brute_force_over_acyclic_assignments(graph, devices):
    best = brute_force_contiguous(graph, devices)
    if math.isinf(best):
        with pytest.raises(InvalidOperatorGraphError, match="no feasible split"):
            partition_dp(graph, devices, merge_trivial=False)
        return
    result = partition_dp(graph, devices, merge_trivial=False)
    assert result.max_load == pytest.approx(best, abs=1e-9)
    cost = evaluate_split(graph, result.split, devices)
    assert cost.feasible and cost.max_load == pytest.approx(best, abs=1e-9)


@settings(max_examples=30)
@given(operator_graphs(unsupported=True), device_limits())
def test_dpl_and_trivial_merging_never_beat_the_dp(graph, devices):
    try:
        exact = partition_dp(graph, devices, merge_trivial=False).max_load
    except InvalidOperatorGraphError:
        return
    for other in (lambda: partition_dpl(graph, devices, merge_trivial=False),
                  lambda: partition_dp(graph, devices)):
        try:
            assert other().max_load >= exact - 1e-9
        except InvalidOperatorGraphError:
            pass


def test_hand_computed_optimum():
    # chain a -> b -> c, accelerator latencies 4, 1, 4, output costs 1 each, two accelerators.
    # {a, b} | {c}: loads 4+1 + comm(b)=1 -> 6 and 4 + 1 -> 5; {a} | {b, c}: 4+1=5, 5+1=6.
    # one device: 9. Optimum 6.
    ops = [Operator(id=i, accel_latency=t, cpu_latency=100.0, output_cost=1.0) for i, t in enumerate((4.0, 1.0, 4.0))]
    g = OperatorGraph(operators=ops, edges=[(0, 1), (1, 2)])
    r = partition_dp(g, DeviceLimits(num_accelerators=2))
    assert r.max_load == 6.0
    # a third accelerator: {a} | {b} | {c} -> 5, 1+2, 5 -> 5
    assert partition_dp(g, DeviceLimits(num_accelerators=3)).max_load == 5.0
    # memory: every operator 2 bytes, limit 3 -> one operator per accelerator, so with two
    # accelerators one operator goes to the CPU (latencies 100, 50, 100): b, max-load 50
    heavy = OperatorGraph(operators=[Operator(id=o.id, accel_latency=o.accel_latency, cpu_latency=cpu,
                                              output_cost=1.0, size=2.0)
                                     for o, cpu in zip(ops, (100.0, 50.0, 100.0))], edges=[(0, 1), (1, 2)])
    r = partition_dp(heavy, DeviceLimits(num_accelerators=2, num_cpus=1, max_accel_memory=3.0))
    assert r.max_load == 50.0
    assert dict(r.split.stages)[Slot(kind="cpu", index=0)] == (1,)
    assert [s.kind for s in r.split.slots] == ["accel", "cpu", "accel"]


def test_empty_devices_are_allowed_and_no_device_fits_is_an_error():
    g = OperatorGraph(operators=[Operator(id=0, accel_latency=1.0, size=10.0, supported_on_accel=False)], edges=[])
    with pytest.raises(InvalidOperatorGraphError, match="no feasible split"):
        partition_dp(g, DeviceLimits(num_accelerators=3))
    r = partition_dp(g, DeviceLimits(num_accelerators=3, num_cpus=2))
    assert r.max_load == 0.0 and len(r.split.stages) == 1


def test_solver_refuses_too_many_ideals():
    # 20 independent operators: 2^20 ideals
    g = OperatorGraph(operators=[Operator(id=i, accel_latency=1.0) for i in range(20)], edges=[])
    with pytest.raises(InvalidOperatorGraphError, match="more than 1000 ideals"):
        solve_contracted(contract(g), DeviceLimits(num_accelerators=2), ideal_limit=1000)
