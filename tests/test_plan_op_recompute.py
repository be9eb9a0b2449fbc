"""torchtitan's per-operator selective checkpointing (recomputation mode "op"): its figures read and checked,
its stage costs, its place in the planner's space and in the files written for torchtitan."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedsearch.errors import InvalidPipelineError
from schedsearch.plan.autoplan import configuration_floor_ms, configurations, space_floor_ms
from schedsearch.plan.layers import Configuration, Layer, LayerModel, Measurement, Recomputation
from schedsearch.plan.planner import plan_layers

GIB = 2**30


def block(size: int = 1, *, op: bool = True) -> dict:
    m = {"microbatch_size": size, "forward_ms": 1.0 * size, "backward_ms": 2.0 * size,
         "activation_bytes": f"{size} GiB", "checkpoint_bytes": f"{0.125 * size} GiB"}
    if op:
        m.update(selective_bytes=f"{0.375 * size} GiB", selective_recompute_ms=0.25 * size)
    return m


def model(budget: str | None = None, *, op: bool = True, blocks: int = 4, global_batch: int = 4) -> LayerModel:
    edge = {"microbatch_size": 1, "forward_ms": 0.25, "backward_ms": 0.5, "activation_bytes": "0.25 GiB"}
    return LayerModel(global_batch=global_batch, num_ranks=2, memory_budget_bytes=budget, layers=[
        {"name": "embed", "kind": "embedding", "measured": [edge], "parameter_bytes": "0.5 GiB"},
        {"name": "block", "repeat": blocks, "measured": [block(1, op=op)], "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": [edge], "parameter_bytes": "0.5 GiB"}])


def test_the_figures_are_read_checked_interpolated_and_written_back():
    m = Measurement(**block())
    assert m.has_selective and m.selective_bytes == 3 * GIB // 8 and m.selective_recompute_ms == 0.25
    assert Measurement(**m.to_dict()) == m
    with pytest.raises(InvalidPipelineError, match="give both 'selective_bytes' and 'selective_recompute_ms'"):
        Measurement(**{k: v for k, v in block().items() if k != "selective_bytes"})
    with pytest.raises(InvalidPipelineError, match=r"'selective_recompute_ms' \(1.5\) is more than the forward"):
        Measurement(**dict(block(), selective_recompute_ms=1.5))
    with pytest.raises(InvalidPipelineError, match="'selective_bytes' must"):
        Measurement(**dict(block(), selective_bytes="lots"))
    layer = Layer(name="b", measured=[block(1), block(3)])
    mid = layer.at(2)
    assert mid.selective_recompute_ms == 0.5 and mid.selective_bytes == 3 * GIB // 4
    with pytest.raises(InvalidPipelineError, match="at every measured size or at none"):
        Layer(name="b", measured=[block(1), block(3, op=False)])


def test_a_stage_under_op_holds_and_recomputes_what_the_blocks_say():
    m = model()
    config = Configuration.from_boundaries([3, 3], num_ranks=2, microbatch_size=1, num_microbatches=4,
                                           recomputation=Recomputation(mode="op"))
    first, second = (m.stage(config, k) for k in range(2))
    # embed + 2 blocks, then 2 blocks + head: each block's backward runs 0.25 ms of its forward again
    assert first.backward_ms == pytest.approx(0.5 + 2 * (2.0 + 0.25))
    assert second.backward_ms == pytest.approx(2 * (2.0 + 0.25) + 0.5)
    assert first.activation_bytes == GIB // 4 + 2 * (3 * GIB // 8)  # the embedding is never checkpointed
    assert configuration_floor_ms(m, config) == 4 * (0.25 + 0.5 + 2 * (1 + 2 + 0.25))
    # a model whose blocks give no such figures refuses the mode, naming the layer
    with pytest.raises(InvalidPipelineError, match="recomputation 'op' needs .* layer 'block' gives neither"):
        model(op=False).stage(config, 0)


def test_the_space_holds_op_only_where_the_blocks_give_its_figures():
    modes = {c.recomputation.mode for c, _ in configurations(model(), 2)[0]}
    assert modes == {"none", "full", "op"}
    assert {c.recomputation.mode for c, _ in configurations(model(op=False), 2)[0]} == {"none", "full"}


def test_where_memory_binds_the_planner_chooses_op_and_writes_selective(tmp_path: Path):
    # torchtitan's debug model (6 blocks) in 5 GiB per rank: a rank holds 2 GiB of parameters; without
    # recomputation its blocks' activations (a GiB per block and micro-batch) leave room for one micro-batch
    # in flight, per-operator checkpointing keeps 3/8 of them at a quarter of the recomputed forward, full
    # recomputation keeps 1/8 at the whole forward
    m = model("5 GiB", blocks=6, global_batch=4)
    result = plan_layers(m, time_limit_s=30, parallel=1, deterministic=True, prune=False)
    best = result.best
    assert best.configuration.recomputation.mode == "op", result.table()
    assert not best.candidate.split_backward  # torchtitan runs one backward per checkpointed region
    fulls = [c for c in result.candidates if c.configuration.recomputation.mode == "full" and c.makespan_ms]
    assert fulls and best.makespan_ms < min(c.makespan_ms for c in fulls)
    assert result.bound_ms <= best.makespan_ms
    floor = space_floor_ms(m, 2)
    assert floor is not None and floor <= best.makespan_ms
    paths = result.write(tmp_path, torchtitan_config="llama3_debugmodel")
    lines = paths["torchtitan"].read_text().splitlines()
    assert lines[-1] == "activation_checkpoint:selective"


def test_the_proposals_of_a_large_space_take_op_costs():
    # 40 blocks: too many splits to enumerate, so the balanced DP and the peers propose the op configurations'
    # splits, counting its recomputed part and its bytes (the embedding and the head give no such figures)
    from schedsearch.plan.autoplan import balanced_split
    from schedsearch.plan.peers import auto_partition

    m = model(blocks=40, global_batch=8)
    op = Recomputation(mode="op")
    split = balanced_split(m, num_ranks=2, layout="loop", stages_per_rank=1, microbatch_size=1, recomputation=op)
    assert [len(g) for g in split] == [21, 21]
    assert len(auto_partition(m, num_ranks=2, recomputation=op).split) == 2
    found, whole = configurations(m, 2)
    assert not whole and any(c.recomputation.mode == "op" for c, _ in found)
