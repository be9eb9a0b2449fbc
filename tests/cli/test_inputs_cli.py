"""The files the commands read: one door (``cli/_inputs.py``) that says what a path holds.

Every command refuses a bad input in one line naming the path and what it is (never a traceback, never
another reader's complaint: a missing file is not blamed on a CSV's durations, a pipeline description is not
parsed as a CSV); ``run``, ``report`` and ``export`` read the same plans; ``run`` builds the model the plan
was profiled from.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optional import require

from schedsearch.cli import main
from schedsearch.cli._inputs import InputKind, identify
from schedsearch.cli.run import model_to_run
from schedsearch.errors import FormatError, InvalidPipelineError, PlanError
from schedsearch.plan.model_spec import parse_model_spec
from schedsearch.plan.pipeline import Pipeline

STAGES = [{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB"}] * 2


def _pipeline(**fields) -> Pipeline:
    return Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="8 GiB", families=["1f1b"], stages=STAGES,
                    **fields)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """One file of each kind the commands meet, and the bad ones."""
    root = tmp_path_factory.mktemp("inputs")
    paths = {"pipeline": _pipeline().save(root / "pipeline.toml"),
             "pipeline_json": _pipeline().save(root / "pipeline.json")}
    assert main(["plan", str(paths["pipeline"]), "--out", str(root / "plan"), "--time-limit", "20",
                 "--workers", "1"]) == 0
    paths["folder"] = root / "plan"
    paths["plan"] = root / "plan" / "plan.json"
    paths["csv"] = root / "plan" / "schedule.csv"
    assert main(["search", "--devices", "2", "--microbatches", "2", "--quiet", "--out", str(root / "search")]) == 0
    for kind in ("result", "problem", "schedule"):
        (paths[kind],) = (root / "search").glob(f"*.{kind}.json")
    paths["meta_list"] = root / "meta-list.plan.json"
    paths["meta_list"].write_text(json.dumps({**json.loads(paths["plan"].read_text()), "meta": [1]}))
    paths["missing"] = root / "missing.csv"
    paths["dir"] = root / "empty-folder"
    paths["dir"].mkdir()
    paths["empty"] = root / "empty.json"
    paths["empty"].write_text("\n")
    paths["binary"] = root / "garbage.bin"
    paths["binary"].write_bytes(bytes(range(256)) * 4)
    paths["layers"] = Path(__file__).resolve().parents[2] / "models" / "llama3_8b_layers.toml"
    paths["calibration"] = root / "calibration.toml"
    paths["calibration"].write_text('latency_ms = 0.1\naction_overhead_ms = 0.0\nstep_overhead_ms = 0.5\n')
    return paths


def test_identify_names_each_kind_by_its_fields(files):
    expected = {"pipeline": InputKind.PIPELINE, "pipeline_json": InputKind.PIPELINE, "plan": InputKind.PLAN,
                "folder": InputKind.PLAN, "csv": InputKind.CSV, "result": InputKind.RESULT,
                "problem": InputKind.PROBLEM, "schedule": InputKind.SCHEDULE, "calibration": InputKind.CALIBRATION,
                "layers": InputKind.LAYER_MODEL}
    for name, kind in expected.items():
        inp = identify(files[name])
        assert inp.kind is kind, name
    assert identify(files["folder"]).path == files["plan"] and identify(files["folder"]).folder
    # the kind is the content's, not the name's: a plan document under another name is still one
    renamed = files["plan"].parent / "plan.txt.copy"
    renamed.write_text(files["plan"].read_text())
    assert identify(renamed).kind is InputKind.PLAN


#: (command line with {} for the input, bad input, a fragment of the one-line error)
BAD_INPUTS = [
    *[(argv, bad, fragment) for argv in (["run", "{}"], ["run", "{}", "--emulate"], ["run", "{}", "--check-only"],
                                         ["report", "{}"], ["plan", "{}"], ["export", "{}", "--format", "txt"],
                                         ["validate", "{}", "{schedule}"], ["validate", "{problem}", "{}"],
                                         ["export", "--problem", "{}", "--schedule", "{schedule}", "--format", "txt"],
                                         ["profile", "--traces", "{}"])
      for bad, fragment in (("missing", "no such file or folder"), ("empty", "is empty"),
                            ("binary", "save it as UTF-8 or ASCII"))],
    *[(argv, "dir", "is a folder") for argv in (["run", "{}"], ["report", "{}"], ["plan", "{}"],
                                                ["export", "{}", "--format", "txt"],
                                                ["validate", "{}", "{schedule}"])],
    (["profile", "--traces", "{}"], "dir", "holds no *.json trace"),
    # a known document given to the wrong command: what it is, and what to do with it
    (["run", "{}"], "pipeline", "is a pipeline description"),
    (["run", "{}", "--check-only"], "pipeline_json", "is a pipeline description"),
    (["run", "{}"], "problem", "is a problem document"),
    (["report", "{}"], "pipeline", "is a pipeline description"),
    (["report", "{}"], "csv", "is a compute-only CSV"),
    (["export", "{}", "--format", "txt"], "csv", "is a compute-only CSV"),
    (["export", "{}", "--format", "txt"], "problem", "is a problem document"),
    (["plan", "{}"], "plan", "is a plan document"),
    (["plan", "{}"], "folder", "is a plan folder"),
    (["plan", "{}"], "csv", "is a compute-only CSV"),
    (["plan", "{}"], "result", "is a search result"),
    (["plan", "{}"], "calibration", "is a calibration"),
    (["run", "{}"], "layers", "is a model in layers"),
    (["validate", "{}", "{schedule}"], "plan", "is a plan document"),
    (["validate", "{problem}", "{}"], "pipeline", "is a pipeline description"),
    (["profile", "--traces", "{}"], "plan", "is a plan document"),
    # a plan document whose parts are of the wrong type
    *[(argv, "meta_list", "'meta' must be an object of notes, got list")
      for argv in (["run", "{}", "--check-only"], ["report", "{}"], ["export", "{}", "--format", "txt"])],
]


@pytest.mark.parametrize("argv, bad, fragment", BAD_INPUTS,
                         ids=[f"{' '.join(a[:1] + [x for x in a[1:] if x.startswith('-')])}-{b}" for a, b, _ in BAD_INPUTS])
def test_a_bad_input_is_one_line_naming_the_path_and_exit_2(argv, bad, fragment, files, capsys):
    path = str(files[bad])
    args = [a.replace("{}", path).replace("{schedule}", str(files["schedule"]))
            .replace("{problem}", str(files["problem"])) for a in argv]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"schedsearch {argv[0]}: error: ") and err.count("\n") == 1, err
    assert fragment in err and path in err and "Traceback" not in out + err, err
    assert len(err) < 500, err


def test_run_does_not_blame_a_csv_for_a_missing_file(files, capsys):
    assert main(["run", str(files["missing"]), "--emulate"]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "durations" not in err
    assert "run takes a plan folder or plan document (plan.json), a search result (NAME.result.json) or a " \
           "compute-only CSV (schedule.csv)" in err


def test_run_given_a_pipeline_says_to_plan_it_first(files, capsys):
    path = files["pipeline"]
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"schedsearch plan {path} --out DIR, then schedsearch run DIR" in err
    assert "is not an action" not in err


def test_plan_given_a_plan_says_what_to_do_with_it(files, capsys):
    path = files["plan"]
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"is a plan document; plan takes a pipeline description (TOML or JSON) or a model in layers. Run it with schedsearch run " \
           f"{path}, or write its report with schedsearch report {path}" in err
    assert "unknown field" not in err


@pytest.mark.parametrize("name", ["folder", "plan", "result"])
def test_run_report_and_export_read_the_same_plans(name, files, tmp_path, capsys):
    path = str(files[name])
    assert main(["run", path, "--check-only"]) == 0
    assert main(["report", path, "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").is_file()
    assert main(["export", path, "--format", "txt", "--out", "-"]) == 0
    assert "error" not in capsys.readouterr().err


def test_a_result_summary_is_read_with_its_siblings(files, tmp_path, capsys):
    doc = json.loads(files["result"].read_text())
    summary = files["result"].parent / "summary.result.json"
    summary.write_text(json.dumps({k: v for k, v in doc.items() if k not in ("problem", "schedule")}))
    for name in ("problem", "schedule"):
        (files["result"].parent / f"summary.{name}.json").write_text(files[name].read_text())
    assert identify(summary).kind is InputKind.RESULT_SUMMARY
    assert main(["report", str(summary), "--out", str(tmp_path)]) == 0
    assert main(["run", str(summary), "--check-only"]) == 0
    alone = tmp_path / "alone.result.json"
    alone.write_text(summary.read_text())
    assert main(["report", str(alone), "--out", ""]) == 2
    assert "needs alone.problem.json and alone.schedule.json beside it" in capsys.readouterr().err


# --- the model a pipeline was profiled from ------------------------------------------------------------------


def test_the_pipeline_records_its_model_in_toml_and_json(tmp_path):
    pipeline = _pipeline(model_spec=" transformer:4x16")
    assert pipeline.model_spec == "transformer:4x16"  # its normal form
    for name in ("p.toml", "p.json"):
        assert Pipeline.load(pipeline.save(tmp_path / name)) == pipeline
    assert 'model_spec = "transformer:4x16"' in pipeline.to_toml()
    assert "model_spec" not in _pipeline().to_toml()  # a pipeline without one is written as before


@pytest.mark.parametrize("value, fragment", [
    ("llama3_8b", "must be KIND:LAYERSxWIDTH"),
    ("mlp:0x8", "'layers' must be >= 1, got 0"),
    (8, "'model_spec' must be a model spec such as 'transformer:4x32', got 8"),
])
def test_a_bad_model_spec_is_refused_naming_the_field(value, fragment, tmp_path, capsys):
    with pytest.raises(InvalidPipelineError, match="pipeline: 'model_spec'") as error:
        Pipeline.from_dict({**_pipeline().to_dict(), "model_spec": value})
    assert fragment in str(error.value)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**_pipeline().to_dict(), "model_spec": value}))
    assert main(["plan", str(path), "--out", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'model_spec'" in err and fragment in err


def test_a_pipeline_from_a_profile_records_the_profiled_model():
    from schedsearch.runtime.profile import Profile, StageProfile

    rows = tuple(StageProfile(stage=s, microbatch_size=4, forward_s=0.001, backward_s=0.002, input_grad_s=0.001,
                              weight_grad_s=0.001, activation_bytes=2048, parameter_bytes=0) for s in range(2))
    prof = Profile(sizes=(4,), stages={4: rows}, repeats=1, time_unit_s=1e-4, memory_unit_bytes=1024,
                   model_spec="transformer:2x8")
    assert prof.to_dict()["model_spec"] == "transformer:2x8"
    assert Pipeline.from_profile(prof, num_ranks=2, num_microbatches=4).model_spec == "transformer:2x8"
    unnamed = Profile(sizes=(4,), stages={4: rows}, repeats=1, time_unit_s=1e-4, memory_unit_bytes=1024)
    assert Pipeline.from_profile(unnamed, num_ranks=2, num_microbatches=4).model_spec is None
    assert "model_spec" not in unnamed.to_dict()


def test_the_model_a_run_builds():
    recorded = {"pipeline": _pipeline(model_spec="transformer:4x16").to_dict()}
    unrecorded = {"pipeline": _pipeline().to_dict()}
    assert model_to_run(None, recorded, "p") == parse_model_spec("transformer:4x16")
    assert model_to_run("transformer:4x16 ", recorded, "p") == parse_model_spec("transformer:4x16")
    assert model_to_run("mlp:2x4", unrecorded, "p") == parse_model_spec("mlp:2x4")
    assert model_to_run("mlp:2x4", {}, "p") == parse_model_spec("mlp:2x4")  # a CSV
    with pytest.raises(PlanError, match=r"--model mlp:8x64 differs from the model the plan was profiled from "
                                        r"\(transformer:4x16\)"):
        model_to_run("mlp:8x64", recorded, "p")
    with pytest.raises(PlanError, match="names no model to run .*pass --model KIND:LAYERSxWIDTH"):
        model_to_run(None, unrecorded, "p")
    with pytest.raises(PlanError, match="a compute-only CSV names none"):
        model_to_run(None, {}, "p")
    with pytest.raises(FormatError, match="'meta.pipeline.model_spec'"):
        model_to_run(None, {"pipeline": {"model_spec": "cnn:3x3"}}, "p")


@pytest.fixture(scope="module")
def transformer_plan(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("model")
    path = _pipeline(model_spec="transformer:4x16").save(root / "pipeline.toml")
    assert main(["plan", str(path), "--out", str(root / "plan"), "--time-limit", "20", "--workers", "1"]) == 0
    return root / "plan"


def test_the_plan_document_carries_the_model(transformer_plan):
    doc = json.loads((transformer_plan / "plan.json").read_text())
    assert doc["meta"]["pipeline"]["model_spec"] == "transformer:4x16"


def test_run_refuses_before_starting_without_a_model_or_with_another(transformer_plan, files, capsys):
    assert main(["run", str(transformer_plan), "--model", "mlp:8x64"]) == 2
    err = capsys.readouterr().err
    assert "--model mlp:8x64 differs from the model the plan was profiled from (transformer:4x16)" in err
    for name in ("folder", "csv"):
        assert main(["run", str(files[name])]) == 2
        err = capsys.readouterr().err
        assert "names no model to run" in err and "pass --model KIND:LAYERSxWIDTH" in err, err
    # emulated and checked runs build no model
    assert main(["run", str(files["folder"]), "--check-only"]) == 0


@pytest.mark.torch
@pytest.mark.slow
def test_run_builds_the_recorded_model(transformer_plan, tmp_path, capsys):
    require("torch")
    assert main(["run", str(transformer_plan), "--out", ""]) == 0
    out = capsys.readouterr().out
    assert "model: workload transformer:4x16: 2 stages" in out and "(the model the plan was profiled from)" in out
