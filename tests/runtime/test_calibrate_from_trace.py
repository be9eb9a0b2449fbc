"""Calibration from a measured run, on synthetic traces (no torch, no clock).

The traces are simulated here, independently of the library: two ranks run
1F1B; each action starts a fixed gap after the rank's previous stage call
ended, a call that receives starts when the data has arrived (the
producer's call end plus a fixed delay) and its action may have started
long before (that wait is not compute). The calibration must give back the
durations, the gap, the transfer and the cost per step the simulation used,
and a pipeline whose 1F1B prediction is the simulated step time. (The
delays are kept short of the spacing of the transfers: the model carries
the two directions on one channel between the ranks, one transfer at a
time, which a long delay would queue.)
"""

from __future__ import annotations

import attrs
import pytest

from schedsearch import Pipeline
from schedsearch.actions import Action
from schedsearch.errors import InvalidPipelineError
from schedsearch.runtime.calibrate import calibration_from_trace, family_plan
from schedsearch.runtime.trace import Compute, Event, MeasuredTrace, StepTrace

MS = 1e-3

#: each rank's 1F1B order for 2 stages, 4 micro-batches (stage 0 runs one forward ahead)
ORDERS = {
    0: [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1), ("F", 3), ("B", 2), ("B", 3)],
    1: [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2), ("F", 3), ("B", 3)],
}


def simulate(durations, *, gap_ms, delay_ms, tail_ms, split=False, slow_first=0.0):
    """One step of 1F1B on two ranks; ``durations[(stage, kind)]`` in ms. Returns a StepTrace (seconds).

    Every action starts ``gap_ms`` after the rank's previous call ended; a
    receiving action's call starts when its data has arrived (the
    producer's call end plus ``delay_ms``), the action waiting until then.
    ``split``: every B is run as an I then a W (the I receives, the W does
    not). ``slow_first``: ms added to every call of micro-batch 0.
    """
    orders = {r: [(k2, m) for k, m in row for k2 in (("I", "W") if split and k == "B" else (k,))]
              for r, row in ORDERS.items()}
    done: dict[tuple[int, str, int], tuple[float, float]] = {}
    events, computes = [], []
    at = {0: [0, 0.0], 1: [0, 0.0]}  # rank -> [next index, previous call end]
    while any(at[r][0] < len(orders[r]) for r in (0, 1)):
        progressed = False
        for r in (0, 1):
            i, prev_end = at[r]
            if i == len(orders[r]):
                continue
            kind, m = orders[r][i]
            source = (0, "F", m) if (r == 1 and kind == "F") else \
                (1, "I" if split else "B", m) if (r == 0 and kind in ("B", "I")) else None
            if source is not None and source not in done:
                continue
            ready = prev_end + gap_ms
            start_call = ready if source is None else max(ready, done[source][1] + delay_ms)
            action_start = ready
            end_call = start_call + durations[(r, kind)] + (slow_first if m == 0 else 0.0)
            done[(r, kind, m)] = (start_call, end_call)
            events.append(Event(rank=r, label=f"{r}{kind}{m}", action=Action(r, kind, m),
                                start_s=action_start * MS, end_s=(end_call + 0.01) * MS))
            computes.append(Compute(rank=r, action=Action(r, kind, m), start_s=start_call * MS,
                                    end_s=end_call * MS))
            at[r] = [i + 1, end_call]
            progressed = True
        assert progressed
    last = max(e for _, e in done.values())
    spans = tuple((0.0, (last + tail_ms) * MS) for _ in (0, 1))
    return StepTrace(rank_spans=spans, events=tuple(events), computes=tuple(computes)), last + tail_ms


def trace_of(*steps):
    return MeasuredTrace(num_ranks=2, steps=tuple(steps), clock_offsets_s=(0.0, 0.0), clock_rtt_s=(0.0, 0.0),
                         one_host=True)


def profiled(split=True):
    extra = [{"input_grad_ms": 1.0, "weight_grad_ms": 3.0}, {"input_grad_ms": 2.0, "weight_grad_ms": 2.0}] \
        if split else [{}, {}]
    return Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[
        {"name": "s0", "forward_ms": 1.0, "backward_ms": 4.0, **extra[0]},
        {"name": "s1", "forward_ms": 1.5, "backward_ms": 5.0, **extra[1]},
    ])


