"""Lazy access to PyTorch: the runtime's only door to ``torch``.

``schedsearch`` installs without torch; the runtime needs the optional extra
``schedsearch[torch]`` (``torch==2.13.0``, the CPU build suffices). Every
function that needs torch calls :func:`require_torch` first, so importing
:mod:`schedsearch.runtime` never imports torch.

The runtime drives PyTorch's pipeline runtime through internals that are
not public API (``_PipelineScheduleRuntime``, ``_validate_schedule``,
``_add_send_recv``, ``_Action``); :func:`pipelining_internals` checks that
they are there and names the tested version when they are not.
"""

from __future__ import annotations

import importlib
from types import ModuleType, SimpleNamespace

from schedsearch.errors import MissingDependencyError

__all__ = ["TESTED_TORCH_VERSION", "require_torch", "pipelining_internals", "torch_available"]

#: The torch version the runtime is built and tested against.
TESTED_TORCH_VERSION = "2.13.0"

_EXTRA_HINT = (
    f"install the optional extra: pip install 'schedsearch[torch]' (torch=={TESTED_TORCH_VERSION}; "
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
            _add_reduce_grad,
            _add_send_recv,
            _add_unshard_reshard,
            _PipelineScheduleRuntime,
            _validate_schedule,
        )
    except ImportError as exc:  # pragma: no cover - depends on the installed torch
        raise MissingDependencyError(
            f"torch {torch.__version__} lacks a pipelining internal the runtime uses ({exc}); the runtime is built "
            f"for torch=={TESTED_TORCH_VERSION}: {_EXTRA_HINT}"
        ) from None
    return SimpleNamespace(
        torch=torch,
        PipelineStage=PipelineStage,
        Action=_Action,
        add_reduce_grad=_add_reduce_grad,
        add_send_recv=_add_send_recv,
        add_unshard_reshard=_add_unshard_reshard,
        ScheduleRuntime=_PipelineScheduleRuntime,
        validate_schedule=_validate_schedule,
        stage_backward=stage_backward,
        stage_backward_input=stage_backward_input,
        stage_backward_weight=stage_backward_weight,
    )
