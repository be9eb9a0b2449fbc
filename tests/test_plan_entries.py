"""A per-stage description whose entries say how many layers they stand for, planned as a model in layers.

Checked: the 8-stage Llama-3-8B description of ``models/`` reads as the
layers of ``models/llama3_8b_layers.toml`` (the same model, figure for
figure at micro-batch size 1); planning it gives the best step of the
hand-written layer model and beats the same description planned stage by
stage, with the interleaved and V families searched; the description's own
split is in the space and its stages are the entries; the files written pass
the torchtitan settings checks and torchtitan's rules on stages per rank;
what the reading assumes is said in the result's notes; a description that
does not say how many layers an entry holds says which field lets the
skipped families be planned; bad values are refused naming the entry, the
field and the value; a description without the fields reads and writes as
before.
"""

from __future__ import annotations

import copy
import math
import shlex
import sys
from pathlib import Path

import attrs
import pytest

import schedsearch
from schedsearch.cli import main
from schedsearch.errors import InvalidPipelineError
from schedsearch.plan.autoplan import Decision
from schedsearch.plan.layers import DESCRIPTION_SPLIT, Configuration, LayerModel, entry_notes, entry_proposals
from schedsearch.plan.outcome import Reason
from schedsearch.plan.pipeline import Pipeline
from schedsearch.plan.planner import plan_layers

ROOT = Path(__file__).resolve().parents[1]
STAGES = ROOT / "models" / "llama3_8b_stages.toml"
LAYERS = ROOT / "models" / "llama3_8b_layers.toml"


@pytest.fixture(autouse=True)
def _no_torchtitan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchtitan", None)  # the library's table of layer counts, wherever this runs


def _hand_written() -> LayerModel:
    """models/llama3_8b_layers.toml at the description's micro-batch size (1) and degree (8): its 32 blocks, the
    embedding and the head as written there by hand."""
    doc = LayerModel.load(LAYERS).to_dict()
    for layer in doc["layers"]:  # a per-stage entry has no per-operator checkpointing figures: left out here
        layer["measured"] = [{k: v for k, v in m.items() if not k.startswith("selective_")}
                             for m in layer["measured"] if m["microbatch_size"] == 1]
    return LayerModel.from_dict({**doc, "num_ranks": [8]})


@pytest.fixture(scope="module")
def planned():
    """The 8-stage description planned as written (deterministic: the same table on any machine)."""
    return schedsearch.plan(Pipeline.load(STAGES), time_limit_s=60, parallel=1, deterministic=True)


def _entries(n: int = 3, **fields) -> dict:
    stage = {"forward_ms": 4.0, "backward_ms": 8.0, "input_grad_ms": 4.0, "weight_grad_ms": 4.0,
             "activation_bytes": "4 GiB", "send_bytes": "64 MiB", "parameter_bytes": "4 GiB"}
    stages = [{**stage, "name": f"e{i}"} for i in range(n)]
    return {"num_ranks": 2, "num_microbatches": 4, "layers_per_entry": 4, "stages": stages, **fields}


# ------------------------------------------------------------------ the description is the model
def test_the_8_stage_description_reads_as_the_hand_written_layers() -> None:
    from_stages, hand = LayerModel.from_pipeline(Pipeline.load(STAGES)), _hand_written()
    assert from_stages.kinds() == hand.kinds() and from_stages.kinds().count("layer") == 32
    assert from_stages.at(1) == hand.at(1)  # every time and byte amount of every layer, exactly
    assert [l.parameter_bytes for l in from_stages.expanded] == [l.parameter_bytes for l in hand.expanded]
    assert (from_stages.global_batch, from_stages.num_ranks, from_stages.memory_budget_bytes, from_stages.p2p) == \
        (hand.global_batch, hand.num_ranks, hand.memory_budget_bytes, hand.p2p)


