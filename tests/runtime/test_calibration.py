"""Calibration: the link fit, the overhead fit, the file format and what a calibrated pipeline predicts.

No torch and no timing here: the fits are checked on synthetic timings made
from known latencies, bandwidths and overheads; the predictions against
closed forms of 1F1B. The measuring itself (torch, processes) is in
``test_calibration_torch.py``.
"""

from __future__ import annotations

import json
import math

import attrs
import pytest

from schedsearch import Pipeline
from schedsearch.plan.calibration import Calibration, fit_link
from schedsearch.errors import InvalidPipelineError
from schedsearch.runtime.calibrate import family_plan, fit_overhead

SIZES = (4, 4096, 65536, 2**20, 4 * 2**20)


@pytest.mark.parametrize("latency_ms,bandwidth", [(0.05, 10**10), (0.2, 3 * 10**9), (0.0, 10**8), (1.5, 2**33)])
def test_the_link_fit_recovers_a_known_latency_and_bandwidth(latency_ms, bandwidth):
    samples = [(b, latency_ms + b / bandwidth * 1e3) for b in SIZES]
    fit = fit_link(samples)
    assert math.isclose(fit.latency_ms, latency_ms, abs_tol=1e-9)
    assert abs(fit.bandwidth_bytes_per_s - bandwidth) <= 1e-6 * bandwidth
    assert fit.residual_ms < 1e-9 and fit.max_relative_error < 1e-6


def test_the_link_fit_of_noisy_timings_is_the_least_squares_line():
    # times off the line by +-2 us alternately: the least-squares line is found by the normal
    # equations solved here by hand (2x2, independent of the library's centred form)
    noise = [2e-3, -2e-3, 2e-3, -2e-3, 2e-3]
    samples = [(b, 0.1 + b / 5e9 * 1e3 + e) for b, e in zip(SIZES, noise)]
    n = len(samples)
    sx, sy = sum(b for b, _ in samples), sum(t for _, t in samples)
    sxx, sxy = sum(b * b for b, _ in samples), sum(b * t for b, t in samples)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    intercept = (sy - slope * sx) / n
    fit = fit_link(samples)
    assert math.isclose(fit.latency_ms, intercept, rel_tol=1e-9)
    assert abs(fit.bandwidth_bytes_per_s - 1e3 / slope) <= 1
    rms = math.sqrt(sum((intercept + slope * b - t) ** 2 for b, t in samples) / n)
    assert math.isclose(fit.residual_ms, rms, rel_tol=1e-4)


def test_the_link_fit_stays_physical():
    # times falling with the size: no bandwidth term, the mean time
    flat = fit_link([(4, 0.3), (2**20, 0.1)])
    assert flat.bandwidth_bytes_per_s is None and math.isclose(flat.latency_ms, 0.2)
    # a line through a negative intercept: refitted through the origin
    steep = fit_link([(10**6, 0.5), (2 * 10**6, 1.5)])
    assert steep.latency_ms == 0.0 and steep.bandwidth_bytes_per_s > 0
    with pytest.raises(InvalidPipelineError, match="at least two sizes, got sizes \\[4\\]"):
        fit_link([(4, 0.1), (4, 0.2)])
    with pytest.raises(InvalidPipelineError, match="bytes >= 0, ms >= 0"):
        fit_link([(4, 0.1), (8, float("nan"))])


def test_the_overhead_fit_recovers_known_overheads_of_a_piecewise_linear_model():
    # the model's makespan: compute 0.4 ms per micro-batch, and the longer of a path of 2M + 2 actions
    # and a fixed 5 ms path (a transfer-bound path that the overhead does not touch)
    def predict(m, o):
        return 0.4 * m + max((2 * m + 2) * o, 5.0)

    # (each overhead shows on one run at least: there the action path is the longer one)
    for o, c in ((0.3, 2.0), (0.2, 0.0), (0.0, 1.0), (1.2, 7.5)):
        fit = fit_overhead({m: c + predict(m, o) for m in (4, 8, 16)}, predict)
        assert math.isclose(fit.action_ms, o, abs_tol=1e-6), (o, c, fit)
        assert math.isclose(fit.step_ms, c, abs_tol=1e-5), (o, c, fit)
        assert fit.residual_ms < 1e-5
        assert [s[0] for s in fit.samples] == [4, 8, 16]


def test_the_overhead_fit_refuses_too_few_runs():
    with pytest.raises(InvalidPipelineError, match="two micro-batch counts"):
        fit_overhead({4: 1.0}, lambda m, o: o)
    with pytest.raises(InvalidPipelineError, match="at 8 micro-batches must be >= 0 ms, got -1.0"):
        fit_overhead({4: 1.0, 8: -1.0}, lambda m, o: o)


def _pipeline(**fields) -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "send_bytes": "1 MiB"}
    return Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[stage] * 2, **fields)


def _asap(schedule, durations, transfer_ms):
    """An independent oracle: each rank's actions in the schedule's order, each started as soon as the one before
    it on its rank has ended and its input has arrived (``transfer_ms`` later when it comes from the other rank)."""
    order = {}
    for t in sorted(schedule.tasks, key=lambda t: t.start):
        order.setdefault(t.devices[0], []).append((t.block[0], int(t.block[1:]), t.microbatch))
    end, rank_of = {}, {a: r for r, acts in order.items() for a in acts}
    pending = {r: list(acts) for r, acts in order.items()}
    clock = {r: 0.0 for r in order}
    while any(pending.values()):
        for r, acts in pending.items():
            while acts:
                kind, stage, m = acts[0]
                dep = (("F", stage - 1, m) if stage > 0 else None) if kind == "F" else \
                    (("F", stage, m) if stage == 1 else ("B", stage + 1, m))
                if dep is not None and dep not in end:
                    break
                ready = 0.0 if dep is None else end[dep] + (transfer_ms if rank_of[dep] != r else 0.0)
                clock[r] = max(clock[r], ready) + durations[(kind, stage)]
                end[(kind, stage, m)] = clock[r]
                acts.pop(0)
    return max(end.values())


