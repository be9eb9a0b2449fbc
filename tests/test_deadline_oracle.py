"""Calls cut by their stop, or ended by a gap, judged against exact optima from the oracle of
``tests/bounds/test_memory_area_oracle.py`` (a CP-SAT model of its own).

The stop is counted work on a clock that moves one unit per reading (as in ``tests/test_deadline.py``), so
where it falls is the same on any machine. Whatever the cut: a plan is valid and at least the optimum, the
bound is at most the optimum, OPTIMAL only with the optimum; a ``gap`` call that stops early is FEASIBLE
with its plan within the gap of its bound.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from schedsearch import Block, Cluster, Device, Graph, Problem, placements
from schedsearch.deadline import stopping
from schedsearch.errors import DeadlineExceeded
from schedsearch.options import Deadline
from schedsearch.result import Status
from schedsearch.search.jobshop_search import jobshop
from schedsearch.search.portfolio import solve
from schedsearch.validate import validate

sys.path.insert(0, str(Path(__file__).resolve().parent / "bounds"))
from test_memory_area_oracle import exact_makespan  # noqa: E402

PROBLEMS = [placements.vshape(2, 4, memory=2), placements.vshape(3, 3, forward=[1, 2, 1], backward=[2, 3, 1],
                                                                    memory=2, free_at_end=True),
            placements.chain_pipelines([[0, 1], [1, 0]], 2, 2, memory=3, split_backward=True, input_grad=1,
                                       weight_grad=1),
            # memory serialises the micro-batches, which no bound sees (the blocks on d0 choose their devices)
            Problem(graph=Graph(blocks=[Block(name="a", options=[("d0", 1), (("d0", "d1"), 1)], memory=1),
                                        Block(name="b", options=[("d1", 3)]),
                                        Block(name="c", options=[("d0", 1), (("d0", "d1"), 1)], memory=-1)],
                                edges=[("a", "b"), ("b", "c")]),
                    num_microbatches=4, cluster=Cluster(devices=[Device(name="d0", memory=1), Device(name="d1")]),
                    name="serialised")]


class Reads:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def judge(problem, result, optimum):
    if result.schedule is not None:
        assert not validate(problem, result.schedule)
        assert result.objective >= optimum
    if result.lower_bound is not None:
        assert result.lower_bound <= optimum, f"bound {result.lower_bound} above the optimum {optimum}"
    if result.status is Status.OPTIMAL:
        assert result.objective == optimum


@pytest.mark.parametrize("index", range(len(PROBLEMS)))
def test_cut_calls_claim_nothing_false(index):
    problem = PROBLEMS[index]
    optimum = exact_makespan(problem)
    assert optimum is not None
    for readings in (1, 2, 3, 5, 8, 13, 21, 34, 1e9):
        with stopping(Deadline(readings, clock=Reads()), grace=0.0):
            result = solve(problem, objective="makespan", seed=0, workers=1)
        judge(problem, result, optimum)
        with stopping(Deadline(readings, clock=Reads()), grace=0.0):  # as solve: what it has, not the stop
            result = jobshop(problem, seed=0, workers=1)
        judge(problem, result, optimum)


@pytest.mark.parametrize("index", range(len(PROBLEMS)))
@pytest.mark.parametrize("gap", [0.0, 0.1, 0.5, 1.0])
def test_gap_calls(index, gap):
    problem = PROBLEMS[index]
    optimum = exact_makespan(problem)
    result = solve(problem, objective="makespan", gap=gap, time_limit_s=5, seed=0, workers=1, deterministic=True)
    judge(problem, result, optimum)
    assert result.schedule is not None
    if result.status is Status.FEASIBLE:
        assert result.objective <= (1 + gap) * result.lower_bound + 1e-9
        assert result.gap == pytest.approx((result.objective - result.lower_bound) / result.objective)
        assert result.gap <= gap
    else:
        assert result.status is Status.OPTIMAL and result.objective == result.lower_bound == optimum


def test_a_gap_stop_is_feasible_not_optimal():
    problem = PROBLEMS[-1]
    result = solve(problem, objective="makespan", gap=0.5, time_limit_s=5, seed=0, workers=1, deterministic=True)
    assert exact_makespan(problem) == result.objective
    assert result.status is Status.FEASIBLE and result.lower_bound < result.objective
