"""``schedsearch run`` and ``schedsearch profile``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from optional import require

from schedsearch.cli import main
from schedsearch.problem import Problem

PACKAGE = Path(__file__).resolve().parents[2] / "schedsearch"


def test_runtime_imports_torch_only_inside_functions():
    """Module-level imports of the runtime and its CLI never name torch (the
    transformer's module classes are the one module loaded lazily by design)."""
    files = [*sorted((PACKAGE / "runtime").glob("*.py")), PACKAGE / "cli" / "run.py", PACKAGE / "cli" / "profile.py"]
    for path in files:
        if path.name == "_transformer.py":
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "torch" for n in names), f"{path.name} imports torch at module level"
            assert not any(n.startswith("schedsearch.cli") for n in names) or path.parent.name == "cli", path


def test_check_only_reads_and_checks_the_artifact(dualpipev_csv, capsys):
    path = dualpipev_csv
    assert main(["run", str(path), "--check-only", "--processes", "4", "--stage-map", "0,1,2,3,3,2,1,0"]) == 0
    out = capsys.readouterr().out
    assert "4 ranks, 8 stages (stage-to-rank 0,1,2,3,3,2,1,0, 'v'), 10 micro-batches" in out
    assert "checks:" in out


def test_run_writes_to_out_and_the_json_flag_is_retired(dualpipev_csv, capsys):
    from pathlib import Path

    assert main(["run", str(dualpipev_csv), "--check-only"]) == 0
    assert not Path("out").exists()  # checking writes nothing
    with pytest.raises(SystemExit) as exc:
        main(["run", str(dualpipev_csv), "--json", "run.json"])
    assert exc.value.code == 2
    assert "--json is replaced by --out DIR (writes DIR/run.json; --out '' writes nothing)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--processes", "2"], "4 rows (one per rank) but the run uses 2 processes"),
        (["--microbatches", "8"], "micro-batch 8 is out of range"),
        (["--stage-map", "0,1,2,3,0,1,2,3"], "stage 4 is mapped to rank 0 by the stage-to-rank map"),
        (["--microbatches", "8", "--microbatch-sizes", "1,2"], "--microbatches 8 but --microbatch-sizes gives 2"),
        (["--model", "cnn:3x3"], "model spec: must be KIND:LAYERSxWIDTH"),
    ],
)
def test_run_rejects_bad_requests_before_starting(dualpipev_csv, capsys, args, fragment):
    path = dualpipev_csv
    assert main(["run", str(path), "--check-only", *args]) == 2
    assert fragment in capsys.readouterr().err


