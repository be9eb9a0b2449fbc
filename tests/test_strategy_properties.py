"""One property test over every search strategy, with the shipped test machinery.

Each strategy of :mod:`schedsearch.search` runs on random problems of a
family it accepts (:mod:`schedsearch.testing` strategies) and every result
it returns goes through the same checks (:mod:`schedsearch.testing.checks`):

* the plan is valid and the claimed objective is the plan's, recomputed;
  the status agrees with the plan and the bound is not above the objective
  (``assert_result_consistent``);
* where the problem is small enough for the brute-force oracle: the lower
  bound is not above the optimum (``assert_bound_sound``), an ``OPTIMAL``
  claim is the optimum (``assert_optimal``) and an ``INFEASIBLE`` claim is
  true;
* never worse than the baseline list schedule
  (:func:`schedsearch.search.list_scheduling.list_plan`), given to the
  strategy as its warm start, for the strategies that take one
  (``assert_never_worse``).

To add a strategy (e.g. the unified ``solve`` once it exists), add a
:class:`Strategy` to :data:`STRATEGIES`: a name, the problem family, a
runner returning ``(problem, result)`` claims, and whether it promises to be
never worse than its warm start.

Examples per strategy: the profile's ``max_examples`` (60 in ``ci``, 500 in
``thorough``); the whole test takes 10-20 s in ``ci`` on 2 cores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedsearch.search as search
from schedsearch.problem import Problem
from schedsearch.result import Status
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import Schedule, peak_memory
from schedsearch.search.list_scheduling import list_plan
from schedsearch.testing import (
    OracleTooLarge,
    assert_bound_sound,
    assert_never_worse,
    assert_optimal,
    assert_result_consistent,
    exact_optimum,
    pipeline_problems,
    problems,
)
from schedsearch.testing.checks import CheckFailed
from schedsearch.validate import validate

EXAMPLES = settings().max_examples
LIMIT = dict(time_limit_s=20, seed=0, workers=1)
ORACLE = dict(max_tasks=8, node_limit=300_000)  # "small": what the oracle settles quickly

#: Pipelines a repetend can express: fixed placements, no transfers, no overlapped groups.
REPETEND_LAYOUTS = ("1f1b", "zb", "interleaved", "v", "chimera", "tessel")

#: (problem, result, baseline it was given) triples
Claims = list[tuple[Problem, Any, Schedule | None]]


@dataclass(frozen=True)
class Strategy:
    name: str
    family: Any  # a hypothesis strategy of problems the strategy accepts
    run: Callable[[Problem], Claims]
    never_worse: bool  # takes the baseline as a warm start, so never returns anything worse
    note: str = ""


def baseline(problem: Problem) -> Schedule | None:
    """The library's list schedule (None when memory blocks it or orders contradict edges)."""
    try:
        return list_plan(problem)
    except ValueError:
        return None


def run_optimal(problem: Problem) -> Claims:
    base = baseline(problem)
    return [(problem, search.optimal(problem, warm_start=base, **LIMIT), base)]


def run_repetend(problem: Problem) -> Claims:
    result = search.repetend(problem, fold_time_limit_s=2, completion_time_limit_s=2, **LIMIT)
    return [(problem, result, baseline(problem))]


def run_scale_search(problem: Problem) -> Claims:
    base = baseline(problem)
    return [(problem, search.scale_search(problem, warm_starts=[base] if base else [], **LIMIT), base)]


def run_jobshop(problem: Problem) -> Claims:
    base = baseline(problem)
    return [(problem, search.jobshop(problem, warm_start=base, **LIMIT), base)]


def run_pareto(problem: Problem) -> Claims:
    """Every point of the front, as a claim on the problem at the capacity its step ran under."""
    objectives = ("max_span", "peak_memory") if problem.objective == "max_span" else ("makespan", "peak_memory")
    unbounded = with_capacities(problem, None)
    warm = baseline(unbounded)
    front = search.pareto(problem, objectives, max_points=6, warm_starts=[warm] if warm else [], **LIMIT)
    claims = []
    for point in front:
        step = with_capacities(problem, point.capacity).with_(objective=objectives[0])
        # the point's own figures are its plan's, and its problem is the step's
        assert point.peak_memory == max(peak_memory(step, point.schedule).values())
        assert point.problem == step
        claims.append((step, point, warm))
    return claims


def run_solve(problem: Problem) -> Claims:
    base = baseline(problem)
    return [(problem, search.solve(problem, warm_start=base, **LIMIT), base)]


STRATEGIES = [
    Strategy("optimal", problems(), run_optimal, never_worse=True),
    Strategy("repetend", pipeline_problems(layouts=REPETEND_LAYOUTS, overlaps=False), run_repetend,
             never_worse=False,
             note="takes no warm start and promises nothing against list schedules: on small counts of "
                  "micro-batches its unrolled plan may be longer (interleaved, 2 devices, 2 micro-batches: "
                  "27 against 23)"),
    Strategy("scale_search", pipeline_problems(), run_scale_search, never_worse=True),
    Strategy("jobshop", problems(), run_jobshop, never_worse=True,
             note="plans the makespan whatever the problem's objective (its result says so)"),
    Strategy("pareto", st.one_of(problems(max_tasks=5), pipeline_problems(max_devices=2, max_microbatches=3,
                                                                          max_tasks=12)),
             run_pareto, never_worse=True),
    # the unified entry point (its memory level is checked in tests/search/test_solve.py)
    Strategy("solve", problems(), run_solve, never_worse=True),
]


def check_claim(problem: Problem, result: Any, base: Schedule | None, strategy: Strategy) -> None:
    what = f"{strategy.name} result ({result.status.value})"
    assert_result_consistent(problem, result, what)
    objective = result.objective_name or problem.objective
    try:
        oracle = exact_optimum(problem, objective=objective, **ORACLE)
    except OracleTooLarge:
        oracle = None
    if oracle is not None:
        assert_bound_sound(problem, result, objective=objective, oracle=oracle)
        if result.status is Status.OPTIMAL:
            assert_optimal(problem, result, objective=objective, oracle=oracle)
        if result.status is Status.INFEASIBLE and oracle.value is not None:
            raise CheckFailed(f"{what}: INFEASIBLE, but the oracle has a plan of {objective} {oracle.value}")
    # (a pareto step under a tighter capacity than the baseline's peak owes it nothing)
    if strategy.never_worse and base is not None and not validate(problem, base):
        assert_never_worse(problem, result, base, objective=objective)


def _params() -> list:
    out = []
    for s in STRATEGIES:
        marks = []
        if not hasattr(search, s.name):
            marks.append(pytest.mark.skip(reason=f"schedsearch.search.{s.name} does not exist yet"))
        out.append(pytest.param(s, id=s.name, marks=marks))
    return out


@pytest.mark.parametrize("strategy", _params())
def test_every_strategy_keeps_its_claims(strategy: Strategy):
    @settings(max_examples=EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(strategy.family)
    def check(problem: Problem) -> None:
        for sub, result, base in strategy.run(problem):
            check_claim(sub, result, base, strategy)

    check()
