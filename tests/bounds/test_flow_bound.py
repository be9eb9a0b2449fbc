"""The flow bound (per-rank releases and tails from the neighbouring devices'
throughput, fed to the preemptive one-device bound) against exact optima and
against every plan the library finds, on non-uniform stage times."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schedsearch.bounds.analytic import (
    analytic_lower_bound,
    device_bounds,
    flow_bounds,
    memory_idle,
    preemptive_one_device,
)
from schedsearch.encode import SolveOptions
from schedsearch.encode import solve as solve_model
from schedsearch.placements import chain_pipelines, vshape
from schedsearch.result import Status
from schedsearch.schedule import objective_value
from schedsearch.search.list_scheduling import PIPELINE_RULES, list_plan
from schedsearch.testing.oracle import OracleTooLarge, exact_optimum
from schedsearch.testing.strategies import pipeline_problems
from schedsearch.validate import validate


def brute_preemptive(jobs):
    """max over subsets of (min release + total duration + min tail), by enumeration."""
    best = 0
    for size in range(1, len(jobs) + 1):
        for subset in itertools.combinations(jobs, size):
            best = max(best, min(r for r, _, _ in subset) + sum(p for _, p, _ in subset)
                       + min(q for _, _, q in subset))
    return best


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(1, 5), st.integers(0, 9)), max_size=7))
def test_preemptive_one_device_is_the_subset_maximum(jobs):
    assert preemptive_one_device(jobs) == brute_preemptive(jobs)


@st.composite
def uneven_chains(draw, max_devices=4, max_microbatches=6, split=None):
    """1F1B or zero-bubble placements (one stage per device, or a random mapping) with uneven stage times.

    One stage (drawn) is slow (times 3..8, the others 1..3), so that it throttles its neighbours.
    """
    p = draw(st.integers(2, max_devices))
    microbatches = draw(st.integers(2 if max_microbatches > 1 else 1, max_microbatches))
    mapping = list(range(p)) if draw(st.booleans()) else draw(st.lists(st.integers(0, p - 1), min_size=2,
                                                                       max_size=p + 1))
    n = len(mapping)
    slow = draw(st.integers(0, n - 1))

    def times(low=1):
        return [draw(st.integers(3, 8)) if s == slow else draw(st.integers(low, 3)) for s in range(n)]

    kwargs = {}
    if draw(st.booleans()) if split is None else split:
        kwargs = dict(split_backward=True, input_grad=times(), weight_grad=times())
    return chain_pipelines([mapping], p, microbatches, forward=times(), backward=times(),
                           **kwargs)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pipeline_problems(layouts=["1f1b", "zb", "interleaved", "v", "dualpipe"], max_devices=3,
                         max_microbatches=4, max_duration=5, max_tasks=12))
def test_flow_bound_never_exceeds_the_exact_optimum(problem):
    try:
        truth = exact_optimum(problem, max_tasks=12, node_limit=300_000).value
    except OracleTooLarge:
        assume(False)
    assume(truth is not None)
    assert max(flow_bounds(problem).values()) <= truth
    assert analytic_lower_bound(problem).value <= truth


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(uneven_chains(max_devices=4, max_microbatches=6))
def test_flow_bound_never_exceeds_an_optimum_proven_without_it(problem):
    # CP-SAT on the plain model, told no bound (the analytic bounds, this one included, stay out
    # of its proof): where it proves an optimum, the flow bound is at most that
    result = solve_model(problem, "cpsat", SolveOptions(time_limit_s=10, workers=1, seed=0, redundant=False,
                                                         symmetry_breaking=False))
    assume(result.status is Status.OPTIMAL)
    assert max(flow_bounds(problem).values()) <= result.objective


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(uneven_chains())
def test_flow_bound_is_below_every_plan_found(problem):
    flow = flow_bounds(problem)
    plans = [list_plan(problem, rule) for rule in PIPELINE_RULES]
    plans = [s for s in plans if s is not None]
    assert plans
    for schedule in plans:
        assert not validate(problem, schedule)
        assert max(flow.values()) <= objective_value(schedule, "makespan")
    # it keeps the one-device bound of all a device's tasks (it is one of its subsets)
    idle = memory_idle(problem)
    for d, v in device_bounds(problem).items():
        assert flow[d] >= v - idle[d]


def test_flow_bound_meets_the_optimum_where_a_slow_first_stage_feeds_the_rest():
    # F = 3 on the first stage, 1 elsewhere: the last device gets a forward every 3 units, so the
    # last forward there starts at 3 x 4 + 1 = 13 at the earliest, and 13 + F + 3 backwards = 17;
    # the first device's own bound says 16 (4 x (3 + 1)), the last one's 14
    problem = vshape(3, 4, forward=[3, 1, 1], backward=[1, 1, 1])
    flow = flow_bounds(problem)
    assert flow["d2"] == 17 > device_bounds(problem)["d2"]
    # the optimum, proven by CP-SAT on the plain model told no bound
    result = solve_model(problem, "cpsat", SolveOptions(time_limit_s=30, workers=1, seed=0, redundant=False,
                                                         symmetry_breaking=False))
    assert result.status is Status.OPTIMAL and result.objective == 17 == analytic_lower_bound(problem).value


def test_flow_bound_is_off_with_overlaps():
    from schedsearch.placements import dualpipe

    problem = dualpipe(4, 4, overlap=2)
    assert set(flow_bounds(problem).values()) == {0}
    assert not any(k.startswith("flow") for k in analytic_lower_bound(problem).parts)