def test_run_explains_a_deadlocking_csv(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("4F0,0F0,4B0,0B0\n1F0,5F0,5B0,1B0\n2F0,6F0,6B0,2B0\n3F0,7F0,7B0,3B0\n")
    assert main(["run", str(path), "--processes", "4"]) == 2
    err = capsys.readouterr().err
    assert "schedsearch run: error: plan would deadlock" in err
    assert "rank 0 is stuck at action 0 '4F0' (forward of stage 4, micro-batch 0)" in err


@pytest.mark.torch
def test_profile_writes_a_problem_the_search_reads(tmp_path, capsys):
    require("torch")
    assert main(["profile", "--model", "mlp:4x16", "--stages", "2", "--repeats", "2", "--microbatches", "3",
                 "--split-backward", "--memory-bytes", "1000KiB", "--out", str(tmp_path)]) == 0
    (out,) = tmp_path.glob("*.problem.json")
    (raw,) = tmp_path.glob("*.profile.json")
    assert " " not in out.name and "(" not in out.name  # plain file names
    text = capsys.readouterr().out
    assert "time unit" in text and "durations (units of" in text
    problem = Problem.from_json(out.read_text())
    assert problem.num_microbatches == 3
    assert {b.kind for b in problem.graph.blocks} == {"F", "I", "W"}
    assert json.loads(raw.read_text())["sizes"] == [4]
    assert main(["search", "--problem", str(out), "--time-limit", "10", "--quiet", "--out", str(tmp_path)]) == 0


@pytest.mark.torch
@pytest.mark.parametrize("spec,kinds", [("transformer:3x16", ["embedding"] + ["layer"] * 3 + ["head"]),
                                        ("mlp:4x16", ["layer"] * 4)])
def test_profile_layers_writes_a_model_in_layers_the_planner_plans(tmp_path, capsys, spec, kinds):
    require("torch")
    from schedsearch.plan.layers import LayerModel
    from schedsearch.plan.planner import plan_layers

    assert main(["profile", "--model", spec, "--stages", "2", "--microbatch-size", "1", "--sizes", "2",
                 "--microbatches", "4", "--repeats", "1", "--layers", "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.layers.toml")
    model = LayerModel.load(path)
    assert list(model.kinds()) == kinds and model.sizes() == (1, 2)
    assert model.global_batch == 4 and model.num_ranks == (2,)
    profiled = json.loads(next(tmp_path.glob("*.profile.json")).read_text())
    assert profiled["model_spec"] == spec
    for i, layer in enumerate(model.expanded):
        m = layer.at(1)
        assert m.forward_ms > 0 and m.backward_ms > 0 and layer.parameter_bytes > 0
        if kinds[i] == "layer" and i > 0:  # a block checkpointed holds its input: what the layer before it sends
            assert m.checkpoint_bytes == min(model.expanded[i - 1].at(1).send_bytes, m.activation_bytes)
        # the blocks also under per-operator selective checkpointing: more than their input, less than all
        # they hold without checkpointing, a recomputation within their forward; the other layers not
        assert m.has_selective == (kinds[i] == "layer")
        if m.has_selective:
            assert m.held_when_recomputed < m.selective_bytes <= m.activation_bytes
            assert 0 <= m.selective_recompute_ms <= m.forward_ms
    assert model.runs_op()
    result = plan_layers(model, time_limit_s=20, parallel=1, deterministic=True)
    assert result.best.makespan_ms > 0 and result.bound_ms <= result.best.makespan_ms


@pytest.mark.torch
@pytest.mark.slow
def test_run_executes_the_artifact_and_writes_json(dualpipev_csv, tmp_path, capsys):
    require("torch")
    path = dualpipev_csv
    out = tmp_path / "run.json"
    assert main(["run", str(path), "--model", "mlp:8x16", "--processes", "4", "--steps", "2",
                 "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "gradients EQUAL" in text
    doc = json.loads(out.read_text())
    assert doc["grads_equal"] and doc["max_grad_diff"] <= 1e-12 and len(doc["ranks"]) == 4


@pytest.mark.torch
@pytest.mark.slow
def test_run_executes_a_plan_document(tmp_path, capsys):
    require("torch")
    from schedsearch.export.json import write_json
    from schedsearch.handcrafted import reproduce

    rep = reproduce("zb-v", devices=2, microbatches=4)
    path = write_json(rep.problem, rep.schedule, tmp_path / "zbv.plan.json")
    assert main(["run", str(path), "--model", "transformer:4x16", "--microbatch-sizes", "3,1,2,2"]) == 0
    out = capsys.readouterr().out
    assert "stage-to-rank 0,1,1,0, 'v'" in out
    assert "micro-batch sizes: [3, 1, 2, 2]" in out


def test_run_of_a_plan_folder_predicts_the_plan_table_makespan_plus_the_calibrated_step_overhead(tmp_path, capsys):
    require("torch")
    from schedsearch import Pipeline
    from schedsearch.plan.calibration import Calibration

    calibration = Calibration(latency_ms=0.02, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.01,
                              step_overhead_ms=3.5)
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[
        {"forward_ms": 0.33, "backward_ms": 0.61, "send_bytes": "64 KiB"}] * 2)
    path = tmp_path / "pipeline.toml"
    pipeline.save(path)
    calibration.save(tmp_path / "calibration.toml")
    path.write_text('calibration = "calibration.toml"\n' + path.read_text())
    assert main(["plan", str(path), "--out", str(tmp_path / "plan"), "--time-limit", "10", "--deterministic"]) == 0
    table = json.loads((tmp_path / "plan" / "plan.json").read_text())["meta"]["table"]
    makespan_ms = next(r["makespan_ms"] for r in table if r["family"] == "1F1B")
    assert main(["run", str(tmp_path / "plan"), "--model", "mlp:2x8", "--steps", "2",
                 "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    assert doc["prediction"] == {"step_ms": makespan_ms + 3.5, "makespan_ms": makespan_ms,
                                 "makespan_source": "plan table", "step_overhead_ms": 3.5}
    assert doc["predicted_step_s"] == (makespan_ms + 3.5) / 1e3
    # emulated, the actions sleep the problem's rounded times: that makespan is the prediction, no overhead
    assert main(["run", str(tmp_path / "plan"), "--emulate", "--steps", "2", "--out", str(tmp_path / "emulated")]) == 0
    emulated = json.loads((tmp_path / "emulated" / "run.json").read_text())["prediction"]
    assert emulated["makespan_source"] == "problem" and emulated["step_overhead_ms"] == 0.0


def test_profile_refuses_layers_with_traces(tmp_path, capsys):
    assert main(["profile", "--traces", str(tmp_path), "--layers"]) != 0
    err = capsys.readouterr().err
    assert "--layers measures the model's modules one by one" in err and "Traceback" not in err
