"""torchtitan runs the plans ``plan`` writes, as written (``make test-integration``).

Needs torchtitan 0.3.0 with torch 2.14.1 (the pair whose trainer runs the
files: torchtitan 0.3.0's trainer calls ``step(arg_mbs=..., kwarg_mbs=...)``,
which torch 2.13's schedules do not take) in a separate environment
(``make test-integration`` builds it); skipped without torchtitan unless
``SCHEDSEARCH_REQUIRE_TORCHTITAN=1``, when its absence fails the run.

Two levels, on plans of torchtitan's ``llama3`` debug model (6 transformer
layers) on gloo/CPU: a loop plan (1F1B, 2 ranks), an interleaved plan
(interleaved zero bubble, 2 ranks), V plans (ZB-V, 3 ranks; 2 ranks with
stages of uneven layer counts, written as ``module_fqns_per_model_part``);
and a plan of the debug model in layers (:func:`~schedsearch.plan.planner.plan_layers`)
whose memory budget needs full recomputation: interleaved 1F1B on an uneven
split, run with ``activation_checkpoint:full`` by the plan and by the
built-in schedule alike; and one whose blocks give per-operator
checkpointing's figures, run with ``activation_checkpoint:selective``.

* torchtitan's trainer (``torchtitan.train``) itself runs the emitted
  ``torchtitan.args`` for a few steps (the loop plan through ``train.sh``),
  and again with torchtitan's built-in schedule of the same layout in place
  of the CSV; the losses must be equal step for step. The CUDA-only calls
  the trainer makes are replaced in ``titan_cpu/sitecustomize.py``, each
  named there with its reason; the tokenizer and the text are made here
  (torchtitan's test assets are not part of its package).
* ``titan_worker.py`` builds the stages with torchtitan's ``pipeline_llm``
  and steps the schedule itself, once with the CSV and once with the
  built-in schedule: the gradients of every parameter must match.

The settings are also checked against torchtitan's own config: the layer
table of the library against its configs, and the refusals of a
description that does not fit the model.
"""

from __future__ import annotations

import itertools
import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore")]

if os.environ.get("SCHEDSEARCH_REQUIRE_TORCHTITAN") != "1":
    pytest.importorskip("torchtitan", reason="torchtitan is not installed (make test-integration installs it)")

import torch  # noqa: E402

import schedsearch  # noqa: E402
from schedsearch.plan.layers import LayerModel  # noqa: E402
from schedsearch.plan.planner import plan_layers  # noqa: E402
from schedsearch.plan.torchtitan import (  # noqa: E402
    TORCH_VERSION,
    TORCHTITAN_LAYERS,
    TORCHTITAN_VERSION,
    torchtitan_model,
    torchtitan_split,
)

WORKER = Path(__file__).with_name("titan_worker.py")
CPU_SITE = Path(__file__).with_name("titan_cpu")  # sitecustomize: the trainer's CUDA-only calls, replaced
RUN_TIMEOUT_S = 600  # one torchrun of both steps; a hang fails here with the log
NUM_LAYERS = 6  # torchtitan's llama3 debug model


def test_versions() -> None:
    """The pair the files name is installed, and its torch takes the arguments torchtitan's trainer passes."""
    import inspect

    import torchtitan
    from torch.distributed.pipelining.schedules import PipelineScheduleMulti, PipelineScheduleSingle

    assert torch.__version__.split("+")[0] == TORCH_VERSION
    assert torchtitan.__version__ == TORCHTITAN_VERSION
    trainer = Path(inspect.getfile(torchtitan)).with_name("trainer.py").read_text()
    assert "self.pp_schedule.step(" in trainer and "arg_mbs=" in trainer and "kwarg_mbs=" in trainer
    for cls in (PipelineScheduleSingle, PipelineScheduleMulti):
        params = inspect.signature(cls.step).parameters
        assert {"arg_mbs", "kwarg_mbs", "target_mbs"} <= params.keys(), (cls, list(params))


