"""The peers' configurations (:mod:`schedsearch.plan.peers`) against statements that share no code with them.

* torchtitan's default split: against a line-by-line restatement of
  torchtitan 0.3.0's ``_generate_llm_fqn_per_model_part`` and stage-count
  rules (and against torchtitan's own function where torchtitan is installed);
* the schedule simulation ``auto_partition`` scores with: the bubbles of
  1F1B, interleaved 1F1B and interleaved zero bubble on uniform stages
  (the reference figures);
* ``auto_partition``: its DP's largest stage equals the least largest stage
  over every split (brute force), and its answer simulates no slower than
  that DP's split;
* ``adapipe``: its step time equals the least over every split and every
  per-stage recomputation choice that fits the budget (brute force), and its
  configuration fits the budget.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

from schedsearch.errors import InvalidPipelineError, NoFittingPlanError
from schedsearch.plan.layers import Configuration, LayerModel
from schedsearch.plan.peers import (
    adapipe, auto_partition, min_max_split, simulate_schedule, torchtitan_default,
)

GIB = 2**30


def compositions(n: int, parts: int):
    """Every way to cut n layers into ``parts`` non-empty contiguous groups, as group sizes."""
    for cuts in itertools.combinations(range(1, n), parts - 1):
        edges = (0, *cuts, n)
        yield [edges[k + 1] - edges[k] for k in range(parts)]


# ------------------------------------------------------------------ torchtitan's default
def titan_modules(num_stages: int, num_layers: int, input_weight: int, output_weight: int) -> list[list[str]]:
    """torchtitan 0.3.0's ``_generate_llm_fqn_per_model_part``, restated (its refusals as ValueError)."""
    if num_stages == 1:
        return [["tok_embeddings"] + [f"layers.{i}" for i in range(num_layers)] + ["norm", "lm_head"]]
    effective = num_layers + input_weight + output_weight
    if num_stages > effective:
        raise ValueError("more stages than effective layers")
    per_stage, extra = divmod(effective, num_stages)
    if per_stage == 0 or input_weight > per_stage or output_weight > per_stage:
        raise ValueError("weights too large")
    out, current = [], 0
    for k in range(num_stages):
        mine = per_stage + (1 if k < extra else 0)
        modules = []
        if k == 0:
            modules.append("tok_embeddings")
            mine -= input_weight
        elif k == num_stages - 1:
            mine -= output_weight
        for _ in range(mine):
            if current < num_layers:
                modules.append(f"layers.{current}")
                current += 1
        if k == num_stages - 1:
            modules += ["norm", "lm_head"]
        out.append(modules)
    return out


def llama_like(num_blocks: int, global_batch: int = 8) -> LayerModel:
    at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0}]
    return LayerModel(global_batch=global_batch, num_ranks=1, layers=[
        {"name": "embed", "kind": "embedding", "measured": at1},
        {"name": "block", "repeat": num_blocks, "measured": at1},
        {"name": "head", "kind": "head", "measured": at1}])


@pytest.mark.parametrize("num_blocks", [1, 5, 6, 16, 32, 61])
@pytest.mark.parametrize("num_ranks", [1, 2, 4, 8])
@pytest.mark.parametrize("schedule, per_rank", [("1F1B", 1), ("Interleaved1F1B", 2), ("ZBVZeroBubble", 2)])
@pytest.mark.parametrize("weights", [(1, 1), (0, 0), (2, 1)])
def test_torchtitan_default_is_torchtitans_rule(num_blocks, num_ranks, schedule, per_rank, weights) -> None:
    model = llama_like(num_blocks)
    try:
        want = titan_modules(num_ranks * per_rank, num_blocks, *weights)
    except ValueError:
        want = None
    if want is None or num_ranks > model.num_layers:
        with pytest.raises(InvalidPipelineError, match="torchtitan refuses|'num_ranks' must be"):
            torchtitan_default(model, num_ranks=num_ranks, schedule=schedule, first_stage_less_layers=weights[0],
                               last_stage_less_layers=weights[1])
        return
    config = torchtitan_default(model, num_ranks=num_ranks, schedule=schedule, first_stage_less_layers=weights[0],
                                last_stage_less_layers=weights[1])
    assert [list(n) for n in config.module_names(model)] == want
    assert config.layout == ("v" if schedule == "ZBVZeroBubble" else "loop")
    assert config.recomputation.mode == "full" and (config.microbatch_size, config.num_microbatches) == (1, 8)


