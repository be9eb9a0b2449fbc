"""schedsearch.testing strategies: problems, pipelines, valid plans and broken plans."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from schedsearch.errors import SchedSearchError
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem, Release
from schedsearch.schedule import Schedule
from schedsearch.testing import (
    ALL_FEATURES,
    PIPELINE_LAYOUTS,
    broken,
    mutate,
    mutation_sites,
    overlap_problems,
    pipeline_problems,
    problems,
    problems_and_schedules,
    producible_kinds,
    schedules,
    serial_schedule,
)
from schedsearch.testing.sgs import topological_order
from schedsearch.validate import VIOLATION_KINDS, validate

FAMILIES = {
    "problems": problems(),
    "pipeline_problems": pipeline_problems(),
    "overlap_problems": overlap_problems(),
}
SLACK = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("family", list(FAMILIES), ids=list(FAMILIES))
def test_every_drawn_plan_is_valid_and_every_mutation_is_reported(family):
    @settings(**SLACK)
    @given(st.data())
    def check(data):
        problem = data.draw(FAMILIES[family])
        schedule = data.draw(schedules(problem))
        assert validate(problem, schedule) == ()
        assert {t.key for t in schedule.tasks} == set(problem.tasks)
        kinds = producible_kinds(problem, schedule)
        assert {"missing_task", "duplicate_task", "unknown_task", "option_not_allowed", "wrong_duration",
                "unexpected_transfer"} <= set(kinds)
        for kind in kinds:
            mutation = data.draw(broken(problem, schedule, kinds=[kind]))
            assert mutation.kind == kind
            found = {v.kind for v in validate(problem, mutation.schedule)}
            assert kind in found, f"{mutation} not reported: {found}"

    check()


@settings(**SLACK)
@given(problems_and_schedules(pipeline_problems(max_devices=2), max_delay=0))
def test_problems_and_schedules_pairs(pair):
    problem, schedule = pair
    assert validate(problem, schedule) == ()


def _every_feature() -> tuple[Problem, Schedule]:
    """A problem and a plan from which every violation kind can be produced."""
    blocks = [
        Block(name="a", options=[Option(devices=("d0",), duration=2)], memory=2),
        Block(name="b", options=[Option(devices=("d1",), duration=1)]),
        Block(name="c", options=[Option(devices=("d0",), duration=1), Option(devices=("d1",), duration=2)],
              memory=-2),
    ]
    problem = Problem(
        graph=Graph(blocks=blocks, edges=[Edge(src="a", dst="b", size=1), Edge(src="a", dst="c")]),
        num_microbatches=2,
        cluster=Cluster(devices=[Device(name="d0", memory=3), Device(name="d1")],
                        channels=[Channel(name="link", endpoints=("d0", "d1"), time_per_unit=2)]),
        releases=[Release(block="c", microbatch=1, time=3)],
        fixed_orders=[[("c", 0), ("c", 1)]],
    )
    schedule = serial_schedule(problem)
    assert schedule is not None and validate(problem, schedule) == ()
    return problem, schedule


def test_every_violation_kind_can_be_produced():
    problem, schedule = _every_feature()
    assert producible_kinds(problem, schedule) == VIOLATION_KINDS
    for kind, sites in mutation_sites(problem, schedule).items():
        for site in sites:
            mutation = mutate(problem, schedule, kind, site)
            assert kind in {v.kind for v in validate(problem, mutation.schedule)}, mutation


def test_broken_refuses_unknown_kinds():
    problem, schedule = _every_feature()
    with pytest.raises(ValueError, match="unknown violation kind 'nope'"):
        find(broken(problem, schedule, kinds=["nope"]), lambda m: True)
    with pytest.raises(ValueError, match="'kind' must be one of"):
        mutate(problem, schedule, "nope", None)


@pytest.mark.parametrize("layout", PIPELINE_LAYOUTS)
def test_pipeline_problems_cover_every_layout(layout):
    problem = find(pipeline_problems(layouts=[layout]), lambda p: True,
                   settings=settings(database=None, phases=[Phase.generate]))
    assert problem.name.startswith(f"{layout}-")
    assert bool(problem.overlaps) == (layout in ("dualpipe", "dualpipev"))


@settings(**SLACK)
@given(pipeline_problems())
def test_pipeline_problems_keep_their_promises(problem):
    assert problem.num_microbatches * len(problem.graph.blocks) <= 48
    assert not problem.cluster.channels and all(b.is_fixed for b in problem.graph.blocks)
    assert not (problem.releases or problem.fixed_orders or problem.duration_overrides)
    assert problem.objective == "makespan"
    # feasible, and the fallback order (micro-batches one after the other) always fits
    assert serial_schedule(problem, topological_order(problem)) is not None


@settings(**SLACK)
@given(pipeline_problems(memory=False, overlaps=False, max_devices=2, max_microbatches=2))
def test_pipeline_switches(problem):
    assert not problem.overlaps
    assert all(d.memory is None for d in problem.cluster.devices)
    assert len(problem.cluster.devices) <= 2 and problem.num_microbatches <= 2


def test_pipeline_problems_refuse_unknown_layouts():
    with pytest.raises(ValueError, match="'layouts' must be a non-empty subset"):
        find(pipeline_problems(layouts=["gpipe"]), lambda p: True)


@settings(**SLACK)
@given(problems(**{f: False for f in ALL_FEATURES}))
def test_problems_with_every_feature_off(problem):
    assert all(b.is_fixed and len(b.options[0].devices) == 1 for b in problem.graph.blocks)
    assert all(b.memory == 0 and b.workspace == 0 for b in problem.graph.blocks)
    assert all(d.memory is None for d in problem.cluster.devices) and not problem.initial_memory
    assert all(e.size == 0 for e in problem.graph.edges) and not problem.cluster.channels
    assert not (problem.releases or problem.fixed_orders or problem.duration_overrides or problem.overlaps)
    assert problem.objective == "makespan"


def test_strategies_say_what_they_generate_and_never_generate():
    for strategy in (problems, pipeline_problems, overlap_problems, schedules, broken):
        doc = strategy.__doc__ or ""
        assert "What it generates" in doc and "never generates" in doc, strategy.__name__


def test_serial_schedule_follows_the_order_and_reports_dead_ends():
    blocks = [Block(name=n, options=[Option(devices=("d0",), duration=1)], memory=m) for n, m in
              (("x", 2), ("y", 2), ("z", -4))]
    problem = Problem(graph=Graph(blocks=blocks, edges=[Edge(src="x", dst="z"), Edge(src="y", dst="z")]),
                      num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=4)]))
    plan = serial_schedule(problem, [("y", 0), ("x", 0), ("z", 0)])
    assert [t.block for t in plan.tasks] == ["y", "x", "z"]
    # capacity 3: both allocations must precede the free, so no plan exists
    tight = problem.with_(cluster=Cluster(devices=[Device(name="d0", memory=3)]))
    assert serial_schedule(tight) is None
    # fixed orders against the edges: a cycle
    cycle = problem.with_(fixed_orders=[[("z", 0), ("x", 0)]])
    assert serial_schedule(cycle) is None
    with pytest.raises(SchedSearchError, match="unknown task"):
        serial_schedule(problem, [("w", 0)])


def test_serial_schedule_waits_for_a_free_and_fills_gaps():
    # capacity 1: the second allocation waits for the first free, which comes later in the order
    blocks = [Block(name="f", options=[Option(devices=("d0",), duration=1)], memory=1),
              Block(name="b", options=[Option(devices=("d1",), duration=1)], memory=0)]
    problem = Problem(graph=Graph(blocks=blocks), num_microbatches=2,
                      cluster=Cluster(devices=[Device(name="d0", memory=1), Device(name="d1")]))
    assert serial_schedule(problem, [("f", 0), ("f", 1), ("b", 0), ("b", 1)]) is None  # nothing frees memory
    freeing = problem.with_(graph=Graph(blocks=[blocks[0], Block(name="b", options=[Option(devices=("d0",),
                                                                                      duration=1)], memory=-1)],
                                        edges=[Edge(src="f", dst="b")]))
    plan = serial_schedule(freeing, [("f", 0), ("f", 1), ("b", 0), ("b", 1)], delays={("b", 1): 2})
    assert [(t.block, t.microbatch, t.start) for t in plan.tasks] == [("f", 0, 0), ("b", 0, 1), ("f", 1, 2),
                                                                     ("b", 1, 5)]
