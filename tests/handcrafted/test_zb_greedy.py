"""The zero-bubble greedy: the public heuristic's figures, and the search against it."""

from __future__ import annotations

import pytest

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
