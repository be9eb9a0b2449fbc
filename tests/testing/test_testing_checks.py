"""schedsearch.testing checks: readable failures, the oracle's verdicts, bounds, baselines."""

from __future__ import annotations

import attrs
import pytest

from schedsearch.placements import vshape
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance
from schedsearch.search import optimal
from schedsearch.testing import (
    CheckFailed,
    OracleTooLarge,
    assert_bound_sound,
    assert_never_worse,
    assert_optimal,
    assert_result_consistent,
    assert_valid,
    exact_optimum,
    serial_schedule,
)
from schedsearch.testing import checks


def two_blocks(capacity: int | None = None) -> Problem:
    blocks = [Block(name="f", options=[Option(devices=("d0",), duration=1)], memory=1),
              Block(name="b", options=[Option(devices=("d0",), duration=2)], memory=-1)]
    return Problem(graph=Graph(blocks=blocks, edges=[Edge(src="f", dst="b")]), num_microbatches=2,
                   cluster=Cluster(devices=[Device(name="d0", memory=capacity)]), name="fb")


def plan(*items: tuple[str, int, int, int]) -> Schedule:
    return Schedule(tasks=[TaskInstance(block=b, microbatch=m, devices=("d0",), start=s, end=e) for b, m, s, e in items])


GREEDY = plan(("f", 0, 0, 1), ("f", 1, 1, 2), ("b", 0, 2, 4), ("b", 1, 4, 6))  # makespan 6, peak 2
SLOW = plan(("f", 0, 0, 1), ("b", 0, 1, 3), ("f", 1, 4, 5), ("b", 1, 5, 7))  # makespan 7, peak 1


def test_assert_valid_returns_the_plan_or_a_readable_report():
    assert assert_valid(two_blocks(), GREEDY) is GREEDY
    with pytest.raises(CheckFailed) as info:
        assert_valid(two_blocks(capacity=1), GREEDY, "my plan")
    text = str(info.value)
    assert text.startswith("my plan breaks 1 rule(s) of problem 'fb': 2 blocks x 2 micro-batches on 1 device(s)")
    assert "capacities {'d0': 1}" in text and "kinds: memory x1" in text
    assert "[memory] device 'd0': memory level 2 exceeds capacity 1" in text
    assert "d0: f/0[0,1) f/1[1,2) b/0[2,4) b/1[4,6)" in text
    assert [v.kind for v in info.value.violations] == ["memory"]
    assert isinstance(info.value, AssertionError)  # pytest and hypothesis treat it as a failure
    with pytest.raises(CheckFailed, match="there is no plan"):
        assert_valid(two_blocks(), None)


def test_assert_optimal_against_the_oracle():
    p = two_blocks()
    oracle = assert_optimal(p, GREEDY)
    assert oracle.value == 6
    with pytest.raises(CheckFailed, match="makespan 7 is not optimal .* the optimum is 6"):
        assert_optimal(p, SLOW)
    with pytest.raises(CheckFailed, match="no plan, but the optimal makespan .* is 6"):
        assert_optimal(p, None)
    assert assert_optimal(p, optimal(p, time_limit_s=10)).value == 6
    # an infeasible problem: "no plan" is the right answer
    infeasible = p.with_(fixed_orders=[[("b", 0), ("f", 0)]])
    assert assert_optimal(infeasible, None).value is None
    with pytest.raises(OracleTooLarge):
        assert_optimal(vshape(4, 8), None)


def test_assert_optimal_checks_the_claimed_objective():
    p = two_blocks()
    honest = SearchResult(status=Status.OPTIMAL, schedule=GREEDY, objective=6, lower_bound=6)
    assert_optimal(p, honest)
    lying = attrs.evolve(honest, objective=5, lower_bound=5)
    with pytest.raises(CheckFailed, match="claims makespan 5, but its plan has 6"):
        assert_optimal(p, lying)


def test_assert_bound_sound():
    p = two_blocks()
    assert assert_bound_sound(p, 6) == 6
    assert assert_bound_sound(p, None) == 6
    with pytest.raises(CheckFailed, match="lower bound 7 is above the optimal makespan 6"):
        assert_bound_sound(p, 7)
    with pytest.raises(CheckFailed, match="lower bound 7 is above the makespan 6 of a valid plan"):
        assert_bound_sound(p, SearchResult(status=Status.TIMEOUT, lower_bound=7), schedules=[GREEDY])
    # beyond the oracle: the plans alone decide, and without plans the oracle's limit is raised
    big = vshape(4, 8)
    known = serial_schedule(big)
    assert assert_bound_sound(big, 1, schedules=[known]) is None
    with pytest.raises(CheckFailed):
        assert_bound_sound(big, known.makespan + 1, schedules=[known])
    with pytest.raises(OracleTooLarge):
        assert_bound_sound(big, 1)


def test_assert_never_worse():
    p = two_blocks()
    assert_never_worse(p, GREEDY, SLOW)
    assert_never_worse(p, GREEDY, None)
    assert_never_worse(p, None, None)
    with pytest.raises(CheckFailed, match="makespan 7 is worse than the baseline's 6"):
        assert_never_worse(p, SLOW, GREEDY)
    with pytest.raises(CheckFailed, match="no plan, but the baseline has one"):
        assert_never_worse(p, None, GREEDY)
    with pytest.raises(CheckFailed, match="baseline breaks"):
        assert_never_worse(two_blocks(capacity=1), SLOW, GREEDY)
    # the problem's objective decides: spans of a plan that starts late
    late = plan(("f", 0, 3, 4), ("f", 1, 4, 5), ("b", 0, 5, 7), ("b", 1, 7, 9))
    assert_never_worse(p.with_(objective="max_span"), late, GREEDY)
    with pytest.raises(CheckFailed):
        assert_never_worse(p, late, GREEDY)


def test_assert_result_consistent():
    p = two_blocks()
    assert_result_consistent(p, optimal(p, time_limit_s=10))
    assert_result_consistent(p, SearchResult(status=Status.INFEASIBLE))
    with pytest.raises(CheckFailed, match="claims makespan 5, but its plan has 6"):
        assert_result_consistent(p, SearchResult(status=Status.FEASIBLE, schedule=GREEDY, objective=5))
    with pytest.raises(CheckFailed, match="lower bound 7 above its own plan"):
        assert_result_consistent(p, SearchResult(status=Status.FEASIBLE, schedule=GREEDY, objective=6,
                                                 lower_bound=7))
    with pytest.raises(CheckFailed, match="status FEASIBLE but no plan"):
        assert_result_consistent(p, SearchResult(status=Status.FEASIBLE))
    with pytest.raises(CheckFailed, match="breaks"):
        assert_result_consistent(two_blocks(capacity=1),
                                 SearchResult(status=Status.FEASIBLE, schedule=GREEDY, objective=6))


def test_an_invalid_oracle_plan_is_reported_as_an_oracle_bug(monkeypatch):
    p = two_blocks()
    wrong = attrs.evolve(exact_optimum(p), schedule=plan(("f", 0, 0, 1)), value=1)
    with pytest.raises(CheckFailed, match="oracle's plan is invalid .* not of the code under test"):
        assert_bound_sound(p, 1, oracle=wrong)
    with pytest.raises(CheckFailed, match="oracle's plan is invalid"):
        assert_optimal(p, GREEDY, oracle=wrong)


def test_describe_schedule_lists_devices_and_channels():
    text = checks.describe_schedule(GREEDY, ["d0", "d1"])
    assert text.splitlines() == ["    d0: f/0[0,1) f/1[1,2) b/0[2,4) b/1[4,6)", "    d1: (idle)"]
