"""The repetend search and completion, end to end.

Reference figures (see the project's reference results): the V-shape with
F = 1, B = 2 on 4 devices and memory 4 has the 1F1B optimum (N + 3) * 3
(33 for N = 8); with Tessel's conventions (B = 3, 4 devices, memory 4) the
steady state reaches the work bound 4 and 16 micro-batches take at most 76
(the optimum). Tessel's shapes reach their work bound: X 8, K 6, M 6, NN 8.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.errors import UnsupportedFeatureError
from schedsearch.periodic import check_repetend
from schedsearch.placements import chain_pipelines, tessel_shape, vshape
from schedsearch.result import Status
from schedsearch.schedule import peak_memory
from schedsearch.search.repetend_search import memory_rate_bound, period_lower_bound, repetend
from schedsearch.validate import validate

LIMIT = dict(time_limit_s=60, workers=2, seed=0)


def test_vshape_reaches_the_1f1b_optimum() -> None:
    problem = vshape(4, 8, memory=4)
    result = repetend(problem, **LIMIT)
    assert result.status is Status.OPTIMAL  # meets the analytic bound
    assert (result.period, result.fold, result.objective) == (3, 1, 33)
    assert result.period_optimal and result.rate_lower_bound == 3
    assert validate(problem, result.schedule) == ()
    assert result.strategy == "repetend" and result.backend == "cpsat"


@pytest.mark.parametrize(
    "shape, memory, period",
    [("V", 4, 4), ("X", 4, 8), ("K", 6, 6), ("M", 6, 6), ("NN", 6, 8)],
)
def test_tessel_shapes_reach_their_work_bound(shape, memory, period) -> None:
    problem = tessel_shape(shape, 4, 16, memory=memory)
    result = repetend(problem, **LIMIT)
    assert result.period == period == max(period_lower_bound(problem).values())
    assert result.fold == 1 and result.period_optimal
    assert result.periodic.repetend_bubble() == 0
    assert validate(problem, result.schedule) == ()
    assert max(peak_memory(problem, result.schedule).values()) <= memory
    if shape == "V":
        assert result.objective <= 76  # the optimum; Tessel's own code gives 85


def test_z3_backend_gives_the_same_period() -> None:
    problem = tessel_shape("V", 4, 12, memory=4)
    result = repetend(problem, backend="z3", **LIMIT)
    assert result.backend == "z3" and result.period == 4
    assert validate(problem, result.schedule) == ()


@pytest.mark.parametrize("completion", ["truncated", "solved", "best"])
def test_every_completion_validates_and_best_is_no_worse(completion) -> None:
    problem = tessel_shape("X", 4, 10, memory=4)
    # deterministic: "best" is no worse than "solved" only when both completions search equally far, which a
    # wall-clock limit does not guarantee on a loaded machine
    best = repetend(problem, deterministic=True, **LIMIT)
    result = repetend(problem, completion=completion, deterministic=True, **LIMIT)
    assert validate(problem, result.schedule) == ()
    assert best.objective <= result.objective
    assert result.stats["completion"].startswith("truncated" if completion == "truncated" else ("solved" if completion == "solved" else ""))


def test_memory_limited_pipeline_uses_a_larger_period() -> None:
    # capacity 1 on 2 devices: one micro-batch at a time on d0, period 6 (see test_modulo)
    problem = vshape(2, 6, memory=1)
    result = repetend(problem, max_fold=1, **LIMIT)
    assert result.period == 6 and result.period_optimal
    assert validate(problem, result.schedule) == ()


def test_inference_forward_only_placements() -> None:
    problem = vshape(4, 8, backward=None)  # forward blocks keep +1, no capacity
    result = repetend(problem, **LIMIT)
    assert result.period == 1 and result.objective == 8 + 3  # one forward per unit, pipeline fill 3
    assert validate(problem, result.schedule) == ()
    freed = vshape(4, 8, backward=None, forward_memory=0, memory=1)
    assert repetend(freed, **LIMIT).period == 1
    interleaved = chain_pipelines([[0, 1, 2, 3, 0, 1, 2, 3]], 4, 8, backward=None)
    result = repetend(interleaved, **LIMIT)
    assert result.period == 2 and validate(interleaved, result.schedule) == ()  # two forward chunks per device


def test_memory_growth_and_transfers_are_refused_with_the_alternative() -> None:
    with pytest.raises(UnsupportedFeatureError, match="use optimal"):
        repetend(vshape(4, 8, backward=None, memory=4))
    with pytest.raises(ValueError, match="'completion'"):
        repetend(vshape(2, 4), completion="quick")
    with pytest.raises(ValueError, match="'max_fold'"):
        repetend(vshape(2, 4), max_fold=0)


def test_no_period_up_to_the_limit_is_infeasible() -> None:
    result = repetend(vshape(2, 4), max_period=2, **LIMIT)  # work 3 > 2
    assert result.status is Status.INFEASIBLE and result.schedule is None


def test_memory_rate_bound() -> None:
    # interleaved on 4 devices, capacity 4: d0 holds stage 0 (life >= 8 F + 7 B of 2 = 22) and
    # stage 4 (life >= 4 + 3 * 2 = 10): 32 / 4 = 8 per micro-batch
    problem = chain_pipelines([[0, 1, 2, 3, 0, 1, 2, 3]], 4, 8, memory=4)
    assert memory_rate_bound(problem) == 8
    assert memory_rate_bound(vshape(4, 8)) == 0


def test_small_problem_repetend_is_limited_by_its_micro_batches() -> None:
    problem = tessel_shape("V", 4, 3, memory=4)  # fewer micro-batches than the best repetend spans
    result = repetend(problem, **LIMIT)
    assert result.periodic.min_microbatches <= 3
    assert validate(problem, result.schedule) == ()


def test_unrolling_to_1024_micro_batches_is_fast_and_valid() -> None:
    result = repetend(tessel_shape("V", 4, 16, memory=4), **LIMIT)
    t0 = time.perf_counter()
    schedule = result.periodic.unroll(1024)
    elapsed = time.perf_counter() - t0
    assert len(schedule.tasks) == 8 * 1024
    assert elapsed < 5.0  # the benchmark measures it (well under 1 s); loose here for shared machines
    assert schedule.makespan == 4 * 1024 + 12  # period 4 per micro-batch, fill and drain 12
    assert validate(result.periodic.problem_for(1024), schedule) == ()
    assert check_repetend(result.periodic.problem, result.periodic.repetend) == ()


def test_z3_as_prover_settles_what_the_quick_slice_leaves_open() -> None:
    # interleaved, memory 4: fold-1 periods 9 and 10 are infeasible (refuted by Z3 in well under a second),
    # and the least rate is 10 per micro-batch, reached by a fold-2 repetend of period 20
    problem = chain_pipelines([[0, 1, 2, 3, 0, 1, 2, 3]], 4, 8, memory=4)
    result = repetend(problem, prover="z3", max_fold=1, **LIMIT)
    assert result.period == 11 and result.period_optimal  # Tessel's space: 11 is least
    assert validate(problem, result.schedule) == ()
    with pytest.raises(ValueError, match="'prover'"):
        repetend(problem, prover="gurobi")


@settings(max_examples=200, deadline=None)
@given(work=st.integers(1, 6), memory=st.fractions(0, 8), hi=st.integers(1, 20), best=st.fractions(1, 25),
       max_fold=st.integers(1, 3), refuted=st.sets(st.tuples(st.integers(1, 3), st.integers(1, 60)), max_size=40))
def test_proven_walks_only_the_pairs_below_the_best_rate(work, memory, hi, best, max_fold, refuted):
    """The walk's proof check equals its definition: every (fold k, period P) with k <= max_fold,
    k * work <= P <= k * hi and rate bound <= P / k < best was refuted."""
    from fractions import Fraction

    from schedsearch.placements import vshape
    from schedsearch.search.repetend_search import _Rates, _Walk

    hi = max(hi, work)
    rates = _Rates(problem=vshape(2, 2), work={"d0": work}, memory_bound=memory, hi=hi)
    walk = _Walk(rates=rates, repetend_size=None, best_rate=best, refuted=set(refuted))
    rate = max(Fraction(work), memory)
    expected = all((k, P) in refuted for k in range(1, max_fold + 1) for P in range(k * work, k * hi + 1)
                   if rate <= Fraction(P, k) < best)
    assert walk.proven(max_fold) == expected
