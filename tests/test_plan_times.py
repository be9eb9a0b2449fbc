"""One home for a candidate's times: the problem's integers and every figure in ms read the same times.

The expected times are computed here from the description's fields alone
(the stage fields by block kind, the micro-batch sizes, the link), sharing
no code with :mod:`schedsearch.plan.times`: each task, overlapped group and
transfer of every candidate's problem must last its expected time rounded
once to the time unit, and the object's exact times must be the expected
ones. A transfer's time must come from its channel (latency, time per
unit), so the validator checks it; the plan's figures in ms are re-timings
with the exact times (checked by hand on a one-micro-batch plan).
"""

from __future__ import annotations

import json
from fractions import Fraction

import attrs
import pytest

import schedsearch
from schedsearch import Pipeline
from schedsearch.plan.planner import _handcrafted, _prepare
from schedsearch.plan.times import retime_ms
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import Schedule, Transfer
from schedsearch.validate import validate

FIELD = {"F": "forward_ms", "B": "backward_ms", "I": "input_grad_ms", "W": "weight_grad_ms"}


def _stage(f, b, send="4 MiB"):
    return {"forward_ms": f, "backward_ms": b, "input_grad_ms": round(b / 2, 4), "weight_grad_ms": b - round(b / 2, 4),
            "activation_bytes": "512 MiB", "parameter_bytes": "1 GiB", "send_bytes": send}


LAYERS = [_stage(1.37, 2.71), _stage(1.2, 2.45), _stage(0.95, 1.9, "3 MiB"), _stage(1.61, 3.3), _stage(0.8, 1.7),
          _stage(1.05, 2.2, 0), _stage(1.4, 2.8), _stage(1.13, 2.29)]

PIPELINES = {
    "fixed time per transfer": dict(p2p={"time_ms": 0.07}),
    "latency and bandwidth": dict(p2p={"latency_ms": 0.013, "bandwidth_bytes_per_s": "12 GB"}),
    "bandwidth, no latency": dict(p2p={"bandwidth_bytes_per_s": "3 GiB"}),
    "latency only": dict(p2p={"latency_ms": 0.2}),
    "sizes and F&B pairs": dict(p2p={"latency_ms": 0.01, "bandwidth_bytes_per_s": "20 GB"},
                                microbatch_sizes=[6, 6, 6, 5, 5, 6, 4, 4], fb_overlap_ms=3.5),
    "free transfers, calibrated overhead": dict(action_overhead_ms=0.021),
}


def _pipeline(**fields):
    return Pipeline(name="times", num_ranks=4, num_microbatches=8, memory_budget_bytes="23 GiB", partition="dp",
                    stages=LAYERS, **fields)


