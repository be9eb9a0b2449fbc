"""Calibration measured on torch: the link on two gloo processes, the runtime's overhead, the CLI.

Only the structure of what is measured is asserted (which sizes, which
runs, non-negative figures, a file that a pipeline merges), never a
timing: the machine may be loaded.
"""

from __future__ import annotations

import pytest

from optional import require

torch = require("torch")

from schedsearch import Pipeline  # noqa: E402
from schedsearch.plan.calibration import Calibration  # noqa: E402
from schedsearch.cli import main  # noqa: E402
from schedsearch.errors import InvalidPipelineError  # noqa: E402
from schedsearch.runtime import build_workload, profile  # noqa: E402
from schedsearch.runtime.calibrate import calibrate_from_run, measure_link, measure_overhead  # noqa: E402

pytestmark = pytest.mark.torch


def test_the_link_is_measured_at_each_size_and_fitted():
    fit = measure_link([1, 4096, 65536], repeats=3, warmup=1)
    assert [b for b, _ in fit.samples] == [4, 4096, 65536]  # whole float32 elements
    assert all(t > 0 for _, t in fit.samples)
    assert fit.latency_ms >= 0 and fit.residual_ms >= 0
    assert fit.bandwidth_bytes_per_s is None or fit.bandwidth_bytes_per_s > 0


def test_bad_measuring_arguments_are_refused_before_any_process():
    with pytest.raises(InvalidPipelineError, match="at least two sizes"):
        measure_link([8, 8])
    with pytest.raises(InvalidPipelineError, match="'repeats' must be an integer >= 1, got 0"):
        measure_link([4, 8], repeats=0)
    with pytest.raises(InvalidPipelineError, match="two counts at least, got \\[4\\]"):
        measure_overhead(microbatches=[4, 4])


@pytest.mark.slow
def test_the_overhead_is_fitted_to_runs_of_near_empty_actions():
    fit = measure_overhead(microbatches=(2, 4), steps=3)
    assert [s[0] for s in fit.samples] == [2, 4]
    assert fit.action_ms >= 0 and fit.step_ms >= 0 and all(s[1] > 0 for s in fit.samples)


def test_a_short_pipelined_run_gives_a_calibration_of_its_own_stage_times():
    workload = build_workload("mlp:4x8", 2, batch_size=4 * 2, dtype="float32")
    prof = profile(workload.stages, workload.inputs, target=workload.target, loss_fn=workload.loss_fn, sizes=[2],
                   repeats=2)
    pipeline = Pipeline.from_profile(prof, num_ranks=2, num_microbatches=4)
    calibrated, runs = calibrate_from_run(pipeline, workload, steps=3, warmup=1)
    assert len(runs) == 1 and runs[0].grads_equal and runs[0].order_as_planned
    assert set(calibrated.measured) == {(0, "F"), (0, "B"), (1, "F"), (1, "B")}  # 1F1B runs no I or W
    assert calibrated.samples == {k: 4 * 2 for k in calibrated.measured}  # 4 micro-batches x 2 steps read
    for stage in calibrated.pipeline.stages:
        assert stage.forward_ms > 0 and stage.backward_ms > 0 and stage.input_grad_ms > 0 and stage.weight_grad_ms > 0
    assert calibrated.matched == "1F1B" and calibrated.step_time_ms > 0
    assert calibrated.calibration.action_overhead_ms >= 0 and calibrated.calibration.step_overhead_ms >= 0
    assert calibrated.pipeline.action_overhead_ms == calibrated.calibration.action_overhead_ms
    with pytest.raises(InvalidPipelineError, match="'warmup' must be an integer from 0 to steps - 1 = 2, got 3"):
        calibrate_from_run(pipeline, workload, steps=3, warmup=3)
    with pytest.raises(InvalidPipelineError, match="the workload has 4 stages, the pipeline 2"):
        calibrate_from_run(pipeline, build_workload("mlp:4x8", 4, batch_size=8))


def test_profile_calibrate_calibrates_on_a_run_and_writes_a_pipeline_of_its_times(tmp_path, capsys):
    assert main(["profile", "--model", "mlp:4x8", "--stages", "2", "--repeats", "2", "--microbatches", "4",
                 "--calibrate", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1F1B run of the profiled model: predicted" in out
    assert "ms per step (matched to the 1F1B steps' median" in out
    calibration = Calibration.load(tmp_path / "calibration.toml")
    (path,) = tmp_path.glob("*.pipeline.toml")
    pipeline = Pipeline.load(path)
    assert pipeline.p2p == calibration.p2p and pipeline.action_overhead_ms == calibration.action_overhead_ms
    assert pipeline.num_ranks == 2 and pipeline.num_microbatches == 4 and all(s.forward_ms > 0 for s in pipeline.stages)
    assert main(["profile", "--model", "mlp:4x8", "--stages", "2", "--mapping", "v", "--repeats", "2",
                 "--calibrate", "--out", ""]) != 0
    assert "calibrating on a run needs one stage per device and micro-batches of one size, got --stages 2, " \
        "--devices None, --mapping v" in capsys.readouterr().err


@pytest.mark.slow
def test_profile_calibrate_micro_writes_a_pipeline_that_merges_its_calibration(tmp_path, capsys):
    assert main(["profile", "--model", "mlp:4x8", "--stages", "2", "--repeats", "2", "--microbatches", "4",
                 "--calibrate", "micro", "--out", str(tmp_path)]) == 0
    assert "calibration (gloo): link latency" in capsys.readouterr().out
    calibration = Calibration.load(tmp_path / "calibration.toml")
    (path,) = tmp_path.glob("*.pipeline.toml")
    pipeline = Pipeline.load(path)
    assert pipeline.p2p == calibration.p2p and pipeline.action_overhead_ms == calibration.action_overhead_ms
    assert pipeline.num_ranks == 2 and pipeline.num_microbatches == 4
