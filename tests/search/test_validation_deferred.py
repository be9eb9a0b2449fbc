"""A search inside ``validation_deferred`` (the planner's: constructions leave the check to their caller) still
returns only valid plans: its pool does not trust a construction's plan there (vshape(2, 4, memory=1): 1F1B
breaks the capacity; before the guard, solve called it OPTIMAL at 15 against the true 24)."""

from __future__ import annotations

import pytest

from schedsearch import solve, validate
from schedsearch.handcrafted.simulate import validation_deferred
from schedsearch.placements import vshape
from schedsearch.result import Status


@pytest.mark.parametrize("deterministic", [True, False])
def test_solve_inside_validation_deferred_returns_a_valid_plan(deterministic):
    problem = vshape(2, 4, memory=1)  # d0 holds one activation at a time: 1F1B (two on d0) does not fit
    with validation_deferred():
        result = solve(problem, time_limit_s=5, deterministic=deterministic, seed=0)
    assert result.schedule is not None
    assert validate(problem, result.schedule) == ()


def test_an_optimal_claim_inside_validation_deferred_is_the_optimum():
    problem = vshape(2, 4, memory=1)
    reference = solve(problem, time_limit_s=5, deterministic=True, seed=0)
    assert reference.status is Status.OPTIMAL
    with validation_deferred():
        result = solve(problem, time_limit_s=5, deterministic=True, seed=0)
    if result.status is Status.OPTIMAL:
        assert result.objective == reference.objective
