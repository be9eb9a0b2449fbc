"""The measured trace's order checks and the predicted-against-measured arithmetic, on traces built here.

No torch and no processes: a trace is written down as the plan says (every
stage call exactly when planned), then deliberately reordered; the order
checks must pass the first and catch each reordering. The comparison's
figures are checked against sums computed here from the trace itself.
"""

from __future__ import annotations

import statistics

import pytest

from schedsearch.actions import Action
from schedsearch.handcrafted import reproduce
from schedsearch.runtime.trace import (
    Compute,
    Event,
    MeasuredTrace,
    StepTrace,
    compare,
    measured_schedule,
    order_violations,
    row_order_violations,
)

UNIT_S = 1e-3


def _problem(name: str = "1f1b", **params):
    rep = reproduce(name, devices=params.pop("devices", 3), microbatches=params.pop("microbatches", 4), **params)
    return rep.problem.with_(time_unit_s=UNIT_S), rep.schedule


def _as_planned(problem, schedule, stretch: float = 1.0, lag_s: float = 0.0) -> StepTrace:
    """A step whose stage calls run exactly as planned (times ``stretch``, each ``lag_s`` late), rank
    by rank from the schedule's own tasks (not through the module's mapping)."""
    kinds = {b.name: (b.kind, b.stage) for b in problem.graph.blocks}
    devices = list(problem.cluster.device_names)
    computes = []
    for t in schedule.tasks:
        kind, stage = kinds[t.block]
        computes.append(Compute(rank=devices.index(t.devices[0]), action=Action(stage, kind, t.microbatch),
                                start_s=stretch * t.start * UNIT_S + lag_s, end_s=stretch * t.end * UNIT_S + lag_s))
    events = tuple(Event(rank=c.rank, label=str(c.action), action=c.action, start_s=c.start_s - lag_s / 2, end_s=c.end_s)
                   for c in computes)
    end = max(c.end_s for c in computes)
    spans = tuple((0.0, end) for _ in devices)
    return StepTrace(rank_spans=spans, events=events, computes=tuple(computes))


def _trace(*steps: StepTrace) -> MeasuredTrace:
    n = len(steps[0].rank_spans)
    return MeasuredTrace(num_ranks=n, steps=steps, clock_offsets_s=(0.0,) * n, clock_rtt_s=(0.0,) * n)


def _swap(step: StepTrace, a: tuple[int, str, int], b: tuple[int, str, int]) -> StepTrace:
    """The same step with the intervals of stage calls ``a`` and ``b`` exchanged (a reordering)."""
    ca = next(c for c in step.computes if c.action == Action(*a))
    cb = next(c for c in step.computes if c.action == Action(*b))
    out = []
    for c in step.computes:
        if c is ca:
            c = Compute(rank=c.rank, action=c.action, start_s=cb.start_s,
                        end_s=cb.end_s)
        elif c is cb:
            c = Compute(rank=c.rank, action=c.action, start_s=ca.start_s,
                        end_s=ca.end_s)
        out.append(c)
    return StepTrace(rank_spans=step.rank_spans, events=step.events, computes=tuple(out))


def _rows(problem, schedule):
    kinds = {b.name: (b.kind, b.stage) for b in problem.graph.blocks}
    return [[Action(kinds[t.block][1], kinds[t.block][0], t.microbatch) for t in sorted(schedule.on_device(d),
                                                                                         key=lambda t: t.start)]
            for d in problem.cluster.device_names]


@pytest.mark.parametrize("name", ["1f1b", "zb-h1", "interleaved", "zb-v"])
def test_a_trace_that_runs_the_plan_passes_the_order_checks(name):
    problem, schedule = _problem(name)
    step = _as_planned(problem, schedule, stretch=1.3, lag_s=2e-4)
    assert order_violations(problem, schedule, _trace(step)) == ()
    assert row_order_violations(_rows(problem, schedule), step) == ()
    measured = measured_schedule(problem, schedule, _trace(step))
    assert len(measured.tasks) == len(schedule.tasks)


def test_a_rank_that_swaps_two_independent_actions_is_caught():
    # 1F1B, rank 0: its second forward and its first backward have no dependency between them
    problem, schedule = _problem("1f1b", devices=2, microbatches=4)
    step = _as_planned(problem, schedule)
    bad = _swap(step, (0, "F", 1), (0, "B", 0))
    found = order_violations(problem, schedule, _trace(bad))
    assert any(v.kind == "fixed_order" and "rank 0" in v.message and "stage 0 B of micro-batch 0" in v.message
               for v in found), found
    assert any("rank 0" in m for m in row_order_violations(_rows(problem, schedule), bad))


def test_a_forward_run_before_its_input_is_caught():
    # rank 0 runs micro-batch 1's forward before micro-batch 0's: rank 1's forward of micro-batch 0 then
    # starts before its input exists
    problem, schedule = _problem("1f1b", devices=2, microbatches=4)
    bad = _swap(_as_planned(problem, schedule), (0, "F", 0), (0, "F", 1))
    kinds = {v.kind for v in order_violations(problem, schedule, _trace(bad))}
    assert "dependency" in kinds and "fixed_order" in kinds


def test_a_missing_action_is_caught():
    problem, schedule = _problem("zb-h1", devices=2, microbatches=3)
    step = _as_planned(problem, schedule)
    short = StepTrace(rank_spans=step.rank_spans, events=step.events,
                      computes=tuple(c for c in step.computes if c.action != Action(1, "W", 2)))
    found = order_violations(problem, schedule, _trace(short))
    assert [v.kind for v in found] == ["missing_task"]
    assert row_order_violations(_rows(problem, schedule), short)


