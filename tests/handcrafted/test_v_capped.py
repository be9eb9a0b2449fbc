"""The capped V greedy (V-Half, V-Min): valid plans under the cap, sound figures, clear errors."""

from __future__ import annotations

import pytest

from schedsearch import metrics, placements
from schedsearch.bounds.analytic import analytic_lower_bound, objective_lower_bound
from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted import reproduce, zb_v
from schedsearch.handcrafted.v_capped import V_TURNS, _turn_slots, v_capped, v_half, v_half_cap, v_min, v_min_cap
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


def test_scale_search_on_a_large_v_says_what_it_skipped():
    # Deterministic mode: the budget is spent by solver work only, so the exact search is weighed against the
    # whole 5 s however long the greedy took on a busy machine. That the call keeps its wall-clock limit on
    # this problem: tests/search/test_common_options.py (the time limit covers the whole call).
    from schedsearch.search.scale import scale_search

    problem = placements.vshape_chunks(8, 32, memory=9)
    result = scale_search(problem, time_limit_s=5, workers=1, seed=0, deterministic=True)
    assert result.engine == "handcrafted capped V greedy"  # the list schedulers deadlock on its memory
    assert any("exact search skipped" in note for note in result.notes)
    assert result.lower_bound <= result.objective


@pytest.mark.parametrize("p,m", [(4, 8), (5, 10)])
def test_v_min_is_no_longer_than_the_tight_block_repeated(p, m):
    # the tightest block (chain F down and up, I back, W at once) repeated every 6 = 2(F+I+W): the last
    # micro-batch starts at 6(m-1) and its chain takes 2p + 2p + 1
    problem = placements.vshape_chunks(p, m)
    schedule = v_min(problem)
    assert schedule.makespan <= 6 * (m - 1) + 4 * p + 1
    assert max(metrics(problem, schedule).peak_memory.values()) <= v_min_cap(p)


# --- the stable pattern, squeezed (the paper's construction) ----------------------------------------------

from schedsearch.handcrafted import pipeline_view, run_actions  # noqa: E402
from schedsearch.handcrafted.v_capped import V_VARIANTS, v_capped_orders, v_stable_pattern  # noqa: E402


def _peak(problem, schedule):
    return max(metrics(problem, schedule).peak_memory.values())


@pytest.mark.parametrize("p,m", [(1, 3), (2, 1), (2, 5), (3, 4), (4, 2), (4, 9), (5, 7), (6, 12)])
@pytest.mark.parametrize("costs", COSTS)
def test_stable_pattern_validates_under_its_own_peak(p, m, costs):
    F, I, W = costs
    for pattern, named in (("half", v_half_cap(p)), ("min", v_min_cap(p))):
        free = v_stable_pattern(placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W), pattern)
        cap = _peak(placements.vshape_chunks(p, m), free)
        assert cap <= named  # the pattern's own peak is within the named cap
        problem = placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W, memory=cap)
        schedule = v_stable_pattern(problem, pattern)
        assert validate(problem, schedule) == ()  # the capacity (its own peak) included
        assert schedule.makespan == free.makespan
        assert schedule.makespan >= objective_lower_bound(problem).value


def _greedy_best(problem, cap):
    view = pipeline_view(problem)
    spans = [run_actions(view, orders, name="greedy").makespan
             for orders in (v_capped_orders(problem, cap, v) for v in V_VARIANTS) if orders is not None]
    return min(spans)


@pytest.mark.parametrize("p,m", [(2, 4), (3, 6), (4, 8), (5, 10), (6, 12), (4, 5)])
def test_v_half_pattern_never_above_the_greedy_at_its_peak_unit_times(p, m):
    problem = placements.vshape_chunks(p, m)
    pattern = v_stable_pattern(problem, "half")
    cap = _peak(problem, pattern)
    assert pattern.makespan <= _greedy_best(problem, cap)
    # v_capped keeps the shortest candidate: never above the pattern nor the greedy at that cap
    assert v_capped(problem, cap).makespan <= pattern.makespan


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (5, 5)])
@pytest.mark.parametrize("costs", [(2, 2, 1), (3, 1, 2)])
def test_v_capped_never_above_either_construction(p, m, costs):
    F, I, W = costs
    problem = placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W)
    for pattern in ("half", "min"):
        cap = _peak(problem, v_stable_pattern(problem, pattern))
        best = v_capped(problem, cap)
        assert validate(placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W, memory=cap),
                        best) == ()
        assert best.makespan <= min(v_stable_pattern(problem, pattern).makespan, _greedy_best(problem, cap))
        assert best.makespan <= v_capped(problem, cap, stable_patterns=False).makespan