def test_torchtitan_default_with_layers_per_stage() -> None:
    model = llama_like(30)
    config = torchtitan_default(model, num_ranks=2, schedule="Interleaved1F1B", layers_per_stage=8)  # ceil(32/8) = 4
    assert [list(n) for n in config.module_names(model)] == titan_modules(4, 30, 1, 1)
    with pytest.raises(InvalidPipelineError, match="5 stages are not divisible by the 2 ranks"):
        torchtitan_default(model, num_ranks=2, schedule="Interleaved1F1B", layers_per_stage=7)
    with pytest.raises(InvalidPipelineError, match="one stages per rank needed"):
        torchtitan_default(model, num_ranks=2, schedule="1F1B", layers_per_stage=8)


def test_torchtitan_default_matches_torchtitan_itself() -> None:
    pipeline_parallel = pytest.importorskip("torchtitan.distributed.pipeline_parallel")
    for stages, blocks in [(2, 6), (4, 6), (8, 32), (16, 61)]:
        assert titan_modules(stages, blocks, 1, 1) == pipeline_parallel._generate_llm_fqn_per_model_part(stages, blocks)


# ------------------------------------------------------------------ the simulation
@pytest.mark.parametrize("p, v, m, bubble_1f1b, bubble_zb", [
    (4, 2, 8, 4.5, 1.5), (4, 4, 16, 2.25, 0.75), (8, 2, 32, 10.5, 3.5)])
def test_simulated_interleaved_bubbles_are_the_reference_figures(p, v, m, bubble_1f1b, bubble_zb) -> None:
    """Per-chunk F = I = W = 1/v, B = 2/v: every rank works 3m; the bubbles are (p-1)(F+B)/v and (p-1)(F+I-W)/v."""
    S = p * v
    times = ([1 / v] * S, [2 / v] * S, [1 / v] * S, [1 / v] * S, [0.0] * (S - 1))
    assert simulate_schedule("interleaved_1f1b", *times, num_ranks=p, num_microbatches=m).time_ms == \
        pytest.approx(3 * m + bubble_1f1b)
    assert simulate_schedule("interleaved_zero_bubble", *times, num_ranks=p, num_microbatches=m).time_ms == \
        pytest.approx(3 * m + bubble_zb)


@pytest.mark.parametrize("p, m", [(4, 8), (8, 20)])
def test_simulated_1f1b_is_the_closed_form(p, m) -> None:
    assert simulate_schedule("1f1b", [1.0] * p, [2.0] * p, [1.0] * p, [1.0] * p, [0.0] * (p - 1),
                             num_ranks=p, num_microbatches=m).time_ms == (m + p - 1) * 3


def test_the_critical_stage_is_the_slow_one() -> None:
    step = simulate_schedule("1f1b", [1.0, 1.0, 3.0, 1.0], [2.0, 2.0, 6.0, 2.0], [1.0] * 4, [1.0] * 4, [0.0] * 3,
                             num_ranks=4, num_microbatches=8)
    assert step.critical_stage == 2


# ------------------------------------------------------------------ auto_partition
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=8), st.data())
def test_min_max_split_is_the_least_largest_stage(loads, data) -> None:
    parts = data.draw(st.integers(1, len(loads)))
    split = min_max_split([float(x) for x in loads], parts)
    assert [i for g in split for i in g] == list(range(len(loads))) and all(split)
    largest = max(sum(loads[i] for i in g) for g in split)
    best = min(max(sum(loads[a:a + c]) for a, c in zip(itertools.accumulate([0] + sizes[:-1]), sizes))
               for sizes in compositions(len(loads), parts))
    assert largest == best


