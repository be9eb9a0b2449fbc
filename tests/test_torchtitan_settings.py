"""The torchtitan settings are checked against the model they will run, before anything is written.

Without torchtitan (forced here, so that these run wherever the suite runs)
the layer counts come from the library's table, which the integration test
checks against torchtitan's own configs; with it, torchtitan's own config is
read (tests/integration/test_torchtitan.py).
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import schedsearch
from schedsearch.cli import main
from schedsearch.errors import InvalidOptionsError, InvalidPipelineError
from schedsearch.plan.torchtitan import TORCH_VERSION, TORCHTITAN_VERSION, entry_modules, torchtitan_model


@pytest.fixture(autouse=True)
def _no_torchtitan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchtitan", None)  # import torchtitan raises ImportError


def _stages(names: list[str], split: bool = False) -> list[dict]:
    extra = {"input_grad_ms": 1.0, "weight_grad_ms": 1.0} if split else {}
    return [{"name": n, "forward_ms": 1.0, "backward_ms": 2.0, **extra} for n in names]


@pytest.fixture(scope="module")
def eight_stages():
    """An 8-stage description (one stage per rank, 1F1B): the shape of a Llama-8B-like description."""
    pipeline = schedsearch.Pipeline(num_ranks=8, num_microbatches=8, families=["1f1b"],
                                    stages=_stages([f"block{i}" for i in range(8)]))
    return schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)


def _args(path: Path) -> dict[str, str]:
    words = [w for line in path.read_text().splitlines() for w in shlex.split(line)]
    return dict(w.split("=", 1) for w in words if "=" in w)


def _stage_count(args: dict[str, str], num_layers: int) -> int:
    """Independent statement of torchtitan's rule: ceil((layers + less first + less last) / layers per stage)."""
    effective = num_layers + int(args["--parallelism.pipeline_parallel_first_stage_less_layers"]) + \
        int(args["--parallelism.pipeline_parallel_last_stage_less_layers"])
    return math.ceil(effective / int(args["--parallelism.pipeline_parallel_layers_per_stage"]))


def test_eight_entries_against_a_32_layer_model_are_refused_with_the_fix(eight_stages, tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionsError) as err:
        eight_stages.write(tmp_path / "out", torchtitan_config="llama3_8b")
    assert str(err.value) == (
        "torchtitan llama3_8b has 32 transformer layers, the description's 8 entries stand for 8 (1 each): "
        "describe the 32 layers (one entry each), or set layers_per_entry = 4 (plan --layers-per-entry 4)")
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_layers_per_entry_gives_one_stage_per_rank_of_the_32_layer_model(eight_stages, tmp_path: Path) -> None:
    paths = eight_stages.write(tmp_path, torchtitan_config="llama3_8b", layers_per_entry=4)
    args = _args(paths["torchtitan"])
    assert args["--parallelism.pipeline_parallel_schedule"] == "PipelineScheduleSingle"
    # 8 stages of 4 layers on 8 ranks: one stage per rank, as the single-stage schedule requires
    assert _stage_count(args, 32) == 8 and args["--parallelism.pipeline_parallel_layers_per_stage"] == "4"
    script = paths["train"].read_text()
    assert "MODULE=${MODULE:-llama3}" in script and "CONFIG=${CONFIG:-llama3_8b}" in script
    assert "if n != 32:" in script


def test_without_a_named_model_the_plan_is_written_for_its_entries(eight_stages, tmp_path: Path) -> None:
    args = _args(eight_stages.write(tmp_path)["torchtitan"])
    assert _stage_count(args, 8) == 8


def test_the_sample_against_llama3_8b_is_refused_before_the_search(tmp_path: Path, capsys) -> None:
    root = Path(__file__).resolve().parents[1]
    argv = ["plan", str(root / "models" / "pipeline.toml"), "--out", str(tmp_path / "out"), "--torchtitan-config",
            "llama3_8b"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "llama3_8b has 32 transformer layers, the description's 8 entries stand for 8 (1 each): describe the " \
           "32 layers (one entry each), or set layers_per_entry = 4 (plan --layers-per-entry 4)" in err
    assert not (tmp_path / "out").exists()


def test_an_unknown_config_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InvalidOptionsError, match="llama3_1b is not one the library knows without torchtitan "
                                                  r"\(llama3_debugmodel, llama3_8b, llama3_70b of llama3\)"):
        torchtitan_model("llama3_1b")
    assert torchtitan_model("llama3_70b").num_layers == 80
    with pytest.raises(InvalidOptionsError, match="layers_per_entry must be a positive integer"):
        entry_modules(schedsearch.Pipeline(num_ranks=1, num_microbatches=1, stages=_stages(["a"])),
                      layers_per_entry=0)


DEBUG_NAMES = ["tok_embeddings", *(f"layers.{i}" for i in range(6)), "norm+lm_head"]


