"""Property tests over random valid problems (:func:`schedsearch.testing.problems`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedsearch.bounds import analytic_lower_bound
from schedsearch.problem import Problem
from schedsearch.result import Status
from schedsearch.schedule import Schedule, metrics
from schedsearch.search import optimal
from schedsearch.testing import problems
from schedsearch.validate import validate

LIMIT = dict(time_limit_s=20, seed=0, workers=2)

#: the feature set these properties were written for: options, multi-device blocks, memory,
#: transfers on (parallel) undirected channels; makespan only (they compare objectives with it)
PLAIN = dict(max_devices=4, max_blocks=4, max_microbatches=2, max_tasks=8, max_duration=4,
             releases=False, fixed_orders=False, overrides=False, overlaps=False, max_span=False, directed=False)


@given(problems(**PLAIN))
def test_backends_agree_and_every_schedule_validates(problem):
    a = optimal(problem, backend="cpsat", **LIMIT)
    b = optimal(problem, backend="z3", **LIMIT)
    for r in (a, b):
        if r.schedule is not None:
            assert validate(problem, r.schedule) == ()
            assert r.objective == r.schedule.makespan
            if r.lower_bound is not None:
                assert r.lower_bound <= r.objective
    if a.status is Status.OPTIMAL and b.status is Status.OPTIMAL:
        assert a.objective == b.objective
    if Status.INFEASIBLE in (a.status, b.status):
        assert a.status == b.status == Status.INFEASIBLE


@given(problems(**PLAIN))
def test_optimum_is_at_least_the_analytic_bound(problem):
    r = optimal(problem, **LIMIT)
    if r.status is Status.OPTIMAL:
        bound = analytic_lower_bound(problem)
        assert r.objective >= bound.value
        assert r.objective >= bound.parts["critical_path"]
        # the memory peaks the metrics report never exceed the capacities
        peaks = metrics(problem, r.schedule).peak_memory
        for d in problem.cluster.devices:
            if d.memory is not None:
                assert peaks[d.name] <= d.memory


@given(problems(**{**PLAIN, "flexible": False, "max_microbatches": 3, "max_tasks": 9}))
def test_symmetry_breaking_keeps_the_optimum_on_fixed_placements(problem):
    a = optimal(problem, symmetry_breaking=True, **LIMIT)
    b = optimal(problem, symmetry_breaking=False, **LIMIT)
    if a.status is Status.OPTIMAL and b.status is Status.OPTIMAL:
        assert a.objective == b.objective
    else:
        assert a.status == b.status


@given(problems(), st.integers(0, 5))  # every feature: the JSON covers them all
def test_json_round_trips(problem, shift):
    assert Problem.from_json(problem.to_json()) == problem
    r = optimal(problem, **LIMIT)
    if r.schedule is not None:
        s = r.schedule.shifted(shift)
        assert Schedule.from_json(s.to_json()) == s