@pytest.mark.parametrize("p", [4, 6, 8])
def test_v_half_meets_the_papers_closed_form_for_even_p(p):
    # Qi et al. 2024: V-Half with unit times takes 6(m - 1) + 3p - 1 when m >= 2p, at a peak of p + 2
    for m in (2 * p, 2 * p + 1, 3 * p):
        problem = placements.vshape_chunks(p, m)
        schedule = v_stable_pattern(problem, "half")
        assert schedule.makespan == 6 * (m - 1) + 3 * p - 1
        assert _peak(problem, schedule) == v_half_cap(p)


@pytest.mark.parametrize("p,m,costs,half,low", [
    # the published greedy's figures (makespan; the peaks are the named caps)
    (4, 8, (1, 1, 1), 53, 59), (4, 16, (1, 1, 1), 101, 107), (8, 16, (1, 1, 1), 113, 123),
    (4, 8, (2, 2, 1), 95, 117),
])
def test_the_published_figures_are_reached(p, m, costs, half, low):
    F, I, W = costs
    problem = placements.vshape_chunks(p, m, forward=F, input_grad=I, weight_grad=W)
    for pattern, figure, cap in (("half", half, v_half_cap(p)), ("min", low, v_min_cap(p))):
        schedule = v_stable_pattern(problem, pattern)
        assert (schedule.makespan, _peak(problem, schedule)) == (figure, cap)
    assert v_half(problem).makespan <= half and v_min(problem).makespan <= low


def test_bad_pattern_is_named():
    with pytest.raises(InvalidProblemError, match="'pattern' must be one of"):
        v_stable_pattern(placements.vshape_chunks(2, 2), "third")


@pytest.mark.parametrize("p", range(2, 20))
def test_turn_patterns_keep_their_four_slots_apart(p):
    # every device's four slots distinct modulo 6, and each flow's chain in order along the V
    for turns in V_TURNS:
        slots = _turn_slots(p, turns)
        if slots is None:
            continue
        for s, sl in enumerate(slots):
            assert len({t % 6 for t in sl.values()}) == 4
            assert sl["F0"] < sl["F1"] < sl["I1"] < sl["I0"]
            if s:
                assert slots[s - 1]["F0"] < sl["F0"] and slots[s - 1]["F1"] > sl["F1"]
                assert slots[s - 1]["I1"] < sl["I1"] and slots[s - 1]["I0"] > sl["I0"]


@pytest.mark.parametrize("p", [4, 6, 8, 12])
def test_at_p_plus_one_the_plan_is_within_one_percent_of_the_bound(p):
    # unit times, m = 4p, p + 1 chunk activations (below V-Half's p + 2): the bound is 6m + 3p - 4
    problem = placements.vshape_chunks(p, 4 * p, memory=p + 1)
    schedule = v_capped(problem)
    assert not validate(problem, schedule)
    assert max(metrics(problem, schedule).peak_memory.values()) <= p + 1
    bound = analytic_lower_bound(problem).value
    assert bound <= schedule.makespan <= 1.01 * bound


# --- communication time ------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


def _v_with_communication(p, m, costs, time_per_unit, size):
    """A V placement with ``size`` units on every edge between devices, over one directed channel of
    ``time_per_unit`` each way."""
    import attrs

    from schedsearch import Channel

    problem = placements.vshape_chunks(p, m, forward=costs[0], input_grad=costs[1], weight_grad=costs[2])
    devices = {b.name: b.options[0].devices for b in problem.graph.blocks}
    edges = [attrs.evolve(e, size=size) if devices[e.src] != devices[e.dst] else e for e in problem.graph.edges]
    names = problem.cluster.device_names
    pairs = [(names[i], names[i + 1]) for i in range(p - 1)]
    pairs += [(b, a) for a, b in pairs]
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=time_per_unit, directed=True)
                for a, b in pairs]
    return problem.with_(graph=attrs.evolve(problem.graph, edges=edges),
                         cluster=attrs.evolve(problem.cluster, channels=channels))


@settings(deadline=None)
@given(p=st.integers(2, 6), m_per_p=st.integers(1, 3), costs=st.tuples(*[st.integers(1, 3)] * 3),
       time_per_unit=st.integers(1, 4), size=st.integers(1, 2), which=st.sampled_from(["half", "min", "none"]))
def test_plans_with_communication_time_validate_under_the_cap(p, m_per_p, costs, time_per_unit, size, which):
    problem = _v_with_communication(p, p * m_per_p, costs, time_per_unit, size)
    cap = {"half": v_half_cap(p), "min": v_min_cap(p), "none": None}[which]
    schedule = v_capped(problem, cap)
    assert not validate(problem, schedule)
    assert schedule.transfers  # activations and gradients do cross the channels
    if cap is not None:
        assert max(metrics(problem, schedule).peak_memory.values()) <= cap
    assert schedule.makespan >= analytic_lower_bound(problem).value


