"""Contraction rules and ideal enumeration."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedsearch.partition.contraction import contract, linearize
from schedsearch.partition.ideals import enumerate_ideals
from schedsearch.partition.opgraph import Operator, OperatorGraph

QUICK = ["LayerGraphs/bert24_inference", "LayerGraphs/bert24_training", "LayerGraphs/resnet50_inference",
         "LayerGraphs/resnet50_training", "OperatorGraphs/bert_l-3_inference",
         "OperatorGraphs/bert_l-3_training", "OperatorGraphs/resnet50_training",
         "LayerGraphs/gnmt_inference", "LayerGraphs/inceptionv3_inference",
         "OperatorGraphs/bert_L-12_training"]


@pytest.mark.parametrize("name", QUICK)
def test_ideal_counts_match_the_reference(name, load_workload, reference):
    cg = contract(load_workload(name).graph)
    assert len(enumerate_ideals(cg.preds)) == reference[name]["dp"]["ideals"]
    # DPL: one chain of n supernodes has n + 1 ideals
    assert cg.num_nodes + 1 == reference[name]["dpl"]["ideals"]


@st.composite
def dags(draw, max_n=7):
    n = draw(st.integers(0, max_n))
    preds = [[i for i in range(j) if draw(st.integers(0, 2)) == 0] for j in range(n)]
    return preds


@given(dags())
def test_ideals_are_exactly_the_downward_closed_sets(preds):
    n = len(preds)
    found = enumerate_ideals(preds)
    assert len(found) == len(set(found)) and found[0] == 0
    brute = {
        sum(1 << v for v in range(n) if bits[v])
        for bits in itertools.product((0, 1), repeat=n)
        if all(not bits[v] or all(bits[u] for u in preds[v]) for v in range(n))
    }
    assert set(found) == brute


def op(i, acc=1.0, cpu=10.0, cc=None, bwd=False, cost=1.0):
    return Operator(id=i, accel_latency=acc, cpu_latency=cpu, color_class=cc, is_backward=bwd, output_cost=cost)


def test_colour_classes_and_backward_partners_share_a_supernode():
    g = OperatorGraph(operators=[op(0, cc=0), op(1, cc=1), op(2, cc=1), op(3, cc=1, bwd=True)],
                      edges=[(0, 1), (1, 2), (2, 3)])
    cg = contract(g, merge_trivial=False)
    assert cg.num_nodes == 2
    assert cg.anchor[1] == cg.anchor[2] == cg.anchor[3] != cg.anchor[0]
    assert cg.accel_latency[cg.anchor[1]] == 3.0
    # only 0's output crosses: one hyperedge {anchor 0, anchor 1}
    assert cg.hyperedges == ((tuple(sorted((cg.anchor[0], cg.anchor[1]))), 1.0),)


def test_forward_cycles_through_classes_are_merged():
    # 0 -> 1 -> 2 with 0 and 2 colocated: classes {0,2} and {1} form a cycle
    g = OperatorGraph(operators=[op(0, cc=5), op(1, cc=6), op(2, cc=5)], edges=[(0, 1), (1, 2)])
    cg = contract(g, merge_trivial=False)
    assert cg.num_nodes == 1 and cg.members == ((0, 1, 2),)


def test_orphaned_backward_classes_get_an_artificial_forward_node():
    # forward 0 -> 1; backward 3 -> 2 where 2 has no forward partner (class 9)
    g = OperatorGraph(operators=[op(0, cc=0), op(1, cc=1), op(3, cc=1, bwd=True), op(2, cc=9, bwd=True)],
                      edges=[(0, 1), (1, 3), (3, 2)])
    cg = contract(g, merge_trivial=False)
    assert cg.num_nodes == 3
    art = cg.anchor[2]
    assert cg.members[art] == (2,) and cg.accel_latency[art] == 1.0
    # backward 3 -> 2 mirrors to forward: the orphan's supernode before 3's partner (node 1)
    assert art in cg.preds[cg.anchor[1]]


def test_zero_latency_leaves_merge_into_their_neighbour():
    # 0 (zero latency, one forward neighbour) -> 1 -> 2
    g = OperatorGraph(operators=[op(0, acc=0.0, cpu=0.0), op(1), op(2)], edges=[(0, 1), (1, 2)])
    assert contract(g, merge_trivial=False).num_nodes == 3
    cg = contract(g)
    assert cg.num_nodes == 2 and cg.anchor[0] == cg.anchor[1]
    # not merged when its backward partner has latency
    g2 = OperatorGraph(operators=[op(0, acc=0.0, cpu=0.0, cc=0), op(1, cc=1), op(3, cc=0, bwd=True)],
                       edges=[(0, 1)])
    assert contract(g2).num_nodes == 2


def test_linearize_keeps_only_prefixes():
    g = OperatorGraph(operators=[op(i) for i in range(4)], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    cg = contract(g, merge_trivial=False)
    assert len(enumerate_ideals(cg.preds)) == 6
    chain = linearize(cg)
    assert len(enumerate_ideals(chain.preds)) == 5
    with pytest.raises(ValueError, match="before its predecessor"):
        linearize(cg, [3, 0, 1, 2])
