"""The hard stop of a call (:mod:`schedsearch.deadline`), tested by counted work and fake clocks, never by
timing: a clock here advances only when it is read, so what stops where is the same on any machine."""

from __future__ import annotations

import time

import pytest

from schedsearch import handcrafted, placements
from schedsearch.deadline import STRIDE, checkpoint, current_stop, grace_s, stopping, unstopped
from schedsearch.errors import DeadlineExceeded, SchedSearchError
from schedsearch.options import Deadline
from schedsearch.result import Status
from schedsearch.search.portfolio import solve
from schedsearch.validate import validate


class Reads:
    """A clock that moves one unit each time it is read: a deadline of ``n`` units stops after ``n``
    readings, that is after about ``n * STRIDE`` units of counted work."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _work_until_stopped(deadline: Deadline, units: int, grace: float = 0.0) -> int:
    done = 0
    with pytest.raises(DeadlineExceeded), stopping(deadline, grace=grace):
        for _ in range(units):
            checkpoint()
            done += 1
    return done


def test_a_stop_is_noticed_within_one_stride_of_work():
    clock = Reads()
    done = _work_until_stopped(Deadline(10.0, clock=clock), 10 * STRIDE * 4)
    # the clock is read at the first checkpoint and then every STRIDE units; it passes 10 at its 10th reading
    assert done == 9 * STRIDE


def test_work_is_counted_not_calls():
    clock = Reads()
    deadline = Deadline(5.0, clock=clock)
    calls = 0
    with pytest.raises(DeadlineExceeded), stopping(deadline, grace=0.0):
        for _ in range(1000):
            checkpoint(STRIDE)  # each call is a stride of work: the clock is read at every one
            calls += 1
    assert calls == 4


def test_no_stop_outside_stopping_without_limit_or_in_deterministic_mode():
    clock = Reads()
    for _ in range(10 * STRIDE):
        checkpoint()
    assert clock.now == 0.0 and current_stop() is None
    for deadline in (Deadline(None, clock=clock), Deadline(1.0, deterministic=True, clock=clock)):
        with stopping(deadline) as stop:
            assert stop is None
            for _ in range(10 * STRIDE):
                checkpoint()
    assert clock.now == 2.0  # each deadline read its clock once, at its start: no stop ever read it


def test_the_earlier_of_nested_stops_holds_and_unstopped_lifts_both():
    clock = Reads()
    outer = Deadline(3.0, clock=clock)  # t0 = 1: stop at 4
    inner = Deadline(100.0, clock=clock)  # t0 = 2: stop at 102, but the outer one comes first
    with stopping(outer, grace=0.0):
        with stopping(inner, grace=0.0) as stop:
            assert stop is not None and stop.at == 4.0
            with unstopped():
                for _ in range(100 * STRIDE):
                    checkpoint()
            with pytest.raises(DeadlineExceeded):
                for _ in range(100 * STRIDE):
                    checkpoint()


def test_an_outer_stop_on_another_clock_still_holds():
    outer_clock, inner_clock = Reads(), Reads()
    outer = Deadline(3.0, clock=outer_clock)
    inner = Deadline(1000.0, clock=inner_clock)
    done = 0
    with pytest.raises(DeadlineExceeded), stopping(outer, grace=0.0), stopping(inner, grace=0.0):
        for _ in range(1000 * STRIDE):
            checkpoint()
            done += 1
    assert done < 5 * STRIDE


def test_the_grace_is_a_fifth_of_what_a_call_may_overrun():
    for limit in (1.0, 5.0, 30.0):
        assert grace_s(limit) == pytest.approx((0.5 + 0.05 * limit) / 5)


def test_deadline_exceeded_is_of_the_library_hierarchy():
    assert issubclass(DeadlineExceeded, SchedSearchError) and issubclass(DeadlineExceeded, TimeoutError)


def _counted(readings: float) -> Deadline:
    return Deadline(readings, clock=Reads())


def test_a_construction_is_stopped_where_it_is():
    problem = placements.vshape_chunks(8, 64)
    with pytest.raises(DeadlineExceeded), stopping(_counted(3.0), grace=0.0):
        handcrafted.zb_v(problem)


def test_a_construction_not_stopped_gives_the_same_plan():
    problem = placements.vshape_chunks(8, 64)
    free = handcrafted.zb_v(problem)
    with stopping(_counted(1e9), grace=0.0):
        stopped = handcrafted.zb_v(problem)
    assert stopped.tasks == free.tasks and not validate(problem, stopped)


def test_solve_stopped_before_any_plan_says_timeout_with_a_bound():
    problem = placements.vshape_chunks(8, 64)
    with stopping(_counted(5.0), grace=0.0):
        result = solve(problem, objective="makespan", seed=0, workers=1)
    assert result.status is Status.TIMEOUT and result.schedule is None
    assert result.lower_bound is not None and result.lower_bound > 0
    assert any("stopped at the time limit" in note for note in result.notes)


def test_solve_stopped_after_its_first_plan_keeps_it():
    problem = placements.vshape_chunks(8, 64)
    free = solve(problem, objective="makespan", seed=0, workers=1, engines=("handcrafted",))
    # enough readings for the first construction, its validation and the bound, not for everything after
    with stopping(_counted(1e9), grace=0.0) as stop:
        solve(problem, objective="makespan", seed=0, workers=1, engines=("handcrafted",))
        work = stop.work
    with stopping(_counted(work / STRIDE * 0.9), grace=0.0):
        result = solve(problem, objective="makespan", seed=0, workers=1, engines=("handcrafted",))
    assert result.schedule is not None and not validate(problem, result.schedule)
    assert result.objective >= free.objective


def test_solve_results_are_the_same_under_a_stop_that_does_not_fall():
    for problem in (placements.vshape(4, 8), placements.vshape_chunks(4, 8), placements.zero_bubble(4, 8)):
        free = solve(problem, seed=0, workers=1, deterministic=True, time_limit_s=5)
        with stopping(_counted(1e9), grace=0.0):
            stopped = solve(problem, seed=0, workers=1, deterministic=True, time_limit_s=5)
        assert (stopped.status, stopped.objective, stopped.lower_bound, stopped.engine) == \
            (free.status, free.objective, free.lower_bound, free.engine)
        assert stopped.schedule.tasks == free.schedule.tasks


def test_a_candidate_whose_turn_comes_after_the_end_is_not_searched():
    import attrs

    from schedsearch.plan import planner
    from schedsearch.plan.evaluation import _evaluate, _measured_share
    from schedsearch.plan.outcome import Reason
    from schedsearch.plan.pipeline import Pipeline

    pipeline = Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[
        {"name": "a", "forward_ms": 1.0, "backward_ms": 2.0}, {"name": "b", "forward_ms": 1.0, "backward_ms": 2.0}])
    prepared = planner._prepare(pipeline, time_limit_s=10, parallel=1, deterministic=False, seed=0)
    task = attrs.evolve(prepared.tasks[0], ends_at=time.time() - 1.0, turn=(0, 1, 1))
    outcome = _evaluate(task)
    assert outcome.schedule is None and outcome.row.reason is Reason.TIMED_OUT
    assert outcome.row.status is Status.TIMEOUT
    # the share of a candidate: the call's time left over the rounds left, its own included
    assert _measured_share(6.0, (0, 8, 2)) == 1.5 and _measured_share(6.0, (7, 8, 2)) == 6.0


def test_a_call_given_a_gap_stops_at_the_first_plan_within_it():
    problem = placements.vshape_chunks(4, 16, forward=2, input_grad=2, weight_grad=1, memory=5)
    common = dict(objective="makespan", time_limit_s=1, seed=0, workers=1, deterministic=True)
    within = solve(problem, gap=0.2, **common)
    assert within.status is Status.FEASIBLE and within.objective <= 1.2 * within.lower_bound
    assert within.engine.startswith("handcrafted") and set(within.stats["phases_s"]) <= {"bound", "handcrafted"}
    assert not validate(problem, within.schedule)
    full = solve(problem, **common)  # the constructions' later plans and the list phase run too
    assert "list" in full.stats["phases_s"] and full.objective <= within.objective



def test_a_gap_must_be_a_number_at_least_zero():
    from schedsearch.errors import InvalidOptionsError

    with pytest.raises(InvalidOptionsError, match="'gap' must be a finite number >= 0"):
        solve(placements.vshape(2, 2), gap=-0.1)


def test_a_gap_reaches_the_backend_searches_that_have_one():
    from schedsearch.search.run import Run

    problem = placements.vshape(2, 2)
    cpsat = Run.open(problem, None, {"gap": 0.05, "backend": "cpsat"}, "solve")
    assert cpsat.solve_options().backend_params == {"relative_gap_limit": 0.05}
    own = Run.open(problem, None, {"gap": 0.05, "backend_params": {"relative_gap_limit": 0.1}}, "solve")
    assert own.solve_options().backend_params == {"relative_gap_limit": 0.1}
    z3 = Run.open(problem, None, {"gap": 0.05, "backend": "z3"}, "solve")
    assert z3.solve_options().backend_params == {}