@pytest.mark.parametrize("p, m", [(4, 8), (5, 10), (8, 16)])
def test_pattern_fit_takes_the_first_pattern_within_the_capacity(p, m):
    from schedsearch.handcrafted.v_capped import v_pattern_fit

    half = v_stable_pattern(placements.vshape_chunks(p, m), "half")
    low = v_stable_pattern(placements.vshape_chunks(p, m), "min")
    half_peak = max(metrics(placements.vshape_chunks(p, m), half).peak_memory.values())
    low_peak = max(metrics(placements.vshape_chunks(p, m), low).peak_memory.values())
    for memory, expected in ((None, half), (half_peak, half), (half_peak - 1, low if low_peak < half_peak else None),
                             (low_peak, low if low_peak < half_peak else half)):
        problem = placements.vshape_chunks(p, m, memory=memory)
        if expected is None:
            with pytest.raises(InvalidProblemError, match="neither pattern's peak fits the capacities"):
                v_pattern_fit(problem)
            continue
        schedule = v_pattern_fit(problem)
        assert not validate(problem, schedule)
        assert schedule.tasks == expected.tasks
    with pytest.raises(InvalidProblemError, match="neither pattern's peak fits"):
        v_pattern_fit(placements.vshape_chunks(p, m, memory=min(half_peak, low_peak) - 1))


@pytest.mark.parametrize("p, m", [(4, 8), (5, 11), (6, 12), (8, 16)])
@pytest.mark.parametrize("unlike", ["initial memory", "chunk memory"])
def test_pattern_fit_on_devices_that_differ(p, m, unlike):
    """Devices that differ (every other one two activations held from the start, or the two chunks of a
    device holding different amounts) and capacities that differ by device: the plan is the first pattern,
    in the paper's order, whose squeezed plan fits every device's capacity (peaks read here device by device
    from the public construction without a cap)."""
    import attrs

    from schedsearch.handcrafted.v_capped import V_PATTERNS, v_pattern_fit

    if unlike == "initial memory":
        bare = placements.vshape_chunks(p, m)
        bare = bare.with_(initial_memory={d: 2 * (i % 2) for i, d in enumerate(bare.cluster.device_names)})
    else:
        bare = placements.vshape_chunks(p, m, forward_memory=[1 + s % 3 for s in range(2 * p)])
    built = {pattern: v_stable_pattern(bare, pattern) for pattern in V_PATTERNS}
    peaks = {pattern: metrics(bare, s).peak_memory for pattern, s in built.items()}
    names = bare.cluster.device_names
    top = max(max(pk.values()) for pk in peaks.values())
    floor = max(bare.initial_memory_of(d) for d in names) + 3  # less is refused by the problem itself
    capacities = [[base + (i * 7 % 3) * spread for i in range(p)] for base in range(floor, top + 1) for spread in (0, 1, 2)]
    # each device exactly the room one pattern's plan takes there (give or take one)
    capacities += [[max(floor, peaks[pattern][n] + extra) for n in names] for pattern in V_PATTERNS for extra in (-1, 0, 1)]
    for caps in capacities:
        devices = [attrs.evolve(d, memory=c) for d, c in zip(bare.cluster.devices, caps)]
        problem = bare.with_(cluster=attrs.evolve(bare.cluster, devices=devices))
        room = dict(zip(names, caps))
        expected = next((pattern for pattern in V_PATTERNS if all(peaks[pattern][n] <= room[n] for n in names)), None)
        if expected is None:
            with pytest.raises(InvalidProblemError, match="neither pattern's peak fits"):
                v_pattern_fit(problem)
            continue
        schedule = v_pattern_fit(problem)
        assert not validate(problem, schedule)
        assert schedule.tasks == built[expected].tasks, caps


def test_pattern_fit_keeps_v_half_when_its_chunks_hold_different_amounts():
    """Its unsplit layout counts a weight gradient as freeing the smaller chunk's activation, so its own
    peak (14) is above the capacity (13) while its plan peaks at 12: V-Half is still the plan."""
    from schedsearch.handcrafted.v_capped import v_pattern_fit

    problem = placements.vshape_chunks(2, 5, forward_memory=[1, 2, 2, 3], memory=13)
    schedule = v_pattern_fit(problem)
    assert schedule.name.startswith("V-Half")
    assert schedule.tasks == v_stable_pattern(placements.vshape_chunks(2, 5, forward_memory=[1, 2, 2, 3]),
                                              "half").tasks
