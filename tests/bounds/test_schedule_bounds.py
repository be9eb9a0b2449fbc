"""lower_bound(problem): never above the proven optimum; tight where it should be."""

from __future__ import annotations

from hypothesis import given, settings

from schedsearch.bounds import analytic_lower_bound, lower_bound, memory_bounds
from schedsearch.placements import vshape
from schedsearch.result import Status
from schedsearch.search import optimal
from schedsearch.testing import overlap_problems, problems


@settings(max_examples=40)
@given(problems(max_devices=3, max_blocks=4, max_microbatches=3, max_tasks=8, max_duration=4,
                releases=False, fixed_orders=False, overrides=False, overlaps=False, max_span=False, directed=False))
def test_bound_never_exceeds_the_proven_optimum(problem):
    bound = lower_bound(problem)
    assert bound.value >= analytic_lower_bound(problem).value
    res = optimal(problem, time_limit_s=20, workers=1)
    if res.status is Status.OPTIMAL:
        assert bound.value <= res.objective
        assert res.lower_bound == res.objective and res.gap == 0


def test_vshape_memory_4_bound_is_57():
    # 4 devices, 16 micro-batches, F = 1, B = 2: (N + D - 1)(F + B) = 57, which is optimal
    assert lower_bound(vshape(4, 16, memory=4)).value == 57


def test_memory_bound_is_a_throughput_limit():
    # memory 1 on d0: one micro-batch at a time between F0's start and B0's start, at least
    # F0 + F1 + B1 = 1 + 1 + 2 = 4 apart, then B0 (2): 4 micro-batches need 4 * 4 + 2 = 18
    p = vshape(2, 4, memory=1)
    assert memory_bounds(p)["d0"] == 18
    bound = lower_bound(p)
    assert bound.tight_part in ("memory d0", "device d0") and bound.value == 18
    # d0's device bound reaches it too: 4 x (1 + 2) of work, 3 idle before its first B0 (a round trip of
    # 5 holding one forward), and after its last F0 only one B0 (2) can remain of the 5 that must follow
    assert analytic_lower_bound(p).parts["device d0"] == 18
    res = optimal(p, time_limit_s=20)
    assert res.status is Status.OPTIMAL and 18 <= res.objective  # 24: d1 holds one micro-batch too


def test_optimal_carries_the_bound_and_the_gap():
    p = vshape(4, 8, memory=2)
    res = optimal(p, time_limit_s=20)
    assert res.lower_bound is not None and res.gap is not None
    assert res.stats["bound_parts"]["memory d0"] == lower_bound(p).parts["memory d0"]


def test_assignment_lp_helps_on_flexible_blocks():
    from schedsearch.problem import Block, Cluster, Device, Graph, Option, Problem

    # four independent blocks, each 2 units on the fast device or 6 on the slow one:
    # min-duration average load says ceil(4 * 2 / 2) = 4; the LP knows the slow device
    # is three times slower: T >= 2 a and T >= 6 (4 - a) give T >= 6
    blocks = [Block(name=f"b{i}", options=[Option(devices=("fast",), duration=2), Option(devices=("slow",), duration=6)])
              for i in range(4)]
    p = Problem(graph=Graph(blocks=blocks), num_microbatches=1,
                cluster=Cluster(devices=[Device(name="fast"), Device(name="slow")]))
    bound = lower_bound(p)
    assert bound.parts["assignment LP"] == 6
    assert analytic_lower_bound(p).value < 6
    assert optimal(p, time_limit_s=10).objective >= 6


@settings(max_examples=25)
@given(overlap_problems())
def test_bound_stays_valid_with_overlapped_groups(problem):
    # a group may run faster than its members one after the other: the bound must know
    bound = lower_bound(problem, lp=True)
    res = optimal(problem, time_limit_s=20, workers=1)
    if res.status is Status.OPTIMAL:
        assert bound.value <= res.objective
