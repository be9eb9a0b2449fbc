"""The memory semantics, once: the level starts at the initial memory, frees may come first.

The constructor refuses only what no order fits (``Problem.memory_refusal``,
checked against the brute-force oracle in ``test_oracle_campaign.py``), and
``peak_memory`` never reports a peak below the initial memory.
"""

from __future__ import annotations

import pytest

from schedsearch import Block, Cluster, Device, Graph, Problem
from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Overlap
from schedsearch.rewrite import resolved_capacities, with_capacities
from schedsearch.schedule import Schedule, TaskInstance, memory_profile, peak_memory
from schedsearch.testing.oracle import exact_optimum
from schedsearch.validate import validate


def one_device(blocks, edges=(), capacity=None, initial=0, overlaps=(), n=1):
    return Problem(graph=Graph(blocks=blocks, edges=list(edges)), num_microbatches=n,
                   cluster=Cluster(devices=[Device(name="d0", memory=capacity)]),
                   initial_memory={"d0": initial} if initial else {}, overlaps=list(overlaps))


def block(name, memory=0, workspace=0, duration=1):
    return Block(name=name, options=[("d0", duration)], memory=memory, workspace=workspace)


def run(*names):
    """The blocks one after another from time 0, micro-batch 0."""
    return Schedule(tasks=[TaskInstance(block=b, microbatch=0, devices=("d0",), start=i, end=i + 1)
                           for i, b in enumerate(names)])


def test_a_free_before_an_allocation_lets_the_initial_memory_be_the_capacity():
    # initial 2; b1 frees 1, then b0 allocates 1: levels 2, 1, 2
    p = one_device([block("b0", 1), block("b1", -1)], capacity=2, initial=2)
    assert validate(p, run("b1", "b0")) == ()
    assert validate(p, run("b0", "b1"))  # the other order reaches 3
    assert peak_memory(p, run("b1", "b0")) == {"d0": 2}
    assert exact_optimum(p).value == 2


def test_what_no_order_fits_is_refused_with_its_reason():
    with pytest.raises(InvalidProblemError, match="'initial_memory' 2 exceeds its capacity 1"):
        one_device([block("b0", 1), block("b1", -1)], capacity=1, initial=2)
    # the free depends on the allocation: it cannot come first
    with pytest.raises(InvalidProblemError, match="block 'b0': 'memory' \\+ 'workspace' = 1 does not fit .* "
                                                  "frees that may come first \\{'d0': 0\\}"):
        one_device([block("b0", 1), block("b1", -1)], edges=[("b0", "b1")], capacity=2, initial=2)
    # a block's free and its workspace start together: -1 + 2 fits capacity 1, -1 + 3 does not
    assert one_device([block("b0", -1, workspace=2)], capacity=1).memory_refusal() is None
    with pytest.raises(InvalidProblemError, match="'memory' \\+ 'workspace' = 3"):
        one_device([block("b0", -1, workspace=3)], capacity=1)


def test_frees_of_other_micro_batches_and_of_a_group_may_come_first():
    # F allocates 2 and B frees 2 after it; at capacity 1 nothing helps the first F: refused
    with pytest.raises(InvalidProblemError, match="block 'F'"):
        one_device([block("F", 2), block("B", -2)], edges=[("F", "B")], capacity=1, n=2)
    # a block with no edge from F frees first: accepted, and an order fits
    p = one_device([block("F", 2), block("B", -2), block("X", -1)], edges=[("F", "B")], capacity=2, initial=1)
    assert exact_optimum(p).value == 3
    # an edge inside a declared overlap may run as one group: its free is not forced after
    grouped = [Overlap(blocks=("F", "B"), duration=1)]
    assert one_device([block("F", 2), block("B", -2)], edges=[("F", "B")], capacity=0,
                      overlaps=grouped).memory_refusal() is None


def test_the_refusal_is_monotone_and_checks_its_input():
    p = one_device([block("b0", 1), block("b1", -1)], capacity=4, initial=2)
    assert [p.memory_refusal({"d0": c}) is None for c in range(5)] == [False, False, True, True, True]
    assert p.memory_refusal(resolved_capacities(p, 2)) is None
    assert with_capacities(p, 2).capacity("d0") == 2
    with pytest.raises(InvalidProblemError, match="names an unknown device, got 'd9'"):
        p.memory_refusal({"d9": 1})
    with pytest.raises(InvalidProblemError, match="'capacity' must be >= 0, got -1"):
        p.memory_refusal({"d0": -1})
    with pytest.raises(InvalidProblemError, match="'memory' must be >= 0, got -1"):
        resolved_capacities(p, -1)


def test_the_peak_counts_the_initial_memory_under_a_free_at_time_zero():
    p = one_device([block("b0", -1)], initial=1)
    plan = run("b0")
    assert memory_profile(p, plan) == {"d0": [(0, 0)]}  # the level after the events at time 0
    assert peak_memory(p, plan) == {"d0": 1}  # the level started at 1


def test_redundant_overlaps_are_kept_when_the_problem_without_them_fits_no_order():
    # DualPipeV on one device: F0's group with the W1 that frees makes capacity 0 pass the
    # constructor's check; without the groups W1 comes after F0, so the declarations stay
    from schedsearch.placements import dualpipev
    from schedsearch.rewrite import overlaps_redundant, reduced_problem

    p = with_capacities(dualpipev(1, 1), 0)
    assert overlaps_redundant(p) and p.memory_refusal(overlaps=False) is not None
    assert reduced_problem(p) is p
    assert exact_optimum(p).value is None
    assert reduced_problem(dualpipev(1, 1)).overlaps == ()


def test_a_workspace_before_a_free_inside_a_group_keeps_the_declaration():
    # b holds 5 while it runs and c frees 3 after it: as a group the level is 3 + 5 - 3 = 5, flattened
    # b alone reaches 8; the problem without the group fits capacity 5 in no order (x must come first
    # to let y free, and x does not fit), so the declaration is not redundant
    from schedsearch.problem import Overlap
    from schedsearch.rewrite import overlaps_redundant
    from schedsearch.search import min_memory, pareto
    from schedsearch.testing.oracle import exact_front

    p = one_device([block("b", 0, workspace=5), block("c", -3), block("x", 3), block("y", -3)],
                   edges=[("b", "c"), ("x", "y")], capacity=5, initial=3,
                   overlaps=[Overlap(blocks=("b", "c"), duration=2)])
    assert not overlaps_redundant(p)
    assert exact_optimum(p).value == 4 and exact_optimum(p.with_(overlaps=())).value is None
    assert exact_front(p) == ((4, 5),)
    assert [(q.objective, q.peak_memory) for q in pareto(p, time_limit_s=30)] == [(4, 5)]
    walk = min_memory(p, 4, time_limit_s=30)
    assert walk.objective == 5 and walk.lower_bound in (None, 5)
