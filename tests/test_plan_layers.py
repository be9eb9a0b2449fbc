"""A model in layers and its configurations (:mod:`schedsearch.plan.layers`).

Checked: the TOML and JSON readers give back what was written (the sample
``models/llama3_8b_layers.toml`` included); bad descriptions are refused
naming the layer, the field and the value, sizes before anything
proportional to them is built; ``pipeline(configuration)`` equals stage
figures summed here by hand from the raw layer table; the cost model of an
unmeasured micro-batch size (interpolation, refusal outside the range);
which blocks each recomputation mode recomputes (torchtitan's per-rank
counter for ``selective``); module names both ways; and which schedule
variants torchtitan runs under recomputation.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from schedsearch.errors import InvalidPipelineError
from schedsearch.handcrafted.families import family
from schedsearch.plan.layers import Configuration, Layer, LayerModel, Recomputation

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def at(size, f, b, act, ckpt=None, send=None, split=None):
    out = {"microbatch_size": size, "forward_ms": f, "backward_ms": b, "activation_bytes": act}
    if ckpt is not None:
        out["checkpoint_bytes"] = ckpt
    if send is not None:
        out["send_bytes"] = send
    if split is not None:
        out["input_grad_ms"], out["weight_grad_ms"] = split
    return out


DOC = {
    "name": "small", "global_batch": 8, "num_ranks": [2, 3], "memory_budget_bytes": "40 GiB",
    "p2p": {"latency_ms": 0.01, "bandwidth_bytes_per_s": "10 GB"},
    "layers": [
        {"name": "embed", "kind": "embedding", "parameter_bytes": "2 GiB",
         "measured": [at(1, 0.5, 1.0, 1024, send=4096), at(4, 1.5, 3.5, 4096, send=16384)]},
        {"name": "block", "repeat": 4, "parameter_bytes": "1 GiB",
         "measured": [at(1, 1.0, 2.0, GIB, 4096, 4096, (1.25, 0.75)), at(4, 3.0, 7.0, 4 * GIB, 16384, 16384, (4.0, 3.0))]},
        {"name": "odd", "parameter_bytes": 3000,
         "measured": [at(1, 2.0, 3.0, 2 * GIB, 8192, 4096, (2.0, 1.0)), at(4, 5.0, 9.0, 8 * GIB, 32768, 16384, (6.0, 3.0))]},
        {"name": "head", "kind": "head", "parameter_bytes": "2 GiB",
         "measured": [at(1, 2.0, 4.0, 3 * GIB, send=0), at(4, 6.0, 12.0, 12 * GIB, send=0)]},
    ],
}


def model(doc=DOC) -> LayerModel:
    return LayerModel.from_dict(copy.deepcopy(doc))


# ------------------------------------------------------------------ files
def test_toml_and_json_round_trip(tmp_path: Path) -> None:
    m = model()
    for name in ("m.toml", "m.json"):
        back = LayerModel.load(m.save(tmp_path / name))
        assert back == m and back.to_dict() == m.to_dict()


def test_sample_model_reads_and_round_trips(tmp_path: Path) -> None:
    sample = LayerModel.load(ROOT / "models" / "llama3_8b_layers.toml")
    assert sample.num_layers == 34 and sample.kinds().count("layer") == 32
    assert sample.kinds()[0] == "embedding" and sample.kinds()[-1] == "head"
    assert sample.sizes() == (1, 2)
    assert LayerModel.load(sample.save(tmp_path / "s.toml")) == sample
    # its block parameters are Llama-3-8B's: attention 2*4096^2 + 2*4096*1024, SwiGLU 3*4096*14336, two norms
    assert sample.layers[1].parameter_bytes == 16 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)


def test_python_and_dict_construction_agree() -> None:
    doc = copy.deepcopy(DOC)
    layers = [Layer(**layer) for layer in doc.pop("layers")]
    assert LayerModel(layers=layers, **doc) == model()


def test_repeat_expands_with_numbered_names() -> None:
    m = model()
    assert m.num_layers == 7
    assert m.layer_names() == ("embed", "block.0", "block.1", "block.2", "block.3", "odd", "head")
    assert m.module_names() == (("tok_embeddings",), ("layers.0",), ("layers.1",), ("layers.2",), ("layers.3",),
                                ("layers.4",), ("norm", "lm_head"))


# ------------------------------------------------------------------ refusals
def layer(k, **changes):
    return lambda doc: doc["layers"][k].update(changes)


def measured(k, j, **changes):
    return lambda doc: doc["layers"][k]["measured"][j].update(changes)


def top(**changes):
    return lambda doc: doc.update(changes)


BAD = [
    # (id, change, fragment of the message)
    ("kind", layer(1, kind="ffn"), "layer 'block': 'kind' must be one of"),
    ("repeat 0", layer(1, repeat=0), "layer 'block': 'repeat' must be an integer from 1"),
    ("repeat huge", layer(1, repeat=10**9), "layer 'block': 'repeat' must be an integer from 1 to 100,000"),
    ("too many layers", lambda doc: [doc["layers"][k].update(repeat=60_000) for k in (1, 2)],
     "expand to 120,002"),
    ("repeated embedding", layer(0, repeat=2), "layer 'embed': 'repeat' must be 1 for the embedding"),
    ("head not last", lambda doc: doc["layers"].insert(1, doc["layers"].pop(3)), "layer 'head': 'kind' 'head' must be the last"),
    ("two embeddings", lambda doc: doc["layers"].insert(1, copy.deepcopy(doc["layers"][0])), "'embedding' must be the first"),
    ("no blocks", lambda doc: doc.update(layers=[doc["layers"][0], doc["layers"][3]]), "at least one transformer block"),
    ("negative time", measured(1, 0, forward_ms=-1.0), "layer 'block': micro-batch size 1: 'forward_ms' must be a time"),
    ("nan time", measured(2, 1, backward_ms=math.nan), "layer 'odd': micro-batch size 4: 'backward_ms'"),
    ("half split", lambda doc: doc["layers"][1]["measured"][0].pop("weight_grad_ms"), "give both 'input_grad_ms'"),
    ("split at one size only", lambda doc: [doc["layers"][1]["measured"][0].pop(f) for f in ("input_grad_ms", "weight_grad_ms")],
     "layer 'block': give 'input_grad_ms' and 'weight_grad_ms' at every measured size or at none"),
    ("bytes", measured(1, 0, activation_bytes="1 parsec"), "layer 'block': micro-batch size 1: 'activation_bytes' must be a byte amount"),
    ("size twice", measured(1, 1, microbatch_size=1), "layer 'block': 'measured' gives micro-batch size 1 more than once"),
    ("size 0", measured(1, 1, microbatch_size=0), "'microbatch_size' must be an integer from 1"),
    ("unknown layer field", layer(1, flops=3), "model: layer 1: unknown field(s) ['flops']"),
    ("unknown measured field", measured(1, 0, flops=3), "layer 'block': 'measured' entry 0: unknown field(s) ['flops']"),
    ("missing measured", lambda doc: doc["layers"][1].pop("measured"), "model: layer 1: missing field(s) ['measured']"),
    ("no measurements", layer(1, measured=[]), "layer 'block': 'measured' must hold 1 to 64 entries"),
    ("too many measurements", layer(1, measured=[at(k, 1.0, 1.0, 0) for k in range(1, 70)]), "must hold 1 to 64 entries, got 69"),
    ("global batch", top(global_batch=0), "model: 'global_batch' must be an integer"),
    ("degree", top(num_ranks=[2, 0]), "model: 'num_ranks' must be an integer from 1"),
    ("degree twice", top(num_ranks=[2, 2]), "lists 2 more than once"),
    ("degree above layers", top(num_ranks=9), "'num_ranks' 9 exceeds the number of layers (7)"),
    ("no size with a cost", lambda doc: doc["layers"][3].update(measured=[at(8, 6.0, 12.0, 12 * GIB, send=0)]),
     "no micro-batch size dividing the global batch 8 lies within every layer's measured range"),
    ("parameters above budget", layer(3, parameter_bytes="50 GiB"), "layer 'head': 'parameter_bytes' 50 GiB exceed"),
    ("unknown top field", top(stages=[]), "model: unknown field(s) ['stages']"),
    ("p2p field", top(p2p={"speed": 1}), "model: 'p2p': unknown field(s) ['speed']"),
]


@pytest.mark.parametrize("change, fragment", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_description_is_refused_by_name(change, fragment) -> None:
    doc = copy.deepcopy(DOC)
    change(doc)
    with pytest.raises(InvalidPipelineError) as error:
        LayerModel.from_dict(doc)
    assert fragment in str(error.value)


def test_unreadable_files_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("global_batch = [")
    with pytest.raises(InvalidPipelineError, match="not valid toml"):
        LayerModel.load(bad)
    with pytest.raises(InvalidPipelineError, match="absent.toml.*: cannot read"):
        LayerModel.load(tmp_path / "absent.toml")


# ------------------------------------------------------------------ cost of a micro-batch size
def test_measured_sizes_are_taken_as_measured_and_others_interpolated() -> None:
    block = model().layers[1]
    assert block.at(1) is block.measured[0]
    two = block.at(2)  # a third of the way from size 1 to size 4
    assert two.forward_ms == pytest.approx(1.0 + (3.0 - 1.0) / 3)
    assert two.backward_ms == pytest.approx(2.0 + (7.0 - 2.0) / 3)
    assert (two.input_grad_ms, two.weight_grad_ms) == (pytest.approx(1.25 + 2.75 / 3), pytest.approx(0.75 + 2.25 / 3))
    assert two.activation_bytes == 2 * GIB
    assert two.checkpoint_bytes == math.ceil(4096 + 12288 / 3)  # rounded up: never below the line


@given(st.integers(1, 4))
def test_interpolation_stays_between_the_measurements(size: int) -> None:
    for entry in model().layers:
        low, high, mid = entry.measured[0], entry.measured[-1], entry.at(size)
        for field in ("forward_ms", "backward_ms", "activation_bytes"):
            a, b, x = getattr(low, field), getattr(high, field), getattr(mid, field)
            assert min(a, b) <= x <= max(a, b) + 1


def test_sizes_outside_the_measured_range_are_refused() -> None:
    m = model()
    assert m.sizes() == (1, 2, 4)
    with pytest.raises(InvalidPipelineError, match=r"layer 'embed': no cost at micro-batch size 8: it is measured at sizes \[1, 4\]"):
        m.layers[0].at(8)
    config = Configuration(split=[[0, 1, 2, 3], [4, 5, 6]], num_ranks=2, microbatch_size=8, num_microbatches=1)
    with pytest.raises(InvalidPipelineError, match="no cost at micro-batch size 8"):
        m.pipeline(config)


# ------------------------------------------------------------------ pipeline(configuration)
def hand_stage(doc, size, names, rec):
    """A stage's figures from the raw document: every layer's entry at ``size`` (a measured size), by hand."""
    rows = {}
    for entry in doc["layers"]:
        for k in range(entry.get("repeat", 1)):
            name = f"{entry['name']}.{k}" if entry.get("repeat", 1) > 1 else entry["name"]
            row = next(r for r in entry["measured"] if r["microbatch_size"] == size)
            rows[name] = (row, entry["parameter_bytes"])
    f = b = i = w = 0.0
    held = params = 0
    split = True
    for name in names:
        row, p = rows[name]
        again = row["forward_ms"] if name in rec else 0.0
        f += row["forward_ms"]
        b += row["backward_ms"] + again
        if "input_grad_ms" in row:
            i += row["input_grad_ms"] + again
            w += row["weight_grad_ms"]
        else:
            split = False
        ckpt = row.get("checkpoint_bytes", row.get("send_bytes", row["activation_bytes"]))
        held += ckpt if name in rec else row["activation_bytes"]
        params += {"2 GiB": 2 * GIB, "1 GiB": GIB}.get(p, p)
    last = rows[names[-1]][0]
    return f, b, (i, w) if split else None, held, params, last.get("send_bytes", last["activation_bytes"])


@pytest.mark.parametrize("rec, recomputed", [
    ("none", set()),
    ("full", {"block.0", "block.1", "block.2", "block.3", "odd"}),
    (Recomputation(mode="layers", layers=[2, 5]), {"block.1", "odd"}),
])
@pytest.mark.parametrize("size", [1, 4])
def test_pipeline_sums_the_stage_layers(rec, recomputed, size) -> None:
    m = model()
    split = [[0, 1], [2, 3, 4], [5], [6]]
    names = m.layer_names()
    config = Configuration(split=split, num_ranks=2, microbatch_size=size, num_microbatches=8 // size,
                           recomputation=rec)
    pipeline = m.pipeline(config)
    assert pipeline.num_ranks == 2 and pipeline.num_microbatches == 8 // size and len(pipeline.stages) == 4
    assert pipeline.families == ("interleaved",)
    assert pipeline.memory_budget_bytes == 40 * GIB and pipeline.p2p == m.p2p
    for group, stage in zip(split, pipeline.stages):
        f, b, iw, held, params, send = hand_stage(DOC, size, [names[i] for i in group], recomputed)
        assert (stage.forward_ms, stage.backward_ms) == (pytest.approx(f), pytest.approx(b))
        if iw is None:
            assert not stage.has_split
        else:
            assert (stage.input_grad_ms, stage.weight_grad_ms) == (pytest.approx(iw[0]), pytest.approx(iw[1]))
        assert (stage.activation_bytes, stage.parameter_bytes, stage.p2p_bytes) == (held, params, send)


def test_recomputation_arithmetic() -> None:
    """Full recomputation of one block at size 1: B grows by F (1.0), I by F, W unchanged; 1 GiB becomes 4 KiB."""
    m = model()
    split = [[0, 1, 2, 3], [4, 5, 6]]
    plain, full = (m.pipeline(Configuration(split=split, num_ranks=2, microbatch_size=1, num_microbatches=8,
                                            recomputation=r)).stages[1] for r in ("none", "full"))
    # stage 1 = block.3 (F 1, B 2, I 1.25, W .75, 1 GiB, ckpt 4096) + odd (F 2, B 3, I 2, W 1, 2 GiB, ckpt 8192) + head
    assert full.backward_ms - plain.backward_ms == pytest.approx(1.0 + 2.0)
    assert full.forward_ms == plain.forward_ms
    assert plain.activation_bytes - full.activation_bytes == (GIB - 4096) + (2 * GIB - 8192)


def test_selective_follows_torchtitans_counter_per_rank() -> None:
    """torchtitan numbers a rank's blocks from 1 over its stages in ascending order; every k-th is checkpointed."""
    doc = copy.deepcopy(DOC)
    doc["layers"][1]["repeat"] = 9  # blocks: layers 1..10 (odd is 10), head 11
    m = model(doc)
    split = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    loop = Configuration(split=split, num_ranks=2, microbatch_size=1, num_microbatches=8,
                         recomputation=Recomputation(mode="selective", every=2))
    # rank 0: stages 0 and 2 -> blocks 1, 2, 6, 7, 8 numbered 1..5: the 2nd and 4th (2, 7)
    # rank 1: stages 1 and 3 -> blocks 3, 4, 5, 9, 10: the 2nd and 4th (4, 9)
    assert m.recomputed(loop) == {2, 7, 4, 9}
    v = Configuration(split=split, num_ranks=2, layout="v", microbatch_size=1, num_microbatches=8,
                      recomputation=Recomputation(mode="selective", every=3))
    # V: rank 0 holds stages 0 and 3 -> blocks 1, 2, 9, 10: the 3rd (9); rank 1 stages 1, 2 -> 3..8: 5 and 8
    assert m.recomputed(v) == {9, 5, 8}
    full = Configuration(split=split, num_ranks=2, microbatch_size=1, num_microbatches=8, recomputation="full")
    assert m.recomputed(full) == set(range(1, 11))


