"""solve at scale: the constructions run at every size, and every phase heeds the clock."""

from __future__ import annotations

import pytest

from schedsearch import Status, solve
from schedsearch.options import Deadline
from schedsearch.placements import vshape, vshape_chunks
from schedsearch.search.list_scheduling import PIPELINE_RULES, list_plan
from schedsearch.validate import validate


def _one_f_one_b_makespan(ranks: int, microbatches: int, forward: int = 1, backward: int = 2) -> int:
    # the published 1F1B formula (m + p - 1)(F + B), the least makespan of this placement
    return (microbatches + ranks - 1) * (forward + backward)


@pytest.mark.parametrize("ranks", [8, pytest.param(32, marks=pytest.mark.slow)])
def test_a_construction_proves_1f1b_at_1024_microbatches(ranks):
    # above the exact model's size (16,384 / 65,536 task instances) the constructions still run first and
    # one meets the bound; nothing else needs to run
    problem = vshape(ranks, 1024)
    result = solve(problem, objective="makespan", time_limit_s=120, workers=1)
    assert result.status is Status.OPTIMAL
    assert result.objective == result.lower_bound == _one_f_one_b_makespan(ranks, 1024)
    assert result.engine.startswith("handcrafted")
    assert "list" not in result.stats["phases_s"] and "exact" not in result.stats["phases_s"]
    assert not validate(problem, result.schedule)


def test_the_memory_level_starts_from_the_least_peak_construction():
    # 1F1B and GPipe both meet the time bound; GPipe holds every micro-batch's activation, 1F1B at most
    # p of them on a device: with a memory level every construction runs (whichever meets the bound first),
    # and the level starts from 1F1B's peak (at most the ranks)
    problem = vshape(8, 256)
    result = solve(problem, time_limit_s=60, workers=1, engines=("handcrafted",))
    assert result.levels[0].value == _one_f_one_b_makespan(8, 256)
    assert result.levels[1].value <= 8


def test_list_scheduling_stops_at_an_expired_deadline():
    problem = vshape_chunks(4, 16)
    spent = Deadline(1.0, deterministic=True)
    spent.charge(2.0)  # expired without any wall-clock time passing
    assert list_plan(problem, PIPELINE_RULES[0], deadline=spent) is None
    assert list_plan(problem, PIPELINE_RULES[0], deadline=Deadline(None)) is not None


def test_an_expired_clock_starts_no_construction_and_no_search(monkeypatch):
    # uneven stages: 1F1B (39) stays above the bound (38), so without the clock the list schedules and the
    # exact search would run; with every deadline expired no construction starts either (none can finish)
    import schedsearch.search.scale.driver as driver

    problem = vshape(4, 8, forward=[1, 3, 1, 1], backward=[2, 1, 2, 2])
    monkeypatch.setattr(Deadline, "left", lambda self: -1.0)

    def no_list_plan(*args, **kwargs):
        raise AssertionError("list scheduling ran after the deadline")

    monkeypatch.setattr(driver, "list_plan", no_list_plan)
    result = solve(problem, objective="makespan", time_limit_s=30, workers=1)
    assert result.status is Status.TIMEOUT and result.schedule is None
    assert result.lower_bound == 38
    assert any("handcrafted constructions skipped" in n for n in result.notes)
    assert set(result.stats["phases_s"]) <= {"bound", "handcrafted"}


def test_a_construction_starts_when_the_time_left_covers_it(monkeypatch):
    # 64 task instances at the assumed rate need well under the half second left: the constructions run
    # (the first one with no plan yet, the others within half the time left), the plan is 1F1B's family
    from schedsearch.search.portfolio import HANDCRAFTED_S_PER_TASK

    problem = vshape(4, 8, forward=[1, 3, 1, 1], backward=[2, 1, 2, 2])
    assert len(problem.tasks) * HANDCRAFTED_S_PER_TASK < 0.25
    monkeypatch.setattr(Deadline, "left", lambda self: 0.5)
    result = solve(problem, objective="makespan", time_limit_s=30, workers=1, engines=("handcrafted",))
    assert result.status is Status.FEASIBLE
    assert result.engine.startswith("handcrafted")
    assert result.lower_bound == 38 and result.objective > 38
    assert not validate(problem, result.schedule)
    assert result.notes == ()


