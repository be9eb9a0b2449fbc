"""Archer et al.'s bounds: ordered, valid, and exact where they should be."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ip_strategies import operator_graphs
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition import partition_dp
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph
from schedsearch.partition.throughput_ip import (
    bottleneck_guess_mip,
    exact_mip,
    simple_bound,
    slicegraph_incumbent,
    three_superblock_mip,
)
from schedsearch.result import Status

REL = 1e-4


def accel_only(g: OperatorGraph) -> OperatorGraph:
    """Everything supported on accelerators (MTPP has no CPUs)."""
    import attrs

    return OperatorGraph(operators=[attrs.evolve(o, supported_on_accel=True) for o in g.operators],
                         edges=g.edges, name=g.name)


@settings(max_examples=12)
@given(operator_graphs(min_ops=3, max_ops=7, unsupported=False), st.integers(2, 3))
def test_bounds_are_ordered_and_the_exact_mip_is_the_dp(graph, k):
    graph = accel_only(graph)
    devices = DeviceLimits(num_accelerators=k, num_cpus=0)
    opt = partition_dp(graph, devices, merge_trivial=False).max_load
    ex = exact_mip(graph, k, time_limit_s=20)
    assert ex.status is Status.OPTIMAL
    assert ex.best_value == pytest.approx(opt, rel=REL, abs=1e-6)
    simple = simple_bound(graph, k)
    three = three_superblock_mip(graph, k, time_limit_s=20)
    guess = bottleneck_guess_mip(graph, k, time_limit_s=20)
    tol = 1e-6 + REL * opt
    # every bound is valid ...
    for b in (simple, three.lower_bound, guess.lower_bound, ex.lower_bound):
        assert b <= opt + tol
    # ... and the MIPs never fall below the simple bound; the max over positions dominates the free one
    assert three.lower_bound >= simple - tol
    assert guess.lower_bound >= three.lower_bound - tol


def test_guessing_beats_the_free_superblocks_on_a_chain():
    # a chain of 8 unit operators with communication 1 per edge, k = 4: the best split has
    # blocks of 2 (work 2 + 2 cut edges = up to 4); the simple bound is 2
    ops = [Operator(id=i, accel_latency=1.0, cpu_latency=10.0, output_cost=1.0) for i in range(8)]
    g = OperatorGraph(operators=ops, edges=[(i, i + 1) for i in range(7)], name="chain8")
    k = 4
    inc = slicegraph_incumbent(g, k)
    ex = exact_mip(g, k, incumbent=inc, time_limit_s=20)
    assert ex.best_value == pytest.approx(4.0)  # inner blocks of 2 pay both boundaries
    assert simple_bound(g, k) == pytest.approx(2.0)
    guess = bottleneck_guess_mip(g, k, incumbent=inc, time_limit_s=20)
    three = three_superblock_mip(g, k, incumbent=inc, time_limit_s=20)
    assert three.lower_bound <= guess.lower_bound + 1e-9
    assert guess.lower_bound > simple_bound(g, k)
    assert guess.ratio is not None and 0 < guess.ratio <= 1


def test_bad_k_is_named():
    g = OperatorGraph(operators=[Operator(id=0, accel_latency=1, cpu_latency=1)], edges=[], name="one")
    with pytest.raises(InvalidOperatorGraphError, match="'k' must be an int >= 1"):
        simple_bound(g, 0)
    with pytest.raises(InvalidOperatorGraphError, match="position 3 is not in 0..1"):
        bottleneck_guess_mip(g, 2, positions=[3], incumbent=None)


def test_memory_limit_is_respected_by_the_exact_mip():
    ops = [Operator(id=i, accel_latency=1.0, cpu_latency=1.0, size=2.0) for i in range(4)]
    g = OperatorGraph(operators=ops, edges=[(0, 1), (1, 2), (2, 3)], name="mem")
    ex = exact_mip(g, 2, max_accel_memory=4.0, time_limit_s=10)
    assert ex.best_value == pytest.approx(2.0)
    assert all(sum(2.0 for _ in ops_) <= 4.0 for _, ops_ in ex.best_split.stages)
    assert not math.isinf(ex.lower_bound)
