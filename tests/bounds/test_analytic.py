"""The forced-idle bound, group savings in the analytic bounds, and memory
triples that split an allocation over several frees."""

from __future__ import annotations

from hypothesis import given, settings

from pipeline_strategies import pipeline_problems
from schedsearch.bounds import analytic_lower_bound, span_lower_bound
from schedsearch.bounds.analytic import memory_idle
from schedsearch.encode.structure import build_structure
from schedsearch.placements import dualpipe, zero_bubble
from schedsearch.result import Status
from schedsearch.schedule import memory_profile
from schedsearch.search import optimal
from schedsearch.search.list_scheduling import PIPELINE_RULES, list_plan

LIMIT = dict(time_limit_s=30, seed=0, workers=2)


def zb_unit(p: int, m: int, memory: int):
    # the zero-bubble greedy's memory convention: F +2, I -1, W -1
    return zero_bubble(p, m, forward_memory=2, input_grad_memory=-1, memory=memory)


def test_forced_idle_by_hand():
    # p=4, F=I=W=1, capacity 8 = 4 forwards: the first input gradient reaches device 0 at
    # least 4 (forwards down) + 3 (input gradients back up) = 7 after its first start, and
    # only 4 forwards fit before it, so device 0 idles at least 3; device 1: 3 + 2 - 4 = 1
    idle = memory_idle(zb_unit(4, 12, 8))
    assert idle == {"d0": 3, "d1": 1, "d2": 0, "d3": 0}
    # heterogeneous times F=5, I=6, W=4, capacity 10 (5 forwards): 4*5 + 3*6 - 5*5 = 13
    p = zero_bubble(4, 12, forward=5, input_grad=6, weight_grad=4, forward_memory=2, input_grad_memory=-1,
                    memory=10)
    assert memory_idle(p)["d0"] == 13
    # so the longest span is at least 12 * 15 + 13 = 193, the greedy's figure
    assert span_lower_bound(p.with_(objective="max_span")).value == 193
    # unbounded memory, or frees that do not exist before the last stage: no idle
    assert set(memory_idle(zb_unit(4, 12, 16)).values()) == {0}
    assert set(memory_idle(zero_bubble(4, 12)).values()) == {0}
    # zero-delta input gradients (DualPipe's convention) may fill the wait: no claim
    assert set(memory_idle(dualpipe(4, 8, memory=5).with_(overlaps=())).values()) == {0}


def test_memory_triples_split_allocations():
    st = build_structure(zb_unit(2, 1, 4))
    names = {t.index: t.key[0] for t in st.tasks}
    triples = sorted((names[a], names[f], x) for a, f, x in st.memory_pairs["d0"])
    assert triples == [("F0", "I0", 1), ("F0", "W0", 1)]


@settings(max_examples=25)
@given(pipeline_problems())
def test_memory_triples_give_the_real_level(problem):
    # the level the triples describe equals the schedule's own memory profile
    st = build_structure(problem)
    schedule = next((s for s in (list_plan(problem, r) for r in PIPELINE_RULES[:4]) if s is not None), None)
    if schedule is None:
        return
    start = {t.key: t.start for t in schedule.tasks}
    key = {t.index: t.key for t in st.tasks}
    for d, triples in st.memory_pairs.items():
        if triples is None:
            continue
        init = problem.initial_memory_of(d)
        for time, level in memory_profile(problem, schedule)[d]:
            held = sum(x for a, f, x in triples if start[key[a]] <= time < start[key[f]])
            assert init + held == level


@settings(max_examples=15)
@given(pipeline_problems(max_microbatches=2))
def test_bounds_never_exceed_the_optimum(problem):
    r = optimal(problem, **LIMIT)
    if r.status is Status.OPTIMAL:
        assert analytic_lower_bound(problem).value <= r.objective
    spans = problem.with_(objective="max_span")
    r = optimal(spans, **LIMIT)
    if r.status is Status.OPTIMAL:
        assert span_lower_bound(spans).value <= r.objective


def test_group_savings_keep_the_device_bound():
    # DualPipe with F&B = 2 < F + B: a pair saves one unit over 3 members, so each forward,
    # input and weight gradient may save 1/3; the device bound stays a bound and is not dropped
    p = dualpipe(4, 8, overlap=2)
    bound = analytic_lower_bound(p)
    assert "device d1" in bound.parts
    r = optimal(p, **LIMIT)
    assert r.status is Status.OPTIMAL and bound.value <= r.objective
    # without the declarations the bound is the plain one: 1 + 3 * 8
    assert analytic_lower_bound(p.with_(overlaps=())).value == 25