def test_the_zero_bubble_greedy_runs_first_and_its_plan_at_the_bound_ends_the_call():
    # one stage per rank, F / I / W = 18 / 18 / 9, memory +1 / 0 / -1, 4 activations per rank: the greedy's
    # plan meets the analytic bound, so no list schedule or search runs
    from schedsearch.placements import zero_bubble

    problem = zero_bubble(4, 12, forward=18, input_grad=18, weight_grad=9, forward_memory=1, input_grad_memory=0,
                          weight_grad_memory=-1, memory=4)
    events = []
    result = solve(problem, objective="makespan", time_limit_s=60, workers=1, progress=events.append)
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound
    assert result.engine.startswith("handcrafted zero-bubble greedy")
    first_plan = next(e for e in events if e.incumbent is not None)
    assert first_plan.phase.startswith("handcrafted zero-bubble greedy")
    assert set(result.stats["phases_s"]) <= {"bound", "handcrafted"}
    assert not validate(problem, result.schedule)


def test_with_communication_time_the_greedy_still_runs_first_and_proves_the_plan():
    # the setting where the search alone ended above the bound (p = 4, m = 24, cap 8, communication 1)
    import attrs

    from schedsearch import Channel
    from schedsearch.placements import zero_bubble

    base = zero_bubble(4, 24, forward=18, input_grad=18, weight_grad=9, forward_memory=1, input_grad_memory=0,
                       weight_grad_memory=-1, memory=8)
    devices = {b.name: b.options[0].devices for b in base.graph.blocks}
    edges = [attrs.evolve(e, size=1) if devices[e.src] != devices[e.dst] else e for e in base.graph.edges]
    names = base.cluster.device_names
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), directed=True)
                for i in range(3) for a, b in ((names[i], names[i + 1]), (names[i + 1], names[i]))]
    problem = base.with_(graph=attrs.evolve(base.graph, edges=edges),
                         cluster=attrs.evolve(base.cluster, channels=channels))
    result = solve(problem, objective="makespan", time_limit_s=60, workers=1)
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound
    assert result.engine.startswith("handcrafted zero-bubble greedy")
    assert not validate(problem, result.schedule)


def test_v_half_and_v_min_get_the_work_the_time_left_covers(monkeypatch):
    # the constructions that try candidates spend at most the time left (as task instances at
    # V_TASKS_PER_S), their own default when more is left; the budget's time left, so in deterministic mode
    # the same limits on every run
    import schedsearch.handcrafted.v_capped as vc
    from schedsearch.handcrafted.families import SCHEDULES

    limits: list[int | None] = []
    real = vc.v_capped

    def recording(problem, cap=None, **kwargs):
        limits.append(kwargs.get("work_limit"))
        return real(problem, cap, **kwargs)

    monkeypatch.setattr(vc, "v_capped", recording)
    problem = vshape_chunks(4, 8, memory=6)  # a memory level follows: every construction runs
    solve(problem, time_limit_s=0.05, deterministic=True, workers=1, engines=("handcrafted",))
    assert len(limits) == 2 and all(w is not None and w <= 0.05 * vc.V_TASKS_PER_S for w in limits)
    limits.clear()
    solve(problem, deterministic=True, workers=1, engines=("handcrafted",))
    default = SCHEDULES["v-half"].generate_within(problem, {}, None)  # the default limit, called directly
    assert len(limits) == 3 and limits[0] == limits[1] == limits[2] and limits[0] > 0.05 * vc.V_TASKS_PER_S
    assert not validate(problem, default)
