"""Lazy access to PyTorch: the runtime's only door to ``torch``.

``schedsearch`` installs without torch; the runtime needs the optional extra
``schedsearch[torch]`` (torch 2.13 to 2.15, the CPU build suffices). Every
function that needs torch calls :func:`require_torch` first, so importing
:mod:`schedsearch.runtime` never imports torch.

The runtime drives PyTorch's pipeline runtime through internals that are
not public API; this module is the only place that names them:
:func:`pipelining_internals` (``_PipelineScheduleRuntime``,
``_validate_schedule``, ``_add_send_recv``, ``_Action``, ``_ComputationType``, the stage-backward
helpers) checks that they are there and names the supported versions when
they are not; :func:`load_compute_csv` (``_load_csv``, no public loader in
any supported version), :func:`step_microbatches` (the public
``step(arg_mbs=..., target_mbs=...)`` where torch has it, 2.14 on;
``_step_microbatches`` on 2.13) and :func:`infer_stage_shapes`
(``_initialize_stages``) wrap the calls.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

from schedsearch.errors import MissingDependencyError

__all__ = ["SUPPORTED_TORCH", "TESTED_TORCH_VERSION", "infer_stage_shapes", "load_compute_csv", "pipelining_internals",
           "require_torch", "step_microbatches", "torch_available"]

#: The torch version the runtime is built and tested against.
TESTED_TORCH_VERSION = "2.13.0"
#: The torch releases the extra allows (``torch>=2.13,<2.16``).
SUPPORTED_TORCH = ("2.13", "2.14", "2.15")

_EXTRA_HINT = (
    "install the optional extra: pip install 'schedsearch[torch]' (torch 2.13 to 2.15; "
    "the CPU build is enough)"
)


def torch_available() -> bool:
    """True when ``import torch`` works (without raising)."""
    try:
        require_torch()
    except MissingDependencyError:
        return False
    return True


def require_torch(feature: str = "the PyTorch runtime") -> ModuleType:
    """Import and return ``torch``, or raise :class:`MissingDependencyError`
    naming the extra ``schedsearch[torch]``."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise MissingDependencyError(f"{feature} needs PyTorch, which is not installed ({exc}); {_EXTRA_HINT}") from None


def pipelining_internals() -> SimpleNamespace:
    """The pieces of ``torch.distributed.pipelining`` the runtime uses."""
    torch = require_torch()
    try:
        from torch.distributed.pipelining import PipelineStage
        from torch.distributed.pipelining._backward import stage_backward, stage_backward_input, stage_backward_weight
        from torch.distributed.pipelining.schedules import (
            _Action,
            _ComputationType,
            _add_reduce_grad,
            _add_send_recv,
            _add_unshard_reshard,
            _PipelineScheduleRuntime,
            _validate_schedule,
        )
    except ImportError as exc:  # pragma: no cover - depends on the installed torch
        raise MissingDependencyError(
            f"torch {torch.__version__} lacks a pipelining internal the runtime uses ({exc}); the runtime supports "
            f"torch {', '.join(SUPPORTED_TORCH)}: {_EXTRA_HINT}"
        ) from None
    return SimpleNamespace(
        torch=torch,
        PipelineStage=PipelineStage,
        Action=_Action,
        ComputationType=_ComputationType,
        add_reduce_grad=_add_reduce_grad,
        add_send_recv=_add_send_recv,
        add_unshard_reshard=_add_unshard_reshard,
        ScheduleRuntime=_PipelineScheduleRuntime,
        validate_schedule=_validate_schedule,
        stage_backward=stage_backward,
        stage_backward_input=stage_backward_input,
        stage_backward_weight=stage_backward_weight,
    )


def load_compute_csv(schedule: Any, path: str) -> None:
    """Load a compute-only CSV into a ``_PipelineScheduleRuntime`` (torch's private ``_load_csv``; no public loader)."""
    schedule._load_csv(str(path), format="compute_only")


def _public_pre_split_step(schedule: Any) -> bool:
    """True when ``schedule.step`` takes pre-split micro-batches (``arg_mbs``, ``target_mbs``: torch 2.14 on)."""
    try:
        params = inspect.signature(schedule.step).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return False
    return "arg_mbs" in params and "target_mbs" in params


def step_microbatches(schedule: Any, stages: Sequence[Any], arg_mbs: list, target_mbs: list, losses: list) -> None:
    """One step of ``schedule`` on micro-batches split by the caller (sizes may differ).

    torch 2.14 on: the public ``step(arg_mbs=..., kwarg_mbs=..., target_mbs=...)``.
    torch 2.13 has no public form: it resets the stages as its ``step`` does
    and calls ``_step_microbatches``.
    """
    kwarg_mbs = [{} for _ in arg_mbs]
    if _public_pre_split_step(schedule):
        schedule.step(arg_mbs=list(arg_mbs), kwarg_mbs=kwarg_mbs, target_mbs=list(target_mbs), losses=losses,
                      return_outputs=False)
        return
    for st in stages:
        st.has_backward = schedule._has_backward
        st.clear_runtime_states()
    schedule._step_microbatches(list(arg_mbs), kwarg_mbs, list(target_mbs), losses, return_outputs=False)


def infer_stage_shapes(schedule: Any, stages: Sequence[Any], args: tuple, target: Any) -> None:
    """Run torch's shape inference of the stages on one micro-batch now (private ``_initialize_stages``)."""
    for st in stages:
        st.has_backward = schedule._has_backward
    schedule._initialize_stages(args, {}, target)
