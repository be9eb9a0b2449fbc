"""Workloads: a real ``torch.nn`` model split into pipeline stages, with a batch and a loss.

A :class:`Workload` is what the runtime executes: one ``nn.Module`` per
pipeline stage (stage ``s`` feeds stage ``s+1`` one tensor), the whole
batch (``inputs``, ``target``; batch dimension 0) and a loss function that
*averages over the samples* of what it is given (``reduction="mean"``).
Build one from your own modules, or from a model spec:

* ``mlp:LxW``: ``L`` layers ``Linear(W, W)`` + ``tanh``; input and target
  of shape ``(batch, W)``; mean squared error.
* ``transformer:LxD``: a small decoder-only transformer: token and position
  embeddings (vocabulary 64, sequence length 8), ``L`` pre-norm blocks of
  width ``D`` (causal self-attention with ``D/8`` heads, at least 1, and a
  ``4D`` MLP), a final layer norm and a linear head; cross-entropy over
  next tokens. The embeddings sit in the first stage, the head in the last.

Layers are split into stages as evenly as possible; when they do not divide
evenly, the first ``L mod S`` stages get one more layer (the split is
recorded in :attr:`Workload.layers_per_stage`, never changed silently).
Parameters are drawn from a generator seeded with ``seed``, so two builds
with the same arguments are equal.

:func:`parse_model_spec` (of :mod:`schedsearch.plan.model_spec`, where a
pipeline description's ``model_spec`` is checked) needs no torch; the
builders import it lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.plan.model_spec import MODEL_KINDS as MODEL_KINDS, ModelSpec as ModelSpec, parse_model_spec
from schedsearch.runtime._torch import require_torch

__all__ = ["ModelSpec", "Workload", "parse_model_spec", "build_workload", "split_layers", "MODEL_KINDS"]

#: transformer constants
VOCAB = 64
SEQ_LEN = 8


def split_layers(num_layers: int, num_stages: int, what: str = "model") -> tuple[int, ...]:
    """Layers per stage: as even as possible, the first stages take the remainder.

    >>> split_layers(10, 4)
    (3, 3, 2, 2)
    """
    if num_stages < 1:
        raise InvalidProblemError(f"{what}: 'num_stages' must be >= 1, got {num_stages}")
    if num_layers < num_stages:
        raise InvalidProblemError(
            f"{what}: {num_layers} layers cannot fill {num_stages} stages (each stage needs at least one layer)"
        )
    base, extra = divmod(num_layers, num_stages)
    return tuple(base + (1 if s < extra else 0) for s in range(num_stages))


@attrs.define(kw_only=True)
class Workload:
    """A model split into stages, a batch and a mean-reducing loss.

    Parameters
    ----------
    stages:
        One module per pipeline stage; stage ``s``'s output is stage
        ``s+1``'s only input.
    inputs, target:
        The whole batch (batch dimension 0).
    loss_fn:
        ``loss_fn(output, target) -> scalar``, averaging over samples.
    name:
        A label (the model spec for built-in models).
    layers_per_stage:
        How many layers each stage holds (built-in models).
    """

    stages: tuple[Any, ...] = attrs.field(converter=tuple)
    inputs: Any
    target: Any
    loss_fn: Callable[[Any, Any], Any]
    name: str = ""
    layers_per_stage: tuple[int, ...] | None = None

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def batch_size(self) -> int:
        return int(self.inputs.shape[0])

    def sequential(self) -> Any:
        """The stages chained into one ``nn.Sequential`` (sharing parameters)."""
        torch = require_torch()
        return torch.nn.Sequential(*self.stages)

    def __str__(self) -> str:
        split = f", layers per stage {list(self.layers_per_stage)}" if self.layers_per_stage else ""
        return f"workload {self.name or '(custom)'}: {self.num_stages} stages, batch {self.batch_size}{split}"


def _dtype(torch: Any, dtype: str) -> Any:
    table = {"float64": torch.float64, "float32": torch.float32}
    if dtype not in table:
        raise InvalidProblemError(f"workload: 'dtype' must be one of {sorted(table)}, got {dtype!r}")
    return table[dtype]


def build_workload(
    spec: str | ModelSpec,
    num_stages: int,
    *,
    batch_size: int,
    dtype: str = "float64",
    seed: int = 0,
) -> Workload:
    """Build a built-in model (see the module docstring) split into ``num_stages``."""
    torch = require_torch("building a model")
    ms = parse_model_spec(spec) if isinstance(spec, str) else spec
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidProblemError(f"workload {ms}: 'batch_size' must be an integer >= 1, got {batch_size!r}")
    split = split_layers(ms.layers, num_stages, f"model {str(ms)!r}")
    dt = _dtype(torch, dtype)
    if ms.kind == "mlp":
        return _build_mlp(torch, ms, split, batch_size, dt, seed)
    return _build_transformer(torch, ms, split, batch_size, dt, seed)


def _seeded(torch: Any, seed: int) -> Any:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def _build_mlp(torch: Any, ms: ModelSpec, split: Sequence[int], batch: int, dt: Any, seed: int) -> Workload:
    nn = torch.nn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = [nn.Sequential(nn.Linear(ms.width, ms.width), nn.Tanh()) for _ in range(ms.layers)]
    stages = []
    k = 0
    for n in split:
        stages.append(nn.Sequential(*layers[k : k + n]).to(dt))
        k += n
    g = _seeded(torch, seed + 1)
    inputs = torch.randn(batch, ms.width, generator=g, dtype=dt)
    target = torch.randn(batch, ms.width, generator=g, dtype=dt)
    return Workload(
        stages=stages, inputs=inputs, target=target, loss_fn=nn.MSELoss(), name=str(ms), layers_per_stage=tuple(split)
    )


def _transformer_classes(torch: Any) -> dict[str, type]:
    """Module classes of the built-in transformer (defined once, at module level
    of :mod:`schedsearch.runtime._transformer`, so they pickle)."""
    from schedsearch.runtime import _transformer

    return _transformer.classes()


def _build_transformer(torch: Any, ms: ModelSpec, split: Sequence[int], batch: int, dt: Any, seed: int) -> Workload:
    nn = torch.nn
    cls = _transformer_classes(torch)
    heads = max(1, ms.width // 8)
    if ms.width % heads:
        heads = 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        embed = cls["Embedding"](VOCAB, SEQ_LEN, ms.width)
        blocks = [cls["Block"](ms.width, heads) for _ in range(ms.layers)]
        head = cls["Head"](ms.width, VOCAB)
    stages = []
    k = 0
    for s, n in enumerate(split):
        parts = ([embed] if s == 0 else []) + blocks[k : k + n] + ([head] if s == len(split) - 1 else [])
        stages.append(nn.Sequential(*parts).to(dt))
        k += n
    g = _seeded(torch, seed + 1)
    tokens = torch.randint(0, VOCAB, (batch, SEQ_LEN + 1), generator=g)
    return Workload(
        stages=stages,
        inputs=tokens[:, :-1].contiguous(),
        target=tokens[:, 1:].contiguous(),
        loss_fn=cls["TokenCrossEntropy"](),
        name=str(ms),
        layers_per_stage=tuple(split),
    )