def test_layer_table_is_torchtitans() -> None:
    """The library's table of layer counts (used without torchtitan) is what torchtitan's own configs build."""
    from torchtitan.config import ConfigManager

    for (module, config), layers in TORCHTITAN_LAYERS.items():
        parsed = ConfigManager().parse_args(["--module", module, "--config", config])
        assert len(parsed.model_spec.model.layers) == layers, (config, layers)
        model = torchtitan_model(config, module)
        assert model.source == f"torchtitan {TORCHTITAN_VERSION}" and model.num_layers == layers


def _modules(groups: list[list[int]]) -> list[list[str]]:
    """Independent statement of what each stage must hold: its layers, the embedding first, norm and output last."""
    out = [[f"layers.{i}" for i in g] for g in groups]
    out[0] = ["tok_embeddings"] + out[0]
    out[-1] = out[-1] + ["norm", "lm_head"]
    return out


def _compositions(total: int, parts: int):
    for cuts in itertools.combinations(range(1, total), parts - 1):
        bounds = (0, *cuts, total)
        yield [list(range(bounds[k], bounds[k + 1])) for k in range(parts)]


@pytest.mark.parametrize("num_layers,num_stages", [(6, 2), (6, 3), (6, 4), (8, 4), (7, 3)])
def test_split_overrides_give_the_plans_stages_in_torchtitan(num_layers: int, num_stages: int) -> None:
    """Every split into contiguous stages, written as overrides, is the split torchtitan's own code builds."""
    from torchtitan.config import ConfigManager
    from torchtitan.distributed import pipeline_parallel as tt_pp

    for groups in _compositions(num_layers, num_stages):
        words = torchtitan_split(groups)
        # in the order torchtitan.args writes them: the split, a flag, the checkpointing subcommand last
        config = ConfigManager().parse_args(["--module", "llama3", "--config", "llama3_debugmodel", *words,
                                             "--training.disable_cuda_graphs", "activation_checkpoint:none"])
        assert config.activation_checkpoint is None and config.training.disable_cuda_graphs
        par = config.parallelism
        if par.module_fqns_per_model_part is not None:
            got = par.module_fqns_per_model_part
        else:
            effective = num_layers + par.pipeline_parallel_first_stage_less_layers + \
                par.pipeline_parallel_last_stage_less_layers
            stages = -(-effective // par.pipeline_parallel_layers_per_stage)
            assert stages == num_stages, (groups, words)
            got = tt_pp._generate_llm_fqn_per_model_part(
                stages, num_layers, par.pipeline_parallel_first_stage_less_layers,
                par.pipeline_parallel_last_stage_less_layers)
        assert got == _modules(groups), (groups, words)


def _pipeline(num_ranks: int, num_microbatches: int, family: str, split: bool,
              scale: tuple[float, ...]) -> schedsearch.Pipeline:
    stages = []
    for i, x in enumerate(scale):
        stage = {"name": f"layer{i}", "forward_ms": x, "backward_ms": 2.0 * x}
        if split:
            stage.update(input_grad_ms=x, weight_grad_ms=x)
        stages.append(stage)
    return schedsearch.Pipeline(num_ranks=num_ranks, num_microbatches=num_microbatches, families=[family],
                                partition="dp", stages=stages)


def _run(cmd: list[str], log: Path, timeout_s: float = RUN_TIMEOUT_S, env: dict[str, str] | None = None,
         cwd: Path | None = None) -> float:
    """Run ``cmd`` (a torchrun or train.sh) with its output in ``log``; its wall time in s. A failure or hang fails."""
    t0 = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"torchrun did not finish in {timeout_s:g} s (a hang?): {shlex.join(cmd)}\n"
                        + log.read_text()[-4000:])
    if rc != 0:
        pytest.fail(f"torchrun failed (exit {rc}): {shlex.join(cmd)}\n" + log.read_text()[-6000:])
    return time.perf_counter() - t0


