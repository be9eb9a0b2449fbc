"""The command-line interface: demo, search with outputs, validate."""

from __future__ import annotations

import json
import time

import pytest

from schedsearch.cli import main
from schedsearch.cli._common import ProgressPrinter
from schedsearch.options import ProgressEvent


def test_demo_runs_a_real_search(capsys):
    assert main(["demo", "--devices", "3", "--microbatches", "4", "--memory", "3"]) == 0
    out = capsys.readouterr().out
    assert "OPTIMAL, makespan 18" in out  # (4 + 3 - 1) x 3
    assert "both backends agree" in out
    assert "rank2:" in out  # the timeline names ranks


def test_search_writes_outputs_and_validate_reads_them(tmp_path, capsys):
    code = main(["search", "--placement", "vshape", "--devices", "2", "--microbatches", "3", "--memory", "2",
                 "--out", str(tmp_path), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "makespan 12" in out  # (3 + 2 - 1) x 3
    problem = tmp_path / "vshape-2x3.problem.json"
    schedule = tmp_path / "vshape-2x3.schedule.json"
    trace = json.loads((tmp_path / "vshape-2x3.trace.json").read_text())
    durations = sorted({e["dur"] for e in trace["traceEvents"] if e.get("ph") == "X"})
    assert durations == [1000.0, 2000.0]  # real durations: F 1 unit, B 2 units
    assert main(["validate", str(problem), str(schedule)]) == 0
    assert "VALID" in capsys.readouterr().out
    # break the schedule: drop a task
    doc = json.loads(schedule.read_text())
    doc["tasks"] = doc["tasks"][1:]
    schedule.write_text(json.dumps(doc))
    assert main(["validate", str(problem), str(schedule)]) == 1
    assert "missing_task" in capsys.readouterr().out


def test_search_from_problem_file_with_z3(tmp_path, capsys):
    from schedsearch.placements import bidirectional

    path = tmp_path / "p.json"
    path.write_text(bidirectional(2, 2, memory=2).to_json())
    assert main(["search", "--problem", str(path), "--backend", "z3", "--quiet", "--out", str(tmp_path)]) == 0
    assert "OPTIMAL" in capsys.readouterr().out


def test_bad_input_is_a_clear_error(capsys):
    assert main(["search", "--devices", "0", "--quiet", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert "'num_devices' must be an integer >= 1, got 0" in err


def test_progress_printer_prints_after_delay():
    import io

    stream = io.StringIO()
    printer = ProgressPrinter(stream=stream, after_s=0.0, every_s=100)
    printer(ProgressEvent(phase="bound", bound=30))
    printer(ProgressEvent(phase="exact search (cpsat)", elapsed_s=0.1, incumbent=40, bound=30))
    printer(ProgressEvent(phase="exact search (cpsat)", elapsed_s=0.2, incumbent=40, bound=30))  # no change
    printer(ProgressEvent(phase="exact search (cpsat)", elapsed_s=0.3, incumbent=None, bound=35))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("bound: incumbent -  bound 30")  # the analytic bound, before any plan
    assert "exact search (cpsat): incumbent 40  bound 30" in lines[1] and "gap 25.0%" in lines[1]
    assert "exact search (cpsat): incumbent 40  bound 35" in lines[2]


def test_progress_printer_shows_a_change_made_before_the_delay():
    import io

    stream = io.StringIO()
    with ProgressPrinter(stream=stream, after_s=0.2, every_s=0.05) as printer:
        printer(ProgressEvent(phase="bound", bound=30))
        time.sleep(0.5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "bound: incumbent -  bound 30" in lines[0]


def test_every_option_of_every_command_explains_itself():
    import argparse

    from schedsearch.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = [f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
              for name, parser in commands.items() for action in parser._actions if not action.help]
    assert not silent, f"options without help: {silent}"  # argparse.SUPPRESS (a retired flag) is a help


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("search", "validate", "demo"):
        assert name in out


@pytest.mark.parametrize(
    "data,fragment",
    [
        ("{}".encode("utf-16"), "the file is UTF-16 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"format": "schedsearch.problem", "version": true}', "'version' True is not supported"),
    ],
    ids=["UTF-16", "deep", "version true"],
)
def test_bad_problem_files_are_one_line_errors(tmp_path, capsys, data, fragment):
    from schedsearch.cli import main

    path = tmp_path / "p.json"
    path.write_bytes(data)
    for argv in (["validate", str(path), str(path)], ["search", "--problem", str(path), "--quiet", "--out", ""]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert fragment in err and "\n" not in err
    missing = tmp_path / "missing.json"
    assert main(["validate", str(missing), str(missing)]) == 2
    assert "no such file or folder" in capsys.readouterr().err