def test_a_calibrated_pipeline_predicts_1f1b_with_the_overhead_and_the_link():
    # 1F1B on P = 2 equal stages, M = 4: makespan (M + P - 1) (F + B) with free transfers (15 ms); an overhead o
    # per action makes each F and B o longer: 5 (3 + 2 o)
    _, _, plain = family_plan(_pipeline(), "1F1B")
    assert plain == 15.0
    _, _, slower = family_plan(Calibration(action_overhead_ms=0.1).apply(_pipeline()), "1F1B")
    assert math.isclose(slower, 5 * (3 + 2 * 0.1))
    # with the link too: the same order simulated as soon as possible with 0.5 ms per transfer
    calibration = Calibration(latency_ms=0.25, bandwidth_bytes_per_s=2**20 * 1000 * 4, action_overhead_ms=0.1)
    calibrated = calibration.apply(_pipeline())
    assert calibrated.p2p.transfer_ms(2**20) == 0.5
    _, schedule, makespan = family_plan(calibrated, "1F1B")
    assert len(schedule.transfers) == 8  # each micro-batch's activation and gradient
    durations = {("F", 0): 1.1, ("F", 1): 1.1, ("B", 0): 2.1, ("B", 1): 2.1}
    assert math.isclose(makespan, _asap(schedule, durations, 0.5))
    assert makespan > slower + 2 * 0.5  # at least the first micro-batch's two crossings


def test_the_overhead_is_added_once_per_stage_not_per_layer():
    layers = [{"name": f"l{i}", "forward_ms": 0.5, "backward_ms": 1.0} for i in range(4)]
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=layers, partition="dp", action_overhead_ms=0.25)
    stages, groups = pipeline.stages_for(2)
    assert groups == ((0, 1), (2, 3))
    assert [(s.forward_ms, s.backward_ms) for s in stages] == [(1.25, 2.25), (1.25, 2.25)]
    assert [(s.forward_ms, s.backward_ms) for s in pipeline.stages] == [(0.5, 1.0)] * 4  # as given


def test_applying_a_calibration_twice_is_applying_it_once():
    calibration = Calibration(latency_ms=0.1, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.2)
    once = calibration.apply(_pipeline())
    assert calibration.apply(once) == once
    assert once.stages == _pipeline().stages


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_calibration_round_trips_through_its_file(tmp_path, suffix):
    calibration = Calibration.from_fit(fit_link([(4, 0.101), (65536, 0.12), (2**20, 0.45)]), action_overhead_ms=0.031,
                                       step_overhead_ms=1.5, backend="gloo", note="loopback")
    path = calibration.save(tmp_path / f"calibration{suffix}")
    assert Calibration.load(path) == calibration


def test_a_pipeline_file_merges_the_calibration_it_names(tmp_path):
    calibration = Calibration(latency_ms=0.1, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.2)
    calibration.save(tmp_path / "calibration.toml")
    text = 'calibration = "calibration.toml"\n' + _pipeline().to_toml()
    (tmp_path / "pipeline.toml").write_text(text)
    loaded = Pipeline.load(tmp_path / "pipeline.toml")
    assert loaded == calibration.apply(_pipeline())
    # the merged pipeline written and read back is the same pipeline (the overhead and the link as fields)
    loaded.save(tmp_path / "merged.toml")
    assert Pipeline.load(tmp_path / "merged.toml") == loaded
    assert json.loads(json.dumps(loaded.to_dict()))["action_overhead_ms"] == 0.2
    # a calibration given to load takes the place of the one the file names
    other = Calibration(latency_ms=0.3)
    assert Pipeline.load(tmp_path / "pipeline.toml", calibration=other) == other.apply(_pipeline())


def test_bad_calibrations_are_refused_naming_the_file_and_the_field(tmp_path):
    (tmp_path / "pipeline.toml").write_text('calibration = "missing.toml"\n' + _pipeline().to_toml())
    with pytest.raises(InvalidPipelineError, match="calibration file '.*missing.toml': cannot read"):
        Pipeline.load(tmp_path / "pipeline.toml")
    (tmp_path / "bad.toml").write_text("latency_ms = -1.0\n")
    with pytest.raises(InvalidPipelineError, match="calibration file '.*bad.toml': calibration: 'latency_ms' must be "
                                                   "a time in milliseconds from 0 to 1e12, got -1.0"):
        Calibration.load(tmp_path / "bad.toml")
    (tmp_path / "odd.toml").write_text("latency = 1.0\n")
    with pytest.raises(InvalidPipelineError, match="unknown field\\(s\\) \\['latency'\\]"):
        Calibration.load(tmp_path / "odd.toml")
    with pytest.raises(InvalidPipelineError, match="'bandwidth_bytes_per_s' must be a number of bytes per second"):
        Calibration(bandwidth_bytes_per_s=0)
    with pytest.raises(InvalidPipelineError, match="'samples' entry 0 must be a pair"):
        Calibration(samples=[[4]])
    (tmp_path / "p2.toml").write_text("calibration = 3\n" + _pipeline().to_toml())
    with pytest.raises(InvalidPipelineError, match="'calibration' must be the path of a calibration file, got 3"):
        Pipeline.load(tmp_path / "p2.toml")
    with pytest.raises(InvalidPipelineError, match="'action_overhead_ms' must be a time in milliseconds"):
        attrs.evolve(_pipeline(), action_overhead_ms=-0.5)
