"""torchtitan runs the plans ``plan`` writes, as written, with equal gradients (``make test-integration``).

Needs torchtitan 0.3.0 with torch 2.13.0 and triton (``make test-integration``
installs them in a separate environment); skipped without torchtitan unless
``SCHEDSEARCH_REQUIRE_TORCHTITAN=1``, when its absence fails the run.

For a loop plan (1F1B, 2 ranks), an interleaved plan (interleaved zero
bubble, 2 ranks) and V plans (ZB-V, 3 ranks; 2 ranks with stages of
uneven layer counts, written as ``module_fqns_per_model_part``), ``plan`` writes
``schedule.csv`` and ``torchtitan.args`` for a description of torchtitan's
``llama3`` debug model (6 transformer layers). ``titan_worker.py`` runs under
``torchrun`` on gloo/CPU: torchtitan's ``ConfigManager`` parses the args,
torchtitan's ``pipeline_llm`` builds the stages and the schedule (loading the
CSV), one step runs, and the same step runs with torchtitan's built-in
schedule of the same family on the same placement, weights and batch. The
gradients of every parameter must match. On CPU, torchtitan's compiled
attention kernel is swapped for torch's causal attention and its mesh device
set to ``cpu`` (see the worker); nothing else is changed.
"""

from __future__ import annotations

import itertools
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
from schedsearch.plan.torchtitan import TORCH_VERSION, TORCHTITAN_VERSION, torchtitan_split  # noqa: E402

WORKER = Path(__file__).with_name("titan_worker.py")
RUN_TIMEOUT_S = 600  # one torchrun of both steps; a hang fails here with the log
NUM_LAYERS = 6  # torchtitan's llama3 debug model


def test_versions() -> None:
    import torchtitan

    assert torch.__version__.split("+")[0] == TORCH_VERSION
    assert torchtitan.__version__ == TORCHTITAN_VERSION


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


def _run(cmd: list[str], log: Path, timeout_s: float) -> None:
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"torchrun did not finish in {timeout_s:g} s (a hang?): {shlex.join(cmd)}\n"
                        + log.read_text()[-4000:])
    if rc != 0:
        pytest.fail(f"torchrun failed (exit {rc}): {shlex.join(cmd)}\n" + log.read_text()[-6000:])


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
    t0 = time.perf_counter()
    _run(cmd, tmp_path / "torchrun.log", RUN_TIMEOUT_S)
    wall = time.perf_counter() - t0
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
