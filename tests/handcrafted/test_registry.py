"""The registry of named handcrafted schedules: names, parameters and the report."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted import reproduce


def test_reproduce_rejects_unknown_names_and_parameters():
    with pytest.raises(InvalidProblemError, match="unknown schedule 'zb-h3'"):
        reproduce("zb-h3")
    with pytest.raises(InvalidProblemError, match=r"unknown parameter\(s\) \['chunks'\]"):
        reproduce("1f1b", chunks=2)


def test_reproduction_report_names_the_formula():
    rep = reproduce("zb-h1", devices=4, microbatches=8)
    text = str(rep)
    assert "formula (p-1)(F+I-W) = 3: equal" in text
    assert rep.matches == {"peak_memory": True, "makespan": True, "bubble": True}
    assert rep.to_dict()["measured"]["makespan"] == 27
