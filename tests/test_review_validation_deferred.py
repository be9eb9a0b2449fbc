"""Review: the public ``validation_deferred`` context must not let a search return an invalid plan.

Inside it, :func:`schedule_from_orders` returns its schedule unvalidated and leaves the check to the caller.
The portfolio's handcrafted phase still offers every construction's plan as already validated (and skips a
construction only when it raises), so a :func:`solve` called inside the context takes a construction that
breaks a memory capacity as its plan, and may call it OPTIMAL below the true optimum.
"""

from __future__ import annotations

import pytest

from schedsearch import solve, validate
from schedsearch.handcrafted import validation_deferred
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
