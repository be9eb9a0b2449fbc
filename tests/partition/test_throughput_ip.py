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


# ---------------------------------------------------------------- certified bounds against brute force
# The oracle below shares no code with the library: it enumerates every assignment of operators to k
# blocks, keeps those whose block graph is acyclic and within memory, and prices blocks itself.


@st.composite
def small_graphs(draw, max_ops: int = 6):
    n = draw(st.integers(2, max_ops))
    ops = [Operator(id=i, accel_latency=float(draw(st.integers(0, 6))), cpu_latency=1.0,
                    size=float(draw(st.integers(0, 2))), output_cost=float(draw(st.integers(0, 3))))
           for i in range(n)]
    edges = [(i, j) for j in range(n) for i in range(j) if draw(st.integers(0, 2)) == 0]
    return OperatorGraph(operators=ops, edges=edges, name="small")


def _block_costs(graph: OperatorGraph, block: dict[int, int], k: int) -> list[float]:
    succ = {o.id: [] for o in graph.operators}
    for a, b in graph.edges:
        succ[a].append(b)
    cost = [0.0] * k
    for o in graph.operators:
        cost[block[o.id]] += o.accel_latency
    for o in graph.operators:
        members = {block[o.id]} | {block[t] for t in succ[o.id]}
        if len(members) > 1:  # the hyperedge {o} + successors is cut by every block it meets
            for b in members:
                cost[b] += o.output_cost
    return cost


def _acyclic(graph: OperatorGraph, block: dict[int, int], k: int) -> bool:
    arcs = {(block[a], block[b]) for a, b in graph.edges if block[a] != block[b]}
    state = [0] * k

    def visit(b: int) -> bool:
        state[b] = 1
        for x, y in arcs:
            if x == b and (state[y] == 1 or (state[y] == 0 and not visit(y))):
                return False
        state[b] = 2
        return True

    return all(state[b] or visit(b) for b in range(k))


def brute_force_optimum(graph: OperatorGraph, k: int, memory: float | None = None) -> float:
    import itertools

    ids = [o.id for o in graph.operators]
    size = {o.id: o.size for o in graph.operators}
    best = math.inf
    for labels in itertools.product(range(k), repeat=len(ids)):
        block = dict(zip(ids, labels))
        if memory is not None and any(sum(size[i] for i in ids if block[i] == b) > memory for b in range(k)):
            continue
        if _acyclic(graph, block, k):
            best = min(best, max(_block_costs(graph, block, k)))
    return best


def split_value(graph: OperatorGraph, split, k: int) -> float:
    """The split's max-load, priced by the oracle (and checked acyclic)."""
    slots = [slot for slot, _ in split.stages]
    block = {op: slots.index(slot) for slot, ops in split.stages for op in ops}
    assert sorted(block) == sorted(o.id for o in graph.operators)
    assert _acyclic(graph, block, len(slots))
    return max(_block_costs(graph, block, len(slots)))


@settings(max_examples=25, deadline=None)
@given(small_graphs(), st.integers(2, 3))
def test_every_certified_bound_is_below_the_brute_force_optimum(graph, k):
    from schedsearch.partition.throughput_ip import block_bound, certified_bound, subposet_bound

    opt = brute_force_optimum(graph, k)
    tol = 1e-6 * max(1.0, opt)
    simple = simple_bound(graph, k)
    block = block_bound(graph, k)
    assert simple - tol <= block <= opt + tol
    # the sub-poset DP with a tiny ideal family (most units dropped to fluid work) and with all units
    for limit in (3, 6, 10_000):
        assert subposet_bound(graph, k, ideal_limit=limit) <= opt + tol
        assert subposet_bound(graph, k, upper=opt, ideal_limit=limit) <= opt + tol
    cert = certified_bound(graph, k, time_limit_s=10, ideal_limit=4)  # no exact DP: the heuristics and MIP run
    assert cert.lower_bound <= opt + tol
    assert cert.best_value == pytest.approx(split_value(graph, cert.best_split, k), abs=1e-6)
    assert cert.best_value >= opt - tol
    if cert.status is Status.OPTIMAL:
        assert cert.best_value == pytest.approx(opt, rel=REL, abs=1e-6)