def test_configuration_refusals() -> None:
    m = model()
    with pytest.raises(InvalidPipelineError, match="stage 1 must continue the layers in order"):
        Configuration(split=[[0, 1], [3]], num_ranks=1, microbatch_size=1, num_microbatches=8)
    with pytest.raises(InvalidPipelineError, match="a multiple of num_ranks"):
        Configuration(split=[[0], [1], [2]], num_ranks=2, microbatch_size=1, num_microbatches=8)
    with pytest.raises(InvalidPipelineError, match="must cover the model's 7 layers"):
        m.pipeline(Configuration(split=[[0, 1], [2]], num_ranks=2, microbatch_size=1, num_microbatches=8))
    with pytest.raises(InvalidPipelineError, match="must make the global batch 8, got 6"):
        m.pipeline(Configuration.from_boundaries([3, 4], num_ranks=2, microbatch_size=2, num_microbatches=3))
    with pytest.raises(InvalidPipelineError, match="must name transformer blocks"):
        m.pipeline(Configuration.from_boundaries([3, 4], num_ranks=2, microbatch_size=1, num_microbatches=8,
                                                 recomputation=Recomputation(mode="layers", layers=[0])))
    with pytest.raises(InvalidPipelineError, match="layout 'v' places two stages per rank"):
        Configuration.from_boundaries([3, 4], num_ranks=2, layout="v", microbatch_size=1, num_microbatches=8)
    # the interleaved family runs any count of stages per rank from 2, the others their own
    seven = Configuration.from_boundaries([1] * 7, num_ranks=1, microbatch_size=1, num_microbatches=8)
    assert seven.families() == ("interleaved",)
    assert Configuration.from_boundaries([1, 1, 1, 1], num_ranks=2, layout="v", microbatch_size=1,
                                         num_microbatches=8).families() == ("zb-v", "dualpipev")
    with pytest.raises(InvalidPipelineError, match="'every' must be an integer from 2"):
        Recomputation(mode="selective")