TRUE = {(0, "F"): 2.0, (0, "B"): 6.0, (1, "F"): 3.0, (1, "B"): 8.0}


def test_a_1f1b_run_gives_back_its_durations_gap_transfer_and_step_cost():
    warm, _ = simulate({k: 5 * v for k, v in TRUE.items()}, gap_ms=2.0, delay_ms=4.0, tail_ms=9.0)
    normal, step_ms = simulate(TRUE, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5)
    slow, _ = simulate({k: 3 * v for k, v in TRUE.items()}, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5)
    cal = calibration_from_trace(profiled(), trace_of(warm, normal, slow, normal))  # warm-up left out, slow outvoted
    assert cal.measured == pytest.approx(TRUE)
    assert cal.samples == {k: 12 for k in TRUE}  # 4 micro-batches x 3 steps read
    assert cal.calibration.action_overhead_ms == pytest.approx(0.5)
    assert cal.transfer_measured and cal.transfer_ms == pytest.approx(0.25)  # delay 0.75 less the gap
    assert cal.calibration.step_overhead_ms == pytest.approx(1.5)  # the tail (the first gap is in the makespan)
    s0, s1 = cal.pipeline.stages
    assert (s0.forward_ms, s0.backward_ms, s1.forward_ms, s1.backward_ms) == pytest.approx((2.0, 6.0, 3.0, 8.0))
    # I and W were not run apart: the given split, scaled as B was (x1.5 and x1.6)
    assert (s0.input_grad_ms, s0.weight_grad_ms) == pytest.approx((1.5, 4.5))
    assert (s1.input_grad_ms, s1.weight_grad_ms) == pytest.approx((3.2, 3.2))
    assert cal.pipeline.action_overhead_ms == pytest.approx(0.5)
    assert cal.pipeline.p2p.transfer_ms(0) == pytest.approx(0.25)
    # re-planned, the calibrated pipeline predicts the run it was calibrated on
    _, _, makespan = family_plan(cal.pipeline, "1F1B")
    assert cal.calibration.step_ms(makespan) == pytest.approx(step_ms)


def test_receive_waits_are_neither_compute_nor_overhead():
    waiting, _ = simulate(TRUE, gap_ms=0.5, delay_ms=2.0, tail_ms=1.5)
    waits = [c.start_s - e.start_s for c in waiting.computes for e in waiting.events
             if (e.rank, e.kind, e.microbatch) == (c.rank, c.kind, c.microbatch)]
    assert sum(w > 1.5 * MS for w in waits) >= 4  # receives waited, longer than the gap
    cal = calibration_from_trace(profiled(), trace_of(waiting, waiting))
    assert cal.measured == pytest.approx(TRUE)
    assert cal.calibration.action_overhead_ms == pytest.approx(0.5)
    assert cal.transfer_ms == pytest.approx(1.5)
    _, _, makespan = family_plan(cal.pipeline, "1F1B")
    assert cal.calibration.step_ms(makespan) == pytest.approx(1e3 * waiting.step_time_s)


def test_matching_the_step_cost_to_a_run_the_model_predicts_exactly_changes_nothing():
    normal, step_ms = simulate(TRUE, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5)
    cal = calibration_from_trace(profiled(), trace_of(normal, normal), family="1F1B")
    assert cal.matched == "1F1B" and cal.step_time_ms == pytest.approx(step_ms)
    assert cal.calibration.action_overhead_ms == pytest.approx(0.5)
    assert cal.calibration.step_overhead_ms == pytest.approx(1.5)


def test_matching_the_step_cost_fills_what_the_means_miss():
    # a run whose calls are slower on the first micro-batch: the means under-predict its path; matched to the
    # steps, the re-planned 1F1B gives the step time measured
    step, _ = simulate(TRUE, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5, slow_first=4.0)
    cal = calibration_from_trace(profiled(), trace_of(step, step), family="1F1B")
    unmatched = calibration_from_trace(profiled(), trace_of(step, step))
    assert cal.calibration.action_overhead_ms == unmatched.calibration.action_overhead_ms == pytest.approx(0.5)
    assert cal.calibration.step_overhead_ms > unmatched.calibration.step_overhead_ms
    _, _, makespan = family_plan(cal.pipeline, "1F1B")
    assert cal.calibration.step_ms(makespan) == pytest.approx(1e3 * step.step_time_s)


