from hypothesis import HealthCheck, assume, given, settings, event
from tests.bounds.test_memory_bounds import capped_v, PLAIN
from schedsearch.bounds.analytic import analytic_lower_bound, device_bounds, memory_tails
from schedsearch.encode import solve as solve_model
from schedsearch.result import Status
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(capped_v())
def test_many(problem):
    result = solve_model(problem, "cpsat", PLAIN)
    assume(result.status is Status.OPTIMAL)
    lb = analytic_lower_bound(problem).value
    event("tight" if lb == result.objective else "loose")
    assert lb <= result.objective