def _expected_task_ms(pipeline, stages, block, instance):
    """The stage's field for the block's kind, exactly as written, times the micro-batch's size over the largest
    (DualPipe's ``.up`` pipeline carries micro-batches n/2 .. n-1)."""
    ms = Fraction(str(getattr(stages[block.stage], FIELD[block.kind])))
    if pipeline.microbatch_sizes is None:
        return ms
    mb = instance + (pipeline.num_microbatches // 2 if block.name.endswith(".up") else 0)
    return ms * Fraction(str(pipeline.microbatch_sizes[mb])) / Fraction(str(max(pipeline.microbatch_sizes)))


def _expected_transfer_ms(pipeline, stage):
    """What the link takes for what ``stage`` sends: the fixed time, or latency + bytes / bandwidth."""
    p2p = pipeline.p2p
    if p2p.time_ms is not None:
        return Fraction(str(p2p.time_ms))
    sent = 0 if not p2p.bandwidth_bytes_per_s else Fraction(stage.p2p_bytes * 1000, p2p.bandwidth_bytes_per_s)
    return Fraction(str(p2p.latency_ms)) + sent


def _units_of(ms, unit_ms):
    """The rounding the time unit was chosen with: the nearest whole unit of the float time, at least 1."""
    return max(1, round(float(ms) / unit_ms))


@pytest.mark.parametrize("name", list(PIPELINES))
def test_every_integer_time_is_its_exact_time_rounded_once(name):
    pipeline = _pipeline(**PIPELINES[name])
    prepared = _prepare(pipeline, time_limit_s=10, parallel=1, deterministic=True, seed=0)
    unit = prepared.units.time_unit_ms
    assert prepared.tasks
    for task in prepared.tasks:
        times, problem = task.times, task.times.problem
        stages = prepared.splits[task.candidate][0]
        device_of = {b.name: b.options[0].devices[0] for b in problem.graph.blocks}
        assert times.unit_ms == Fraction(str(unit))
        for b in problem.graph.blocks:
            for m in range(problem.num_microbatches):
                want = _expected_task_ms(pipeline, stages, b, m)
                assert times.task[(b.name, m)] == want, (task.candidate.label, b.name, m)
                assert problem.durations(b.name, m) == (_units_of(want, unit),), (task.candidate.label, b.name, m)
        for ov in problem.overlaps:
            own = (Fraction(str(pipeline.fb_overlap_ms)) if ov.name == "F&B"
                   else Fraction(str(stages[problem.graph.block(ov.blocks[0]).stage].backward_ms)))
            assert times.overlap[ov.key] == own and ov.duration == _units_of(own, unit)
        for e in problem.graph.edges:
            a, b = device_of[e.src], device_of[e.dst]
            sender = min(problem.graph.block(e.src).stage, problem.graph.block(e.dst).stage)
            want = Fraction(0) if a == b or pipeline.p2p.free else _expected_transfer_ms(pipeline, stages[sender])
            assert times.edge[(e.src, e.dst)] == want
            if want == 0:
                assert e.size == 0
                continue
            (channel,) = problem.cluster.channels_between(a, b)
            assert e.size > 0 and channel.transfer_time(e.size) == _units_of(want, unit), (e, channel)
        # the problem whose bounds hold for the bytes has the very same times
        relaxed = times.relaxed_problem()
        assert [b.options for b in relaxed.graph.blocks] == [b.options for b in problem.graph.blocks]
        assert relaxed.duration_overrides == problem.duration_overrides
        assert relaxed.graph.edges == problem.graph.edges and relaxed.cluster.channels == problem.cluster.channels


@pytest.mark.parametrize("name", ["latency and bandwidth", "sizes and F&B pairs", "fixed time per transfer"])
def test_transfers_on_their_channels_pass_the_validator_and_a_short_one_does_not(name):
    pipeline = _pipeline(**PIPELINES[name])
    prepared = _prepare(pipeline, time_limit_s=10, parallel=1, deterministic=True, seed=0)
    checked = 0
    for task in prepared.tasks:
        problem = task.times.problem
        try:
            hand = _handcrafted(task.candidate, with_capacities(problem, None))
        except Exception:
            continue  # no published schedule for this candidate
        if not hand.transfers:
            continue
        assert not [v for v in validate(problem, hand) if v.kind != "memory"]
        # each transfer lasts its channel's latency + size x time per unit
        for tr in hand.transfers:
            edge = next(e for e in problem.graph.edges if (e.src, e.dst) == (tr.src, tr.dst))
            assert tr.end - tr.start == problem.cluster.channel(tr.channel).transfer_time(edge.size)
        first = hand.transfers[0]
        short = Transfer(src=first.src, dst=first.dst, microbatch=first.microbatch, channel=first.channel,
                         start=first.start, end=first.end - 1)
        bad = Schedule(tasks=hand.tasks, transfers=(short, *hand.transfers[1:]), name="short")
        assert any(first.src in str(v) for v in validate(problem, bad))
        checked += 1
    assert checked


def test_a_one_microbatch_plan_reads_its_transfers_in_ms_from_the_link():
    # F0, send, F1, B1, send back, B0: 1.3 + 3.05 + 1.3 + 2.6 + 3.05 + 2.6 = 13.9 ms, where one transfer of
    # 3 MB at 1 GB/s after 0.05 ms of latency takes 0.05 + 3 = 3.05 ms
    pipeline = Pipeline(num_ranks=2, num_microbatches=1, families=["1f1b"],
                        p2p={"latency_ms": 0.05, "bandwidth_bytes_per_s": "1 GB"},
                        stages=[{"forward_ms": 1.3, "backward_ms": 2.6, "send_bytes": "3 MB"}] * 2)
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    assert result.best.makespan_ms == 13.9 and result.best.makespan_proven
    (channel,) = result.problem.cluster.channels
    unit = Fraction(str(result.units.time_unit_ms))
    assert channel.time_per_unit == 1 and channel.latency * unit == Fraction("0.05")
    assert {channel.transfer_time(e.size) * unit for e in result.problem.graph.edges if e.size} == {Fraction("3.05")}
    assert not validate(result.problem, result.schedule)


def test_the_figures_in_ms_are_retimings_with_the_candidate_times():
    pipeline = _pipeline(**PIPELINES["sizes and F&B pairs"], families=["1f1b", "zb-v"])
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    prepared = _prepare(pipeline, time_limit_s=20, parallel=1, deterministic=True, seed=0)
    times = next(t.times for t in prepared.tasks if t.candidate == result.best.candidate)
    assert times.problem == result.problem
    assert result.best.makespan_ms == float(retime_ms(result.schedule, times))
    assert result.best.bound_ms <= result.best.makespan_ms
    assert result.prediction() == {"makespan_ms": result.best.makespan_ms, "step_overhead_ms": 0.0,
                                   "step_ms": result.best.makespan_ms}


def test_the_plan_document_records_the_prediction_with_the_calibrated_step_overhead(tmp_path):
    from schedsearch.export.json import read_json
    from schedsearch.plan.calibration import Calibration
    from schedsearch.runtime.trace import Prediction

    calibration = Calibration(latency_ms=0.03, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.02,
                              step_overhead_ms=4.25)
    pipeline = calibration.apply(Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
                                          stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "send_bytes": "1 MiB"}] * 2))
    assert pipeline.step_overhead_ms == 4.25 and Pipeline.from_dict(pipeline.to_dict()) == pipeline
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    _, _, meta = read_json(result.write(tmp_path)["json"])
    prediction = Prediction.from_plan_document(meta)
    assert prediction.makespan_ms == result.best.makespan_ms and prediction.step_overhead_ms == 4.25
    assert prediction.step_ms == result.best.makespan_ms + 4.25 and prediction.source == "plan table"
    # an unrounded makespan, not the problem's: here they differ (the transfers' 0.03 + 1.048576 ms)
    assert prediction.makespan_ms != result.schedule.makespan * result.units.time_unit_ms
    assert json.loads((tmp_path / "plan.json").read_text())["meta"]["prediction"]["step_ms"] == prediction.step_ms
    uncalibrated = attrs.evolve(pipeline, step_overhead_ms=0.0)
    assert "step_overhead_ms" not in uncalibrated.to_dict()