def test_the_profiles_selective_rule_decides_as_torchtitans_policy() -> None:
    """``profile --layers`` measures the blocks under :class:`~schedsearch.runtime.profile.OpCheckpointRule`:
    on the operators of the built-in transformer block (biased projections: ``addmm``, attention: ``bmm``)
    and of a bias-free stack (``mm``), forward and recomputation alike, it saves what torchtitan's own
    ``activation_checkpoint:selective`` policy saves."""
    import torchtitan.distributed.activation_checkpoint as ac
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.checkpoint import CheckpointPolicy

    from schedsearch.runtime._transformer import Block
    from schedsearch.runtime.profile import OpCheckpointRule

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.ops.append((func, args, kwargs or {}))
            return func(*args, **(kwargs or {}))

    class Ctx:
        def __init__(self, recompute: bool) -> None:
            self.is_recompute = recompute

    bare = torch.nn.Sequential(torch.nn.Linear(32, 64, bias=False), torch.nn.GELU(),
                               torch.nn.Linear(64, 64, bias=False), torch.nn.Linear(64, 32, bias=False))
    for module in (Block(32, 4), bare):
        with torch.no_grad(), Ops() as recorded:
            module(torch.randn(2, 8, 32))
        # torchtitan's policy for this module, fresh: the one its wrapper's context makes
        wrapped = ac.SelectiveAC(ac.SelectiveAC.Config())._wrap_block(module)
        made = []
        real = ac.create_selective_checkpoint_contexts
        ac.create_selective_checkpoint_contexts = lambda policy, *a, **k: made.append(policy) or real(policy, *a, **k)
        try:
            wrapped.checkpoint_fn.keywords["context_fn"]()
        finally:
            ac.create_selective_checkpoint_contexts = real
        theirs, ours = made[0], OpCheckpointRule(torch)
        saved = 0
        for recompute in (False, True):
            for func, args, kwargs in recorded.ops:
                says = theirs(Ctx(recompute), func, *args, **kwargs) is CheckpointPolicy.MUST_SAVE
                assert ours.saves(func, recompute) == says, (type(module).__name__, recompute, func)
                saved += says
        assert 0 < saved < 2 * len(recorded.ops)


EVEN = (1.0,) * NUM_LAYERS
ENDS_HEAVY = (1.0, 1.0, 2.0, 2.0, 1.0, 1.0)  # 4 stages of 2, 1, 1, 2 layers: torchtitan's rule cannot give them
# (family of the description, ranks, micro-batches, split backward, layer times, family the plan must be,
#  torchtitan's built-in schedule of that family, whether the split is written as module_fqns_per_model_part)
CASES = [
    ("1f1b", 2, 4, False, EVEN, "1F1B", "1F1B", False),
    ("interleaved", 2, 4, True, EVEN, "interleaved ZB", "InterleavedZeroBubble", False),
    ("zb-v", 3, 6, True, EVEN, "ZB-V", "ZBVZeroBubble", False),
    ("zb-v", 2, 4, True, ENDS_HEAVY, "ZB-V", "ZBVZeroBubble", True),
]


@pytest.mark.parametrize("family,ranks,microbatches,split,scale,expect,reference,fqns", CASES,
                         ids=[f"{c[5]}-{c[1]}ranks{'-fqns' if c[7] else ''}" for c in CASES])
