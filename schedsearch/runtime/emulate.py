"""Emulated compute: run a plan's order and transfers on the real runtime with planned compute times.

With ``emulate=True`` (:func:`schedsearch.runtime.run`) or ``schedsearch run
--emulate``, every forward, backward, input- and weight-gradient call of a
stage does a small real computation and then *sleeps* until it has lasted
the action's planned duration (the plan's time units times the problem's
``time_unit_s``), so a process uses no core while it "computes". PyTorch's
runtime still orders the actions, posts the sends and receives it adds and
moves real tensors between the ranks. What a run then measures is the
schedule as the runtime executes it (blocking receives, where the sends and
receives sit, the runtime's own cost per action), at 4 to 16 ranks on a
machine with a few cores.

:func:`emulated_workload` builds the stages: stage ``s`` averages its input
over the feature dimension, multiplies by one parameter and sends a tensor
of ``width_s`` features per sample, where ``width_s`` elements of the
dtype are the stage's activation bytes: what the problem records of them,
its forward block's memory (times ``memory_unit_bytes``; a problem's edges
carry transfer sizes in their channel's units, not bytes), or the sizes given, at most
``max_bytes`` (big activations are capped: a loopback transfer of a GiB
takes far longer than the link the plan assumes, and the ranks share one
machine's memory).
A micro-batch is one sample. The gradient check against the one-process
reference still runs. The stage class is built when torch is imported, so
an emulated run starts its processes with ``fork``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from schedsearch.errors import PlanError
from schedsearch.handcrafted.actions import pipeline_view
from schedsearch.problem import Problem
from schedsearch.runtime._torch import require_torch
from schedsearch.runtime.models import Workload

__all__ = ["DEFAULT_MAX_BYTES", "EmulatedSizes", "emulated_workload", "activation_bytes"]

#: Largest emulated activation per micro-batch (bytes) unless asked otherwise.
DEFAULT_MAX_BYTES = 1 << 20

_ITEMSIZE = {"float64": 8, "float32": 4}


@attrs.frozen(kw_only=True)
class EmulatedSizes:
    """Per stage: the planned bytes of the activation it sends, and the bytes the emulation sends."""

    planned_bytes: tuple[int | None, ...]
    sent_bytes: tuple[int, ...]

    @property
    def capped(self) -> tuple[int, ...]:
        """Stages whose planned activation was larger than what the emulation sends."""
        return tuple(s for s, (p, b) in enumerate(zip(self.planned_bytes, self.sent_bytes)) if p is not None and p > b)


def activation_bytes(problem: Problem) -> tuple[int | None, ...]:
    """Per stage, the bytes of its activation: its forward block's memory times ``memory_unit_bytes``.

    None for the last stage (it sends nothing) and where the problem has no
    memory unit or the forward holds no memory.
    """
    view = pipeline_view(problem)
    stages = view.stages()
    blocks = problem.graph.by_name()
    unit = problem.memory_unit_bytes
    out: list[int | None] = []
    for s, st in enumerate(stages):
        held = blocks[st.forward].memory
        if s + 1 == len(stages) or unit is None or not held:
            out.append(None)
        else:
            out.append(int(round(held * unit)))
    return tuple(out)


def _relay_class(torch: Any) -> type:
    nn = torch.nn

    class Relay(nn.Module):
        """Mean over features, times one parameter, widened to ``width`` features."""

        def __init__(self, width: int, dtype: Any) -> None:
            super().__init__()
            self.width = width
            self.scale = nn.Parameter(torch.ones(1, dtype=dtype))

        def forward(self, x: Any) -> Any:
            return (x.mean(dim=1, keepdim=True) * self.scale).repeat(1, self.width)

    return Relay


def emulated_workload(problem: Problem, *, max_bytes: int = DEFAULT_MAX_BYTES, dtype: str = "float64",
                      sizes: Sequence[int | None] | None = None) -> tuple[Workload, EmulatedSizes]:
    """The stages an emulated run executes (see the module docstring) and the sizes they send.

    ``sizes``: bytes each stage sends per micro-batch (default
    :func:`activation_bytes`); None entries send one element.

    Raises
    ------
    PlanError
        When ``max_bytes`` or ``dtype`` is not valid.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise PlanError(f"emulation: 'max_bytes' must be an integer >= 1, got {max_bytes!r}")
    if dtype not in _ITEMSIZE:
        raise PlanError(f"emulation: 'dtype' must be one of {sorted(_ITEMSIZE)}, got {dtype!r}")
    torch = require_torch("emulated compute")
    dt = {"float64": torch.float64, "float32": torch.float32}[dtype]
    item = _ITEMSIZE[dtype]
    planned = activation_bytes(problem) if sizes is None else tuple(sizes)
    if len(planned) != len(pipeline_view(problem).stages()):
        raise PlanError(f"emulation: 'sizes' gives {len(planned)} sizes for {len(pipeline_view(problem).stages())} "
                        "stages")
    sent = tuple(item * max(1, min(b if b is not None else item, max_bytes) // item) for b in planned)
    relay = _relay_class(torch)
    stages = [relay(n // item, dt) for n in sent]
    m = problem.num_microbatches
    g = torch.Generator()
    g.manual_seed(0)
    inputs = torch.randn(m, 1, generator=g, dtype=dt)
    target = torch.randn(m, sent[-1] // item, generator=g, dtype=dt)
    workload = Workload(stages=stages, inputs=inputs, target=target, loss_fn=torch.nn.MSELoss(),
                        name=f"emulated {problem.name or 'plan'}")
    return workload, EmulatedSizes(planned_bytes=planned, sent_bytes=sent)
