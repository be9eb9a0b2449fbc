"""``schedsearch partition``: the CLI face of the partitioners."""

from __future__ import annotations

import json

import pytest

from schedsearch.cli import main


def test_dp_prints_split_loads_and_comparisons(dnn_data, capsys, tmp_path):
    path = dnn_data / "throughput-inputs" / "LayerGraphs" / "bert24_inference.json"
    out_json = tmp_path / "split" / "partition.json"
    assert main(["partition", str(path), "--out", str(tmp_path / "split")]) == 0
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


SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[2] / "models" / "dnn-partitioning" / "bert24_training.json"

# A split over the memory limit is reported with its reason and a non-zero exit.
# (method, extra arguments, exit code, fragment of stderr)
EXIT_CASES = [
    ("met", ["--memory-bytes", "1e9"], 1, "the met split is infeasible: device accel0: memory 3.64965e+09 B exceeds the limit 1e+09 B"),
    ("greedy", ["--memory-bytes", "1e9"], 1, "the greedy split is infeasible: device accel5: memory"),
    ("heft", ["--memory-bytes", "1e9"], 0, ""),
    ("dp", ["--memory-bytes", "1e9"], 0, ""),
    ("heft", [], 0, ""),
    ("dp", ["--accelerators", "1000000"], 2, "'num_accelerators' must be <= 1024 (MAX_DEVICES), got 1000000"),
]


@pytest.mark.parametrize("method,extra,code,fragment", EXIT_CASES,
                         ids=[f"{c[0]} {' '.join(c[1])}".strip() for c in EXIT_CASES])
def test_infeasible_splits_exit_non_zero_with_the_reason(method, extra, code, fragment, capsys):
    assert main(["partition", str(SHIPPED), "--method", method, *extra]) == code
    captured = capsys.readouterr()
    assert fragment in captured.err
    if code == 1:
        assert "INFEASIBLE: " in captured.out
    if code == 0:
        assert captured.err == "" and "INFEASIBLE" not in captured.out


def test_infeasible_split_json_says_so(tmp_path, capsys):
    out = tmp_path / "partition.json"
    assert main(["partition", str(SHIPPED), "--method", "met", "--memory-bytes", "1e9", "--out", str(tmp_path)]) == 1
    data = json.loads(out.read_text())
    assert data["status"] == "infeasible" and "exceeds the limit" in data["problems"][0]


def test_out_grammar_and_the_retired_json_flag(capsys):
    from pathlib import Path

    assert main(["partition", str(SHIPPED), "--out", ""]) == 0
    assert not Path("out").exists() and "wrote" not in capsys.readouterr().out  # --out '' writes nothing
    assert main(["partition", str(SHIPPED)]) == 0
    assert [p.name for p in Path("out").iterdir()] == ["partition.json"]  # default --out out, a fixed plain name
    with pytest.raises(SystemExit) as exc:
        main(["partition", str(SHIPPED), "--json", "split.json"])
    assert exc.value.code == 2
    assert "--json is replaced by --out DIR (writes DIR/partition.json" in capsys.readouterr().err