def test_torchtitan_runs_the_plan_with_its_builtin_schedules_gradients(
        tmp_path: Path, family: str, ranks: int, microbatches: int, split: bool, scale: tuple[float, ...],
        expect: str, reference: str, fqns: bool) -> None:
    result = schedsearch.plan(_pipeline(ranks, microbatches, family, split, scale), time_limit_s=30, parallel=1,
                              deterministic=True)
    assert result.best is not None and result.best.family.startswith(expect), result.table()
    paths = result.write(tmp_path / "plan")
    assert {"csv", "torchtitan", "train"} <= set(paths), paths
    args = paths["torchtitan"].read_text()
    assert ("--parallelism.module_fqns_per_model_part" in args) == fqns, args
    out = tmp_path / "ranks"
    out.mkdir()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
           str(WORKER), "--args-file", str(paths["torchtitan"]), "--reference", reference, "--out", str(out)]
    wall = _run(cmd, tmp_path / "torchrun.log")
    worst, count = 0.0, 0
    for rank in range(ranks):
        data = torch.load(out / f"rank{rank}.pt", weights_only=False)
        plan_grads, plan_losses, plan_class = data["plan"]
        ref_grads, ref_losses, ref_class = data["reference"]
        assert plan_class == "_PipelineScheduleRuntime", plan_class  # torchtitan loaded the CSV
        assert ref_class != plan_class
        assert plan_grads and plan_grads.keys() == ref_grads.keys(), (rank, plan_grads.keys() ^ ref_grads.keys())
        for name, grad in plan_grads.items():
            torch.testing.assert_close(grad, ref_grads[name], rtol=1e-5, atol=1e-6, msg=lambda m: f"rank {rank} {name}: {m}")
            worst = max(worst, (grad - ref_grads[name]).abs().max().item())
        count += len(plan_grads)
        assert len(plan_losses) == len(ref_losses)
        torch.testing.assert_close(torch.tensor(plan_losses), torch.tensor(ref_losses))
    print(f"\n[torchtitan {TORCHTITAN_VERSION}] {result.best.family:<22} ranks {ranks}  vs {reference:<22} "
          f"{count} gradients, max |difference| {worst:.3g}, wall {wall:.1f} s")


# --- torchtitan's trainer runs the emitted files ---------------------------------------------------------------

TRAIN_STEPS = 3
SEQ_LEN = 64
TRAINER_CASES = [  # (CASES entry, whether the plan runs through train.sh)
    (CASES[0], True),
    (CASES[1], False),
    (CASES[2], False),
    (CASES[3], False),
]
_TABLE: list[str] = []


@pytest.fixture(scope="module")
def titan_data(tmp_path_factory: pytest.TempPathFactory):
    """A word-level tokenizer (500 words) and 200 documents of random words for torchtitan's text loader.

    torchtitan's debug config reads a tokenizer and the ``c4_test`` text from
    its repository's test assets, which its package does not ship; these
    stand in, made here, and the table of the runs is printed at the end.
    """
    import json
    import random

    from tokenizers import Tokenizer, models, pre_tokenizers

    root = tmp_path_factory.mktemp("titan_data")
    (root / "tokenizer").mkdir()
    (root / "text").mkdir()
    words = [f"w{i}" for i in range(500)]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(root / "tokenizer" / "tokenizer.json"))
    (root / "tokenizer" / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}))
    rng = random.Random(0)
    with (root / "text" / "data.json").open("w") as f:
        for _ in range(200):
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(20, 120)))}) + "\n")
    yield root
    if _TABLE:
        print(f"\n\n[torchtitan trainer] {'plan':<44} ranks  steps  loss max |difference|  wall plan  "
              "wall built-in  built-in schedule")
        print("\n".join(_TABLE))


