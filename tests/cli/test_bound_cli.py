"""``schedsearch bound FILE`` on a partitioning workload and on a scheduling problem."""

from __future__ import annotations

import json

import pytest

from schedsearch.cli import main
from schedsearch.placements import vshape


def test_bound_on_a_partitioning_workload(tmp_path, capsys):
    doc = {
        "maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 100.0,
        "nodes": [{"id": i, "fpgaLatency": lat, "cpuLatency": 10 * lat, "isBackwardNode": False, "size": 1.0,
                   "supportedOnFpga": True} for i, lat in enumerate([1.0, 2.0, 3.0, 1.0])],
        "edges": [{"sourceId": i, "destId": i + 1, "cost": 0.5} for i in range(3)],
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    assert main(["bound", str(path), "--time-limit", "10"]) == 0
    out = capsys.readouterr().out
    # best split: {0, 1} | {2, 3}: 3 + 0.5 (1 sends) = 3.5 and 4 + 0.5 (receives) = 4.5
    assert "best plan:   4.5 (OPTIMAL)" in out
    assert "lower bound: 4.5" in out and "gap:" in out and "tight:" in out
    assert main(["bound", str(path), "--json", "--model", "contiguous", "--solver", "scip"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best_value"] == pytest.approx(4.5) and data["gap"] == pytest.approx(0, abs=1e-4)


def test_bound_on_a_scheduling_problem(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(vshape(4, 8, memory=2).to_json())
    assert main(["bound", str(path), "--time-limit", "20"]) == 0
    out = capsys.readouterr().out
    assert "best plan:   51 (OPTIMAL)" in out
    assert "memory d0 42" in out  # the memory bound's part


def test_bound_rejects_other_files(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text("{}")
    assert main(["bound", str(path)]) == 2
    assert "neither a partitioning workload" in capsys.readouterr().err
