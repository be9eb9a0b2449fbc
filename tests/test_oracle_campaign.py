"""Every OPTIMAL and every lower bound against the brute-force oracle.

The oracle (:mod:`schedsearch.testing.oracle`) shares no code with the
encoders, ``encode/structure.py`` or ``bounds/``; the problems
(:func:`schedsearch.testing.strategies.problems`) cover every feature of the
model and their intersections. For each problem: both backends, cold and
warm-started from the oracle's plan, with and without the redundant
constraints; the analytic bound and the best bound; no exception.

Problems per run: 200 in the ``ci`` profile, 5,000 in ``thorough``
(``HYPOTHESIS_PROFILE=thorough``); and the pipelines of the placement
builders up to 16 task instances (1F1B, zero bubble, interleaved, V,
Chimera, DualPipe and DualPipeV with their groups, Tessel's shapes): 100 and
2,000.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, given, settings

from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.bounds.schedule_bounds import lower_bound
from schedsearch.result import Status
from schedsearch.schedule import objective_value
from schedsearch.search import optimal
from schedsearch.testing.oracle import OracleTooLarge, exact_optimum
from schedsearch.testing.strategies import pipeline_problems, problems
from schedsearch.validate import validate

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES = {"thorough": 5000, "dev": 50}.get(PROFILE, 200)
PIPELINE_EXAMPLES = {"thorough": 2000, "dev": 20}.get(PROFILE, 100)
LIMIT = dict(time_limit_s=30, seed=0, workers=1)


def assert_claims_agree(problem, truth, result, what):
    """A result's claims against the true optimum ``truth`` (None = infeasible)."""
    if truth is None:
        assert result.status in (Status.INFEASIBLE, Status.TIMEOUT, Status.UNKNOWN), f"{what}: {result}"
        assert result.schedule is None, what
        return
    assert result.status is not Status.INFEASIBLE, f"{what}: INFEASIBLE, but the oracle has {truth}"
    if result.lower_bound is not None:
        assert result.lower_bound <= truth, f"{what}: bound {result.lower_bound} > optimum {truth}"
    if result.schedule is not None:
        assert not validate(problem, result.schedule), what
        assert result.objective == objective_value(result.schedule, problem.objective), what
        assert result.objective >= truth, f"{what}: objective {result.objective} < optimum {truth}"
    if result.status is Status.OPTIMAL:
        assert result.objective == truth, f"{what}: OPTIMAL {result.objective}, the optimum is {truth}"


def oracle_with_sound_bounds(problem, **limits):
    """The oracle's answer (the example is skipped when it is too large for it), its
    plan checked, and the analytic and best bounds checked against it."""
    try:
        oracle = exact_optimum(problem, **limits)
    except OracleTooLarge:
        assume(False)
    truth = oracle.value
    if oracle.schedule is not None:
        assert not validate(problem, oracle.schedule)
        assert objective_value(oracle.schedule, problem.objective) == truth
    if truth is not None:
        assert objective_lower_bound(problem).value <= truth
        if problem.objective == "makespan":
            assert lower_bound(problem).value <= truth
    return oracle


@settings(max_examples=EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(problems())
def test_every_claim_agrees_with_the_oracle(problem):
    oracle = oracle_with_sound_bounds(problem)
    truth = oracle.value
    for backend in ("cpsat", "z3"):
        result = optimal(problem, backend=backend, **LIMIT)
        assert_claims_agree(problem, truth, result, f"{backend} cold")
        if truth is not None:
            assert result.status is Status.OPTIMAL, f"{backend}: {result} on a tiny problem"
            warm = optimal(problem, backend=backend, warm_start=oracle.schedule, **LIMIT)
            assert_claims_agree(problem, truth, warm, f"{backend} warm")
            assert warm.status is Status.OPTIMAL
    plain = optimal(problem, backend="cpsat", redundant=False, symmetry_breaking=False, **LIMIT)
    assert_claims_agree(problem, truth, plain, "cpsat without pruning")


@settings(max_examples=PIPELINE_EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(pipeline_problems(max_tasks=16, max_microbatches=3))
def test_pipeline_claims_agree_with_the_oracle(problem):
    truth = oracle_with_sound_bounds(problem, max_tasks=16, node_limit=300_000).value
    for backend in ("cpsat", "z3"):
        result = optimal(problem, backend=backend, **LIMIT)
        assert_claims_agree(problem, truth, result, f"{backend} cold")