def _trainer_env(record: Path) -> dict[str, str]:
    """The environment of a trainer run: the CPU replacements loaded, this rank's losses recorded in ``record``."""
    record.mkdir()
    path = [str(CPU_SITE), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), SCHEDSEARCH_TITAN_CPU="1",
                SCHEDSEARCH_TITAN_RECORD=str(record), GLOO_SOCKET_IFNAME="lo",
                PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def _losses(record: Path, ranks: int) -> tuple[set[str], list[float]]:
    """The schedule classes the ranks' trainers built and the losses the last stage's trainer logged, by step."""
    import json

    classes, losses = set(), None
    for rank in range(ranks):
        rows = [json.loads(line) for line in (record / f"rank{rank}.jsonl").read_text().splitlines()]
        classes.add(rows[0]["schedule"])
        if rows[0]["last_stage"]:
            assert losses is None, "two ranks hold the last stage"
            losses = [r["loss"] for r in rows[1:]]
            assert [r["step"] for r in rows[1:]] == list(range(1, TRAIN_STEPS + 1)), rows
    assert losses is not None, "no rank holds the last stage"
    return classes, losses


@pytest.mark.parametrize("case,via_train_sh", TRAINER_CASES,
                         ids=[f"{c[5]}-{c[1]}ranks{'-fqns' if c[7] else ''}{'-train.sh' if t else ''}"
                              for c, t in TRAINER_CASES])
def test_torchtitans_trainer_runs_the_plan_with_its_builtin_schedules_losses(
        tmp_path: Path, titan_data: Path, case: tuple, via_train_sh: bool) -> None:
    family, ranks, microbatches, split, scale, expect, reference, fqns = case
    result = schedsearch.plan(_pipeline(ranks, microbatches, family, split, scale), time_limit_s=30, parallel=1,
                              deterministic=True)
    assert result.best is not None and result.best.family.startswith(expect), result.table()
    # written for the debug model: the split is checked against its 6 layers with torchtitan's own config
    paths = result.write(tmp_path / "plan", torchtitan_config="llama3_debugmodel")
    label = f"{result.best.family}{', uneven split' if fqns else ''}{', train.sh' if via_train_sh else ''}"
    _trainer_row(tmp_path, titan_data, paths, ranks=ranks, reference=reference, fqns=fqns,
                 via_train_sh=via_train_sh, label=label)


def _layer_model(budget: str, *, op: bool = False) -> LayerModel:
    """torchtitan's debug model in layers: an embedding, 6 equal blocks, a head twice as heavy; 4 samples a step
    (``op``: the blocks also give per-operator selective checkpointing's figures)."""
    block = {"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
             "checkpoint_bytes": "0.1 GiB"}
    blocks = {**block, "selective_bytes": "0.25 GiB", "selective_recompute_ms": 0.3} if op else block
    return LayerModel(global_batch=4, num_ranks=2, memory_budget_bytes=budget, layers=[
        {"name": "embed", "kind": "embedding", "measured": [{**block, "forward_ms": 0.2, "backward_ms": 0.2}],
         "parameter_bytes": "0.5 GiB"},
        {"name": "block", "repeat": NUM_LAYERS, "measured": [blocks], "parameter_bytes": "0.5 GiB"},
        {"name": "head", "kind": "head", "measured": [{**block, "forward_ms": 2.0, "backward_ms": 4.0}],
         "parameter_bytes": "1 GiB"}])


@pytest.mark.parametrize("mode,budget,op,subcommand,policy", [
    ("full", "5 GiB", False, "full", "FullAC"),  # the budget needs recomputation: full wins
    ("op", "9 GiB", True, "selective", "SelectiveAC"),  # the blocks give per-operator figures, and that mode wins
])
def test_torchtitans_trainer_runs_a_layer_plan_with_its_recomputation_and_an_uneven_split(
        tmp_path: Path, titan_data: Path, mode: str, budget: str, op: bool, subcommand: str, policy: str) -> None:
    """A plan of a model in layers whose budget needs recomputation: torchtitan's trainer runs its files with
    the chosen ``activation_checkpoint`` subcommand (``full``; ``selective``, its per-operator checkpointing) and
    gives the losses of its built-in schedule of the same split and checkpointing."""
    result = plan_layers(_layer_model(budget, op=op), time_limit_s=30, parallel=1, deterministic=True)
    config = result.best.configuration
    assert config.recomputation.mode == mode, result.table()
    assert result.best.candidate.family == "interleaved" and not result.best.candidate.split_backward, result.table()
    assert len({len(stage) for stage in config.split}) > 1, config  # uneven
    paths = result.write(tmp_path / "plan", torchtitan_config="llama3_debugmodel")
    assert paths["torchtitan"].read_text().splitlines()[-1] == f"activation_checkpoint:{subcommand}"
    label = f"{result.best.candidate.label}, split {'/'.join(str(len(s)) for s in config.split)}, {mode} AC"
    _trainer_row(tmp_path, titan_data, paths, ranks=2, reference="Interleaved1F1B", fqns=None,
                 via_train_sh=False, label=label)
    for run in ("plan", "builtin"):  # torchtitan wrapped the blocks of every stage, in both runs
        log = (tmp_path / f"{run}.log").read_text()
        assert log.count(f"Applied {policy} activation checkpointing") == len(config.split), (run, log[-4000:])