def test_the_descriptions_own_split_gives_back_its_entries() -> None:
    for ends in (None, ["embedding", "head"], ["head"], []):
        doc = _entries(4, end_layers=ends)
        doc["stages"][0].update(forward_ms=4.5, activation_bytes=4 * 2**30 + 1000)  # room for an embedding
        doc["stages"][-1].update(backward_ms=9.25, parameter_bytes="5 GiB")  # and for a head
        if ends is None:
            del doc["end_layers"]
        pipeline = Pipeline.from_dict(doc)
        model = LayerModel.from_pipeline(pipeline)
        [(origin, split)] = entry_proposals(pipeline)
        config = Configuration(split=split, num_ranks=2, layout="loop", microbatch_size=1, num_microbatches=4)
        stages = model.pipeline(config).stages
        for field in ("forward_ms", "backward_ms", "input_grad_ms", "weight_grad_ms", "activation_bytes",
                      "parameter_bytes"):
            assert [getattr(s, field) for s in stages] == [getattr(s, field) for s in pipeline.stages], (ends, field)
        assert [s.p2p_bytes for s in stages[:-1]] == [s.p2p_bytes for s in pipeline.stages[:-1]]
        assert model.num_layers == 16 + len(ends or ())


# ------------------------------------------------------------------ planned as written
def test_planning_the_description_gives_the_hand_written_models_best_step(planned) -> None:
    hand = plan_layers(_hand_written(), time_limit_s=60, parallel=1, deterministic=True)
    assert planned.best.makespan_ms == hand.best.makespan_ms
    assert planned.best.configuration == hand.best.configuration
    assert planned.bound_ms <= planned.best.makespan_ms


def test_the_interleaved_and_v_families_are_searched(planned) -> None:
    shapes = {(c.configuration.layout, c.configuration.stages_per_rank) for c in planned.candidates
              if c.outcome is not Decision.SKIPPED}
    assert {("loop", 1), ("loop", 2), ("loop", 3), ("loop", 4), ("v", 2)} <= shapes
    assert planned.best.configuration.num_stages > 8  # the winner needs more stages than the description's 8
    mine = [c for c in planned.candidates if DESCRIPTION_SPLIT in c.origins]
    assert mine and {len(c.configuration.split) for c in mine} == {8}


def test_in_layers_it_beats_the_description_planned_stage_by_stage(planned) -> None:
    as_stages = attrs.evolve(Pipeline.load(STAGES), layers_per_entry=None, end_layers=None,
                             families=["1f1b", "interleaved", "zb-v"])
    by_stage = schedsearch.plan(as_stages, time_limit_s=30, parallel=1, deterministic=True)
    skipped = [r for r in by_stage.rows if r.reason is Reason.SHAPE]
    assert {r.candidate.family for r in skipped} == {"interleaved", "zb-v"}
    assert all("layers_per_entry" in r.note and "--layers-per-entry" in r.note for r in skipped)
    # the description's split with ZB-H1 is in the layered space: the layered best is at most its bound, and here
    # a split of more stages is far better
    assert planned.best.makespan_ms < 0.8 * by_stage.best.makespan_ms


def test_the_notes_say_what_was_assumed(planned) -> None:
    assert planned.notes == entry_notes(Pipeline.load(STAGES))
    text = planned.table()
    assert "note: the 8 entries stand for 32 transformer layers (layers_per_entry = 4)" in text
    assert "the embedding is a layer of its own: entry 'embedding+blocks0-3' less its 4 layers" in text
    assert "no other size has a cost" in text
    assert planned.to_dict()["notes"] == list(planned.notes)
    unsaid = Pipeline.from_dict(_entries())
    assert any('set end_layers = ["embedding", "head"]' in n for n in entry_notes(unsaid))


# ------------------------------------------------------------------ the files torchtitan runs
def _args(path: Path) -> list[list[str]]:
    return [shlex.split(line) for line in path.read_text().splitlines()]