def test_several_runs_are_read_together():
    normal, step_ms = simulate(TRUE, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5)
    slow, _ = simulate({k: 2 * v for k, v in TRUE.items()}, gap_ms=1.0, delay_ms=0.75, tail_ms=1.5)
    # two runs of 3 steps, the first of each left out: 3 normal steps, 1 slow; the median is the normal
    cal = calibration_from_trace(profiled(), [trace_of(slow, normal, normal), trace_of(slow, slow, normal)])
    assert cal.measured == pytest.approx(TRUE)
    assert cal.samples == {k: 16 for k in TRUE}
    assert cal.step_samples == 4


def test_a_run_with_split_backward_gives_i_and_w_and_scales_b():
    true = {(0, "F"): 2.0, (0, "I"): 2.5, (0, "W"): 3.5, (1, "F"): 3.0, (1, "I"): 3.0, (1, "W"): 5.0}
    step, _ = simulate(true, gap_ms=0.25, delay_ms=0.5, tail_ms=0.25, split=True)
    cal = calibration_from_trace(profiled(), trace_of(step, step))
    assert cal.measured == pytest.approx(true)
    s0, s1 = cal.pipeline.stages
    assert (s0.input_grad_ms, s0.weight_grad_ms, s1.input_grad_ms, s1.weight_grad_ms) == \
        pytest.approx((2.5, 3.5, 3.0, 5.0))
    # B: the given B scaled as I + W was (6 / 4 and 8 / 4)
    assert (s0.backward_ms, s1.backward_ms) == pytest.approx((6.0, 10.0))
    assert cal.calibration.action_overhead_ms == pytest.approx(0.25)
    assert cal.calibration.step_overhead_ms == pytest.approx(0.25)


def test_no_waited_receive_keeps_the_pipelines_transfer():
    step, _ = simulate(TRUE, gap_ms=0.5, delay_ms=0.0, tail_ms=0.5)
    call = {(c.rank, c.kind, c.microbatch): c for c in step.computes}
    # every action starts with its call: no action was waiting for its data
    step = StepTrace(rank_spans=step.rank_spans, computes=step.computes, events=tuple(
        attrs.evolve(e, start_s=call[(e.rank, e.kind, e.microbatch)].start_s) for e in step.events))
    given = Pipeline.from_dict({**profiled().to_dict(), "p2p": {"time_ms": 0.125}})
    cal = calibration_from_trace(given, trace_of(step))
    assert not cal.transfer_measured and cal.transfer_ms == pytest.approx(0.125)
    assert cal.pipeline.p2p.transfer_ms(0) == pytest.approx(0.125)


def test_bad_inputs_are_refused():
    step, _ = simulate(TRUE, gap_ms=0.5, delay_ms=0.75, tail_ms=1.5)
    three = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 3)
    with pytest.raises(InvalidPipelineError, match="one stage per rank, got 3 stages on 2 ranks"):
        calibration_from_trace(three, trace_of(step))
    with pytest.raises(InvalidPipelineError, match="needs a MeasuredTrace or a list of them, got dict"):
        calibration_from_trace(profiled(), {})
    one_rank = MeasuredTrace(num_ranks=1, steps=(), clock_offsets_s=(0.0,), clock_rtt_s=(0.0,))
    with pytest.raises(InvalidPipelineError, match="the trace has 1 ranks, the pipeline 2"):
        calibration_from_trace(profiled(), one_rank)
    only_rank0 = StepTrace(rank_spans=step.rank_spans, events=step.events,
                           computes=tuple(c for c in step.computes if c.stage == 0))
    with pytest.raises(InvalidPipelineError, match=r"computes nothing of stage\(s\) \[1\]"):
        calibration_from_trace(profiled(), trace_of(only_rank0))
