"""Tessel's V, X, M, NN and K shapes: structure, defaults, parameters, and a tiny exact search."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.placements import TESSEL_SHAPES, tessel_k, tessel_m, tessel_nn, tessel_shape, tessel_v, tessel_x
from schedsearch.search import optimal


def chain(problem):
    """The blocks of a single-chain graph in dependency order."""
    return list(problem.graph.topological_order())


def test_v_shape_uses_tessels_conventions():
    p = tessel_v(4, 2)
    b = p.graph.by_name()
    assert (b["F0"].options[0].duration, b["F0"].memory) == (1, 1)
    assert (b["B0"].options[0].duration, b["B0"].memory) == (3, -1)
    assert chain(p) == ["F0", "F1", "F2", "F3", "B3", "B2", "B1", "B0"]


def test_x_shape_holds_a_down_and_an_up_v():
    p = tessel_x(4, 1)
    d = {x.name: x.options[0].devices for x in p.graph.blocks}
    assert d["F0.down"] == ("d0",) and d["F0.up"] == ("d3",) and d["B0.up"] == ("d3",)


def test_m_shape_wraps_the_v_in_full_shard_blocks():
    p = tessel_m(4, 1)
    assert chain(p) == ["FS", "F0", "F1", "F2", "F3", "B3", "B2", "B1", "B0", "BS"]
    fs = p.graph.block("FS")
    assert fs.options[0].devices == ("d0", "d1", "d2", "d3") and fs.memory == 0 and fs.stage is None
    assert p.graph.block("BS").options[0].duration == 1


def test_nn_shape_cuts_the_v_at_its_middle():
    assert chain(tessel_nn(4, 1)) == ["FS0", "F0", "F1", "FS1", "F2", "F3", "B3", "B2", "BS1", "B1", "B0", "BS0"]


def test_k_shape_joins_two_branches_in_a_full_shard_loss():
    p = tessel_k(4, 1)
    edges = {(e.src, e.dst) for e in p.graph.edges}
    assert {("F1.b0", "FJ"), ("F1.b1", "FJ"), ("FJ", "BJ"), ("BJ", "B1.b0"), ("BJ", "B1.b1")} <= edges
    d = {x.name: x.options[0].devices for x in p.graph.blocks}
    assert d["F0.b1"] == ("d2",) and d["B0.b0"] == ("d0",) and len(d["FJ"]) == 4
    assert (p.graph.block("FJ").memory, p.graph.block("BJ").memory) == (1, -1)


def test_every_value_is_a_parameter():
    p = tessel_m(2, 1, forward=2, backward=5, shard=4, forward_memory=3, backward_memory=-3, shard_memory=1, memory=9)
    b = p.graph.by_name()
    assert (b["F0"].options[0].duration, b["B0"].options[0].duration, b["FS"].options[0].duration) == (2, 5, 4)
    assert (b["F0"].memory, b["B1"].memory, b["BS"].memory) == (3, -3, 1)
    assert p.capacity("d0") == 9


def test_shape_by_name():
    assert TESSEL_SHAPES == ("V", "X", "M", "NN", "K")
    assert tessel_shape("nn", 4, 1).name.startswith("tessel-NN")
    with pytest.raises(InvalidProblemError, match="must be one of"):
        tessel_shape("W", 4, 1)
    with pytest.raises(InvalidProblemError, match="'num_devices' must be an integer >= 2"):
        tessel_k(1, 1)


def test_a_full_shard_shape_solves_exactly():
    # M on 2 devices, 2 micro-batches, unbounded memory; one micro-batch alone takes
    # FS 1 + F0 1 + F1 1 + B1 3 + B0 3 + BS 1 = 10. Best pair: both FS first (0-2), forwards
    # pipelined (F1 of the second ends at 5), B1 5-8 and 8-11 on d1, B0 8-11 and 11-14 on d0,
    # then the two full-shard backwards need both devices: 14-16. Makespan 16.
    result = optimal(tessel_m(2, 2), time_limit_s=20, workers=1, seed=0)
    assert result.proven_optimal
    assert result.objective == 16
