"""The capped V greedy (V-Half, V-Min): valid plans under the cap, sound figures, clear errors."""

from __future__ import annotations

import pytest

from schedsearch import metrics, placements
from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted import reproduce, zb_v
from schedsearch.handcrafted.v_capped import v_capped, v_half, v_half_cap, v_min, v_min_cap
from schedsearch.validate import validate

COSTS = [(1, 1, 1), (2, 2, 1), (1, 2, 1), (3, 1, 2)]


@pytest.mark.parametrize("p,m", [(2, 1), (2, 5), (3, 3), (4, 1), (4, 6)])
@pytest.mark.parametrize("costs", COSTS)
def test_plans_validate_under_the_cap(p, m, costs):
    F, I, W = costs
    problem = placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W)
    bound = objective_lower_bound(problem).value
    for generate, cap in ((v_half, v_half_cap(p)), (v_min, v_min_cap(p))):
        schedule = generate(problem)
        assert validate(problem, schedule) == ()
        figures = metrics(problem, schedule)
        assert max(figures.peak_memory.values()) <= cap
        assert figures.makespan >= bound


@pytest.mark.parametrize("p,m", [(2, 4), (3, 6)])
def test_a_problem_capacity_below_the_formula_cap_is_kept(p, m):
    problem = placements.vshape_chunks(p, m, memory=3)
    for generate in (v_half, v_min):
        schedule = generate(problem)
        assert validate(problem, schedule) == ()  # the validator checks the capacity 3
        assert max(metrics(problem, schedule).peak_memory.values()) <= 3


def test_more_memory_never_costs_time_across_the_named_caps():
    # V-Half has more room than V-Min; ZB-V's 2p is more still: the greedy's makespans order the same way,
    # and both beat 1F1B on the same layers (a device of 1F1B runs both chunks: F = 2, B = 4).
    p, m = 4, 8
    problem = placements.vshape_chunks(p, m)
    half, low = v_half(problem).makespan, v_min(problem).makespan
    assert zb_v(problem).makespan <= half <= low
    assert half < (m + p - 1) * 6
    assert v_capped(problem, 2 * p).makespan <= half


def test_the_caps_follow_the_published_fractions_of_1f1b():
    for p in (4, 8, 16, 32):
        assert p < v_half_cap(p) <= p + 2  # about half of 1F1B's 2p chunk activations
        assert 2 * p / 3 <= v_min_cap(p) < 2 * p / 3 + 4  # about a third, rounded up to whole micro-batches
        assert v_min_cap(p) % 2 == 0  # whole micro-batches (two chunks)


def test_registered_for_reproduce():
    rep = reproduce("v-half", devices=4, microbatches=8)
    assert max(rep.metrics.peak_memory.values()) <= v_half_cap(4)
    rep = reproduce("v-min", devices=4, microbatches=8, forward=2, input_grad=2, weight_grad=1)
    assert max(rep.metrics.peak_memory.values()) <= v_min_cap(4)


def test_bad_input_is_named():
    with pytest.raises(InvalidProblemError, match="'v' mapping"):
        v_half(placements.zero_bubble(4, 8))
    with pytest.raises(InvalidProblemError, match="cap 1"):
        v_capped(placements.vshape_chunks(2, 2), 1)
    with pytest.raises(InvalidProblemError, match="'cap' must be an integer"):
        v_capped(placements.vshape_chunks(2, 2), 2.5)
    with pytest.raises(InvalidProblemError, match="num_devices"):
        v_half_cap(0)


def test_scale_search_starts_from_the_greedy_and_is_never_worse():
    from schedsearch.search.scale import scale_search

    problem = placements.vshape_chunks(4, 8, memory=5)
    greedy = v_capped(problem)
    result = scale_search(problem, time_limit_s=2, workers=1, seed=0)
    assert validate(problem, result.schedule) == ()
    assert result.objective <= greedy.makespan
    assert result.lower_bound <= result.objective


def test_scale_search_on_a_large_v_keeps_its_time_and_says_what_it_skipped():
    import time

    from schedsearch.search.scale import scale_search

    problem = placements.vshape_chunks(8, 32, memory=9)
    t0 = time.perf_counter()
    result = scale_search(problem, time_limit_s=5, workers=1, seed=0)
    assert time.perf_counter() - t0 < 5 * 1.1
    assert result.engine == "handcrafted capped V greedy"
    assert any("exact search skipped" in note for note in result.stats["notes"])
    assert result.lower_bound <= result.objective


@pytest.mark.parametrize("p,m", [(4, 8), (5, 10)])
def test_v_min_is_no_longer_than_the_tight_block_repeated(p, m):
    # the tightest block (chain F down and up, I back, W at once) repeated every 6 = 2(F+I+W): the last
    # micro-batch starts at 6(m-1) and its chain takes 2p + 2p + 1
    problem = placements.vshape_chunks(p, m)
    schedule = v_min(problem)
    assert schedule.makespan <= 6 * (m - 1) + 4 * p + 1
    assert max(metrics(problem, schedule).peak_memory.values()) <= v_min_cap(p)
