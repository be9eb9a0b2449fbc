"""Zero-latency leaves under a memory limit: the exact DP merges them only where no split is lost.

Oracle: the brute force over every assignment of colocation classes to devices whose quotient is acyclic,
priced by the independent evaluator (``opgraph_strategies.brute_force_contiguous``).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opgraph_strategies import brute_force_contiguous, graphs_with_trivial_leaves, memory_limits
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition import evaluate_split, partition_dp
from schedsearch.partition.contraction import contract
from schedsearch.partition.ideals import IdealLimitExceeded, enumerate_ideals
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph

PROOFS = {"relaxed optimum fits", "restricted optimum = relaxed optimum", "leaves apart"}


def check_against_brute_force(graph: OperatorGraph, devices: DeviceLimits) -> str | None:
    """partition_dp with the trivial merge on equals the brute force; returns how the optimum was proven."""
    best = brute_force_contiguous(graph, devices)
    if math.isinf(best):
        with pytest.raises(InvalidOperatorGraphError, match="no feasible split"):
            partition_dp(graph, devices)
        return None
    result = partition_dp(graph, devices)
    assert result.optimal and result.max_load == pytest.approx(best, abs=1e-9)
    cost = evaluate_split(graph, result.split, devices)
    assert cost.feasible and cost.max_load == pytest.approx(best, abs=1e-9)
    proof = result.stats.get("leaf_memory")
    assert proof is None or proof in PROOFS
    return proof


@given(st.data())
def test_dp_with_trivial_leaves_equals_brute_force_under_a_memory_limit(data):
    graph = data.draw(graphs_with_trivial_leaves())
    devices = data.draw(memory_limits(graph))
    check_against_brute_force(graph, devices)


def chain_with_leaf(leaf_size: float, memory: float, *, leaf_first: bool = False) -> tuple[OperatorGraph, DeviceLimits]:
    """a -> b -> c (latencies 3, 3, 3, output cost 1 each) and a zero-latency leaf on b."""
    ops = [Operator(id=i, accel_latency=3.0, output_cost=1.0, size=1.0) for i in range(3)]
    ops.append(Operator(id=3, accel_latency=0.0, output_cost=1.0, size=leaf_size))
    edges = [(0, 1), (1, 2), (3, 1) if leaf_first else (1, 3)]
    return OperatorGraph(operators=ops, edges=edges, name="chain"), DeviceLimits(num_accelerators=3, max_accel_memory=memory)


@pytest.mark.parametrize("leaf_first", [False, True])
def test_each_proof_of_the_optimum_with_a_leaf_that_holds_memory(leaf_first):
    # room for the leaf beside b: the relaxed optimum ({a} | {b, leaf} | {c}, max-load 3 + 2) fits
    graph, devices = chain_with_leaf(2.0, 3.0, leaf_first=leaf_first)
    assert check_against_brute_force(graph, devices) == "relaxed optimum fits"
    assert partition_dp(graph, devices).stats["ideals"] == 4  # the merged chain's 4 ideals
    # no room beside b, but one more device takes the leaf alone: only the leaves-apart DP finds it
    graph, devices = chain_with_leaf(2.0, 2.0, leaf_first=leaf_first)
    devices = DeviceLimits(num_accelerators=4, max_accel_memory=2.0)
    assert check_against_brute_force(graph, devices) == "leaves apart"


def test_an_optimum_tied_between_a_split_that_fits_and_one_that_does_not_needs_no_leaves_apart():
    # a (accelerator 1, CPU 1, 2 bytes) -> leaf (3 bytes); one accelerator of 3 bytes, one CPU. Relaxed, a on the
    # accelerator and a on the CPU tie at 1; only the CPU split fits with the leaf: the restricted DP proves 1
    graph = OperatorGraph(operators=[Operator(id=0, accel_latency=1.0, cpu_latency=1.0, output_cost=1.0, size=2.0),
                                     Operator(id=1, accel_latency=0.0, output_cost=2.0, size=3.0)],
                          edges=[(0, 1)], name="tie")
    devices = DeviceLimits(num_accelerators=1, num_cpus=1, max_accel_memory=3.0)
    # which of the tied splits the relaxed DP returns is its own choice; either way no leaf stays apart
    assert check_against_brute_force(graph, devices) in {"relaxed optimum fits", "restricted optimum = relaxed optimum"}


def test_the_ideal_limit_error_names_both_bounds():
    # the counterexample of test_partition_ip: merged, no split fits; kept apart, 8 is the optimum
    lat, out, size = [5, 2, 5, 4, 0, 0], [2, 2, 1, 0, 1, 1], [3, 3, 3, 2, 3, 2]
    graph = OperatorGraph(operators=[Operator(id=i, accel_latency=float(lat[i]), output_cost=float(out[i]),
                                              size=float(size[i])) for i in range(6)],
                          edges=[(0, 5), (1, 2), (2, 3), (2, 4)], name="wide")
    devices = DeviceLimits(num_accelerators=3, max_accel_memory=8.0)
    assert partition_dp(graph, devices).stats["leaf_memory"] == "leaves apart"
    merged_ideals = len(enumerate_ideals(contract(graph).preds))
    with pytest.raises(IdealLimitExceeded, match=r"'wide'.*at least 8 .*at most 9"):
        partition_dp(graph, devices, ideal_limit=merged_ideals)


def test_a_leaf_unsupported_on_accelerators_is_not_merged_into_a_neighbour_that_needs_one():
    # a (accelerator 4, CPU 12) -> leaf (no work, CPU only): the leaf goes to the CPU, a stays on the accelerator
    graph = OperatorGraph(operators=[Operator(id=0, accel_latency=4.0, cpu_latency=12.0, output_cost=3.0),
                                     Operator(id=1, accel_latency=0.0, cpu_latency=0.0, supported_on_accel=False)],
                          edges=[(0, 1)], name="cpu-leaf")
    devices = DeviceLimits(num_accelerators=1, num_cpus=1)
    assert contract(graph).num_nodes == 2
    assert partition_dp(graph, devices).max_load == brute_force_contiguous(graph, devices) == 7.0
    # a neighbour that is CPU-only too takes the leaf
    both = OperatorGraph(operators=[Operator(id=0, accel_latency=4.0, cpu_latency=12.0, supported_on_accel=False),
                                    Operator(id=1, accel_latency=0.0, cpu_latency=0.0, supported_on_accel=False)],
                         edges=[(0, 1)])
    assert contract(both).num_nodes == 1


@given(graphs_with_trivial_leaves())
def test_the_relaxed_contraction_differs_only_in_the_leaves_memory(graph):
    counted, relaxed = contract(graph), contract(graph, count_leaf_memory=False)
    assert relaxed.members == counted.members and relaxed.preds == counted.preds
    assert relaxed.hyperedges == counted.hyperedges and relaxed.accel_ok == counted.accel_ok
    assert all(r <= c for r, c in zip(relaxed.size, counted.size))
    assert sum(counted.size) == sum(op.size for op in graph.operators)  # small integers: exact
    # memory is left out exactly where a merged leaf holds some, i.e. where the kept-apart contraction differs
    apart = contract(graph, memory_limited=True)
    assert (relaxed.size != counted.size) == (apart.num_nodes > counted.num_nodes)


def test_bert24_training_counts_the_reference_ideals_under_its_memory_limit(load_workload, reference):
    name = "LayerGraphs/bert24_training"
    w = load_workload(name)
    assert w.devices.max_accel_memory is not None
    result = partition_dp(w)
    assert result.stats["ideals"] == reference[name]["dp"]["ideals"]
    assert result.stats["leaf_memory"] == "relaxed optimum fits"
    assert float(f"{result.max_load:.6g}") == reference[name]["dp"]["maxLoad"] and result.cost.violations == ()


@pytest.mark.slow
def test_gnmt_inference_is_proven_at_the_reference_optimum_within_the_default_ideal_limit(load_workload, reference):
    name = "LayerGraphs/gnmt_inference"
    w = load_workload(name)
    result = partition_dp(w)
    assert result.optimal and result.stats["ideals"] == reference[name]["dp"]["ideals"]
    assert result.max_load == pytest.approx(reference[name]["dp"]["maxLoad"], abs=1e-4)
    assert result.cost.violations == () and result.cost.max_load == pytest.approx(result.max_load, rel=1e-9)