def test_entries_named_after_torchtitans_modules_are_split_by_their_names(tmp_path: Path) -> None:
    pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], partition="dp",
                                    stages=_stages(DEBUG_NAMES))
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    assert [len(g) for g in result.layers] == [4, 4]  # the DP's split of the 8 equal entries
    args = _args(result.write(tmp_path, torchtitan_config="llama3_debugmodel")["torchtitan"])
    # stage 0: tok_embeddings, layers.0-2; stage 1: layers.3-5, norm, lm_head; in torchtitan's rule: 3 layers a
    # stage, each end counting its embedding or output as one
    assert (args["--parallelism.pipeline_parallel_layers_per_stage"],
            args["--parallelism.pipeline_parallel_first_stage_less_layers"],
            args["--parallelism.pipeline_parallel_last_stage_less_layers"]) == ("4", "1", "1")
    assert _stage_count(args, 6) == 2
    with pytest.raises(InvalidOptionsError) as err:
        result.write(tmp_path / "8b", torchtitan_config="llama3_8b")
    assert str(err.value) == ("torchtitan llama3_8b has 32 transformer layers (layers.0 .. layers.31); the "
                              "description's entries name 6 (layers.0 .. layers.5): name every module of the model "
                              "once")


def test_an_uneven_named_split_is_written_module_by_module(tmp_path: Path) -> None:
    names = ["tok_embeddings+layers.0+layers.1+layers.2+layers.3", "layers.4", "layers.5+norm", "lm_head"]
    pipeline = schedsearch.Pipeline(num_ranks=4, num_microbatches=4, families=["1f1b"], stages=_stages(names))
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    text = result.write(tmp_path, torchtitan_config="llama3_debugmodel")["torchtitan"].read_text()
    assert text.splitlines()[-2] == ("--parallelism.module_fqns_per_model_part "
                                     "tok_embeddings,layers.0,layers.1,layers.2,layers.3 layers.4 layers.5,norm lm_head")


@pytest.mark.parametrize("names,error,message", [
    (["tok_embeddings+layers.0", "layers.1+layers.1", "norm+lm_head"], InvalidPipelineError,
     "torchtitan: module 'layers.1' is named more than once (entries 1): name each module in exactly one entry"),
    (["tok_embeddings+layers.0", "layers.2", "norm+lm_head"], InvalidPipelineError,
     "torchtitan: no entry names 'layers.1': name every module of the model once (tok_embeddings, layers.0, ..., "
     "norm, lm_head)"),
    (["layers.0+tok_embeddings", "layers.1", "norm+lm_head"], InvalidPipelineError,
     "torchtitan: the entries name 'layers.0' where the model's order has 'tok_embeddings': list the modules in "
     "model order (tok_embeddings, layers.0, layers.1, ..., norm, lm_head)"),
    (["tok_embeddings+layers.0", "block1", "norm+lm_head"], InvalidPipelineError,
     "torchtitan: entry 0 'tok_embeddings+layers.0' names torchtitan modules, entry 1 'block1' does not: name "
     "every entry after its modules (tok_embeddings, layers.N, norm, lm_head, joined with '+'), or none"),
    (["tok_embeddings+layers.0", "layers.1", "layers.2+norm+lm_head+output"], InvalidPipelineError,
     "entry 0 'tok_embeddings+layers.0' names torchtitan modules, entry 2 'layers.2+norm+lm_head+output' does not"),
])
def test_a_named_split_must_name_every_module_once_in_order(names, error, message) -> None:
    pipeline = schedsearch.Pipeline(num_ranks=1, num_microbatches=1, stages=_stages(names))
    with pytest.raises(error) as err:
        entry_modules(pipeline)
    assert message in str(err.value)


def test_layers_per_entry_does_not_apply_to_named_entries() -> None:
    pipeline = schedsearch.Pipeline(num_ranks=1, num_microbatches=1, stages=_stages(DEBUG_NAMES))
    with pytest.raises(InvalidOptionsError, match="layers_per_entry = 2 does not apply to entries named after"):
        entry_modules(pipeline, layers_per_entry=2)


def test_train_sh_says_what_to_install_when_the_versions_differ(eight_stages, tmp_path: Path) -> None:
    """train.sh reads the installed versions (here made to differ by distribution records first on the path)."""
    paths = eight_stages.write(tmp_path / "plan")
    fake = tmp_path / "site"
    for name, ver in (("torch", "2.13.0"), ("torchtitan", TORCHTITAN_VERSION)):
        info = fake / f"{name}-{ver}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    env = dict(os.environ, PYTHONPATH=str(fake), MODULE="llama3", CONFIG="llama3_8b",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("SCHEDSEARCH_ANY_VERSION", None)
    done = subprocess.run(["bash", str(paths["train"])], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        f"train.sh: installed torch 2.13.0, torchtitan {TORCHTITAN_VERSION}; this plan runs with torchtitan "
        f"{TORCHTITAN_VERSION}, whose trainer needs torch {TORCH_VERSION}: pip install torch=={TORCH_VERSION} "
        f"torchtitan=={TORCHTITAN_VERSION} (or set SCHEDSEARCH_ANY_VERSION=1 to launch anyway)")


