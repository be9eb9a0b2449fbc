"""``schedsearch reproduce`` and ``schedsearch export``."""

from __future__ import annotations

import importlib.util
import json

from schedsearch.cli import main


def test_reproduce_prints_the_figures_beside_the_formula(capsys):
    assert main(["reproduce", "1f1b", "--devices", "4", "--microbatches", "8"]) == 0
    out = capsys.readouterr().out
    assert "makespan           33   formula (m+p-1)(F+B) = 33: equal" in out
    assert "peak_memory        [4, 3, 2, 1]" in out


def test_reproduce_interleaved_reports_in_the_published_unit(capsys):
    assert main(["reproduce", "interleaved", "--devices", "4", "--chunks", "2", "--microbatches", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["time_scale"] == 2 and doc["measured"]["bubble"] == 4.5 and doc["matches"]["bubble"]


def test_reproduce_with_search_and_outputs(tmp_path, capsys):
    code = main(["reproduce", "dualpipe", "--devices", "4", "--microbatches", "8", "--search", "--time-limit", "20",
                 "--out", str(tmp_path), "--ascii"])
    assert code == 0
    out = capsys.readouterr().out
    assert "the search beats the handcrafted schedule (makespan +1" in out
    assert (tmp_path / "dualpipe.trace.json").is_file() and (tmp_path / "dualpipe.plan.json").is_file()
    # the searched plan is written beside the handcrafted one, and export reads its result file
    searched = json.loads((tmp_path / "dualpipe-searched.result.json").read_text())
    assert searched["objective"] == 25 and searched["schedule"]["tasks"]
    assert main(["export", str(tmp_path / "dualpipe-searched.result.json"), "--format", "trace",
                 "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "dualpipe-searched.trace.json").is_file()
    assert not (tmp_path / "dualpipe.csv").exists()  # two pipelines: no PyTorch CSV
    assert "rank3:" in out


def test_reproduce_bad_input_is_a_clear_error(capsys):
    assert main(["reproduce", "dualpipe", "--devices", "3", "--microbatches", "6"]) == 2
    assert "DualPipe: needs an even number of devices (PP), got 3" in capsys.readouterr().err


def test_export_every_format_from_a_plan(tmp_path, capsys):
    assert main(["reproduce", "dualpipev", "--devices", "2", "--microbatches", "4", "--out", str(tmp_path)]) == 0
    plan = tmp_path / "dualpipev.plan.json"
    capsys.readouterr()
    assert main(["export", str(plan), "--format", "csv", "--out", "-"]) == 0
    csv_text = capsys.readouterr().out
    assert csv_text == (tmp_path / "dualpipev.csv").read_text()
    assert "OVERLAP_F_B" in csv_text
    assert main(["export", str(plan), "--format", "txt", "--labels", "stage", "--out", "-"]) == 0
    assert "rank0:" in capsys.readouterr().out  # the label style is the timeline's (schedsearch.export.ascii)
    pictures = ("svg",) if importlib.util.find_spec("matplotlib") else ()
    again = tmp_path / "again"
    assert main(["export", str(plan), "--format", ",".join(("trace", "json", *pictures)), "--out", str(again)]) == 0
    for suffix in (".trace.json", ".plan.json", *(f".{p}" for p in pictures)):
        assert (again / f"dualpipev{suffix}").stat().st_size > 0


def test_export_from_problem_and_schedule_documents(tmp_path, capsys):
    from schedsearch.handcrafted import reproduce

    rep = reproduce("zb-h1", devices=2, microbatches=2)
    (tmp_path / "p.json").write_text(rep.problem.to_json())
    (tmp_path / "s.json").write_text(json.dumps({"status": "FEASIBLE", "schedule": rep.schedule.to_dict()}))
    assert main(["export", "--problem", str(tmp_path / "p.json"), "--schedule", str(tmp_path / "s.json"),
                 "--format", "csv", "--out", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("0F0,0F1,0I0")


def test_export_refuses_what_the_format_cannot_express(tmp_path, capsys):
    assert main(["reproduce", "chimera", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "chimera.plan.json"), "--format", "csv", "--out", "-"]) == 2
    assert "cannot express" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "chimera.plan.json"), "--format", "csv"]) == 2
    assert "csv: not written" in capsys.readouterr().err
    assert main(["export", "--format", "txt"]) == 2
    assert "give a plan document" in capsys.readouterr().err
