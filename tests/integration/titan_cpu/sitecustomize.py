"""torchtitan's trainer on CPU: what it does only on CUDA, replaced; loaded by every Python process of a test run.

The integration test puts this folder first on ``PYTHONPATH`` of the
processes it starts (``torchrun``, ``train.sh``), so Python imports it at
start-up, before torchtitan; it acts in the ranks ``torchrun`` starts (with
``SCHEDSEARCH_TITAN_CPU=1``), not in the launcher. Each replacement names the CUDA-only call and
why; nothing else of torchtitan changes. With ``SCHEDSEARCH_TITAN_RECORD``
set to a folder, each rank also records there (``rank{r}.jsonl``) the
schedule class its trainer built, whether it holds the last stage, and the
loss the trainer logs at each step: an observation, not a change.
"""

from __future__ import annotations

import json
import os


def _apply() -> None:
    import torch
    import torch._utils

    # 1. Device selection. torchtitan picks ``_get_available_device_type() or "cuda"`` when it is imported
    #    (torchtitan/tools/utils.py): with no accelerator it takes CUDA, and the trainer's first call is
    #    ``torch.cuda.set_device`` (``torch._C._cuda_setDevice``), which fails without a GPU. Saying "cpu" makes
    #    it use the CPU device module, CPU meshes and gloo (its backend for "cpu").
    torch._utils._get_available_device_type = lambda: "cpu"

    from torch.nn.attention.flex_attention import create_mask
    from torchtitan.components import metrics
    from torchtitan.distributed import utils as dist_utils
    from torchtitan.models.common.attention import FlexAttention

    # 2. Attention. The debug model's FlexAttention runs a compiled (triton) kernel, and flex_attention has no
    #    CPU backward ("FlexAttention does not support backward on CPU"). The same attention, with the same
    #    mask (causal within each packed document, built by the model from the batch's positions), computed by
    #    torch's scaled_dot_product_attention from the mask materialised out of the BlockMask's mask_mod.
    def cpu_attention(q, k, v, *, score_mod, block_mask, scale, enable_gqa, return_aux, kernel_options):
        if score_mod is not None or return_aux.lse:
            raise NotImplementedError("the CPU attention of the integration test takes a mask only")
        batch, heads = block_mask.kv_num_blocks.shape[:2]
        q_len, kv_len = block_mask.seq_lengths
        mask = create_mask(block_mask.mask_mod, batch, heads, q_len, kv_len, device=q.device)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                                               enable_gqa=enable_gqa)
        return out, None

    FlexAttention.compiled_flex_attn = staticmethod(cpu_attention)

    # 3. Memory statistics. The trainer's metrics read the device's memory (``torch.cuda.memory_stats``,
    #    ``get_device_properties``, ``reset_peak_memory_stats``, ``empty_cache``), which the CPU device module
    #    does not have: a monitor reporting no memory stands in (the logged "memory" column reads 0).
    class CpuMemoryMonitor:
        def __init__(self, device: str = "cpu") -> None:
            self.device = torch.device("cpu")
            self.device_name = "cpu"
            self.device_capacity_gib = 0.0

        def get_peak_stats(self):
            return metrics.DeviceMemStats(0.0, 0.0, 0.0, 0.0, 0, 0)

        def reset_peak_stats(self) -> None:
            pass

    metrics.DeviceMemoryMonitor = CpuMemoryMonitor
    metrics.build_device_memory_monitor = CpuMemoryMonitor

    # 4. The barrier before the process groups' timeouts change (``set_pg_timeouts``) passes
    #    ``device_ids=[torch.cuda.current_device()]``, an index only CUDA has (the CPU module answers "cpu",
    #    which the barrier refuses): index 0, which gloo ignores.
    class CpuDeviceIndex:
        @staticmethod
        def current_device() -> int:
            return 0

        synchronize = staticmethod(torch.cpu.synchronize)

    dist_utils.device_module = CpuDeviceIndex

    # CUDA graphs: torchtitan refuses a pipeline without --training.disable_cuda_graphs, which torchtitan.args
    # sets, so the trainer makes no CUDA graph call; nothing to replace.

    folder = os.environ.get("SCHEDSEARCH_TITAN_RECORD")
    if folder:
        _record(folder, metrics)


def _record(folder: str, metrics) -> None:
    from torchtitan.trainer import Trainer

    path = os.path.join(folder, f"rank{os.environ.get('RANK', '0')}.jsonl")

    def write(row: dict) -> None:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")

    train = Trainer.train

    def recorded_train(self):
        write({"schedule": type(self.pp_schedule).__name__, "last_stage": bool(self.pp_has_last_stage)})
        return train(self)

    Trainer.train = recorded_train
    log = metrics.MetricsProcessor.log

    def recorded_log(self, step, global_avg_loss, global_max_loss, *args, **kwargs):
        write({"step": int(step), "loss": float(global_avg_loss)})
        return log(self, step, global_avg_loss, global_max_loss, *args, **kwargs)

    metrics.MetricsProcessor.log = recorded_log


if os.environ.get("SCHEDSEARCH_TITAN_CPU") == "1" and "LOCAL_RANK" in os.environ:  # torchrun's workers only
    _apply()
