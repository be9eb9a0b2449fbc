"""The ``jobshop`` subcommand and the job-shop examples."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from schedsearch.cli import COMMAND_MODULES, main
from schedsearch.graphs import random_dag
from schedsearch.errors import FormatError
from schedsearch.loaders import detect_format, read_instance
from schedsearch.problem import Problem
from schedsearch.result import Status
from schedsearch.schedule import Schedule
from schedsearch.validate import validate

ROOT = Path(__file__).resolve().parents[2]


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jobshop_is_a_registered_subcommand():
    assert "jobshop" in COMMAND_MODULES


def test_cli_plans_a_dag_and_writes_a_trace_with_machine_and_channel_rows(tmp_path, capsys):
    dag = random_dag(30, seed=2)
    graph_file = tmp_path / "dag.json"
    graph_file.write_text(dag.to_json())
    out = tmp_path / "out"
    code = main(["jobshop", str(graph_file), "--machines", "2", "--channels", "2", "--coarsen", "10",
                 "--time-limit", "5", "--quiet", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "coarsening: 30 -> 10 blocks" in text and "under compute" in text
    problem = Problem.from_json((out / f"{dag.name}.problem.json").read_text())
    schedule = Schedule.from_json((out / f"{dag.name}.schedule.json").read_text())
    assert validate(problem, schedule) == ()
    trace = json.loads((out / f"{dag.name}.trace.json").read_text())
    rows = {ev["args"]["name"] for ev in trace["traceEvents"] if ev.get("name") == "thread_name"}
    assert {"d0", "d1"} <= rows
    assert {r for r in rows if r.startswith("channel:")} == {f"channel:{c.name}" for c in problem.cluster.channels
                                                            if any(t.channel == c.name for t in schedule.transfers)}
    task_names = {ev["name"] for ev in trace["traceEvents"] if ev.get("ph") == "X" and ev.get("cat") != "transfer"}
    assert task_names == {n.name for n in dag.nodes}
    result = json.loads((out / f"{dag.name}.result.json").read_text())
    assert result["objective"] == schedule.makespan


def test_cli_reads_job_shop_files_and_memory_limits(tmp_path, capsys):
    jsp = tmp_path / "tiny.txt"
    jsp.write_text("2 2\n0 3 1 2\n1 4 0 1\n")
    assert main(["jobshop", str(jsp), "--time-limit", "5", "--quiet"]) == 0
    assert "makespan 6" in capsys.readouterr().out
    dag = random_dag(8, seed=1)
    graph_file = tmp_path / "dag.json"
    graph_file.write_text(dag.to_json())
    need = max(max(n.memory, 0) + n.workspace for n in dag.nodes)
    assert main(["jobshop", str(graph_file), "--memory", str(need + 2), "--channel-mode", "shared",
                 "--channels", "1", "--time-limit", "5", "--quiet"]) == 0
    assert f"of {need + 2}" in capsys.readouterr().out
    assert main(["jobshop", str(graph_file), "--baseline-only", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "baseline  makespan" in text and "exact" not in text and "plan from: list scheduling (HEFT, " in text


def test_cli_reports_bad_input_clearly(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("hello world")
    assert main(["jobshop", str(bad), "--quiet"]) == 2
    assert "name the format with --input-format" in capsys.readouterr().err
    doc = tmp_path / "doc.json"
    doc.write_text('{"format": "something"}')
    assert main(["jobshop", str(doc), "--quiet"]) == 2
    assert "'format' must be 'schedsearch.dag' or 'schedsearch.problem'" in capsys.readouterr().err
    dag_file = tmp_path / "dag.json"
    dag_file.write_text(random_dag(5, seed=0).to_json())
    assert main(["jobshop", str(dag_file), "--channels", "1", "--quiet"]) == 2
    assert "'channels' must be even" in capsys.readouterr().err


def test_format_detection():
    assert detect_format("1 2\n0 3 1 2") == "jsp"
    assert detect_format("1 2\n2 1 0 3 2 0 1 1 2") == "fjsp"
    with pytest.raises(FormatError, match="neither a job-shop nor a flexible job-shop"):
        detect_format("1 2\n7")


def test_shipped_instances_match_their_loaders():
    for name, fmt in (("ft06", "jsp"), ("mk01", "fjsp")):
        path = ROOT / "models" / "jobshop" / f"{name}.txt"
        assert detect_format(path.read_text()) == fmt
        assert read_instance(path).problem.name == name


def test_random_graph_example_runs(tmp_path):
    example = _load_example("random_graph_two_chips")
    trace = tmp_path / "trace.json"
    # deterministic: the memory levels go on only while each level is proven, which a wall-clock limit of 3 s
    # does not guarantee on a loaded machine
    out = example.run(["--nodes", "30", "--coarse", "10", "--time-limit", "3", "--deterministic",
                       "--trace", str(trace)])
    part1 = out["experiment"]
    assert validate(part1["problem"], part1["result"].schedule) == ()
    assert part1["result"].objective >= part1["bound"]
    rows = out["memory"]
    # unbounded first, then ever tighter capacities, each respected
    assert rows[0]["capacity"] is None and len(rows) >= 3
    for row in rows[1:]:
        if row["makespan"] is not None:
            assert max(row["peak"].values()) <= row["capacity"]
            assert validate(row["problem"], row["schedule"]) == ()
    makespans = [r["makespan"] for r in rows if r["makespan"] is not None and r["status"] is Status.OPTIMAL]
    assert makespans == sorted(makespans)  # less memory never makes an optimal plan shorter
    assert trace.is_file()


def test_jobshop_benchmarks_example_runs():
    example = _load_example("jobshop_benchmarks")
    rows = example.run(["--instances", "ft06", "la01", "mk01", "--time-limit", "20"])
    assert [(r["instance"], r["found"], r["status"]) for r in rows] == [
        ("ft06", 55, "OPTIMAL"), ("la01", 666, "OPTIMAL"), ("mk01", 40, "OPTIMAL"),
    ]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ("2 2\n0 3 1 2\n1 4 0 1\n".encode("utf-16"), "the file is UTF-16 text"),
        (b"3 100000000\n1 1 0 3\n", "number of machines must be <= 10000"),
        (b"2 2\n0 3 1 2\n1 4 5 1\n", "line 3: job 1, operation 1: 'machine' must be in 0..1, got 5"),
        (b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
    ],
    ids=["UTF-16", "10**8 machines", "classic machine out of range", "deep JSON"],
)
def test_cli_reports_bad_instance_files_in_one_line(tmp_path, capsys, data, fragment):
    path = tmp_path / "instance.txt"
    path.write_bytes(data)
    assert main(["jobshop", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and str(path) in err and "\n" not in err


def test_cli_writes_like_every_command(tmp_path, capsys):
    jsp = tmp_path / "tiny.txt"
    jsp.write_text("2 2\n0 3 1 2\n1 4 0 1\n")
    assert main(["jobshop", str(jsp), "--time-limit", "5", "--quiet", "--out", ""]) == 0
    assert not (tmp_path / "out").exists() and "wrote" not in capsys.readouterr().out  # '' writes nothing
    assert main(["jobshop", str(jsp), "--input-format", "jsp", "--time-limit", "5", "--quiet",
                 "--format", "json,txt"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "tiny." + s for s in ("plan.json", "problem.json", "result.json", "schedule.json", "txt")]
