"""Warmup and cooldown parts (Tessel, Eq. 5 and 6), truncated and solved.

Fixture: the hand-derived repetend of tests/test_periodic.py (V
on 2 devices, F = 1, B = 2, period 3, offsets F0 = F1 = B1 = 1, B0 = 0).
Warmup = micro-batch 0's F0, F1, B1 (a chain of 1 + 1 + 2 = 4 units);
cooldown after one instance = micro-batch 1's B0 (2 units), starting from
the memory the warmup and one instance leave: 1 on d0 (micro-batch 1's
activation), 0 on d1.
"""

from __future__ import annotations

import pytest

from schedsearch.encode.solve_options import SolveOptions
from schedsearch.periodic import cooldown_keys, warmup_keys
from schedsearch.placements import vshape
from schedsearch.result import Status
from schedsearch.search.repetend_completion import (
    assemble,
    levels_after,
    part_problem,
    solve_part,
    truncated_cooldown,
    truncated_warmup,
)
from schedsearch.validate import validate
from test_periodic import v2_repetend

OPTIONS = SolveOptions(time_limit_s=20, workers=1, seed=0)


def test_part_problem_holds_the_task_instances_with_property_4_1() -> None:
    problem = vshape(2, 4, memory=2)
    rep = v2_repetend(2)  # fold 2: warmup holds micro-batches 0 and 1 of F0
    keys = warmup_keys(rep)
    sub, back = part_problem(problem, keys, {"d0": 0, "d1": 0}, "makespan", "warmup")
    assert sub.num_microbatches == 1
    assert sorted(back.values()) == sorted(keys)
    assert all(len(order) >= 2 for order in sub.fixed_orders)  # copies of a block in micro-batch order
    assert part_problem(problem, [], {}, "makespan", "empty") is None


def test_levels_after_the_warmup_and_one_instance() -> None:
    problem = vshape(2, 4, memory=2)
    rep = v2_repetend()
    assert levels_after(problem, rep, 0) == {"d0": 1, "d1": 0}
    assert levels_after(problem, rep, 3) == {"d0": 1, "d1": 0}  # net 0 per micro-batch


@pytest.mark.parametrize("backend", ["cpsat", "z3"])
def test_solved_parts_are_time_optimal_and_assemble_into_valid_schedules(backend) -> None:
    problem = vshape(2, 4, memory=2)
    rep = v2_repetend()
    status, warm, _ = solve_part(problem, warmup_keys(rep), {"d0": 0, "d1": 0}, objective="makespan",
                                 name="warmup", backend=backend, options=OPTIONS)
    assert status is Status.OPTIMAL and warm.makespan == 4  # F0, F1, B1 chain
    status, cool, _ = solve_part(problem, cooldown_keys(rep), levels_after(problem, rep, 1), objective="makespan",
                                 name="cooldown", backend=backend, options=OPTIONS,
                                 hint=truncated_cooldown(rep, 0))
    assert status is Status.OPTIMAL and cool.makespan == 2
    periodic = assemble(problem, rep, warm, [cool])
    assert periodic.repetend_start == 4
    for n in range(2, 9):
        assert validate(periodic.problem_for(n), periodic.unroll(n)) == ()


def test_a_part_that_cannot_fit_is_infeasible() -> None:
    problem = vshape(2, 4, memory=1)
    rep = v2_repetend()
    # the cooldown would start with 2 units on d0 (entry 1 + one activation): over capacity 1
    status, sched, _ = solve_part(problem, cooldown_keys(rep), {"d0": 2, "d1": 0}, objective="feasibility",
                                  name="cooldown", backend="cpsat", options=OPTIONS)
    assert status is Status.INFEASIBLE and sched is None


def test_truncated_parts_keep_the_steady_state_times() -> None:
    rep = v2_repetend()
    warm, start0 = truncated_warmup(rep)
    # instance 0 starts where micro-batch 0's F0 (phase 0, offset 1) started one period earlier
    assert start0 == 3
    assert {t.key: t.start for t in warm.tasks} == {("F0", 0): 0, ("F1", 0): 1, ("B1", 0): 2}
    cool = truncated_cooldown(rep, start0)
    assert {t.key: t.start for t in cool.tasks} == {("B0", 1): start0 + 3 + 1}
