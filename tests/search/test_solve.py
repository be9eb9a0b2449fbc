"""The front door: solve() against the brute-force oracle, its levels, its attribution, its options.

Oracle examples: 40 general problems and 25 pipelines in the ``ci`` profile,
1,500 and 600 in ``thorough`` (``HYPOTHESIS_PROFILE=thorough``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings

import schedsearch
from schedsearch import Level, SearchOptions, Status, solve
from schedsearch.errors import InvalidOptionsError, InvalidProblemError, SchedSearchError
from schedsearch.placements import vshape, zero_bubble
from schedsearch.problem import Cluster, Device, Problem
from schedsearch.schedule import objective_value, peak_memory
from schedsearch.testing import OracleTooLarge, exact_optimum, pipeline_problems, problems
from schedsearch.testing.checks import assert_result_consistent
from schedsearch.validate import validate

LIMIT = dict(time_limit_s=20, seed=0, workers=1)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
GENERAL = {"thorough": 1500, "dev": 10}.get(PROFILE, 40)
PIPELINES = {"thorough": 600, "dev": 10}.get(PROFILE, 25)
ORACLE = dict(max_tasks=8, node_limit=300_000)


def at_most(problem: Problem, capacity: int) -> Problem:
    """Every device's memory at most ``capacity`` (written here, apart from the library's rewrite)."""
    devices = [Device(name=d.name, memory=capacity if d.memory is None else min(d.memory, capacity),
                      speed_class=d.speed_class) for d in problem.cluster.devices]
    return problem.with_(cluster=Cluster(devices=devices, channels=problem.cluster.channels))


def oracle_value(problem: Problem) -> int | None:
    try:
        return exact_optimum(problem, **ORACLE).value
    except OracleTooLarge:
        assume(False)


def test_v_4x16_is_57_with_the_peak_of_1f1b_proven():
    result = solve(vshape(4, 16), time_limit_s=60)
    assert result.status is Status.OPTIMAL
    assert (result.objective, result.lower_bound) == (57, 57)
    assert [lv.name for lv in result.levels] == ["makespan", "peak_memory"]
    assert result.levels[1].value == 4 and result.levels[1].proven
    assert max(peak_memory(result.problem, result.schedule).values()) == 4
    assert result.engine and result.bound_engine
    assert result.proven_levels == 2


def test_one_level_when_blocks_hold_no_memory():
    problem = vshape(3, 4, forward_memory=0)
    result = solve(problem, time_limit_s=30)
    assert result.levels == () and result.status is Status.OPTIMAL


def test_memory_first_then_time():
    problem = vshape(3, 6)
    result = solve(problem, objective=("peak_memory", "makespan"), time_limit_s=60)
    assert result.objective_name == "peak_memory"
    peak, time_level = result.levels
    # 1F1B's least peak on 3 devices is 3 on the first device: one activation per stage in flight
    assert peak.value == max(peak_memory(problem, result.schedule).values())
    assert time_level.value == objective_value(result.schedule, "makespan")
    if result.status is Status.OPTIMAL:
        assert peak.proven and time_level.proven


def test_a_level_proven_only_partly_is_not_optimal():
    levels = (Level(name="makespan", value=10, bound=10), Level(name="peak_memory", value=5, bound=4))
    from schedsearch.result import SearchResult

    result = SearchResult(status=Status.OPTIMAL, objective=10, lower_bound=10, levels=levels)
    assert result.status is Status.FEASIBLE and result.proven_levels == 1


def test_handcrafted_plans_are_found_without_naming_them():
    problem = zero_bubble(4, 8)
    result = solve(problem, time_limit_s=30, engines=("handcrafted",))
    assert result.schedule is not None and result.engine.startswith("handcrafted")
    assert not validate(problem, result.schedule)


def test_options_object_and_keywords_agree_and_typos_are_named():
    problem = vshape(2, 3)
    a = solve(problem, options=SearchOptions(time_limit_s=10, seed=1))
    b = solve(problem, time_limit_s=10, seed=1)
    assert (a.objective, a.status) == (b.objective, b.status)
    with pytest.raises(InvalidOptionsError, match="time_limt_s"):
        solve(problem, time_limt_s=3)
    with pytest.raises(InvalidOptionsError, match="objective"):
        solve(problem, objective="throughput")
    with pytest.raises(InvalidOptionsError, match="engines"):
        solve(problem, engines=("magic",))


def test_progress_events_name_their_phase():
    events = []
    solve(vshape(3, 4), time_limit_s=20, progress=events.append)
    assert events and all(e.phase for e in events)
    assert any(e.phase == "bound" for e in events)


def test_progress_events_say_what_found_the_incumbent():
    # the V-Half cap as every device's capacity: the first plan is a handcrafted construction's, and every
    # event from then on names the engine of the best plan so far, the last one the result's
    from schedsearch.handcrafted.v_capped import v_half_cap
    from schedsearch.placements import vshape_chunks

    problem = vshape_chunks(4, 8, memory=v_half_cap(4))
    events = []
    result = solve(problem, objective="makespan", time_limit_s=20, workers=1, progress=events.append)
    with_plan = [e for e in events if e.incumbent is not None]
    assert with_plan and all(e.source for e in with_plan)
    assert with_plan[0].source.startswith("handcrafted")
    assert [e.elapsed_s for e in events] == sorted(e.elapsed_s for e in events)
    assert (with_plan[-1].incumbent, with_plan[-1].source) == (result.objective, result.engine)
    assert f"incumbent {result.objective} ({result.engine})" in str(with_plan[-1])


def test_top_level_export_and_result_export(tmp_path):
    assert schedsearch.solve is solve
    result = solve(vshape(2, 3), time_limit_s=10)
    text = result.export("json")
    assert '"result"' in text and '"engine"' in text
    path = result.export("torch-csv", tmp_path / "plan.csv")
    assert path.read_text().strip()


def _check_levels(problem: Problem, result) -> None:
    assert_result_consistent(problem, result, "solve")
    truth = oracle_value(problem)
    if truth is None:
        assert result.schedule is None
        return
    assert result.status is not Status.INFEASIBLE
    first = result.levels[0] if result.levels else Level(name=result.objective_name, value=result.objective,
                                                          bound=result.lower_bound)
    if first.bound is not None:
        assert first.bound <= truth, f"bound {first.bound} above the optimum {truth}"
    if result.schedule is None:
        return
    assert result.objective >= truth
    if first.proven:
        assert first.value == truth, f"proven {first.value}, the optimum is {truth}"
    if len(result.levels) > 1:
        peak = result.levels[1]
        assert peak.value == max(peak_memory(problem, result.schedule).values())
        if peak.bound is not None and first.proven:
            # no plan of the optimal time fits under the bound's capacity less one
            try:
                tighter = at_most(problem, peak.bound - 1) if peak.bound > 0 else None
            except InvalidProblemError:  # a block no longer fits: the model has no such problem
                tighter = None
            if tighter is not None:
                below = oracle_value(tighter)
                assert below is None or below > truth, (
                    f"peak bound {peak.bound}, but capacity {peak.bound - 1} reaches {below} <= {truth}")


@settings(max_examples=GENERAL, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(problems(max_tasks=6))
def test_claims_of_every_level_agree_with_the_oracle(problem):
    _check_levels(problem, solve(problem, **LIMIT))


@settings(max_examples=PIPELINES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(pipeline_problems(max_tasks=8, max_microbatches=3))
def test_pipeline_levels_agree_with_the_oracle(problem):
    _check_levels(problem, solve(problem, **LIMIT))


@settings(max_examples=60, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(pipeline_problems(max_tasks=120, max_microbatches=10))
def test_handcrafted_constructions_never_fail_on_a_pipeline(problem):
    # solve tries every construction on every problem: each either declines with a model
    # error or gives a plan (kept only when it validates)
    from schedsearch.search.portfolio import _handcrafted

    for build, _ in _handcrafted(problem):
        try:
            plans = build()
        except SchedSearchError:
            continue  # declined: not its placement
        for schedule, engine in plans:
            assert engine.startswith("handcrafted")
            validate(problem, schedule)


@pytest.mark.parametrize("objective", [("peak_memory", "makespan"), ("peak_memory",)])
def test_memory_first_keeps_a_valid_warm_start_that_holds_more_than_the_least_peak(objective):
    # GPipe's plan is valid for the user's problem but holds every micro-batch's activations: the time level
    # under the least peak the walk finds must leave it out, not call the user's plan invalid
    from schedsearch.handcrafted import reproduce

    problem = vshape(2, 4)
    gpipe = reproduce("gpipe", devices=2, microbatches=4).schedule
    assert validate(problem, gpipe) == ()
    result = solve(problem, objective=objective, warm_starts=[gpipe], time_limit_s=30, workers=1, seed=0,
                   deterministic=True)
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    assert result.objective == max(peak_memory(problem, result.schedule).values()) < max(
        peak_memory(problem, gpipe).values())
    # a warm start that is not a plan of the problem asked is still refused at the door
    with pytest.raises(InvalidOptionsError, match="warm start 0"):
        solve(vshape(3, 4), objective=objective, warm_starts=[gpipe], time_limit_s=5)
