"""Properties of the repetend search on small random placements.

* the period is at least the work per micro-batch on every device;
* the repetend keeps every steady-state rule (independent checker) and the
  periodic schedule unrolls to a valid schedule for random sizes;
* more memory never gives a longer least fold-1 period (the search over
  fold-1 periods is exact, and a repetend valid under a capacity stays
  valid under a larger one);
* the CP-SAT and Z3 repetend models agree on the least fold-1 period.
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.periodic import check_repetend
from schedsearch.problem import Cluster, Device
from schedsearch.result import Status
from schedsearch.search.repetend_search import period_lower_bound, repetend
from schedsearch.validate import validate
from repetend_strategies import small_placements

FAST = dict(max_fold=1, time_limit_s=20, workers=1, seed=0, completion="truncated", completion_time_limit_s=2)


def with_capacity(problem, capacity):
    devices = [Device(name=d.name, memory=capacity) for d in problem.cluster.devices]
    return problem.with_(cluster=Cluster(devices=devices))


@settings(max_examples=15)
@given(small_placements(), st.data())
def test_period_bound_and_unrolled_schedules_validate(problem, data) -> None:
    result = repetend(problem, **FAST)
    if result.status in (Status.TIMEOUT, Status.INFEASIBLE):
        return
    assert result.status.has_schedule
    assert result.period >= max(period_lower_bound(problem).values())
    periodic = result.periodic
    assert check_repetend(problem, periodic.repetend) == ()
    assert validate(problem, result.schedule) == ()
    for n in data.draw(st.lists(st.integers(periodic.min_microbatches, periodic.min_microbatches + 9),
                                min_size=1, max_size=3)):
        assert validate(periodic.problem_for(n), periodic.unroll(n)) == ()


def least_period(problem) -> float | None:
    """The least fold-1 period (inf when proven infeasible, None when unproven)."""
    result = repetend(problem, **FAST)
    if result.status is Status.INFEASIBLE:
        return float("inf")
    return result.period if result.period_optimal else None


@settings(max_examples=10)
@given(small_placements(memory=False), st.integers(1, 4))
def test_more_memory_never_lengthens_the_period(problem, capacity) -> None:
    a = least_period(with_capacity(problem, capacity))
    b = least_period(with_capacity(problem, capacity + 1))
    if a is None or b is None:
        return  # a period left unproven within the limit proves nothing here
    assert b <= a


@settings(max_examples=8)
@given(small_placements())
def test_backends_agree_on_the_least_period(problem) -> None:
    a = repetend(problem, backend="cpsat", **FAST)
    b = repetend(problem, backend="z3", **FAST)
    if a.period_optimal and b.period_optimal:
        assert a.period == b.period


@settings(max_examples=5)
@given(small_placements(train=False, memory=False))
def test_forward_only_placements(problem) -> None:
    result = repetend(attrs.evolve(problem), **FAST)
    assert result.period == max(period_lower_bound(problem).values())
    assert validate(problem, result.schedule) == ()
