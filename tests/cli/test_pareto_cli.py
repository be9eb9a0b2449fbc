"""``schedsearch pareto``: fronts of the comparable placements."""

from __future__ import annotations

import json

import pytest

from schedsearch.cli import main
from schedsearch.cli.pareto import COMPARABLE, comparable


def test_pareto_json(tmp_path, capsys):
    assert main(["pareto", "dualpipe", "--devices", "2", "--microbatches", "4", "--time-limit", "5", "--json",
                 "--out", str(tmp_path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "dualpipe-pareto.json").read_text()) == payload
    # every searched point's plan is written, and export reads it back
    plans = [r["plan"] for r in payload["points"] if r["schedule"] == "searched"]
    assert plans and all(p.endswith(".plan.json") for p in plans)
    assert main(["export", plans[0], "--format", "txt", "--out", "-"]) == 0
    assert "rank0:" in capsys.readouterr().out
    rows = payload["points"]
    hand = [r for r in rows if r["schedule"] == "handcrafted"]
    found = [r for r in rows if r["schedule"] == "searched"]
    # DualPipe on 2 devices, 4 chunks: the handcrafted schedule holds 3 activations of a
    # whole stage (6 chunk units); the search keeps its makespan with 2 stages (4 units)
    assert hand[0]["peak_activations"] == 6 and hand[0]["bubble"] == 0
    assert found[0]["bubble"] == 0 and found[0]["peak_activations"] == 4 and found[0]["status"] == "proven"
    # bubbles rise as the activation limit falls
    bubbles = [r["bubble"] for r in found]
    assert bubbles == sorted(bubbles) and len(set(bubbles)) == len(bubbles)


def test_pareto_text(capsys):
    assert main(["pareto", "1f1b", "--devices", "2", "--microbatches", "2", "--time-limit", "5"]) == 0
    text = capsys.readouterr().out
    assert "handcrafted" in text and "proven" in text


@pytest.mark.parametrize("name", sorted(COMPARABLE))
def test_common_unit(name):
    # every placement of the table puts the same work on a device: 6 chunk units per micro-batch
    spec, rep = comparable(name, 2, 4)
    assert set(rep.metrics.busy.values()) == {6 * 4}


def test_span_front_of_a_zero_bubble_placement():
    # the longest device span against memory (zero-bubble's objective): F +2, I -1, W -1
    from schedsearch.placements import zero_bubble
    from schedsearch.search import pareto
    from schedsearch.search.dualpipe import list_heuristic

    problem = zero_bubble(2, 3, forward_memory=2, input_grad_memory=-1)
    front = pareto(problem, ("max_span", "peak_memory"), heuristic=list_heuristic(), time_limit_s=20, seed=0)
    assert front.points and all(p.objective_name == "max_span" for p in front)
    values = [p.objective for p in front]
    peaks = [p.peak_memory for p in front.points]
    assert values == sorted(values) and peaks == sorted(peaks, reverse=True)
    assert all(p.how == "proven" for p in front.points)
    assert "max span" in str(front)
