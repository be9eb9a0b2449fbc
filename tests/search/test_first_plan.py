"""solve's first plan: the placement's own construction first, the bound right after the first plan.

Every call here runs in deterministic mode (every construction runs, no
wall-clock cut), so what is asserted does not depend on the machine.
"""

from __future__ import annotations

from unittest import mock

import pytest

from schedsearch import Status, solve
from schedsearch.handcrafted.v_capped import v_half_cap
from schedsearch.handcrafted.zb_greedy import _Builder, zb_greedy_plans
from schedsearch.placements import chimera, interleaved, vshape, vshape_chunks, zero_bubble
from schedsearch.result import SearchResult
from schedsearch.search.portfolio import _own_constructions
from schedsearch.validate import validate

DET = dict(time_limit_s=30, workers=1, seed=0, deterministic=True)


def _zb(p: int = 3, m: int = 8, cap: int = 4):
    # F / I / W = 3 / 2 / 2, memory +1 / 0 / -1: the greedy's variant of least longest span and its variant of
    # least makespan differ, and both meet the analytic bound
    return zero_bubble(p, m, forward=3, input_grad=2, weight_grad=2, forward_memory=1, weight_grad_memory=-1,
                       memory=cap)


def _solve(problem, **kw) -> tuple[SearchResult, list]:
    events: list = []
    result = solve(problem, progress=events.append, **{**DET, **kw})
    return result, events


@pytest.mark.parametrize("problem, source", [
    (vshape(4, 8), "handcrafted 1F1B"),
    (_zb(), "handcrafted zero-bubble greedy"),
    (vshape_chunks(4, 8, memory=v_half_cap(4)), "handcrafted V stable pattern"),
    (vshape_chunks(4, 8), "handcrafted ZB-V"),
    (interleaved(4, 2, 8), "handcrafted interleaved 1F1B"),
    (interleaved(4, 2, 8, split_backward=True), "handcrafted interleaved zero bubble"),
    (chimera(4, 4), "handcrafted Chimera"),
], ids=["1f1b", "zb", "v-capped", "v", "interleaved", "interleaved-zb", "chimera"])
def test_the_first_event_carries_the_placements_own_construction_and_the_bound_follows(problem, source):
    result, events = _solve(problem, objective="makespan")
    first = events[0]
    assert first.incumbent is not None and first.source.startswith(source)
    assert first.bound is None  # the bound comes after the first plan
    assert events[1].phase == "bound" and events[1].bound is not None
    assert events[1].incumbent == first.incumbent
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    assert result.objective <= first.incumbent and result.lower_bound >= events[1].bound


def test_the_placement_is_read_off_the_problem():
    assert _own_constructions(vshape(4, 8)) == ("1f1b", "zb-h1", "gpipe")
    assert _own_constructions(_zb())[:2] == ("zero-bubble greedy", "zb-h1")
    assert _own_constructions(vshape_chunks(4, 8))[:2] == ("V stable pattern", "zb-v")
    assert _own_constructions(interleaved(4, 3, 8))[0] == "interleaved"
    assert _own_constructions(interleaved(4, 3, 8, split_backward=True))[0] == "interleaved-zb"
    assert _own_constructions(chimera(4, 4))[0] == "chimera"
    from schedsearch.placements import dualpipe, dualpipev

    assert _own_constructions(dualpipe(4, 8))[0] == "dualpipe"
    assert _own_constructions(dualpipev(4, 8))[0] == "dualpipev"
    from schedsearch.problem import Block, Cluster, Device, Graph, Option, Problem

    job = Problem(graph=Graph(blocks=[Block(name="a", options=[Option(devices=("d0",), duration=2)])]),
                  cluster=Cluster(devices=[Device(name="d0")]), num_microbatches=1)
    assert _own_constructions(job) == ()  # not a pipeline: every construction in the library's order


def _greedy_plans_built(problem, **kw) -> tuple[SearchResult, int]:
    with mock.patch.object(_Builder, "schedule", autospec=True, side_effect=_Builder.schedule) as built:
        result, _ = _solve(problem, **kw)
    return result, built.call_count


def test_a_construction_at_the_bound_ends_the_level_before_its_next_variant():
    problem = _zb()
    variants = [v for v, _ in zb_greedy_plans(problem, objective="makespan")]
    assert len(variants) == 2  # least makespan and least longest span: two plans the greedy could give
    result, built = _greedy_plans_built(problem, objective="makespan")
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound
    assert built == 1 and result.stats["plans_seen"] == 1
    assert result.engine == f"handcrafted zero-bubble greedy ({variants[0]})"
    assert set(result.stats["phases_s"]) <= {"bound", "handcrafted"}


def test_with_a_memory_level_every_construction_still_runs():
    problem = _zb()
    result, built = _greedy_plans_built(problem)  # makespan, then the peak memory
    assert built == 2  # both of the greedy's plans
    # and every other construction that takes this placement (ZB-H1, 1F1B, GPipe fit the cap or are refused)
    assert result.stats["plans_seen"] >= 2
    assert validate(problem, result.schedule) == ()
    one_f_one_b, _ = _solve(vshape(4, 8))
    assert one_f_one_b.stats["plans_seen"] >= 2  # 1F1B and GPipe
    alone, _ = _solve(vshape(4, 8), objective="makespan")
    assert alone.stats["plans_seen"] == 1 and alone.engine == "handcrafted 1F1B"


def test_a_warm_start_at_the_bound_ends_the_level_before_any_construction():
    problem = _zb()
    _, plan = next(zb_greedy_plans(problem, objective="makespan"))
    result, events = _solve(problem, objective="makespan", warm_starts=(plan,))
    assert result.engine == "warm start 0" and result.status is Status.OPTIMAL
    assert result.stats["plans_seen"] == 1
    assert events[0].source == "warm start 0" and events[1].phase == "bound"


def test_when_no_construction_gives_a_plan_the_bound_comes_after_them():
    # a job shop: every construction refuses it; the bound is still computed (and reported) before the list
    # schedules
    from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem

    problem = Problem(
        graph=Graph(blocks=[Block(name="a", options=[Option(devices=("d0",), duration=2)]),
                            Block(name="b", options=[Option(devices=("d1",), duration=3)])],
                    edges=[Edge(src="a", dst="b")]),
        cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")]), num_microbatches=1)
    result, events = _solve(problem, objective="makespan", engines=("handcrafted",))
    assert result.schedule is None and result.lower_bound == 5
    assert [e.phase for e in events] == ["bound"]
    result, events = _solve(problem, objective="makespan", engines=("handcrafted", "list"))
    assert events[0].phase == "bound" and events[0].incumbent is None
    assert result.objective == result.lower_bound == 5


def test_one_stage_per_device_on_part_of_the_cluster_is_still_1f1bs_placement():
    import attrs

    from schedsearch.problem import Device

    problem = vshape(4, 8)
    spare = (*problem.cluster.devices, Device(name="spare"))
    wider = problem.with_(cluster=attrs.evolve(problem.cluster, devices=spare))
    assert _own_constructions(wider)[0] == "1f1b"
    result, events = _solve(wider, objective="makespan")
    assert events[0].source == "handcrafted 1F1B" and validate(wider, result.schedule) == ()