def test_order_checks_are_exact_below_the_time_unit():
    # two dependent calls 1 microsecond apart, far below the 1 ms unit: in order passes, reversed fails
    problem, schedule = _problem("1f1b", devices=2, microbatches=1)
    step = _as_planned(problem, schedule)
    f0 = next(c for c in step.computes if c.action == Action(0, "F", 0))
    moved = []
    for c in step.computes:
        if c.action == Action(1, "F", 0):
            c = Compute(rank=c.rank, action=Action(1, "F", 0), start_s=f0.end_s + 1e-6, end_s=c.end_s)
        moved.append(c)
    ok = StepTrace(rank_spans=step.rank_spans, events=step.events, computes=tuple(moved))
    assert order_violations(problem, schedule, _trace(ok)) == ()
    late = [Compute(rank=c.rank, action=c.action,
                    start_s=c.start_s + (2e-6 if c.action == Action(0, "F", 0) else 0.0),
                    end_s=c.end_s + (2e-6 if c.action == Action(0, "F", 0) else 0.0)) for c in moved]
    bad = StepTrace(rank_spans=step.rank_spans, events=step.events, computes=tuple(late))
    assert [v.kind for v in order_violations(problem, schedule, _trace(bad))] == ["dependency"]


def test_compare_reports_the_ratio_and_a_breakdown_that_sums_to_the_difference():
    problem, schedule = _problem("zb-h1", devices=3, microbatches=4)
    steps = [_as_planned(problem, schedule, stretch=s, lag_s=1e-4) for s in (2.0, 1.10, 1.20, 1.15)]
    fid = compare(problem, schedule, _trace(*steps))
    predicted = schedule.makespan * UNIT_S
    assert fid.predicted_step_s == pytest.approx(predicted)
    assert [s.step for s in fid.steps] == [1, 2, 3]  # the first step is warm-up
    measured = [max(b for _, b in st.rank_spans) for st in steps[1:]]
    assert fid.step_time_s == pytest.approx(statistics.median(measured))
    assert fid.ratio == pytest.approx(statistics.median(measured) / predicted)
    assert fid.order_ok
    for s in fid.steps:
        b = s.breakdown
        assert b.total_s == pytest.approx(s.measured_s - s.predicted_s, abs=1e-12)
        # the calls were stretched, not delayed by transfers: the extra time is compute and waiting
        assert b.communication_s == 0.0
        assert b.compute_s > 0
    # step 2 ran every call 1.2 x its planned start + 0.1 ms: the start errors are exactly those
    errors = [0.2 * t.start * UNIT_S + 1e-4 for t in schedule.tasks]
    assert fid.steps[1].start_error_median_s == pytest.approx(statistics.median(errors))
    assert fid.steps[1].start_error_p95_s == pytest.approx(statistics.quantiles(errors, n=20, method="inclusive")[18])


def test_compare_reports_how_much_longer_than_planned_the_calls_lasted():
    problem, schedule = _problem("1f1b", devices=2, microbatches=3)
    fid = compare(problem, schedule, _trace(_as_planned(problem, schedule, stretch=1.5)), warmup=0)
    excess = [0.5 * (t.end - t.start) * UNIT_S for t in schedule.tasks]
    assert fid.steps[0].call_excess_median_s == pytest.approx(statistics.median(excess))
    assert fid.steps[0].call_excess_p95_s == pytest.approx(statistics.quantiles(excess, n=20, method="inclusive")[18])


def test_compare_with_a_plan_prediction_predicts_its_makespan_plus_the_step_overhead():
    from schedsearch.runtime.trace import Prediction

    problem, schedule = _problem("1f1b", devices=3, microbatches=4)
    steps = [_as_planned(problem, schedule, stretch=s) for s in (1.5, 1.1, 1.3)]
    # a plan table's makespan (unrounded: a little under the problem's) and a calibrated cost per step
    prediction = Prediction(makespan_ms=1e3 * schedule.makespan * UNIT_S - 0.125, step_overhead_ms=2.5,
                            source="plan table")
    fid = compare(problem, schedule, _trace(*steps), prediction=prediction)
    assert fid.predicted_step_s == pytest.approx((1e3 * schedule.makespan * UNIT_S - 0.125 + 2.5) / 1e3)
    assert fid.ratio == pytest.approx(fid.step_time_s / fid.predicted_step_s)
    parts = fid.to_dict()["prediction"]
    assert parts["makespan_source"] == "plan table" and parts["step_overhead_ms"] == 2.5
    assert parts["step_ms"] == pytest.approx(parts["makespan_ms"] + 2.5)
    for s in fid.steps:  # the breakdown stays against the schedule's own times
        b = s.breakdown
        assert b.planned["step_s"] == pytest.approx(schedule.makespan * UNIT_S)
        assert b.total_s == pytest.approx(s.measured_s - b.planned["step_s"], abs=1e-12)
    # without one: the schedule's makespan in the problem's unit, no overhead
    plain = compare(problem, schedule, _trace(*steps))
    assert plain.predicted_step_s == schedule.makespan * UNIT_S
    assert plain.prediction == Prediction(makespan_ms=1e3 * UNIT_S * schedule.makespan)