def _trainer_row(tmp_path: Path, titan_data: Path, paths: dict[str, Path], *, ranks: int, reference: str,
                 fqns: bool | None, via_train_sh: bool, label: str) -> None:
    """torchtitan's trainer runs the written plan, then the same settings with its built-in ``reference`` schedule
    in place of the CSV: the losses must be equal step for step; the row joins the printed table. ``fqns``: whether
    the split must be written as ``module_fqns_per_model_part`` (None: either)."""
    assert {"csv", "torchtitan", "train"} <= set(paths), paths
    overrides = [w for line in paths["torchtitan"].read_text().splitlines() for w in shlex.split(line)]
    assert fqns is None or ("--parallelism.module_fqns_per_model_part" in overrides) == fqns, overrides
    # the same trainer with torchtitan's built-in schedule of the same layout: the CSV setting dropped
    builtin = [f"--parallelism.pipeline_parallel_schedule={reference}"
               if w.startswith("--parallelism.pipeline_parallel_schedule=") else w
               for w in overrides if not w.startswith("--parallelism.pipeline_parallel_schedule_csv=")]
    assert len(builtin) == len(overrides) - 1
    extra = ["--hf_assets_path", str(titan_data / "tokenizer"), "--dataloader.dataset_path", str(titan_data / "text"),
             f"--training.seq_len={SEQ_LEN}", f"--training.steps={TRAIN_STEPS}", "--debug.seed=0",
             "--dump_folder", str(tmp_path / "outputs")]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
                "-m", "torchtitan.train", "--module", "llama3", "--config", "llama3_debugmodel", *extra]
    env = _trainer_env(tmp_path / "plan_record")
    if via_train_sh:  # MODULE and CONFIG default to the debug model the files were written for
        wall = _run(["bash", str(paths["train"]), *extra], tmp_path / "plan.log", env=env, cwd=tmp_path)
    else:
        wall = _run([*torchrun, *overrides], tmp_path / "plan.log", env=env, cwd=tmp_path)
    ref_wall = _run([*torchrun, *builtin], tmp_path / "builtin.log", env=_trainer_env(tmp_path / "builtin_record"),
                    cwd=tmp_path)
    plan_classes, plan_losses = _losses(tmp_path / "plan_record", ranks)
    ref_classes, ref_losses = _losses(tmp_path / "builtin_record", ranks)
    assert plan_classes == {"_PipelineScheduleRuntime"}, plan_classes  # torchtitan loaded the CSV on every rank
    assert len(ref_classes) == 1 and ref_classes != plan_classes, ref_classes
    assert all(math.isfinite(x) and x > 0 for x in plan_losses), plan_losses
    worst = max(abs(a - b) for a, b in zip(plan_losses, ref_losses))
    # float32; the plan and the built-in schedule run the same kernels on the same micro-batches, and each
    # stage accumulates its micro-batches' gradients in the same order: exactly equal losses are expected
    assert plan_losses == ref_losses, (plan_losses, ref_losses)
    row = (f"{label:<44} {ranks:>5}  {TRAIN_STEPS:>5}  {worst:>22.3g}  {wall:6.1f} s  {ref_wall:6.1f} s  "
           f"{next(iter(ref_classes))}")
    _TABLE.append(row)
    print(f"\n[torchtitan trainer] {row}")


