"""Memory-aware list scheduling."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from pipeline_strategies import pipeline_problems
from schedsearch.bounds import analytic_lower_bound
from schedsearch.errors import UnsupportedFeatureError
from schedsearch.placements import chain_pipelines, dualpipe, dualpipev, vshape
from schedsearch.problem import Block, Channel, Cluster, Graph, Option, Problem
from schedsearch.schedule import metrics, peak_memory
from schedsearch.result import Status
from schedsearch.search.list_scheduling import PIPELINE_RULES, PipelineRule, best_list_schedule, list_plan, list_schedule
from schedsearch.validate import validate

FIW = PipelineRule(kind_order="FIW")


@settings(max_examples=40)
@given(pipeline_problems())
def test_every_list_schedule_is_valid(problem):
    for rule in PIPELINE_RULES[:6]:
        for pairs in (False, True):
            result = list_schedule(problem, rule, form_groups=pairs)
            assert result.status in (Status.OPTIMAL, Status.FEASIBLE, Status.UNKNOWN)
            if result.schedule is not None:
                assert validate(problem, result.schedule) == ()
                assert result.lower_bound <= result.objective and str(rule) in result.engine


@pytest.mark.parametrize("PP, chunks", [(4, 8), (4, 16), (8, 16), (8, 32), (16, 32)])
def test_forward_first_reaches_the_bound_on_dualpipe(PP, chunks):
    # with PP activations per device (one fewer than DualPipe's PP + 1), F > I > W reaches the
    # per-device bound: the middle device cannot start before PP/2 - 1 and has 3 units of
    # work per chunk, so makespan >= PP/2 - 1 + 3 chunks; bubble PP/2 - 1 (DualPipe: PP - 2)
    problem = dualpipe(PP, chunks, memory=PP).with_(overlaps=())
    result = list_schedule(problem, FIW)
    assert result.status is Status.OPTIMAL and result.bound_engine == "analytic"  # proven by the bound
    s = result.schedule
    assert s.makespan == PP // 2 - 1 + 3 * chunks == analytic_lower_bound(problem).value
    mt = metrics(problem, s)
    assert mt.bubble_global == PP // 2 - 1
    assert max(mt.peak_memory.values()) == PP


def test_memory_deadlock_is_none():
    # one activation fewer: the forward-first rule fills memory with forwards it cannot retire
    assert list_plan(dualpipe(4, 8, memory=3).with_(overlaps=()), FIW) is None
    result = list_schedule(dualpipe(4, 8, memory=3).with_(overlaps=()), FIW)
    assert result.status is Status.UNKNOWN and result.lower_bound is not None


def test_transfers_are_booked_on_channels():
    # two devices, a transfer of 2 units per forward edge on one channel
    p = chain_pipelines([[0, 1]], 2, 3)
    edges = [(e.src, e.dst, 2 if (e.src, e.dst) == ("F0", "F1") else 0) for e in p.graph.edges]
    p = p.with_(graph=Graph(blocks=p.graph.blocks, edges=edges),
                cluster=Cluster(devices=p.cluster.devices, channels=[Channel(name="c", endpoints=("d0", "d1"))]))
    s = list_plan(p, FIW)
    assert validate(p, s) == () and len(s.transfers) == 3
    assert all(b.start >= a.end for a, b in zip(s.transfers, s.transfers[1:]))


def test_groups_are_formed_only_on_request_and_stay_valid():
    p = dualpipev(2, 4, overlap=2)
    plain = list_plan(p, FIW)
    paired = list_plan(p, FIW, form_groups=True)
    assert all(t.overlap is None for t in plain.tasks)
    assert any(t.overlap == "F&B" for t in paired.tasks)
    assert validate(p, paired) == ()


def test_best_of_a_portfolio_stops_at_the_target():
    p = vshape(4, 8, memory=4)
    result = best_list_schedule(p, target=33)
    s, tried = result.schedule, result.stats["rules_tried"]
    # 1F1B's makespan (the bound): the forward-first rules run out of memory on the full
    # backward's placement; backward-first reaches it, and the portfolio stops there
    assert s.makespan == 33 and result.stats["rule"].startswith("I") and tried < len(PIPELINE_RULES)
    assert result.engine == f"list scheduling ({PIPELINE_RULES[tried - 1]})"
    assert result.status is Status.OPTIMAL
    assert max(peak_memory(p, s).values()) <= 4


def test_rules_and_placements_are_checked():
    with pytest.raises(ValueError, match="'kind_order'"):
        PipelineRule(kind_order="FFI")
    with pytest.raises(ValueError, match="'stage_order'"):
        PipelineRule(stage_order="up")
    flexible = Problem(graph=Graph(blocks=[Block(name="a", options=[Option(devices=("d0",), duration=1),
                                                                    Option(devices=("d1",), duration=1)])]),
                       num_microbatches=1, cluster=Cluster(devices=["d0", "d1"]))
    with pytest.raises(UnsupportedFeatureError, match="several options"):
        list_schedule(flexible, FIW)
    assert str(FIW).startswith("F > I > W")


def test_groups_against_an_edge_are_never_formed():
    # the overlap lists b1 before b0, but b0 -> b1: such a group cannot run, so the
    # list scheduler must not form it (it used to, and its plan failed validation)
    from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Overlap, Problem
    from schedsearch.validate import validate

    blocks = [Block(name=n, kind="F", options=[Option(devices=("d0",), duration=1)]) for n in ("b0", "b1", "b2")]
    problem = Problem(graph=Graph(blocks=blocks, edges=[Edge(src="b0", dst="b1"), Edge(src="b0", dst="b2")]),
                      num_microbatches=1, cluster=Cluster(devices=[Device(name="d0")]),
                      overlaps=[Overlap(blocks=("b1", "b0"), duration=1, name="g0", same_microbatch=(("b1", "b0"),))])
    for rule in PIPELINE_RULES[:4]:
        plan = list_plan(problem, rule, form_groups=True)
        assert plan is not None and not validate(problem, plan)
        assert all(t.overlap is None for t in plan.tasks)


def test_same_microbatch_members_are_formed_together():
    # two members without an edge between them, declared to share a micro-batch
    from schedsearch.problem import Block, Cluster, Device, Graph, Option, Overlap, Problem
    from schedsearch.validate import validate

    blocks = [Block(name=n, kind=k, options=[Option(devices=("d0",), duration=2)]) for n, k in (("a", "F"), ("b", "W"))]
    problem = Problem(graph=Graph(blocks=blocks, edges=[]), num_microbatches=3,
                      cluster=Cluster(devices=[Device(name="d0")]),
                      overlaps=[Overlap(blocks=("a", "b"), duration=2, name="g", same_microbatch=(("a", "b"),))])
    for rule in PIPELINE_RULES:
        plan = list_plan(problem, rule, form_groups=True)
        assert plan is not None and not validate(problem, plan)


def test_a_group_lasts_its_longest_member_instance():
    # b0 of micro-batch 0 lasts 2 (an override); the group declared at 1 lasts 2
    from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Overlap, Problem
    from schedsearch.validate import validate

    blocks = [Block(name=n, kind="F", options=[Option(devices=("d0",), duration=1)]) for n in ("b0", "b1")]
    problem = Problem(graph=Graph(blocks=blocks, edges=[Edge(src="b0", dst="b1")]), num_microbatches=1,
                      cluster=Cluster(devices=[Device(name="d0")]), duration_overrides=[("b0", 0, (2,))],
                      overlaps=[Overlap(blocks=("b0", "b1"), duration=1, name="g0", same_microbatch=(("b0", "b1"),))])
    for rule in PIPELINE_RULES[:4]:
        plan = list_plan(problem, rule, form_groups=True)
        assert plan is not None and not validate(problem, plan)


def test_one_front_takes_either_family_of_rules():
    # a HEFT rule's name and a pipeline rule go through the same list_plan and list_schedule
    p = vshape(2, 4, memory=2)
    heft_plan = list_plan(p, "upward_rank")
    pipeline_plan = list_plan(p, FIW)
    assert not validate(p, heft_plan) and not validate(p, pipeline_plan)
    assert list_schedule(p, "longest_path").engine == "list scheduling (HEFT, longest_path)"
    assert list_schedule(p, FIW).engine == f"list scheduling ({FIW})"
    # the portfolio takes HEFT rules too
    assert best_list_schedule(p, ["upward_rank", FIW]).stats["rules_tried"] == 2


@pytest.mark.parametrize("call, fragment", [
    (lambda p: list_plan(p, FIW, priority={}), "'priority' applies to the HEFT rules"),
    (lambda p: list_plan(p, FIW, insertion=False), "'insertion' applies to the HEFT rules"),
    (lambda p: list_plan(p, "upward_rank", form_groups=True), "'form_groups' applies to pipeline rules"),
    (lambda p: list_plan(p, "fastest"), "'rule' must be one of ('upward_rank'"),
    (lambda p: list_schedule(p, 3), "or a PipelineRule, got 3"),
], ids=["priority", "insertion", "form_groups", "unknown name", "not a rule"])
def test_a_knob_of_the_other_family_is_named(call, fragment):
    with pytest.raises(ValueError) as info:
        call(vshape(2, 2))
    assert fragment in str(info.value)