def test_module_names_both_ways() -> None:
    m = model()
    config = Configuration.from_boundaries([2, 3, 2], num_ranks=1, microbatch_size=1, num_microbatches=8)
    names = config.module_names(m)
    assert names == (("tok_embeddings", "layers.0"), ("layers.1", "layers.2", "layers.3"),
                     ("layers.4", "norm", "lm_head"))
    assert Configuration.from_module_names(m, names, num_ranks=1, microbatch_size=1, num_microbatches=8) == config
    old = [list(n) for n in names]
    old[-1][-1] = "output"  # torchtitan before 0.3.0
    assert Configuration.from_module_names(m, old, num_ranks=1, microbatch_size=1, num_microbatches=8) == config
    fields = dict(num_ranks=1, microbatch_size=1, num_microbatches=8)
    for bad, fragment in [
        ([["tok_embeddings", "layers.0", "layers.9"]], "module 'layers.9' is not a module of the model"),
        ([["tok_embeddings", "layers.0", "layers.0"]], "module 'layers.0' is named twice"),
        ([["tok_embeddings", "layers.0", "layers.1", "layers.2", "layers.3", "layers.4", "norm"]], "'lm_head' (layer 6) is in no stage"),
        ([["tok_embeddings", "layers.0", "layers.1", "layers.2", "layers.3", "layers.4", "norm"], ["lm_head"]],
         "the modules of layer 6 (norm, lm_head) must be in one stage"),
    ]:
        with pytest.raises(InvalidPipelineError) as error:
            Configuration.from_module_names(m, bad, **fields)
        assert fragment in str(error.value)


