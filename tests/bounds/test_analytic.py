"""The forced-idle bound, group savings in the analytic bounds, and memory
triples that split an allocation over several frees."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    # (6 micro-batches: proven in about a second; 8 took 2 to 30 s and more with the machine's load)
    p = dualpipe(4, 6, overlap=2)
    bound = analytic_lower_bound(p)
    assert "device d1" in bound.parts
    r = optimal(p, deterministic=True, **LIMIT)  # the proof is asserted: deterministic, whatever the load
    assert r.status is Status.OPTIMAL and bound.value <= r.objective
    # without the declarations the bound is the plain one, 1 + 3 * 6, above the optimum the pairs reach
    plain = analytic_lower_bound(p.with_(overlaps=())).value
    assert plain == 19 and plain > r.objective


def test_forced_idle_counts_a_lengthened_microbatch_at_its_length():
    """Regression: a micro-batch whose forward lasts longer (a duration override) may be the one run before the
    first free; the forced idle counted every forward at its shortest and the bound said 11 where a plan of 10
    exists."""
    from schedsearch import Block, Cluster, Device, Graph, Problem, Schedule, TaskInstance
    from schedsearch.validate import validate

    problem = Problem(
        graph=Graph(blocks=[Block(name="F0", options=[("d0", 1)], memory=1),
                            Block(name="F1", options=[("d1", 1)], memory=1),
                            Block(name="B1", kind="B", options=[("d1", 1)], memory=-1),
                            Block(name="B0", kind="B", options=[("d0", 2)], memory=-2)],
                    edges=[("F0", "F1"), ("F1", "B1"), ("B1", "B0")]),
        num_microbatches=3,
        cluster=Cluster(devices=[Device(name="d0", memory=3), Device(name="d1")]),
        initial_memory={"d0": 1},
        duration_overrides=[("F0", 2, (2,))],
    )
    run = [("F0", 1, "d0", 0, 1), ("F0", 2, "d0", 1, 3), ("F1", 1, "d1", 1, 2), ("B1", 1, "d1", 2, 3),
           ("B0", 1, "d0", 3, 5), ("F1", 2, "d1", 3, 4), ("B1", 2, "d1", 4, 5), ("F0", 0, "d0", 5, 6),
           ("B0", 2, "d0", 6, 8), ("F1", 0, "d1", 6, 7), ("B1", 0, "d1", 7, 8), ("B0", 0, "d0", 8, 10)]
    schedule = Schedule(tasks=[TaskInstance(block=b, microbatch=m, devices=(d,), start=s, end=e)
                               for b, m, d, s, e in run])
    assert not validate(problem, schedule) and schedule.makespan == 10
    assert analytic_lower_bound(problem).value <= 10
    assert span_lower_bound(problem.with_(objective="max_span")).value <= 10
    assert optimal(problem, **LIMIT).objective == 10


@st.composite
def _lengthened_pipelines(draw):
    """Forward-backward chains over 2-3 devices with a tight capacity (and memory already held) on some devices,
    where some task instances last longer than their block says."""
    from schedsearch import Block, Cluster, Device, Graph, Problem

    D = draw(st.integers(2, 3))
    n = draw(st.integers(2, 4))
    dur = lambda: draw(st.integers(1, 3))  # noqa: E731
    act = [draw(st.integers(1, 2)) for _ in range(D)]
    blocks = [Block(name=f"F{i}", options=[(f"d{i}", dur())], memory=act[i]) for i in range(D)]
    blocks += [Block(name=f"B{i}", kind="B", options=[(f"d{i}", dur())], memory=-act[i]) for i in range(D)]
    chain = [f"F{i}" for i in range(D)] + [f"B{i}" for i in reversed(range(D))]
    devices, initial = [], {}
    for i in range(D):
        held = draw(st.integers(0, 2))
        room = draw(st.one_of(st.none(), st.integers(act[i], 3 * act[i])))
        devices.append(Device(name=f"d{i}", memory=None if room is None else held + room))
        if held:
            initial[f"d{i}"] = held
    picks = draw(st.lists(st.tuples(st.integers(0, 2 * D - 1), st.integers(0, n - 1), st.integers(1, 3)),
                          min_size=1, max_size=3, unique_by=lambda x: x[:2]))
    overrides = [(blocks[i].name, m, (blocks[i].options[0].duration + extra,)) for i, m, extra in picks]
    return Problem(graph=Graph(blocks=blocks, edges=list(zip(chain, chain[1:]))), num_microbatches=n,
                   cluster=Cluster(devices=devices), initial_memory=initial, duration_overrides=overrides)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_lengthened_pipelines())
def test_bounds_with_lengthened_microbatches_never_exceed_an_optimum_proven_without_them(problem):
    """CP-SAT on the plain model, told no bound, proves the optimum; the analytic bounds stay below it."""
    from schedsearch.encode import SolveOptions
    from schedsearch.encode import solve as solve_model

    for objective, bound in (("makespan", analytic_lower_bound), ("max_span", span_lower_bound)):
        target = problem.with_(objective=objective)
        result = solve_model(target, "cpsat", SolveOptions(time_limit_s=10, workers=1, seed=0, redundant=False,
                                                            symmetry_breaking=False))
        if result.status is Status.OPTIMAL:
            assert bound(target).value <= result.objective, (objective, memory_idle(target))


def test_group_savings_by_block_equal_the_savings_by_task_instance():
    # without duration overrides the groups' savings are worked out per block; an override that keeps a
    # block's duration sends the bounds through the per-instance path: the two must agree everywhere
    from schedsearch.bounds import device_bounds
    from schedsearch.placements import dualpipev

    saving = 0
    for overlap in (3, 4, 6, 9):
        problem = dualpipev(4, 10, overlap=overlap, forward=2, backward=3, weight_grad=1)
        saving += analytic_lower_bound(problem.with_(overlaps=())).parts["device d0"] \
            - analytic_lower_bound(problem).parts["device d0"]
        block = problem.graph.blocks[0]
        same = problem.with_(duration_overrides=[(block.name, 3, (block.options[0].duration,))])
        assert device_bounds(problem) == device_bounds(same)
        assert analytic_lower_bound(problem).parts == analytic_lower_bound(same).parts
        assert span_lower_bound(problem.with_(objective="max_span")).parts == \
            span_lower_bound(same.with_(objective="max_span")).parts
    assert saving > 0  # some of the overlaps save time (the savings are not all zero)