def test_train_sh_refuses_a_model_the_plan_does_not_split_saying_how_to_plan_for_it(tmp_path: Path) -> None:
    """8 entries planned without naming a model, launched as Llama 3 8B: train.sh stops before torchrun."""
    pipeline = schedsearch.Pipeline(num_ranks=8, num_microbatches=8, families=["1f1b"],
                                    stages=[{"name": f"block{i}", "forward_ms": 1.0, "backward_ms": 2.0}
                                            for i in range(8)])
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    paths = result.write(tmp_path / "plan")
    env = dict(os.environ, MODULE="llama3", CONFIG="llama3_8b",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run(["bash", str(paths["train"])], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines()[-1] == (
        "train.sh: llama3 llama3_8b has 32 transformer layers, this plan's stages hold 8 (the 8 entries of the "
        "pipeline description, 1 each): describe the 32 layers, or plan with layers_per_entry = 4 "
        "(--layers-per-entry 4); or run a config of 8 layers")
    # planned for that model, the settings are those torchtitan's own code turns into the 8 planned stages
    # (write checks it where torchtitan is installed) and train.sh launches it by default
    paths = result.write(tmp_path / "plan8b", torchtitan_config="llama3_8b", layers_per_entry=4)
    assert "--parallelism.pipeline_parallel_layers_per_stage=4" in paths["torchtitan"].read_text()
    assert "CONFIG=${CONFIG:-llama3_8b}" in paths["train"].read_text()


def test_the_8_stage_llama3_8b_description_planned_as_written_is_what_torchtitan_builds(tmp_path: Path) -> None:
    """models/llama3_8b_stages.toml (8 entries of 4 blocks, the embedding and the head in the end entries) is
    planned in layers; torchtitan's own code accepts the settings for llama3_8b, its metadata check (stages per rank
    for the schedule class) passes, it builds the plan's stages and places them on the ranks as the plan does."""
    from types import SimpleNamespace

    from torchtitan.config import ConfigManager
    from torchtitan.distributed import pipeline_parallel as tt_pp

    root = Path(__file__).resolve().parents[2]
    result = schedsearch.plan(schedsearch.Pipeline.load(root / "models" / "llama3_8b_stages.toml"), time_limit_s=60,
                              parallel=1, deterministic=True)
    config = result.best.configuration
    assert config.num_stages > 8  # a shape the description as 8 stages could not be planned in
    paths = result.write(tmp_path, torchtitan_config="llama3_8b")  # refused if torchtitan built other stages
    words = [w for line in paths["torchtitan"].read_text().splitlines() for w in shlex.split(line)]
    parsed = ConfigManager().parse_args(["--module", "llama3", "--config", "llama3_8b", *words])
    par = parsed.parallelism
    P = par.pipeline_parallel_degree
    num_stages, _, first, last = tt_pp._get_pipeline_metadata(SimpleNamespace(pp=P), par, parsed.model_spec.model)
    stages = par.module_fqns_per_model_part or tt_pp._generate_llm_fqn_per_model_part(
        num_stages, NUM_LAYERS_8B, first, last)
    assert [list(s) for s in stages] == [list(n) for n in config.module_names(result.model)]
    for rank in range(P):
        assert tt_pp._get_pp_rank_to_stage_indices_mapping(rank, P, par.pipeline_parallel_schedule, len(stages)) == \
            config.stage_of_rank()[rank]
    assert parsed.training.local_batch_size == config.num_microbatches * par.pipeline_parallel_microbatch_size


NUM_LAYERS_8B = 32
