"""From a split to a block problem, and partition -> search -> schedule in one call."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph, Slot, Split
from schedsearch.partition.to_problem import partition_and_schedule, split_to_problem
from schedsearch.result import Status
from schedsearch.search import optimal
from schedsearch.validate import validate

A0, A1, C0 = Slot(kind="accel", index=0), Slot(kind="accel", index=1), Slot(kind="cpu", index=0)


def training_chain() -> OperatorGraph:
    """f0 -> f1 -> f2 with backward partners b2 -> b1 -> b0 and f_i -> b_i."""
    ops = [Operator(id=i, accel_latency=2.0 * (i + 1), cpu_latency=20.0, output_cost=1.0, color_class=i)
           for i in range(3)]
    ops += [Operator(id=10 + i, accel_latency=4.0, cpu_latency=40.0, output_cost=0.5, color_class=i,
                     is_backward=True) for i in range(3)]
    edges = [(0, 1), (1, 2), (12, 11), (11, 10)] + [(i, 10 + i) for i in range(3)]
    return OperatorGraph(operators=ops, edges=edges, name="chain")


def test_blocks_edges_and_scaling_of_a_two_stage_split():
    g = training_chain()
    split = Split(stages=[(A0, (0, 1, 10, 11)), (A1, (2, 12))])
    staged = split_to_problem(g, split, num_microbatches=2, time_unit=1.0)
    p = staged.problem
    dur = {b.name: b.options[0].duration for b in p.graph.blocks}
    # F0 = f0 + f1 = 2 + 4, B0 = b0 + b1 = 8, F1 = f2 = 6, B1 = b2 = 4
    assert dur == {"F0": 6, "B0": 8, "F1": 6, "B1": 4}
    assert {b.name: b.options[0].devices for b in p.graph.blocks}["F1"] == ("accel1",)
    assert {b.name: b.memory for b in p.graph.blocks} == {"F0": 1, "B0": -1, "F1": 1, "B1": -1}
    sizes = {(e.src, e.dst): e.size for e in p.graph.edges}
    # f1 -> f2 crosses (cost 1); b2 -> b1 crosses (0.5 rounds to 0: pure precedence); F_i -> B_i
    assert sizes == {("F0", "F1"): 1, ("B1", "B0"): 0, ("F0", "B0"): 0, ("F1", "B1"): 0}
    assert [c.endpoints for c in p.cluster.channels] == [("accel0", "accel1")]
    assert staged.stage_slots == (A0, A1) and staged.block_operators["B0"] == (10, 11)


def test_default_time_unit_and_cpu_stages():
    g = training_chain()
    split = Split(stages=[(A0, (0, 1, 10, 11)), (C0, (2, 12))])
    staged = split_to_problem(g, split, num_microbatches=1, resolution=10)
    # CPU stage uses CPU latencies: F1 = 20, B1 = 40 = the largest block -> 10 units
    assert staged.time_unit == 4.0
    dur = {b.name: b.options[0].duration for b in staged.problem.graph.blocks}
    assert dur["B1"] == 10 and dur["F1"] == 5 and dur["F0"] == 2
    assert staged.to_graph_time(10) == 40.0


def test_inference_graph_has_forward_blocks_only():
    g = OperatorGraph(operators=[Operator(id=i, accel_latency=1.0, output_cost=2.0) for i in range(3)],
                      edges=[(0, 1), (1, 2)])
    staged = split_to_problem(g, Split(stages=[(A0, (0,)), (A1, (1, 2))]), num_microbatches=3, time_unit=1.0)
    assert [b.name for b in staged.problem.graph.blocks] == ["F0", "F1"]
    assert all(b.memory == 0 for b in staged.problem.graph.blocks)
    assert staged.problem.graph.edges[0].size == 2


def test_bad_splits_are_rejected():
    g = training_chain()
    with pytest.raises(InvalidOperatorGraphError, match="stages feed each other in a cycle"):
        split_to_problem(g, Split(stages=[(A0, (0, 2, 10, 12)), (A1, (1, 11))]), num_microbatches=1)
    with pytest.raises(InvalidOperatorGraphError, match="operators not in the split"):
        split_to_problem(g, Split(stages=[(A0, (0, 1))]), num_microbatches=1)


def test_partition_then_schedule_on_a_real_workload(load_workload):
    w = load_workload("LayerGraphs/bert24_training")
    result = partition_and_schedule(w, DeviceLimits(num_accelerators=3), search=optimal, num_microbatches=3,
                                    max_in_flight=3, time_limit_s=30, workers=2, seed=0)
    assert result.partition.optimal and len(result.staged.stage_slots) == 3
    assert result.search.status is Status.OPTIMAL
    assert validate(result.problem, result.schedule) == ()
    # the steady state cannot beat the slowest stage: makespan >= N * (its F + B)
    per_stage = {}
    for b in result.problem.graph.blocks:
        per_stage[b.stage] = per_stage.get(b.stage, 0) + b.options[0].duration
    assert result.search.objective >= 3 * max(per_stage.values())
    assert "per micro-batch" in str(result)