def test_the_files_pass_torchtitans_checks(planned, tmp_path: Path) -> None:
    paths = planned.write(tmp_path, torchtitan_config="llama3_8b")
    words = _args(paths["torchtitan"])
    flags = {w[0].split("=", 1)[0]: (w[0].split("=", 1)[1] if "=" in w[0] else w[1:]) for w in words}
    P, config = int(flags["--parallelism.pipeline_parallel_degree"]), planned.best.configuration
    stages = flags["--parallelism.module_fqns_per_model_part"]
    # torchtitan's rules, stated here independently: the stages divide among the ranks; a single-stage schedule
    # runs one per rank, a multi-stage one at least two, a V one exactly two
    per_rank, rest = divmod(len(stages), P)
    assert rest == 0 and per_rank == config.stages_per_rank
    schedule = flags["--parallelism.pipeline_parallel_schedule"]
    assert (schedule == "PipelineScheduleSingle") == (per_rank == 1)
    assert schedule in ("PipelineScheduleMulti", "ZBVZeroBubble", "DualPipeV") or per_rank == 1
    assert schedule not in ("ZBVZeroBubble", "DualPipeV") or per_rank == 2
    # every module of llama3_8b once, in model order
    modules = [m for s in stages for m in s.split(",")]
    assert modules == ["tok_embeddings", *(f"layers.{i}" for i in range(32)), "norm", "lm_head"]
    assert stages == [",".join(names) for names in config.module_names(planned.model)]  # the winner's split
    size = int(flags["--parallelism.pipeline_parallel_microbatch_size"])
    assert size * config.num_microbatches == int(flags["--training.local_batch_size"]) == 16
    assert words[-1] == [f"activation_checkpoint:{config.recomputation.torchtitan_mode}"]
    assert "CONFIG=${CONFIG:-llama3_8b}" in paths["train"].read_text()


def test_the_command_line_plans_it_in_layers_and_checks_the_model(tmp_path: Path, capsys) -> None:
    # the sample, planned stage by stage, told its entries' layers on the command line
    sample = ROOT / "models" / "pipeline.toml"
    argv = ["plan", str(sample), "--out", str(tmp_path / "out"), "--torchtitan-config", "llama3_8b",
            "--layers-per-entry", "3", "--time-limit", "5", "--deterministic"]
    assert main(argv) == 2
    assert "torchtitan llama3_8b has 32 transformer layers, the 8 entries (layers_per_entry = 3) stand for 24: set " \
           "layers_per_entry = 4" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    argv[argv.index("3")] = "4"
    assert main(argv + ["--end-layers", "embedding,head", "--parallel", "1"]) == 0
    out = capsys.readouterr().out
    assert "the embedding is a layer of its own: entry 'embed+layer0' less its 4 layers" in out
    assert "wrote " in out and (tmp_path / "out" / "torchtitan.args").exists()


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(layers_per_entry=[4, 4]),
     "pipeline: 'layers_per_entry' must give one count per entry (3), got 2: [4, 4]"),
    (lambda d: d.update(layers_per_entry=0), "pipeline: 'layers_per_entry' must be an integer from 1 to 100,000, got 0"),
    (lambda d: d.update(layers_per_entry=[4, "4", 4]),
     "pipeline: 'layers_per_entry' entry 1 must be an integer from 1 to 100,000, got '4'"),
    (lambda d: (d.pop("layers_per_entry"), d.update(end_layers=["head"])),
     "pipeline: 'end_layers' ['head'] says what the end entries hold beyond their layers: give 'layers_per_entry'"),
    (lambda d: d.update(end_layers=["tail"]), "pipeline: 'end_layers' entry must be one of ['embedding', 'head'], "
                                               "got 'tail'"),
    (lambda d: (d.update(end_layers=["embedding", "head"]), d["stages"].pop()),
     "pipeline: 'end_layers' ['embedding', 'head'] needs an entry of transformer layers only beside each end entry"),
])
def test_bad_entry_fields_are_refused(change, message) -> None:
    doc = copy.deepcopy(_entries())
    change(doc)
    with pytest.raises(InvalidPipelineError) as err:
        Pipeline.from_dict(doc)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("change, message", [
    # the first entry is less than its 4 layers at the figures of the entry beside it: no embedding is left
    (lambda d: d["stages"][0].update(forward_ms=3.5),
     "stage 'e0': 'forward_ms' 3.5 is less than its 4 transformer layers take at the figures of entry 'e1' beside it "
     "(4): with end_layers naming the embedding"),
    (lambda d: d["stages"][2].update(parameter_bytes="3 GiB"),
     "stage 'e2': 'parameter_bytes' 3 GiB is less than its 4 transformer layers take at the figures of entry 'e1' "
     "beside it (4 GiB): with end_layers naming the head"),
    (lambda d: d.update(microbatch_sizes=[2, 2, 1, 1]), "pipeline: 'microbatch_sizes' [2.0, 2.0, 1.0, 1.0] with "
                                                         "'layers_per_entry'"),
    (lambda d: d.update(fb_overlap_ms=5.0), "pipeline: 'fb_overlap_ms' 5.0 with 'layers_per_entry': it times an "
                                             "overlapped pair of the description's stages"),
])
def test_entries_that_do_not_divide_into_their_layers_are_refused(change, message) -> None:
    doc = copy.deepcopy(_entries(end_layers=["embedding", "head"]))
    change(doc)
    with pytest.raises(InvalidPipelineError) as err:
        LayerModel.from_pipeline(Pipeline.from_dict(doc))
    assert str(err.value).startswith(message)


