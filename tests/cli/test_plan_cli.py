"""``schedsearch plan``: reads a description, prints the table, writes the plan files."""

from __future__ import annotations

from pathlib import Path

from schedsearch.cli import main
from schedsearch.plan.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]


def test_plan_command_writes_the_files(tmp_path, capsys):
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="8 GiB", families=["1f1b"],
                        stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB"}] * 2)
    path = pipeline.save(tmp_path / "pipeline.toml")
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--time-limit", "20", "--parallel", "1"]) == 0
    out, err = capsys.readouterr()
    assert "1F1B" in out and "makespan ms" in out
    # one progress line per candidate searched, on stderr, as each finishes
    lines = err.splitlines()
    assert lines == [f"[1/1] 1F1B: {line.split(': ', 1)[1]}" for line in lines] and len(lines) == 1, err
    assert " ms, OPTIMAL (" in lines[0]
    for name in ("schedule.csv", "torchtitan.args", "train.sh", "trace.json", "plan.json", "plan.txt"):
        assert (tmp_path / "out" / name).is_file(), name
        assert f"wrote {tmp_path / 'out' / name}" in out, name


def test_plan_command_names_what_it_did_not_write(tmp_path, capsys):
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], microbatch_sizes=[8, 8, 7, 7],
                        stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 2)
    path = pipeline.save(tmp_path / "pipeline.toml")
    assert main(["plan", str(path), "--out", str(tmp_path / "out"), "--time-limit", "20", "--parallel", "1"]) == 0
    out = capsys.readouterr().out
    assert "wrote " + str(tmp_path / "out" / "schedule.csv") in out
    assert "not written: torchtitan.args, train.sh: torchtitan cuts the per-rank batch into equal micro-batches" in out
    assert not (tmp_path / "out" / "torchtitan.args").exists()


def test_sample_pipeline_loads():
    pipeline = Pipeline.load(ROOT / "models" / "pipeline.toml")
    assert pipeline.num_ranks == 4 and pipeline.partition == "dp" and pipeline.memory_budget_bytes == 24 * 2**30


def test_plan_command_rejects_a_bad_microbatch_size_before_any_work(tmp_path, capsys):
    assert main(["plan", str(tmp_path / "missing.toml"), "--microbatch-size", "0"]) == 2
    assert "--microbatch-size must be a positive integer, got 0" in capsys.readouterr().err


def test_the_old_flags_still_work_with_a_note(tmp_path, capsys, monkeypatch):
    from schedsearch.cli import build_parser

    args = build_parser().parse_args(["plan", "p.toml", "--engine", "ray", "--workers", "3"])
    assert (args.executor, args.parallel) == ("ray", 3)
    err = capsys.readouterr().err
    assert "--engine is deprecated: use --executor" in err and "--workers is deprecated: use --parallel" in err
    args = build_parser().parse_args(["plan", "p.toml", "--executor", "local", "--parallel", "2"])
    assert (args.executor, args.parallel) == ("local", 2) and capsys.readouterr().err == ""
