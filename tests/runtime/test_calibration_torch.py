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
from schedsearch.calibration import Calibration  # noqa: E402
from schedsearch.cli import main  # noqa: E402
from schedsearch.errors import InvalidPipelineError  # noqa: E402
from schedsearch.runtime.calibrate import measure_link, measure_overhead  # noqa: E402

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


@pytest.mark.slow
def test_profile_calibrate_writes_a_pipeline_that_merges_its_calibration(tmp_path, capsys):
    assert main(["profile", "--model", "mlp:4x8", "--stages", "2", "--repeats", "2", "--microbatches", "4",
                 "--calibrate", "--out", str(tmp_path)]) == 0
    assert "calibration (gloo): link latency" in capsys.readouterr().out
    calibration = Calibration.load(tmp_path / "calibration.toml")
    (path,) = tmp_path.glob("*.pipeline.toml")
    pipeline = Pipeline.load(path)
    assert pipeline.p2p == calibration.p2p and pipeline.action_overhead_ms == calibration.action_overhead_ms
    assert pipeline.num_ranks == 2 and pipeline.num_microbatches == 4