# ------------------------------------------------------------------ descriptions that do not ask
def test_a_description_without_the_fields_reads_and_writes_as_before(tmp_path: Path) -> None:
    sample = Pipeline.load(ROOT / "models" / "pipeline.toml")
    assert sample.layers_per_entry is None and sample.end_layers is None
    assert "layers_per_entry" not in sample.to_toml() and "end_layers" not in sample.to_dict()
    with pytest.raises(InvalidPipelineError, match="'layers_per_entry' is not given"):
        LayerModel.from_pipeline(sample)
    described = Pipeline.load(STAGES)
    for name in ("d.toml", "d.json"):
        back = Pipeline.load(described.save(tmp_path / name))
        assert back == described and back.layers_per_entry == 4 and back.end_layers == ("embedding", "head")
    listed = Pipeline.from_dict(_entries(layers_per_entry=[4, 5, 3]))
    assert listed.entry_layers() == (4, 5, 3) and Pipeline.from_dict(listed.to_dict()) == listed
    assert math.isclose(sum(m.forward_ms for m in LayerModel.from_pipeline(listed).at(1)), 12.0)


def test_a_calibrated_descriptions_overheads_carry_over_to_every_stage_of_every_split() -> None:
    calibrated = Pipeline.from_dict(_entries(action_overhead_ms=0.25, step_overhead_ms=3.0))
    model = LayerModel.from_pipeline(calibrated)
    assert (model.action_overhead_ms, model.step_overhead_ms) == (0.25, 3.0)
    assert LayerModel.from_dict(model.to_dict()) == model
    # once per stage, whatever its layers: 12 layers of 1 ms forward as 3 stages of 4 (one per rank), and as 4
    # stages of 3 (two per rank)
    for counts, ranks in (([4, 4, 4], 3), ([3, 3, 3, 3], 2)):
        config = Configuration.from_boundaries(counts, num_ranks=ranks, microbatch_size=1, num_microbatches=4)
        pipeline = model.pipeline(config)
        stages, _ = pipeline.stages_for(len(counts))
        assert [s.forward_ms for s in stages] == [12 / len(counts) + 0.25] * len(counts)
        assert pipeline.step_overhead_ms == 3.0


def test_the_sweep_refuses_a_description_in_layers_rather_than_plan_it_stage_by_stage() -> None:
    with pytest.raises(InvalidPipelineError, match=r"plan_sweep: .* says its entries stand for layers"):
        schedsearch.plan_sweep(Pipeline.from_dict(_entries()), num_microbatches=[4, 8], time_limit_s=1)
