"""``schedsearch partition``: the CLI face of the partitioners."""

from __future__ import annotations

import json

import pytest

from schedsearch.cli import main


def test_dp_prints_split_loads_and_comparisons(dnn_data, capsys, tmp_path):
    path = dnn_data / "throughput-inputs" / "LayerGraphs" / "bert24_inference.json"
    out_json = tmp_path / "split.json"
    assert main(["partition", str(path), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "dp: max-load 17.7899 (optimal)" in out
    assert "accel0" in out and "communication" in out
    assert "one accelerator: max-load 92.406" in out
    assert "expert split (bert24_inference_expert.json): max-load 20.084" in out
    data = json.loads(out_json.read_text())
    assert data["method"] == "dp" and abs(data["maxLoad"] - 17.78990625) < 1e-9
    assert sum(len(d["nodes"]) for d in data["fpgas"] + data["cpus"]) == 32


@pytest.mark.parametrize("method", ["dpl", "slicegraph", "modules", "greedy", "met", "heft", "annealing",
                                    "evolutionary"])
def test_every_method_runs(method, dnn_data, capsys):
    path = dnn_data / "throughput-inputs" / "LayerGraphs" / "bert24_training.json"
    args = ["partition", str(path), "--method", method, "--accelerators", "3", "--time-limit", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{method}: max-load" in out and "expert split" in out


def test_device_overrides_and_listing(dnn_data, capsys):
    path = dnn_data / "throughput-inputs" / "OperatorGraphs" / "bert_l-3_inference.json"
    assert main(["partition", str(path), "--accelerators", "2", "--cpus", "0", "--list"]) == 0
    out = capsys.readouterr().out
    assert "2 accelerators" in out and "0 CPUs" in out and "cpu0" not in out
    assert "expert split" not in out  # no expert split for operator graphs


def test_pipedream_profile(shared_data, capsys):
    path = shared_data / "pipedream-profiles/profiler/image_classification/profiles/alexnet/graph.txt"
    assert main(["partition", str(path), "--method", "dp", "--accelerators", "2"]) == 0
    assert "dp: max-load" in capsys.readouterr().out


def test_errors_are_reported(tmp_path, capsys):
    assert main(["partition", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "g.csv"
    bad.write_text("x")
    assert main(["partition", str(bad)]) == 2
    assert "expected a .json" in capsys.readouterr().err
