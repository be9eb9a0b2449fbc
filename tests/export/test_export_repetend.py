"""Faces of the repetend search: exports with the repetend marked, the CLI
strategy and the Tessel-shapes example."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from optional import require

from schedsearch.cli import main as cli_main
from schedsearch.export.repetend import (
    instance_windows,
    periodic_chrome_trace,
    render_periodic_ascii,
)
from schedsearch.placements import tessel_shape
from schedsearch.search.repetend_search import repetend

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def periodic():
    return repetend(tessel_shape("V", 4, 8, memory=4), time_limit_s=30).periodic


def test_ascii_marks_instance_starts_and_one_instance(periodic) -> None:
    text = render_periodic_ascii(periodic, 8)
    lines = text.splitlines()
    starts = next(line for line in lines if line.startswith("    j: "))  # under the rows' names (rank0)
    marked = next(line for line in lines if line.startswith("    R: "))
    assert starts.count("|") == periodic.layout(8)[0]  # one per instance
    assert marked.count("[") == 1 and marked.count("]") == 1
    device_row = next(line for line in lines if line.startswith("rank0: "))
    assert len(marked) == len(device_row)  # aligned with the timeline


def test_chrome_trace_names_every_part_and_has_a_repetend_row(periodic) -> None:
    doc = periodic_chrome_trace(periodic, 8)
    tasks = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "repetend"]
    assert {e["args"]["part"] for e in tasks} == {"warmup", "repetend", "cooldown"}
    rows = [e for e in doc["traceEvents"] if e.get("cat") == "repetend"]
    schedule = periodic.unroll(8)
    assert len(rows) == len(instance_windows(periodic, schedule, 8)) == periodic.layout(8)[0]
    assert doc["otherData"]["repetend"]["period"] == 4


def test_plot_shades_the_repetend(periodic, tmp_path) -> None:
    require("matplotlib")
    from schedsearch.export.repetend import plot_periodic

    fig = plot_periodic(periodic, 8, tmp_path / "v.png")
    assert (tmp_path / "v.png").stat().st_size > 0
    assert fig.axes[0].patches  # the shaded window is among the patches


def test_cli_search_with_the_repetend_strategy(tmp_path, capsys) -> None:
    code = cli_main(["search", "--strategy", "repetend", "--placement", "vshape", "--devices", "4",
                     "--microbatches", "8", "--memory", "4", "--quiet", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "period 3" in out and " R: " in out
    result = json.loads((tmp_path / "vshape-4x8.result.json").read_text())
    assert result["strategy"] == "repetend" and result["period"] == 3 and result["objective"] == 33
    trace = json.loads((tmp_path / "vshape-4x8.trace.json").read_text())
    assert any(e.get("cat") == "repetend" for e in trace["traceEvents"])


def test_tessel_shapes_example_writes_marked_traces(tmp_path, capsys) -> None:
    spec = importlib.util.spec_from_file_location("tessel_shapes", ROOT / "examples" / "tessel_shapes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--shapes", "V", "K", "--microbatches", "6", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== V on 4 devices" in out and "== K on 4 devices" in out
    for shape in ("V", "K"):
        doc = json.loads((tmp_path / f"tessel-{shape}-4.trace.json").read_text())
        assert doc["otherData"]["repetend"]["period"] == {"V": 4, "K": 6}[shape]


def test_periodic_module_imports_no_solver() -> None:
    import ast

    tree = ast.parse((ROOT / "schedsearch" / "periodic.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in modules if m.split(".")[0] in ("z3", "ortools")}
    assert {m for m in modules if m.startswith("schedsearch.")} <= {
        "schedsearch.errors", "schedsearch.problem", "schedsearch.schedule", "schedsearch.validate"}
