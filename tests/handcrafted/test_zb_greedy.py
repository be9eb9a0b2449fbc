"""The zero-bubble greedy: the public heuristic's figures, and the search against it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.zb_greedy import GREEDY_VARIANTS, zb_greedy, zb_greedy_all, zb_greedy_best
from schedsearch.placements import dualpipe, zero_bubble
from schedsearch.result import Status
from schedsearch.schedule import max_span, peak_memory
from schedsearch.search import optimal
from schedsearch.validate import validate

# (p, m, F, I, W, max memory) -> longest stage span of the public greedy (memory per
# micro-batch: F +2, I -1, W -1), as measured with the reference implementation
REFERENCE = [
    ((4, 12, 5, 6, 4, 10), 193),
    ((4, 12, 5, 6, 4, 14), 183),
    ((4, 12, 1, 1, 1, 8), 39),
    ((4, 12, 1, 1, 1, 16), 36),
    ((8, 24, 1, 1, 1, 16), 79),
    ((8, 24, 1, 1, 1, 32), 72),
]


def build(p, m, F, I, W, mem):
    return zero_bubble(p, m, forward=F, input_grad=I, weight_grad=W, forward_memory=2, input_grad_memory=-1,
                       memory=mem).with_(objective="max_span")


@pytest.mark.parametrize("setting, expected", REFERENCE, ids=[str(s) for s, _ in REFERENCE])
def test_reproduces_the_public_greedy(setting, expected):
    problem = build(*setting)
    schedule = zb_greedy(problem)
    assert max_span(schedule) == expected
    assert validate(problem, schedule) == ()
    assert max(peak_memory(problem, schedule).values()) <= setting[-1]


@pytest.mark.parametrize("setting, expected", REFERENCE, ids=[str(s) for s, _ in REFERENCE])
def test_search_proves_the_greedy_optimal(setting, expected):
    # the forced-idle bound (memory before the first input gradient) meets the greedy's span
    # on every reference row, so the search proves it at once
    problem = build(*setting)
    r = optimal(problem, warm_start=zb_greedy(problem), time_limit_s=60, seed=0, workers=2)
    assert r.status is Status.OPTIMAL and r.objective == expected and r.lower_bound == expected


def test_variants_and_memory_failures():
    problem = build(4, 12, 1, 1, 1, 8)
    every = zb_greedy_all(problem)
    assert list(every) == list(GREEDY_VARIANTS) and len(every) == 8
    assert all(s is None or validate(problem, s) == () for s in every.values())
    # room for a single forward (+2): weight gradients run as soon as they free room
    tight = build(4, 6, 1, 1, 1, 2)
    assert max(peak_memory(tight, zb_greedy(tight)).values()) == 2
    # activations that are never freed: no variant fits, a clear error
    never_freed = zero_bubble(3, 4, forward_memory=1, weight_grad_memory=0, memory=2)
    with pytest.raises(InvalidProblemError, match="no variant fits"):
        zb_greedy(never_freed)


def test_rejects_other_placements():
    with pytest.raises(InvalidProblemError, match="single pipeline"):
        zb_greedy(dualpipe(4, 8))
    with pytest.raises(InvalidProblemError, match="split into I and W"):
        from schedsearch.placements import vshape

        zb_greedy(vshape(4, 8))


def test_uneven_stage_times_give_no_schedule_rather_than_an_error():
    # the greedy's rules assume stage times alike enough; on these a variant would ask
    # stage 1 for a forward stage 0 has not produced (it raised KeyError); such a
    # variant now has no schedule, and every schedule given is valid
    from schedsearch.handcrafted.zb_greedy import zb_greedy_all
    from schedsearch.placements import zero_bubble
    from schedsearch.validate import validate

    problem = zero_bubble(8, 11, forward=[14, 2, 10, 5, 7, 2, 10, 3], input_grad=[3, 10, 10, 6, 14, 19, 9, 5],
                          weight_grad=[1, 18, 2, 19, 7, 19, 15, 6], memory=16)
    for schedule in zb_greedy_all(problem).values():
        assert schedule is None or not validate(problem, schedule)


@pytest.mark.parametrize("problem", [
    build(4, 12, 5, 6, 4, 10), build(8, 24, 1, 1, 1, 16),
    zero_bubble(4, 24, forward=18, input_grad=18, weight_grad=9, forward_memory=1, weight_grad_memory=-1, memory=8),
    zero_bubble(8, 11, forward=[14, 2, 10, 5, 7, 2, 10, 3], input_grad=[3, 10, 10, 6, 14, 19, 9, 5],
                weight_grad=[1, 18, 2, 19, 7, 19, 15, 6], memory=16),
], ids=["ref-5-6-4", "ref-unit", "18-18-9", "uneven"])
def test_the_best_variants_are_chosen_by_the_simulated_figures(problem):
    # zb_greedy_best ranks the variants by the builder's own times and simulates only the chosen ones:
    # they must be the best of all eight simulated schedules (checked by the simulator and max_span)
    every = {v: s for v, s in zb_greedy_all(problem).items() if s is not None}
    best = zb_greedy_best(problem)
    assert set(best) <= set(every)
    assert len(best) >= 1 or not every
    if every:
        by_span = min(every, key=lambda v: max_span(every[v]))
        by_makespan = min(every, key=lambda v: every[v].makespan)
        assert list(best) == list(dict.fromkeys((by_span, by_makespan)))
        assert zb_greedy(problem).tasks == every[by_span].tasks


def _with_communication(problem, time_per_unit):
    """``problem`` with a 1-unit transfer on every edge between devices, over one directed channel each way."""
    import attrs

    from schedsearch import Channel

    graph = problem.graph
    devices = {b.name: b.options[0].devices for b in graph.blocks}
    edges = [attrs.evolve(e, size=1) if devices[e.src] != devices[e.dst] else e for e in graph.edges]
    names = problem.cluster.device_names
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=time_per_unit, directed=True)
                for i in range(len(names) - 1) for a, b in ((names[i], names[i + 1]), (names[i + 1], names[i]))]
    return problem.with_(graph=attrs.evolve(graph, edges=edges), cluster=attrs.evolve(problem.cluster,
                                                                                       channels=channels))


# (p, m, memory cap) -> (longest stage span, makespan) of the public scheduler with F / B / W = 18 / 18 / 9,
# memory +1 at F, 0 at B, -1 at W and a communication time of 1 (as measured with the reference implementation)
REFERENCE_COMM = [((4, 24, 8), (1131, 1137)), ((8, 48, 16), (2291, 2293)), ((4, 12, 4), (633, 633)),
                  ((8, 24, 16), (1211, 1213))]


@pytest.mark.parametrize("setting, expected", REFERENCE_COMM, ids=[str(s) for s, _ in REFERENCE_COMM])
def test_reproduces_the_public_greedy_with_communication_time(setting, expected):
    p, m, cap = setting
    problem = _with_communication(zero_bubble(p, m, forward=18, input_grad=18, weight_grad=9, forward_memory=1,
                                              weight_grad_memory=-1, memory=cap), 1)
    schedule = zb_greedy(problem)
    assert not validate(problem, schedule)
    assert schedule.transfers  # the activations and gradients do cross the channels
    best = zb_greedy_best(problem)
    assert (max_span(schedule), min(s.makespan for s in best.values())) == expected


# -- the chosen plans: the builder's own times when valid, else the simulator's -------------------------

def _linked(problem, time_per_unit, latency=0, *, both_ways=False, parallel=False):
    """``problem`` with a 1-unit transfer on every edge between devices: one directed channel each way
    between neighbours, or (``both_ways``) one undirected channel carrying both directions; ``parallel``
    doubles every channel."""
    import attrs

    from schedsearch import Channel

    graph = problem.graph
    devices = {b.name: b.options[0].devices for b in graph.blocks}
    edges = [attrs.evolve(e, size=1) if devices[e.src] != devices[e.dst] else e for e in graph.edges]
    names = problem.cluster.device_names
    pairs = [(names[i], names[i + 1]) for i in range(len(names) - 1)]
    if not both_ways:
        pairs += [(b, a) for a, b in pairs]
    channels = [Channel(name=f"{a}-{b}{tag}", endpoints=(a, b), time_per_unit=time_per_unit, latency=latency,
                        directed=not both_ways)
                for a, b in pairs for tag in (("", "+") if parallel else ("",))]
    return problem.with_(graph=attrs.evolve(graph, edges=edges), cluster=attrs.evolve(problem.cluster,
                                                                                       channels=channels))


@st.composite
def zero_bubble_problems(draw):
    """Zero-bubble placements: uneven or even stage times, memory per micro-batch, a cap or none, and no
    transfers, transfers over a directed channel each way (one or two per direction) or over one channel
    shared by both directions."""
    p = draw(st.integers(2, 6))
    m = draw(st.integers(1, 14))
    times = st.one_of(st.integers(1, 12), st.lists(st.integers(1, 12), min_size=p, max_size=p))
    F, I, W = draw(times), draw(times), draw(times)
    fm, im = draw(st.integers(1, 3)), draw(st.sampled_from([0, -1]))
    cap = draw(st.one_of(st.none(), st.integers(fm, 3 * p * fm)))
    try:
        problem = zero_bubble(p, m, forward=F, input_grad=I, weight_grad=W, forward_memory=fm,
                              input_grad_memory=im, weight_grad_memory=-(fm + im), memory=cap)
    except InvalidProblemError:
        assume(False)  # a cap below one forward's memory
    links = draw(st.sampled_from(["none", "directed", "parallel", "shared"]))
    if links != "none":
        problem = _linked(problem, draw(st.integers(0, 4)), draw(st.sampled_from([0, 2])),
                          both_ways=links == "shared", parallel=links == "parallel")
    return problem


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problem=zero_bubble_problems())
def test_the_chosen_plans_are_the_simulated_schedules_of_their_orders(problem):
    # the plans zb_greedy_best gives (from the builder's own times where the validator accepts them) are
    # exactly the simulator's schedules of the same variants' orders (run_actions, in zb_greedy_all), and valid
    every = zb_greedy_all(problem)
    best = zb_greedy_best(problem)
    assert bool(best) == any(s is not None for s in every.values())
    for variant, schedule in best.items():
        simulated = every[variant]
        assert simulated is not None
        assert schedule.tasks == simulated.tasks
        assert schedule.transfers == simulated.transfers
        assert schedule.name == simulated.name
        assert validate(problem, schedule) == ()


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problem=zero_bubble_problems())
def test_the_figures_the_variants_are_ranked_by_are_those_of_their_schedules(problem):
    # the builder's makespan and longest span of each variant are those of the schedule of its orders
    # wherever its times are the plan (no transfer waits for a busy channel), and never above them
    from schedsearch.handcrafted.zb_greedy import _Builder, _figures

    builder = _Builder(problem)
    every = zb_greedy_all(problem)
    for variant, outcome in _figures(builder).items():
        simulated = every[variant]
        assert simulated is not None
        assert outcome.makespan <= simulated.makespan - min(t.start for t in simulated.tasks)
        assert outcome.span <= max_span(simulated)
        if not problem.cluster.channels:
            assert (outcome.makespan, outcome.span) == (simulated.makespan, max_span(simulated))


def test_without_transfers_no_plan_goes_through_the_simulator():
    from unittest import mock

    import schedsearch.handcrafted.zb_greedy as zg

    problem = zero_bubble(4, 24, forward=18, input_grad=18, weight_grad=9, forward_memory=1, weight_grad_memory=-1,
                          memory=8)
    with mock.patch.object(zg, "run_actions", side_effect=AssertionError("simulated")):
        best = zb_greedy_best(problem)
    assert best and all(validate(problem, s) == () for s in best.values())


def test_a_channel_carrying_both_directions_falls_back_to_the_simulator():
    # one channel between neighbours, both ways: the builder assumes every channel free, so its times put two
    # transfers on one channel at once; the validator refuses them and the simulator times the orders
    from unittest import mock

    import schedsearch.handcrafted.zb_greedy as zg
    from schedsearch.handcrafted.zb_greedy import _Builder, _figures

    problem = _linked(zero_bubble(3, 4), 2, both_ways=True)
    builder = _Builder(problem)
    outcome = _figures(builder)[GREEDY_VARIANTS[0]]
    assert any(v.kind == "channel_overlap" for v in validate(problem, builder._direct(outcome, "x")))
    with mock.patch.object(zg, "run_actions", wraps=zg.run_actions) as simulator:
        schedule = builder.schedule(outcome, name="x")
    assert simulator.call_count == 1
    assert validate(problem, schedule) == ()


def test_plans_come_lazily_the_best_for_the_objective_first():
    from unittest import mock

    from schedsearch.errors import InvalidOptionsError
    from schedsearch.handcrafted.zb_greedy import _Builder, zb_greedy_plans

    # here the variant of least longest span and the one of least makespan differ
    problem = zero_bubble(3, 8, forward=3, input_grad=2, weight_grad=2, forward_memory=1, weight_grad_memory=-1,
                          memory=4)
    every = {v: s for v, s in zb_greedy_all(problem).items() if s is not None}
    by_span = min(every, key=lambda v: max_span(every[v]))
    by_makespan = min(every, key=lambda v: every[v].makespan)
    assert by_span != by_makespan
    for objective, first, second in (("makespan", by_makespan, by_span), ("max_span", by_span, by_makespan)):
        with mock.patch.object(_Builder, "schedule", autospec=True, side_effect=_Builder.schedule) as built:
            plans = zb_greedy_plans(problem, objective=objective)
            assert built.call_count == 0
            variant, schedule = next(plans)
            assert (variant, built.call_count) == (first, 1)
            assert schedule.tasks == every[first].tasks
            assert [v for v, _ in plans] == [second] and built.call_count == 2
    with pytest.raises(InvalidOptionsError, match="'objective'"):
        zb_greedy_plans(problem, objective="peak_memory")
    with pytest.raises(InvalidProblemError, match="split into I and W"):  # at the call, not at the first plan
        from schedsearch.placements import vshape

        zb_greedy_plans(vshape(4, 8))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problem=zero_bubble_problems())
def test_a_variant_left_out_has_the_run_of_one_run_before_it(problem):
    # _figures runs a variant only when no earlier run shows it would take the same decisions; every variant
    # left out does have the run of an earlier one (or no schedule, as that one), so the choice is that of
    # all eight runs
    from schedsearch.handcrafted.zb_greedy import _Builder, _figures, _NoRoom, _OutOfOrder

    builder = _Builder(problem)
    figures = _figures(builder)
    every = {}
    for variant in GREEDY_VARIANTS:
        try:
            every[variant] = builder.run_timed(variant)
        except (_NoRoom, _OutOfOrder):
            continue
    assert set(figures) <= set(every)
    for variant in every:
        if variant not in figures:
            assert any(every[variant] == every[u] for u in GREEDY_VARIANTS[:GREEDY_VARIANTS.index(variant)]
                       if u in figures), variant
    for figure in ("span", "makespan"):
        assert min(figures, key=lambda v: getattr(figures[v], figure), default=None) == \
            min(every, key=lambda v: getattr(every[v], figure), default=None)