@settings(max_examples=15, deadline=None)
@given(small_graphs(max_ops=5), st.integers(2, 3), st.sampled_from([None, 2.0, 3.0]))
def test_the_strengthened_exact_mip_is_sound_and_exact(graph, k, memory):
    from schedsearch.partition.throughput_ip import family_dp_incumbent

    opt = brute_force_optimum(graph, k, memory)
    if math.isinf(opt):
        return
    tol = 1e-6 * max(1.0, opt)
    inc = family_dp_incumbent(graph, k, max_accel_memory=memory, orders=3, rounds=2)
    if inc is not None:
        assert split_value(graph, inc, k) >= opt - tol
    ex = exact_mip(graph, k, incumbent=inc, max_accel_memory=memory, strengthen=True, time_limit_s=20)
    assert ex.lower_bound <= opt + tol
    assert ex.status is Status.OPTIMAL
    assert split_value(graph, ex.best_split, k) == pytest.approx(opt, rel=REL, abs=1e-6)


def test_block_bound_sees_a_transfer_the_simple_bound_misses():
    from schedsearch.partition.throughput_ip import block_bound

    # a heavy head broadcasting 3 units to four light consumers: any block holding it pays the transfer
    # or holds the consumers
    ops = [Operator(id=0, accel_latency=8.0, output_cost=3.0)] + [Operator(id=i, accel_latency=2.0)
                                                                  for i in range(1, 5)]
    g = OperatorGraph(operators=ops, edges=[(0, i) for i in range(1, 5)], name="fan")
    assert simple_bound(g, 4) == pytest.approx(8.0)
    assert block_bound(g, 4) == pytest.approx(11.0, rel=1e-6)  # 8 + 3 beats absorbing any consumer (8 + 2 + 3)
    assert brute_force_optimum(g, 4) >= block_bound(g, 4) - 1e-6


def test_strengthening_keeps_the_contiguous_optimum_with_cpus_and_memory():
    from schedsearch.partition import contiguous_ip

    ops = [Operator(id=i, accel_latency=t, cpu_latency=3 * t, size=1.0, output_cost=1.0)
           for i, t in enumerate([4, 2, 3, 3, 5, 1])]
    g = OperatorGraph(operators=ops, edges=[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5)], name="mixed")
    devices = DeviceLimits(num_accelerators=2, num_cpus=1, max_accel_memory=3.0)
    opt = partition_dp(g, devices).max_load
    plain = contiguous_ip(g, devices, strengthen=False, time_limit_s=20)
    strong = contiguous_ip(g, devices, strengthen=True, time_limit_s=20)
    assert plain.value == pytest.approx(opt) and strong.value == pytest.approx(opt)
    assert strong.status is Status.OPTIMAL and strong.lower_bound <= opt + 1e-6
    assert strong.stats["lower_bound_before_mip"] <= opt + 1e-6


@settings(max_examples=40, deadline=None)
@given(small_graphs(max_ops=5), st.integers(2, 3), st.sampled_from([0.0, 1.0, 2.0, 3.0]))
def test_certified_bound_says_infeasible_exactly_when_no_partition_fits(graph, k, memory):
    """Against the brute force over every assignment: INFEASIBLE at once when no split fits the memory."""
    from schedsearch.partition.throughput_ip import certified_bound

    opt = brute_force_optimum(graph, k, memory)
    cert = certified_bound(graph, k, max_accel_memory=memory, time_limit_s=30)
    if math.isinf(opt):
        assert cert.status is Status.INFEASIBLE
        assert cert.best_split is None and cert.best_value is None and math.isinf(cert.lower_bound)
        assert cert.stats["sources"]["lower"] == "dp"
    else:
        assert cert.status is not Status.INFEASIBLE
        assert cert.lower_bound <= opt + 1e-6 * max(1.0, opt)
        assert cert.best_value >= opt - 1e-6 * max(1.0, opt)