# --- activation checkpointing of a plan of a model in layers ------------------------------------------------------

def _layer_model(budget: str):
    """torchtitan's debug model in layers (an embedding, 6 blocks, a head), 4 samples per step, 2 ranks."""
    from schedsearch.plan.layers import LayerModel

    block = {"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
             "checkpoint_bytes": "0.1 GiB"}
    return LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes=budget, layers=[
        {"name": "embed", "kind": "embedding", "measured": [{**block, "forward_ms": 0.2, "backward_ms": 0.2}],
         "parameter_bytes": "0.5 GiB"},
        {"name": "block", "repeat": 6, "measured": [block], "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": [block], "parameter_bytes": "1 GiB"}])


@pytest.mark.parametrize("budget,runtime", [("5 GiB", "torch"), ("6 GiB", "any"), ("8 GiB", "torch")])
def test_a_layer_plans_args_carry_its_recomputation_or_say_why_not(tmp_path: Path, budget: str,
                                                                    runtime: str) -> None:
    """The written checkpointing is the chosen configuration's: none or full as torchtitan's subcommand (last,
    with the split of torchtitan's modules), anything else (a plan for no runtime in particular) refused with
    the reason and no torchtitan.args."""
    from schedsearch.plan.planner import plan_layers
    from schedsearch.plan.torchtitan import not_written

    result = plan_layers(_layer_model(budget), time_limit_s=20, parallel=1, deterministic=True, runtime=runtime)
    rec = result.best.configuration.recomputation
    paths = result.write(tmp_path, torchtitan_config="llama3_debugmodel")
    if rec.mode in ("none", "full", "op"):
        lines = paths["torchtitan"].read_text().splitlines()
        assert lines[-1] == f"activation_checkpoint:{rec.torchtitan_mode if rec.recomputes else 'none'}"
        assert sum(line.startswith("activation_checkpoint") for line in lines) == 1
        assert f"--training.local_batch_size={result.best.configuration.num_microbatches}" in lines
        assert not not_written(paths["table"])
    else:
        assert "torchtitan" not in paths and "train" not in paths and "csv" in paths
        (why,) = not_written(paths["table"])
        assert why.startswith("torchtitan.args, train.sh: torchtitan 0.3.0 cannot recompute"), why


def test_the_budgets_above_choose_every_recomputation_the_writer_handles(tmp_path: Path) -> None:
    """The budgets of the test above make the planner choose full, every-k and no recomputation (so each branch
    of it runs); a change of the planner's choice shows here rather than as a branch left untested. For torch's
    runtime the planner chooses only what torchtitan runs: at the budget where every 2nd block is best for no
    runtime in particular, it chooses a configuration torchtitan runs."""
    from schedsearch.plan.planner import plan_layers

    def mode(budget: str, runtime: str) -> str:
        return plan_layers(_layer_model(budget), time_limit_s=20, parallel=1, deterministic=True,
                           runtime=runtime).best.configuration.recomputation.mode

    assert {mode(b, "torch") for b in ("5 GiB", "6 GiB", "8 GiB")} == {"full", "none"}
    assert mode("6 GiB", "any") == "selective"


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("mode", ["none", "full", "op", "selective", "layers"])
def test_the_writer_sets_checkpointing_as_given_and_refuses_what_torchtitan_cannot_run(
        tmp_path: Path, split: bool, mode: str) -> None:
    from schedsearch.errors import FormatError
    from schedsearch.plan.layers import Recomputation
    from schedsearch.plan.torchtitan import not_written, torchtitan_overrides

    pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
                                    stages=_stages(["a", "b"], split=split))
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    assert result.best.candidate.split_backward == split
    rec = Recomputation(mode=mode, every=2 if mode == "selective" else None,
                        layers=[1] if mode == "layers" else ())
    runs = mode == "none" or (mode in ("full", "op") and not split)
    if runs:
        words = torchtitan_overrides(result, tmp_path / "schedule.csv", recomputation=rec)
        assert words[-1] == [f"activation_checkpoint:{'selective' if mode == 'op' else mode}"]
        assert sum(w[0].startswith("activation_checkpoint") for w in words) == 1
        # without a recomputation (a pipeline description) only a split backward sets it (to none), as before
        assert torchtitan_overrides(result, tmp_path / "schedule.csv") == (words if split else words[:-1])
    else:
        with pytest.raises(FormatError, match=("one backward per checkpointed region" if split
                                               else "cannot recompute")):
            torchtitan_overrides(result, tmp_path / "schedule.csv", recomputation=rec)
        paths = result.write(tmp_path, recomputation=rec)
        assert "torchtitan" not in paths and len(not_written(paths["table"])) == 1