def small_model(times, budget=None, sizes=(1,), global_batch=8, acts=None, ckpts=None, params=None):
    layers = []
    for k, (f, b) in enumerate(times):
        kind = "embedding" if k == 0 else "head" if k == len(times) - 1 else "layer"
        act = (acts or [GIB] * len(times))[k]
        ckpt = (ckpts or [GIB // 8] * len(times))[k]
        measured = [{"microbatch_size": s, "forward_ms": f * s, "backward_ms": b * s, "activation_bytes": act * s,
                     "checkpoint_bytes": ckpt * s, "send_bytes": GIB // 16 * s} for s in sizes]
        layers.append({"name": f"l{k}", "kind": kind, "parameter_bytes": (params or [GIB] * len(times))[k],
                       "measured": measured})
    return LayerModel(global_batch=global_batch, num_ranks=1, memory_budget_bytes=budget, layers=layers,
                      p2p={"latency_ms": 0.1})


def stage_sums(model: LayerModel, split, size=1):
    figures = model.at(size)
    fwd = [sum(figures[i].forward_ms for i in g) for g in split]
    bwd = [sum(figures[i].backward_ms for i in g) for g in split]
    return fwd, bwd


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 12)), min_size=4, max_size=7),
       st.sampled_from(["1f1b", "interleaved_1f1b", "interleaved_zero_bubble"]))
def test_auto_partition_is_no_slower_than_its_dp(times, schedule) -> None:
    model = small_model([(float(f), float(b)) for f, b in times])
    p = 2
    config = auto_partition(model, num_ranks=p, schedule_type=schedule)
    v = 1 if schedule == "1f1b" or model.num_layers < 2 * p else 2
    assert config.num_stages == p * v and config.layout == "loop"
    loads = [f + b for f, b in times]
    base = min_max_split([float(x) for x in loads], p * v)
    best_largest = min(max(sum(loads[a:a + c]) for a, c in zip(itertools.accumulate([0] + s[:-1]), s))
                       for s in compositions(len(loads), p * v))
    assert max(sum(loads[i] for i in g) for g in base) == best_largest

    def simulate(split):
        fwd, bwd = stage_sums(model, split)
        return simulate_schedule(schedule, fwd, bwd, [b / 2 for b in bwd], [b / 2 for b in bwd],
                                 [0.1] * (len(split) - 1), num_ranks=p, num_microbatches=8).time_ms

    assert simulate(config.split) <= simulate(base) + 1e-9


def test_auto_partition_refusals() -> None:
    model = small_model([(1.0, 2.0)] * 4)
    with pytest.raises(InvalidPipelineError, match="'schedule_type' must be one of"):
        auto_partition(model, num_ranks=2, schedule_type="zbv")
    with pytest.raises(InvalidPipelineError, match="'virtual_stages_per_rank' must be 1 for 1f1b"):
        auto_partition(model, num_ranks=2, virtual_stages_per_rank=2)
    with pytest.raises(InvalidPipelineError, match="'recomputation' must be 'none', 'full' or 'op'"):
        auto_partition(model, num_ranks=2, recomputation="layers")
    with pytest.raises(InvalidPipelineError, match="recomputation 'op' needs 'selective_bytes'"):
        auto_partition(model, num_ranks=2, recomputation="op")  # its blocks give no per-operator figures


# ------------------------------------------------------------------ AdaPipe
def brute_adapipe(model: LayerModel, p: int, size: int):
    """The least 1F1B step over every split and every stage's choice (none, every q-th block, all), by enumeration."""
    figures = model.at(size)
    kinds = model.kinds()
    params = [layer.parameter_bytes for layer in model.expanded]
    m = model.global_batch // size
    best = math.inf
    for sizes in compositions(model.num_layers, p):
        starts = list(itertools.accumulate([0] + sizes[:-1]))
        groups = [list(range(a, a + c)) for a, c in zip(starts, sizes)]
        per_stage = []
        for s, g in enumerate(groups):
            blocks = [i for i in g if kinds[i] == "layer"]
            choices = [set(), set(blocks)] + [set(blocks[q - 1::q]) for q in range(2, len(blocks) + 1)]
            fits = []
            for rec in choices:
                held = sum(figures[i].held_when_recomputed if i in rec else figures[i].activation_bytes for i in g)
                if model.memory_budget_bytes is None or sum(params[i] for i in g) + min(p - s, m) * held <= \
                        model.memory_budget_bytes:
                    fits.append(sum(figures[i].forward_ms + figures[i].backward_ms for i in g)
                                + sum(figures[i].forward_ms for i in rec))
            per_stage.append(fits)
        for times in itertools.product(*per_stage):
            comm = sum(2 * model.p2p.transfer_ms(figures[g[-1]].p2p_bytes) for g in groups[:-1])
            best = min(best, sum(times) + comm + (m - 1) * max(times))
    return best