def test_torchtitan_runs_split_backwards_only_without_recomputation() -> None:
    shape = dict(split=[[0, 1], [2, 3], [4, 5], [6]], num_ranks=2, microbatch_size=1, num_microbatches=8)
    plain = Configuration(**shape)
    full = Configuration(**shape, recomputation="full")
    nothing = Configuration(**shape, recomputation=Recomputation(mode="layers", layers=[]))
    zb = family("interleaved").variant(True)
    assert plain.torchtitan_runs(zb) and nothing.torchtitan_runs(zb) and not full.torchtitan_runs(zb)
    assert [v.name for _, v in full.torchtitan_variants()] == ["interleaved 1F1B"]
    assert [v.name for _, v in plain.torchtitan_variants()] == ["interleaved 1F1B", "interleaved ZB"]
    assert Configuration(**shape, layout="v").families() == ("zb-v", "dualpipev")


def test_which_torchtitan_releases_run_each_mode() -> None:
    """torchtitan 0.3.0's activation_checkpoint has none, full, per-operator selective and memory_budget;
    0.2's selective also took a layer frequency (selective_ac_option = "k")."""
    assert Recomputation(mode="full").torchtitan_releases == ("0.2", "0.3.0")
    assert Recomputation(mode="selective", every=3).torchtitan_releases == ("0.2",)
    assert Recomputation(mode="layers", layers=[1]).torchtitan_releases == ()
