"""The benchmark gate (``python -m benchmarks check``) fails on a capability lost.

Its comparison is checked on figures made up here, and end to end on a
real case (the handcrafted schedules: constructions, no search, well under
a second) against a record tampered to be better than reality.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from benchmarks import check

BENCHMARKS = Path(check.__file__).resolve().parent


def test_every_benchmark_has_a_case_in_the_gate():
    benches = sorted(p.stem[len("bench_"):] for p in BENCHMARKS.glob("bench_*.py"))
    assert sorted(check.CASES) == benches


def test_every_case_runs_its_searches_in_deterministic_mode():
    # a gated figure must not depend on the machine: every strategy call of a case passes the gate's
    # deterministic settings (one worker, a fixed seed, deterministic limits)
    tree = ast.parse(Path(check.__file__).read_text())
    strategies = {"solve", "optimal", "scale_search", "jobshop", "repetend", "search_against"}
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("case_")):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in strategies:
                spread = [k for k in node.keywords if k.arg is None]
                assert spread and getattr(spread[0].value, "id", None) == "DET", \
                    f"{fn.name}: {node.func.id}(...) without **DET (line {node.lineno})"


@pytest.mark.parametrize("kind,recorded,now,expected", [
    ("lower", 33, 33, "ok"), ("lower", 33, 34, "REGRESSED"), ("lower", 33, 32, "better"),
    ("lower", 33, None, "REGRESSED"), ("lower", None, 40, "better"),
    ("lower", 27.918568, 27.918568 * (1 + 1e-12), "ok"),
    ("higher", 30, 29, "REGRESSED"), ("higher", 30, 31, "better"), ("higher", 30, None, "REGRESSED"),
    ("proof", True, False, "REGRESSED"), ("proof", False, True, "better"), ("proof", True, True, "ok"),
    ("work", 1000, 2500, "ok"), ("work", 1000, 2000 + 500 + 1, "REGRESSED"), ("work", 1000, 10, "better"),
])
def test_the_verdict_of_one_figure(kind, recorded, now, expected):
    assert check.verdict(kind, recorded, now, floor=500 if kind == "work" else 0.0) == expected


def test_a_case_that_no_longer_runs_or_loses_a_figure_regresses():
    recorded = {"a": {"x": {"kind": "lower", "value": 5}}, "b": {"y": {"kind": "proof", "value": True}}}
    errors = {"a": "IdealLimitExceeded: more than 2000000 ideals"}
    rows = check.compare(recorded, {"a": {}, "b": {}}, errors, ["a", "b"])
    verdicts = {(r["case"], r["figure"]): r["verdict"] for r in rows}
    assert verdicts == {("a", "(run)"): "REGRESSED", ("b", "y"): "REGRESSED"}


def run_gate(capsys, *argv: str) -> tuple[int, str]:
    code = check.main(list(argv))
    return code, capsys.readouterr().out


def test_the_gate_passes_on_its_own_record_and_fails_on_a_record_better_than_reality(tmp_path, capsys):
    baseline = tmp_path / "check.json"
    common = ("--baseline", str(baseline), "--only", "handcrafted", "--data", str(tmp_path))
    code, out = run_gate(capsys, "--record", *common)
    assert code == 0 and baseline.is_file(), out
    code, out = run_gate(capsys, *common)
    assert code == 0, out  # the same figures again: reproducible

    record = json.loads(baseline.read_text())
    figures = record["cases"]["handcrafted"]
    real = figures["zb-h1_makespan"]["value"]
    figures["zb-h1_makespan"]["value"] = real - 1  # claims a plan one unit shorter than the construction gives
    baseline.write_text(json.dumps(record))
    code, out = run_gate(capsys, *common)
    assert code == 1
    line = next(ln for ln in out.splitlines() if "zb-h1_makespan" in ln)
    assert line.split()[:6] == ["handcrafted", "zb-h1_makespan", "lower", str(real - 1), str(real), "REGRESSED"]
    assert "FAILED: 1 figure(s) regressed" in out

    figures["zb-h1_makespan"]["value"] = real + 1  # the record worse than reality: an improvement, not a failure
    figures["extra_proof"] = {"kind": "proof", "value": True}  # a proof the case no longer gives: lost
    baseline.write_text(json.dumps(record))
    code, out = run_gate(capsys, *common)
    assert code == 1
    assert any(ln.split()[:2] == ["handcrafted", "extra_proof"] and "REGRESSED" in ln for ln in out.splitlines())
    assert any(ln.split()[:2] == ["handcrafted", "zb-h1_makespan"] and "better" in ln for ln in out.splitlines())


def test_the_recorded_baseline_covers_every_case():
    recorded = json.loads(check.BASELINE.read_text())["cases"]
    assert sorted(recorded) == sorted(check.CASES)
    for case, figures in recorded.items():
        assert figures, f"case {case} has no recorded figure"
        for name, figure in figures.items():
            assert figure["kind"] in (*check.KINDS, "note"), (case, name, figure)