def evaluate_adapipe(model: LayerModel, config: Configuration) -> float:
    """The 1F1B step of a configuration, from its Pipeline (checks the memory fits on the way)."""
    pipeline = model.pipeline(config)
    p, m = config.num_ranks, config.num_microbatches
    times = []
    for s, stage in enumerate(pipeline.stages):
        if model.memory_budget_bytes is not None:
            assert stage.parameter_bytes + min(p - s, m) * stage.activation_bytes <= model.memory_budget_bytes
        times.append(stage.forward_ms + stage.backward_ms)
    comm = sum(2 * model.p2p.transfer_ms(stage.p2p_bytes) for stage in pipeline.stages[:-1])
    return sum(times) + comm + (m - 1) * max(times)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 9), st.integers(1, 6), st.integers(0, 3)),
                min_size=4, max_size=7),
       st.integers(2, 3), st.integers(4, 30))
def test_adapipe_is_the_least_step_over_every_split_and_recomputation(layers, p, budget_gib) -> None:
    times = [(float(f), float(b)) for f, b, _, _ in layers]
    acts = [a * GIB for _, _, a, _ in layers]
    ckpts = [c * GIB // 4 for _, _, _, c in layers]
    model = small_model(times, budget=f"{budget_gib} GiB", acts=acts, ckpts=ckpts, global_batch=4)
    if p > model.num_layers:
        return
    want = brute_adapipe(model, p, 1)
    if want == math.inf:
        with pytest.raises(NoFittingPlanError):
            adapipe(model, num_ranks=p)
        return
    config = adapipe(model, num_ranks=p)
    assert config.num_ranks == p and config.num_stages == p
    assert evaluate_adapipe(model, config) == pytest.approx(want)


def test_adapipe_recomputes_only_where_memory_needs_it() -> None:
    """Four equal blocks on 2 ranks, 4 micro-batches: stage 0 holds 2 in flight, stage 1 one.

    Budget 14 GiB, blocks 4 GiB (1 GiB when recomputed): split 2/2 needs stage 0 to save 1 GiB a micro-batch, so
    it recomputes one block (every 2nd: block 1), step 7 + 6 + 3 * 7 = 34; split 1/3 fits without recomputation
    but steps 3 + 9 + 3 * 9 = 39; 3/1 recomputes all three on stage 0 (12 + 3 + 3 * 12 = 51).
    """
    at1 = [{"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "4 GiB",
            "checkpoint_bytes": "1 GiB"}]
    model = LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes="14 GiB",
                       layers=[{"name": "block", "repeat": 4, "measured": at1}])
    config = adapipe(model, num_ranks=2)
    assert config.split == ((0, 1), (2, 3)) and config.recomputation.layers == {1}
    assert evaluate_adapipe(model, config) == 34.0
    roomy = LayerModel.from_dict({**model.to_dict(), "memory_budget_bytes": "16 GiB"})
    assert adapipe(roomy, num_ranks=2).recomputation.mode == "none"


def test_adapipe_picks_the_micro_batch_size() -> None:
    """Size 2 runs each sample 25% faster: 2 stages of 2 layers, size 1 (8 micro-batches) steps
    12 + 0.2 + 7 * 6 = 54.2, size 2 (4 micro-batches) 18 + 0.2 + 3 * 9 = 45.2."""
    model = small_model([(1.0, 2.0), (1.0, 2.0), (1.0, 2.0), (1.0, 2.0)], sizes=(1, 2))
    fast = LayerModel.from_dict({**model.to_dict(), "layers": [
        {**layer.to_dict(), "measured": [layer.measured[0].to_dict(),
                                         {**layer.measured[1].to_dict(), "forward_ms": 1.5, "backward_ms": 3.0}]}
        for layer in model.layers]})
    assert adapipe(fast, num_ranks=2).microbatch_size == 2
    assert evaluate_adapipe(fast, adapipe(fast, num_ranks=2)) == pytest.approx(45.2)
    assert adapipe(fast, num_ranks=2, microbatch_size=1).microbatch_size == 1
