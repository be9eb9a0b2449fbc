"""The one CLI grammar: --out DIR / --format on every writing command, every placement in search,
per-stage lists, --version, one-line errors for missing files, non-zero exits without a plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedsearch.cli import main
from schedsearch.cli.search import PLACEMENTS


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("schedsearch 0.")


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_search_builds_every_placement(placement, tmp_path, capsys):
    assert main(["search", "--placement", placement, "--devices", "2", "--microbatches", "2", "--time-limit", "10",
                 "--quiet", "--out", str(tmp_path), "--format", "json"]) == 0
    assert "result: OPTIMAL" in capsys.readouterr().out
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 4 and all(name.endswith(".json") for name in written)  # plan, problem, result, schedule


def test_search_per_stage_times_and_unknown_flag(capsys):
    assert main(["search", "--devices", "4", "--microbatches", "1", "--forward", "2,2,3,3", "--backward", "1",
                 "--quiet", "--out", ""]) == 0
    assert "makespan 14" in capsys.readouterr().out  # one micro-batch: forwards 2+2+3+3, backwards 4 x 1
    assert not Path("out").exists()  # --out '' writes nothing
    assert main(["search", "--placement", "zb-h1", "--backward", "3", "--quiet", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert "placement 'zb-h1' takes no --backward" in err and "--input-grad" in err


def test_search_per_stage_lists_count_every_stage_of_the_placement(capsys):
    # zb-v on 2 devices x 2 chunks: stages 0..3 on d0, d1, d1, d0; one micro-batch runs them in a chain
    assert main(["search", "--placement", "zb-v", "--devices", "2", "--microbatches", "1", "--forward", "1,2,3,4",
                 "--quiet", "--out", ""]) == 0
    out = capsys.readouterr().out
    assert "makespan 15" in out  # forwards 1+2+3+4, the 4 I's in a chain (1 each), then stage 0's W (1)
    # interleaved takes the durations of interleaved() (its wrapper's own signature hides them)
    assert main(["search", "--placement", "interleaved", "--devices", "2", "--microbatches", "1",
                 "--forward", "1,1,1,1", "--backward", "2", "--quiet", "--out", ""]) == 0
    assert "makespan 12" in capsys.readouterr().out
    assert main(["search", "--placement", "zb-v", "--forward", "2,2,3,3", "--quiet", "--out", ""]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "placement 'zb-v' (4 devices x 2 chunks)" in err
    assert "--forward must be one value for every stage or one value per stage (8 stages), got 4 values" in err


def test_search_formats_and_plain_file_names(tmp_path, capsys):
    from schedsearch.placements import vshape

    problem = vshape(2, 2)
    named = json.loads(problem.to_json())
    named["name"] = "profiled (time unit 0.0001 s, memory unit 1024 B)"
    path = tmp_path / "p.json"
    path.write_text(json.dumps(named))
    out = tmp_path / "o"
    assert main(["search", "--problem", str(path), "--quiet", "--out", str(out), "--format", "csv,txt,trace"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["profiled-time-unit-0.0001-s-memory-unit-1024-B" + s for s in (".csv", ".trace.json", ".txt")]
    with pytest.raises(SystemExit) as exc:
        main(["search", "--quiet", "--format", "pdf"])
    assert exc.value.code == 2 and "unknown format 'pdf'" in capsys.readouterr().err


def test_default_out_is_out_folder(capsys):
    assert main(["search", "--devices", "2", "--microbatches", "2", "--quiet"]) == 0
    assert sorted(p.name for p in Path("out").iterdir()) == [
        "vshape-2x2." + s for s in ("plan.json", "problem.json", "result.json", "schedule.json", "trace.json")]


@pytest.mark.parametrize("argv", [
    ["search", "--problem", "{missing}", "--quiet"],
    ["validate", "{missing}", "{missing}"],
    ["export", "{missing}", "--format", "csv"],
    ["jobshop", "{missing}", "--quiet"],
    ["bound", "{missing}"],
    ["partition", "{missing}.json"],
    ["plan", "{missing}.toml"],
    ["run", "{missing}.json", "--check-only"],
])
def test_a_missing_file_is_one_line_and_exit_2(argv, tmp_path, capsys):
    missing = str(tmp_path / "missing")
    assert main([a.replace("{missing}", missing) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "missing" in err and "Traceback" not in err


def test_timed_out_search_exits_non_zero_with_the_bound(tmp_path, capsys):
    from schedsearch.result import SearchResult, Status
    from schedsearch.cli._common import no_plan_reason
    from schedsearch.placements import vshape

    problem = vshape(2, 3)
    reason = no_plan_reason(problem, SearchResult(status=Status.TIMEOUT), 1.0)
    assert reason.startswith("no plan found within the time limit of 1 s (TIMEOUT); any plan takes at least 12")
    reason = no_plan_reason(problem, SearchResult(status=Status.INFEASIBLE, bound_engine="cpsat"))
    assert reason.startswith("no plan exists: cpsat proved")
