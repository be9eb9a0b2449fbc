"""One rank of a torchtitan pipeline step, run by ``torchrun`` in the integration test's environment.

Reads the overrides a plan wrote (``torchtitan.args``) with torchtitan's own
``ConfigManager``, builds the stages with torchtitan's own ``pipeline_llm``
on its ``llama3`` debug model over gloo on CPU, and runs one training step
twice from the same weights and batch: with the plan's CSV (as torchtitan
loads it) and with torchtitan's built-in schedule ``--reference`` of the same
family and placement. Writes this rank's gradients of both runs to
``--out/rank{r}.pt``.

What torchtitan cannot do on CPU, and only that, is replaced:

* its attention kernel (``FlexAttention``, compiled, no CPU backward) by
  torch's causal ``scaled_dot_product_attention``, the same mathematics;
* the device of its meshes (it falls back to ``cuda`` when no accelerator is
  found) by ``cpu``.

This script drives the schedule that ``pipeline_llm`` returns with
``step(tokens, target=labels)`` itself, so that it can read every gradient
after one step; torchtitan's trainer itself runs the plans in the trainer
test (``titan_cpu/sitecustomize.py`` holds its CPU replacements).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex

import torch
import torch.distributed as dist


def _cpu_attention(self, q_BLNH, k_BLNH, v_BLNH, *, attention_masks=None, score_mod=None, scale=None,
                   enable_gqa=False, out_transform=None, **kwargs):
    if score_mod is not None or out_transform is not None:
        raise NotImplementedError("the CPU attention of this test supports plain causal attention only")
    q, k, v = (t.transpose(1, 2) for t in (q_BLNH, k_BLNH, v_BLNH))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale,
                                                           enable_gqa=enable_gqa)
    return out.transpose(1, 2)


def _patch_for_cpu() -> None:
    import torchtitan.distributed.parallel_dims as parallel_dims
    from torchtitan.models.common.attention import FlexAttention

    FlexAttention.forward = _cpu_attention
    parallel_dims.device_type = "cpu"


def _plain(grad: torch.Tensor) -> torch.Tensor:
    """A gradient as a plain tensor (torchtitan's parameters may be DTensors on a one-rank mesh)."""
    if hasattr(grad, "full_tensor"):
        grad = grad.full_tensor()
    return grad.detach().clone()


def _one_step(model, config, parallelism, parallel_dims, tokens, labels):
    """One step of the schedule ``pipeline_llm`` builds for ``parallelism``: this rank's gradients and losses."""
    from torchtitan.components.loss import ChunkedLossWrapper
    from torchtitan.distributed.pipeline_parallel import pipeline_llm

    spec = config.model_spec
    loss_fn = config.loss.build(compile_config=config.compile)
    schedule, parts, has_first, has_last = pipeline_llm(
        model, parallel_dims=parallel_dims, training=config.training, parallelism=parallelism,
        compile_config=config.compile, ac_config=config.activation_checkpoint, dump_folder=config.dump_folder,
        device=torch.device("cpu"), model_config=spec.model, parallelize_fn=spec.parallelize_fn, loss_fn=loss_fn)
    if isinstance(loss_fn, ChunkedLossWrapper) and has_last:  # as torchtitan's trainer wires its chunked loss
        loss_fn.set_lm_head(parts[-1].lm_head)
        parts[-1]._skip_lm_head = True
    losses: list[torch.Tensor] = []
    args = (tokens,) if has_first else ()
    schedule.step(*args, target=labels if has_last else None, losses=losses)
    grads = {name: _plain(p.grad) for part in parts for name, p in part.named_parameters() if p.grad is not None}
    return grads, [float(x) for x in losses], type(schedule).__name__


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--args-file", required=True)
    ap.add_argument("--reference", required=True, help="torchtitan's built-in schedule of the same family")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq-len", type=int, default=32)
    opts = ap.parse_args()

    _patch_for_cpu()
    from torchtitan.config import ConfigManager
    from torchtitan.distributed import ParallelDims

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    with open(opts.args_file) as f:
        overrides = [w for line in f for w in shlex.split(line)]
    # the plan's overrides go last: a subcommand among them (activation_checkpoint:none) ends the options
    config = ConfigManager().parse_args(["--module", "llama3", "--config", "llama3_debugmodel",
                                         f"--training.seq_len={opts.seq_len}", *overrides])
    parallel_dims = ParallelDims.from_config(config.parallelism, world)
    parallel_dims.build_mesh()
    spec = config.model_spec
    spec.model.update_from_config(config=config)
    torch.manual_seed(0)  # every rank builds the same whole model; pipeline_llm copies each stage out of it
    model = spec.model.build()
    with torch.no_grad():
        model.init_weights(buffer_device=None)
    model.train()
    vocab = spec.model.vocab_size
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (config.training.local_batch_size, opts.seq_len), generator=g)
    labels = torch.randint(0, vocab, (config.training.local_batch_size, opts.seq_len), generator=g)

    plan = _one_step(model, config, config.parallelism, parallel_dims, tokens, labels)
    reference = dataclasses.replace(config.parallelism, pipeline_parallel_schedule=opts.reference,
                                    pipeline_parallel_schedule_csv="")
    ref = _one_step(model, config, reference, parallel_dims, tokens, labels)
    torch.save({"plan": plan, "reference": ref, "overrides": overrides}, os.path.join(opts.out, f"rank{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
