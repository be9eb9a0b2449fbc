"""A model described in layers, and the configurations torchtitan lets one set for it.

:class:`LayerModel` is the model as its engineer knows it: one entry per
layer (or per run of identical layers, ``repeat = 32``), each with its
forward and backward times (optionally the input- and weight-gradient
halves of a split backward) measured at one or more micro-batch sizes, the
activation bytes one micro-batch holds for its backward, the bytes it holds
when the layer is recomputed (its input only), the bytes it sends to the
next layer, and its parameter bytes. The embedding and the head are layers
of their own (``kind = "embedding"`` first, ``kind = "head"`` last); the
transformer blocks between them are ``kind = "layer"``. The model also
gives the global batch per pipeline (per data-parallel replica), the memory
per rank and the pipeline degrees to compare.

:class:`Configuration` is what torchtitan lets one set for such a model:
the contiguous (possibly uneven) split of the layers into stages, the
stages per rank (and their ``"loop"`` or ``"v"`` placement), the
micro-batch size and count, and the activation recomputation
(:class:`Recomputation`). :meth:`LayerModel.pipeline` turns a model and a
configuration into the per-stage :class:`~schedsearch.plan.pipeline.Pipeline`
the planner plans.

Cost model of a micro-batch size
--------------------------------
A layer's figures at a micro-batch size it was measured at are those
measured. Between two measured sizes every figure (each time, each byte
amount) is interpolated linearly between the two nearest measured sizes;
byte amounts are rounded up to whole bytes. A size below the smallest or
above the largest measured size of any layer is refused
(:class:`~schedsearch.errors.InvalidPipelineError`): kernel efficiency
changes with the size, and a line through two measurements says nothing
outside them. A layer measured at one size only has a cost at that size.

Recomputation, as torchtitan runs it
------------------------------------
torchtitan checkpoints transformer blocks only (its ``layers.i`` modules):
never the embedding, the final norm or the output projection. A recomputed
layer holds only its input (``checkpoint_bytes``) from its forward to its
backward, and its backward runs its forward again first: the forward time
is added to its backward (and, where the backward is split, to the input
gradient, the half that runs first). ``activation_checkpoint.mode``:

* ``"none"``: nothing is recomputed;
* ``"full"``: every transformer block;
* ``"selective"`` with ``every = k`` (torchtitan 0.2's
  ``selective_ac_option = "k"``): each rank numbers the transformer blocks
  it holds from 1, in the order it builds them (its stages in ascending
  stage index, each stage's blocks in model order), and checkpoints the
  blocks whose number is a multiple of ``k``; the counter runs on across the
  rank's stages. torchtitan 0.3.0 has dropped this option (it keeps
  ``none``, ``full``, a per-operator ``selective``, mode ``"op"`` here, and
  a compiler ``memory_budget``, whose costs a layer description does not
  give);
* ``"op"`` (torchtitan 0.3.0's ``selective``, per operator): every block
  is checkpointed, but the outputs of its costly operators (attention and
  every other matrix product) are kept; a block then holds
  ``selective_bytes`` and its backward first runs ``selective_recompute_ms``
  of its forward again. A layer description gives both figures (measured
  with that checkpointing on) for this mode to be searched;
* ``"layers"``: an explicit set of recomputed blocks, what a per-stage
  choice (:func:`schedsearch.plan.peers.adapipe`) gives; no single torchtitan
  setting runs it (:attr:`Recomputation.torchtitan_mode` is None).

torchtitan's checkpointing lets a checkpointed region run one backward; a
split backward (input gradient, then weight gradient) runs two and fails, so
a configuration that recomputes anything runs only the families' whole-
backward variants there (:meth:`Configuration.torchtitan_variants`).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from schedsearch._io import read_text, toml_value
from schedsearch._json import short_repr
from schedsearch.errors import InvalidPipelineError
from schedsearch.handcrafted.families import Family, Variant, family, planner_families
from schedsearch.plan.pipeline import P2P, Pipeline, Stage, _sum_ms
from schedsearch.units import format_bytes, parse_bytes, read_ms
from schedsearch.problem import MAX_MICROBATCHES

__all__ = [
    "KINDS",
    "RECOMPUTATION_MODES",
    "MAX_LAYERS",
    "Measurement",
    "Layer",
    "LayerModel",
    "Recomputation",
    "Configuration",
    "stage_ranks",
    "entry_notes",
    "entry_proposals",
]

#: The kinds of layer: the embedding (first, at most one), transformer blocks, the head (last, at most one).
KINDS = ("embedding", "layer", "head")
#: The recomputation modes of a :class:`Recomputation`.
RECOMPUTATION_MODES = ("none", "full", "selective", "op", "layers")
#: Most layers a description may expand to (``repeat`` included), checked before any list of them is built.
MAX_LAYERS = 100_000
#: Most measured micro-batch sizes per layer.
MAX_MEASUREMENTS = 64
#: Largest micro-batch size, and most pipeline degrees a description may list.
MAX_MICROBATCH_SIZE = 2**20
MAX_DEGREES = 64
#: torchtitan 0.3.0's module names of the embedding, the blocks (``layers.<i>``) and the head.
EMBEDDING_MODULES = ("tok_embeddings",)
HEAD_MODULES = ("norm", "lm_head")
#: The name torchtitan before 0.3.0 gives the output projection (``lm_head`` in 0.3.0); read as ``lm_head``.
OLD_OUTPUT_MODULE = "output"


def _integer(where: str, field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidPipelineError(f"{where}: {field!r} must be an integer from {low} to {high:,}, got {short_repr(value)}")
    return value


def _table(where: str, value: Any, cls: type, required: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidPipelineError(f"{where}: must be a table of fields, got {short_repr(value)}")
    known = {f.name for f in attrs.fields(cls)}
    unknown = sorted(set(value) - known, key=repr)
    if unknown:
        raise InvalidPipelineError(f"{where}: unknown field(s) {short_repr(unknown)}; known: {sorted(known)}")
    missing = [f for f in required if f not in value]
    if missing:
        raise InvalidPipelineError(f"{where}: missing field(s) {missing}")
    return dict(value)


def _list(where: str, field: str, value: Any, most: int) -> Sequence[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidPipelineError(f"{where}: {field!r} must be a list, got {short_repr(value)}")
    if not 1 <= len(value) <= most:
        raise InvalidPipelineError(f"{where}: {field!r} must hold 1 to {most:,} entries, got {len(value):,}")
    return value


# ------------------------------------------------------------------ layers
@attrs.frozen(kw_only=True)
class Measurement:
    """A layer's figures at one micro-batch size: times in milliseconds, amounts in bytes.

    ``activation_bytes`` is what one micro-batch holds from the layer's
    forward to its backward; ``checkpoint_bytes`` what it holds when the
    layer is recomputed (its input; None: ``send_bytes``, as a transformer
    block's input and output have one shape); ``send_bytes`` what its forward
    passes to the next layer (None: ``activation_bytes``, an upper bound).
    ``selective_bytes`` and ``selective_recompute_ms`` (both or neither) are
    what it holds and the part of its forward its backward runs again under
    torchtitan's per-operator selective checkpointing (recomputation mode
    ``"op"``).

    Examples
    --------
    >>> from schedsearch.plan.layers import Measurement
    >>> m = Measurement(microbatch_size=2, forward_ms=1.0, backward_ms=2.0, activation_bytes="1 GiB",
    ...                 send_bytes="64 MiB")
    >>> m.activation_bytes, m.held_when_recomputed
    (1073741824, 67108864)
    """

    microbatch_size: int
    forward_ms: float
    backward_ms: float
    input_grad_ms: float | None = None
    weight_grad_ms: float | None = None
    activation_bytes: int = 0
    checkpoint_bytes: int | None = None
    send_bytes: int | None = None
    selective_bytes: int | None = None
    selective_recompute_ms: float | None = None

    def __attrs_post_init__(self) -> None:
        where = f"micro-batch size {short_repr(self.microbatch_size)}"
        _integer(where, "microbatch_size", self.microbatch_size, 1, MAX_MICROBATCH_SIZE)
        for field in ("forward_ms", "backward_ms"):
            object.__setattr__(self, field, read_ms(where, field, getattr(self, field)))
        if (self.input_grad_ms is None) != (self.weight_grad_ms is None):
            raise InvalidPipelineError(
                f"{where}: give both 'input_grad_ms' and 'weight_grad_ms' or neither, got "
                f"input_grad_ms={short_repr(self.input_grad_ms)}, weight_grad_ms={short_repr(self.weight_grad_ms)}")
        for field in ("input_grad_ms", "weight_grad_ms"):
            if getattr(self, field) is not None:
                object.__setattr__(self, field, read_ms(where, field, getattr(self, field)))
        object.__setattr__(self, "activation_bytes", parse_bytes(self.activation_bytes, where, "activation_bytes"))
        for field in ("checkpoint_bytes", "send_bytes", "selective_bytes"):
            if getattr(self, field) is not None:
                object.__setattr__(self, field, parse_bytes(getattr(self, field), where, field))
        if (self.selective_bytes is None) != (self.selective_recompute_ms is None):
            raise InvalidPipelineError(
                f"{where}: give both 'selective_bytes' and 'selective_recompute_ms' or neither, got "
                f"selective_bytes={short_repr(self.selective_bytes)}, "
                f"selective_recompute_ms={short_repr(self.selective_recompute_ms)}")
        if self.selective_recompute_ms is not None:
            object.__setattr__(self, "selective_recompute_ms",
                               read_ms(where, "selective_recompute_ms", self.selective_recompute_ms))
            if self.selective_recompute_ms > self.forward_ms:
                raise InvalidPipelineError(
                    f"{where}: 'selective_recompute_ms' ({self.selective_recompute_ms:g}) is more than the "
                    f"forward it recomputes part of ('forward_ms' {self.forward_ms:g})")

    @property
    def has_selective(self) -> bool:
        """True when the figures of per-operator selective checkpointing are given."""
        return self.selective_bytes is not None

    def again_ms(self, mode: str) -> float | None:
        """The forward time its backward runs again when recomputation ``mode`` recomputes it: its whole
        forward, or ``selective_recompute_ms`` under ``"op"``."""
        return self.selective_recompute_ms if mode == "op" else self.forward_ms

    def held_when(self, mode: str) -> int | None:
        """What one micro-batch holds when recomputation ``mode`` recomputes it: :attr:`held_when_recomputed`,
        or ``selective_bytes`` under ``"op"``."""
        return self.selective_bytes if mode == "op" else self.held_when_recomputed

    @property
    def has_split(self) -> bool:
        """True when the input- and weight-gradient times are given."""
        return self.input_grad_ms is not None

    @property
    def p2p_bytes(self) -> int:
        """What one micro-batch sends to the next layer: ``send_bytes``, or ``activation_bytes`` when not given."""
        return self.activation_bytes if self.send_bytes is None else self.send_bytes

    @property
    def held_when_recomputed(self) -> int:
        """What one micro-batch holds when the layer is recomputed: ``checkpoint_bytes``, else ``send_bytes``."""
        return self.checkpoint_bytes if self.checkpoint_bytes is not None else self.p2p_bytes

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"microbatch_size": self.microbatch_size, "forward_ms": self.forward_ms,
                               "backward_ms": self.backward_ms}
        if self.has_split:
            out.update(input_grad_ms=self.input_grad_ms, weight_grad_ms=self.weight_grad_ms)
        out["activation_bytes"] = format_bytes(self.activation_bytes)
        for field in ("checkpoint_bytes", "send_bytes"):
            if getattr(self, field) is not None:
                out[field] = format_bytes(getattr(self, field))
        if self.has_selective:
            out.update(selective_bytes=format_bytes(self.selective_bytes),
                       selective_recompute_ms=self.selective_recompute_ms)
        return out


def _interpolate_ms(low: float | None, high: float | None, share: Fraction) -> float | None:
    if low is None or high is None:
        return None
    return float(Fraction(repr(low)) + (Fraction(repr(high)) - Fraction(repr(low))) * share)


def _interpolate_bytes(low: int | None, high: int | None, share: Fraction) -> int | None:
    if low is None or high is None:
        return None
    return math.ceil(low + (high - low) * share)


def _measurements(where: str, value: Any) -> tuple[Measurement, ...]:
    out = []
    for i, item in enumerate(_list(where, "measured", value, MAX_MEASUREMENTS)):
        if isinstance(item, Measurement):
            out.append(item)
            continue
        fields = _table(f"{where}: 'measured' entry {i}", item, Measurement,
                        ("microbatch_size", "forward_ms", "backward_ms"))
        try:
            out.append(Measurement(**fields))
        except InvalidPipelineError as exc:
            raise InvalidPipelineError(f"{where}: {exc}") from None
    return tuple(out)


@attrs.frozen(kw_only=True)
class Layer:
    """One layer of the model, or ``repeat`` identical ones in a row.

    ``measured`` holds its figures at one or more micro-batch sizes
    (:class:`Measurement`, each size once); :meth:`at` gives them at any size
    within the measured range (see the module docstring for the cost model).
    ``parameter_bytes`` is what the layer holds for the whole step (weights,
    and gradients and optimizer state as you count them).

    Examples
    --------
    >>> from schedsearch.plan.layers import Layer
    >>> block = Layer(name="block", repeat=32, parameter_bytes="3 GiB", measured=[
    ...     {"microbatch_size": 1, "forward_ms": 2.0, "backward_ms": 4.0, "activation_bytes": "1 GiB"},
    ...     {"microbatch_size": 4, "forward_ms": 8.0, "backward_ms": 16.0, "activation_bytes": "4 GiB"}])
    >>> m = block.at(2)
    >>> m.forward_ms, m.backward_ms, m.activation_bytes == 2 * 2**30
    (4.0, 8.0, True)
    >>> block.at(8)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidPipelineError: layer 'block': no cost at micro-batch size 8: it is measured at sizes [1, 4], and a size outside the measured range is refused
    """

    name: str
    kind: str = "layer"
    repeat: int = 1
    parameter_bytes: int = 0
    measured: tuple[Measurement, ...] = attrs.field(default=())

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidPipelineError(f"layer: 'name' must be a non-empty string, got {short_repr(self.name)}")
        where = f"layer {self.name!r}"
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InvalidPipelineError(f"{where}: 'kind' must be one of {list(KINDS)}, got {short_repr(self.kind)}")
        _integer(where, "repeat", self.repeat, 1, MAX_LAYERS)
        if self.kind != "layer" and self.repeat != 1:
            raise InvalidPipelineError(f"{where}: 'repeat' must be 1 for the {self.kind}, got {self.repeat}")
        object.__setattr__(self, "parameter_bytes", parse_bytes(self.parameter_bytes, where, "parameter_bytes"))
        object.__setattr__(self, "measured", _measurements(where, self.measured))
        sizes = [m.microbatch_size for m in self.measured]
        twice = sorted({s for s in sizes if sizes.count(s) > 1})
        if twice:
            raise InvalidPipelineError(f"{where}: 'measured' gives micro-batch size {twice[0]} more than once")
        if len({m.has_split for m in self.measured}) > 1:
            raise InvalidPipelineError(
                f"{where}: give 'input_grad_ms' and 'weight_grad_ms' at every measured size or at none")
        if len({m.has_selective for m in self.measured}) > 1:
            raise InvalidPipelineError(
                f"{where}: give 'selective_bytes' and 'selective_recompute_ms' at every measured size or at none")
        object.__setattr__(self, "measured", tuple(sorted(self.measured, key=lambda m: m.microbatch_size)))

    @property
    def sizes(self) -> tuple[int, ...]:
        """The measured micro-batch sizes, ascending."""
        return tuple(m.microbatch_size for m in self.measured)

    @property
    def has_split(self) -> bool:
        return self.measured[0].has_split

    def covers(self, size: int) -> bool:
        """True when the layer has a cost at micro-batch size ``size`` (within its measured range)."""
        return self.sizes[0] <= size <= self.sizes[-1]

    def at(self, size: int) -> Measurement:
        """The layer's figures at micro-batch size ``size``: measured, or interpolated between the two nearest sizes."""
        _integer(f"layer {self.name!r}", "microbatch_size", size, 1, MAX_MICROBATCH_SIZE)
        if not self.covers(size):
            raise InvalidPipelineError(
                f"layer {self.name!r}: no cost at micro-batch size {size}: it is measured at sizes "
                f"{list(self.sizes)}, and a size outside the measured range is refused")
        high = next(i for i, m in enumerate(self.measured) if m.microbatch_size >= size)
        if self.measured[high].microbatch_size == size:
            return self.measured[high]
        a, b = self.measured[high - 1], self.measured[high]
        share = Fraction(size - a.microbatch_size, b.microbatch_size - a.microbatch_size)
        return Measurement(
            microbatch_size=size,
            forward_ms=_interpolate_ms(a.forward_ms, b.forward_ms, share),
            backward_ms=_interpolate_ms(a.backward_ms, b.backward_ms, share),
            input_grad_ms=_interpolate_ms(a.input_grad_ms, b.input_grad_ms, share),
            weight_grad_ms=_interpolate_ms(a.weight_grad_ms, b.weight_grad_ms, share),
            activation_bytes=_interpolate_bytes(a.activation_bytes, b.activation_bytes, share),
            checkpoint_bytes=_interpolate_bytes(a.held_when_recomputed, b.held_when_recomputed, share),
            send_bytes=_interpolate_bytes(a.p2p_bytes, b.p2p_bytes, share),
            selective_bytes=_interpolate_bytes(a.selective_bytes, b.selective_bytes, share),
            selective_recompute_ms=_interpolate_ms(a.selective_recompute_ms, b.selective_recompute_ms, share),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.repeat != 1:
            out["repeat"] = self.repeat
        out["parameter_bytes"] = format_bytes(self.parameter_bytes)
        out["measured"] = [m.to_dict() for m in self.measured]
        return out


def _layers(value: Any) -> tuple[Layer, ...]:
    out = []
    for i, item in enumerate(_list("model", "layers", value, MAX_LAYERS)):
        if isinstance(item, Layer):
            out.append(item)
            continue
        fields = _table(f"model: layer {i}", item, Layer, ("name", "measured"))
        out.append(Layer(**fields))
    return tuple(out)


def _degrees(value: Any) -> tuple[int, ...]:
    values = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    out = tuple(_integer("model", "num_ranks", d, 1, MAX_LAYERS)
                for d in _list("model", "num_ranks", values, MAX_DEGREES))
    twice = sorted({d for d in out if out.count(d) > 1})
    if twice:
        raise InvalidPipelineError(f"model: 'num_ranks' lists {twice[0]} more than once")
    return out


def _p2p(value: Any) -> P2P:
    if isinstance(value, P2P):
        return value
    return P2P(**_table("model: 'p2p'", value, P2P, ()))


def _budget(value: Any) -> int | None:
    return None if value is None else parse_bytes(value, "model", "memory_budget_bytes")


# ------------------------------------------------------------------ the model
@attrs.frozen(kw_only=True)
class LayerModel:
    """A model in layers, with the batch, the memory and the pipeline degrees to plan it for.

    Parameters
    ----------
    layers:
        The layers in model order (:class:`Layer`, or tables of its fields):
        at most one ``"embedding"`` (first), at most one ``"head"`` (last),
        transformer blocks (``"layer"``, at least one) between them.
    global_batch:
        Samples per step per pipeline (per data-parallel replica): split
        into micro-batches of a size and count whose product it is.
    num_ranks:
        The pipeline degree, or a list of degrees to compare.
    memory_budget_bytes:
        Memory per rank (bytes, or a string such as ``"80 GiB"``); None = unbounded.
    p2p:
        Transfer between neighbouring ranks (:class:`~schedsearch.plan.pipeline.P2P`).
    time_tolerance:
        Passed to every :class:`~schedsearch.plan.pipeline.Pipeline` built.
    action_overhead_ms, step_overhead_ms:
        What the pipeline runtime adds to every action (once per stage) and
        once per step, as a :class:`~schedsearch.plan.pipeline.Pipeline`'s
        fields of those names (a calibration measures them); passed to every
        pipeline built. Default 0.
    name:
        Free text.

    Examples
    --------
    >>> from schedsearch.plan.layers import Configuration, LayerModel, Recomputation
    >>> at1 = {"microbatch_size": 1, "forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB",
    ...        "send_bytes": "16 MiB"}
    >>> model = LayerModel(global_batch=8, num_ranks=2, layers=[
    ...     {"name": "embed", "kind": "embedding", "measured": [{**at1, "forward_ms": 0.5, "backward_ms": 0.5}]},
    ...     {"name": "block", "repeat": 4, "measured": [at1]},
    ...     {"name": "head", "kind": "head", "measured": [at1]}])
    >>> print(model)
    model: 6 layers (1 embedding, 4 blocks, 1 head), global batch 8, 2 ranks, budget unbounded
    >>> config = Configuration(split=[[0, 1, 2], [3, 4, 5]], num_ranks=2, microbatch_size=1, num_microbatches=8,
    ...                        recomputation=Recomputation(mode="full"))
    >>> [(s.forward_ms, s.backward_ms) for s in model.pipeline(config).stages]
    [(2.5, 6.5), (3.0, 8.0)]
    >>> config.module_names(model)
    (('tok_embeddings', 'layers.0', 'layers.1'), ('layers.2', 'layers.3', 'norm', 'lm_head'))
    """

    layers: tuple[Layer, ...] = attrs.field(converter=_layers)
    global_batch: int
    num_ranks: tuple[int, ...] = attrs.field(converter=_degrees)
    memory_budget_bytes: int | None = attrs.field(default=None, converter=_budget)
    p2p: P2P = attrs.field(factory=P2P, converter=_p2p)
    time_tolerance: float = 0.01
    action_overhead_ms: float = 0.0
    step_overhead_ms: float = 0.0
    name: str = ""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidPipelineError(f"model: 'name' must be a string, got {short_repr(self.name)}")
        for field in ("action_overhead_ms", "step_overhead_ms"):
            object.__setattr__(self, field, read_ms("model", field, getattr(self, field)))
        _integer("model", "global_batch", self.global_batch, 1, MAX_MICROBATCHES * MAX_MICROBATCH_SIZE)
        total = sum(layer.repeat for layer in self.layers)  # checked before the layers are expanded
        if total > MAX_LAYERS:
            raise InvalidPipelineError(f"model: the layers expand to {total:,} (repeat included), more than {MAX_LAYERS:,}")
        kinds = [layer.kind for layer in self.layers]
        for kind, position in (("embedding", 0), ("head", len(kinds) - 1)):
            places = [i for i, k in enumerate(kinds) if k == kind]
            if len(places) > 1 or (places and places[0] != position):
                where = self.layers[places[-1] if len(places) > 1 or places[0] != position else 0].name
                raise InvalidPipelineError(
                    f"layer {where!r}: 'kind' {kind!r} must be the {'first' if position == 0 else 'last'} layer, "
                    f"and only one layer may be the {kind}")
        if "layer" not in kinds:
            raise InvalidPipelineError("model: 'layers' must hold at least one transformer block (kind 'layer')")
        for degree in self.num_ranks:
            if degree > total:
                raise InvalidPipelineError(
                    f"model: 'num_ranks' {degree} exceeds the number of layers ({total}): each rank holds one at least")
        if not self.sizes():
            ranges = {layer.name: [layer.sizes[0], layer.sizes[-1]] for layer in self.layers}
            raise InvalidPipelineError(
                f"model: no micro-batch size dividing the global batch {self.global_batch} lies within every "
                f"layer's measured range (ranges {short_repr(ranges)})")
        if self.memory_budget_bytes is not None:
            for layer in self.layers:
                if layer.parameter_bytes > self.memory_budget_bytes:
                    raise InvalidPipelineError(
                        f"layer {layer.name!r}: 'parameter_bytes' {format_bytes(layer.parameter_bytes)} exceed the "
                        f"memory budget per rank {format_bytes(self.memory_budget_bytes)}")

    def __str__(self) -> str:
        counts = {k: sum(l.repeat for l in self.layers if l.kind == k) for k in KINDS}
        parts = [f"{counts['embedding']} embedding"] if counts["embedding"] else []
        parts.append(f"{counts['layer']} blocks")
        parts += [f"{counts['head']} head"] if counts["head"] else []
        budget = "unbounded" if self.memory_budget_bytes is None else f"{format_bytes(self.memory_budget_bytes)} per rank"
        ranks = ", ".join(str(d) for d in self.num_ranks)
        return (f"model{' ' + repr(self.name) if self.name else ''}: {self.num_layers} layers ({', '.join(parts)}), "
                f"global batch {self.global_batch}, {ranks} ranks, budget {budget}")

    # ------------------------------------------------------------ the layers, one per index
    @property
    def num_layers(self) -> int:
        return sum(layer.repeat for layer in self.layers)

    @property
    def expanded(self) -> tuple[Layer, ...]:
        """One entry per layer index (a ``repeat`` entry gives ``repeat`` equal layers)."""
        return tuple(layer for layer in self.layers for _ in range(layer.repeat))

    def layer_names(self) -> tuple[str, ...]:
        """Each layer's name: an entry's name, with ``.<j>`` for the ``j``-th copy of a repeated entry."""
        return tuple(f"{layer.name}.{j}" if layer.repeat > 1 else layer.name
                     for layer in self.layers for j in range(layer.repeat))

    def kinds(self) -> tuple[str, ...]:
        return tuple(layer.kind for layer in self.expanded)

    def module_names(self) -> tuple[tuple[str, ...], ...]:
        """torchtitan 0.3.0's module names of each layer index (the head is ``norm`` and ``lm_head``)."""
        out, block = [], 0
        for kind in self.kinds():
            if kind == "embedding":
                out.append(EMBEDDING_MODULES)
            elif kind == "head":
                out.append(HEAD_MODULES)
            else:
                out.append((f"layers.{block}",))
                block += 1
        return tuple(out)

    def sizes(self) -> tuple[int, ...]:
        """The micro-batch sizes with a cost: divisors of the global batch within every layer's measured range."""
        low = max(layer.sizes[0] for layer in self.layers)
        high = min(layer.sizes[-1] for layer in self.layers)
        return tuple(b for b in range(low, min(high, self.global_batch) + 1) if self.global_batch % b == 0)

    def at(self, size: int) -> tuple[Measurement, ...]:
        """Every layer index's figures at micro-batch size ``size`` (see the module docstring)."""
        per_entry = [layer.at(size) for layer in self.layers]
        return tuple(m for layer, m in zip(self.layers, per_entry) for _ in range(layer.repeat))

    # ------------------------------------------------------------ configurations
    def check(self, configuration: Configuration) -> None:
        """Refuse a configuration that does not fit this model (layers, batch, sizes, ranks)."""
        if not isinstance(configuration, Configuration):
            raise InvalidPipelineError(
                f"model: 'configuration' must be a Configuration, got {type(configuration).__name__}")
        n = self.num_layers
        if configuration.split[-1][-1] != n - 1:
            raise InvalidPipelineError(
                f"{configuration}: 'split' must cover the model's {n} layers 0..{n - 1}, it ends at layer "
                f"{configuration.split[-1][-1]}")
        b, m = configuration.microbatch_size, configuration.num_microbatches
        if b * m != self.global_batch:
            raise InvalidPipelineError(
                f"{configuration}: micro-batch size {b} x {m} micro-batches must make the global batch "
                f"{self.global_batch}, got {b * m}")
        for layer in self.layers:
            if not layer.covers(b):
                layer.at(b)  # raises, naming the layer and its measured sizes
        kinds = self.kinds()
        bad = sorted(i for i in configuration.recomputation.layers if not 0 <= i < n or kinds[i] != "layer")
        if bad:
            raise InvalidPipelineError(
                f"{configuration}: recomputation 'layers' must name transformer blocks (kind 'layer'), got layer {bad[0]}")
        if configuration.recomputation.mode == "op":
            short = next((layer for layer in self.layers if layer.kind == "layer" and not layer.measured[0].has_selective),
                         None)
            if short is not None:
                raise InvalidPipelineError(
                    f"{configuration}: recomputation 'op' needs 'selective_bytes' and 'selective_recompute_ms' of "
                    f"every transformer block; layer {short.name!r} gives neither")

    def runs_op(self) -> bool:
        """Whether recomputation mode ``"op"`` has a cost here: every transformer block gives its figures."""
        return all(layer.measured[0].has_selective for layer in self.layers if layer.kind == "layer")

    def again_ms(self, configuration: Configuration) -> list[float]:
        """Per layer, the forward time its backward runs again under ``configuration``'s recomputation: its
        whole forward when recomputed, ``selective_recompute_ms`` under mode ``"op"``, else 0."""
        rec, mode = self.recomputed(configuration), configuration.recomputation.mode
        return [m.again_ms(mode) if i in rec else 0.0 for i, m in enumerate(self.at(configuration.microbatch_size))]

    def held_bytes(self, configuration: Configuration) -> list[int]:
        """Per layer, what one micro-batch holds from its forward to its backward under ``configuration``'s
        recomputation (:meth:`Measurement.held_when_recomputed`, ``selective_bytes`` under mode ``"op"``)."""
        rec, mode = self.recomputed(configuration), configuration.recomputation.mode
        return [m.held_when(mode) if i in rec else m.activation_bytes
                for i, m in enumerate(self.at(configuration.microbatch_size))]

    def recomputed(self, configuration: Configuration) -> frozenset[int]:
        """The layer indices ``configuration`` recomputes on this model (see the module docstring)."""
        self.check(configuration)
        rec = configuration.recomputation
        kinds = self.kinds()
        if rec.mode == "none":
            return frozenset()
        if rec.every_block:
            return frozenset(i for i, k in enumerate(kinds) if k == "layer")
        if rec.mode == "layers":
            return frozenset(rec.layers)
        out = set()
        for stages in stage_ranks(configuration.num_stages, configuration.num_ranks, configuration.layout):
            count = 0  # torchtitan's counter: one per process, over the rank's stages in ascending order
            for s in sorted(stages):
                for i in configuration.split[s]:
                    if kinds[i] == "layer":
                        count += 1
                        if count % rec.every == 0:
                            out.add(i)
        return frozenset(out)

    def stage(self, configuration: Configuration, index: int,
              recomputed: tuple[list[float], list[int]] | None = None) -> Stage:
        """Stage ``index`` of ``configuration``: its layers' figures summed, recomputation applied
        (``recomputed``: :meth:`again_ms` and :meth:`held_bytes` of the configuration, when already known)."""
        again_of, held_of = recomputed or (self.again_ms(configuration), self.held_bytes(configuration))
        figures = self.at(configuration.microbatch_size)
        names = self.layer_names()
        group = configuration.split[index]
        layers = [figures[i] for i in group]
        again = [again_of[i] for i in group if again_of[i]]  # the forward each recomputed layer runs again
        split = all(m.has_split for m in layers)
        return Stage(
            name=f"stage{index} ({names[group[0]]}..{names[group[-1]]})" if len(group) > 1
            else f"stage{index} ({names[group[0]]})",
            forward_ms=_sum_ms([m.forward_ms for m in layers]),
            backward_ms=_sum_ms([m.backward_ms for m in layers] + again),
            input_grad_ms=_sum_ms([m.input_grad_ms for m in layers] + again) if split else None,
            weight_grad_ms=_sum_ms([m.weight_grad_ms for m in layers]) if split else None,
            activation_bytes=sum(held_of[i] for i in group),
            parameter_bytes=sum(self.expanded[i].parameter_bytes for i in group),
            send_bytes=layers[-1].p2p_bytes,
        )

    def pipeline(self, configuration: Configuration) -> Pipeline:
        """The per-stage :class:`~schedsearch.plan.pipeline.Pipeline` of ``configuration``, for the planner.

        Stage times are the sums over the stage's layers at the chosen
        micro-batch size, with the forward of every recomputed layer added to
        the backward (and to the input gradient where the backward is split);
        a recomputed layer holds its ``checkpoint_bytes`` instead of its
        activations (under mode ``"op"``, its ``selective_bytes``, and only
        its ``selective_recompute_ms`` is added); parameters are summed; a stage sends what its last
        layer sends. The families are the planner's families of the
        configuration's shape (its layout and stages per rank).
        """
        known = (self.again_ms(configuration), self.held_bytes(configuration))
        stages = [self.stage(configuration, k, known) for k in range(configuration.num_stages)]
        families = configuration.families()
        if not families:
            raise InvalidPipelineError(
                f"{configuration}: no schedule family of the planner runs {configuration.stages_per_rank} "
                f"{configuration.layout!r} stages per rank")
        return Pipeline(num_ranks=configuration.num_ranks, stages=stages,
                        num_microbatches=configuration.num_microbatches,
                        memory_budget_bytes=self.memory_budget_bytes, p2p=self.p2p, families=families,
                        partition="fixed", time_tolerance=self.time_tolerance,
                        action_overhead_ms=self.action_overhead_ms, step_overhead_ms=self.step_overhead_ms,
                        name=f"{self.name} {configuration.label()}".strip())

    # ------------------------------------------------------------ a per-stage description
    @classmethod
    def from_pipeline(cls, pipeline: Pipeline) -> LayerModel:
        """The model in layers a per-stage description stands for, when it says how many layers each entry holds.

        ``pipeline.layers_per_entry`` gives each entry's transformer layers;
        ``pipeline.end_layers`` what the end entries hold beyond them. What
        is assumed (:func:`entry_notes` says it in words):

        * the layers of an entry are equal: each has the entry's times and
          bytes divided by its layer count (times exactly as decimals, bytes
          rounded up to whole bytes);
        * a layer sends what its entry sends (``send_bytes``, else
          ``activation_bytes``), the layers of the last entry what the entry
          before it sends (the last entry sends nothing onward); recomputed,
          a layer holds its input, as much as it sends, at most its
          activations;
        * with ``end_layers``, the first entry's embedding (the last entry's
          head) is a layer of its own: the entry's figures less its layers',
          each of which costs what a layer of the entry beside it costs; an
          end entry below its layers' figures is refused, naming the entry,
          the field and the value. Without ``end_layers``, whatever the end
          entries hold beyond their layers is divided among those layers;
        * the entries are measured at one micro-batch size (the
          description's ``microbatch_sizes``, all equal, else 1): the global
          batch is the description's micro-batches of that size, and no
          other size has a cost.

        The description's ranks, memory budget, transfers, time tolerance,
        per-action and per-step overheads (a calibration's) and name carry
        over. An overlapped F&B pair's time (``fb_overlap_ms``) is one of a
        pair of stages, not of layers, and is refused.

        Examples
        --------
        >>> from schedsearch import Pipeline
        >>> from schedsearch.plan.layers import LayerModel
        >>> entry = {"forward_ms": 4.0, "backward_ms": 8.0, "activation_bytes": "4 GiB", "send_bytes": "64 MiB"}
        >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, layers_per_entry=2, end_layers=["head"], stages=[
        ...     {**entry, "name": "a"}, {**entry, "name": "b", "forward_ms": 5.0, "backward_ms": 9.0}])
        >>> model = LayerModel.from_pipeline(pipeline)
        >>> print(model)
        model: 5 layers (4 blocks, 1 head), global batch 4, 2 ranks, budget unbounded
        >>> [(m.forward_ms, m.backward_ms) for m in model.at(1)]
        [(2.0, 4.0), (2.0, 4.0), (2.0, 4.0), (2.0, 4.0), (1.0, 1.0)]
        """
        return _model_of_entries(pipeline)

    @classmethod
    def from_profile(cls, profile: Any, *, kinds: Sequence[str], global_batch: int, num_ranks: int | Sequence[int],
                     names: Sequence[str] | None = None, name: str = "",
                     memory_budget_bytes: int | str | None = None) -> LayerModel:
        """The model in layers a profile of one module per stage measures.

        ``profile`` is a :class:`~schedsearch.runtime.profile.Profile` whose
        stages are the model's modules one by one (``schedsearch profile
        --layers`` measures them so): stage ``i`` is layer ``i``, of kind
        ``kinds[i]``, named ``names[i]``. A layer's figures at every
        profiled micro-batch size are those measured (times in ms, its
        activation bytes, what it sends); a transformer block's
        ``checkpoint_bytes`` is its input, what the layer before it sends,
        and its ``selective_bytes`` and ``selective_recompute_ms`` those the
        profile measured under per-operator selective checkpointing (when it
        did: ``profile(..., selective=...)``); ``parameter_bytes`` its
        weights as profiled (add gradients and optimizer state as you count
        them).
        """
        stages = {size: profile.stages[size] for size in profile.sizes}
        count = len(stages[profile.sizes[0]])
        if len(kinds) != count or (names is not None and len(names) != count):
            raise InvalidPipelineError(
                f"model from a profile: {count} profiled stages, got {len(kinds)} kinds and "
                f"{'no' if names is None else len(names)} names")
        layers = []
        for i, kind in enumerate(kinds):
            measured = []
            for size, rows in stages.items():
                r = rows[i]
                m = {"microbatch_size": size, "forward_ms": r.forward_s * 1e3, "backward_ms": r.backward_s * 1e3,
                     "input_grad_ms": r.input_grad_s * 1e3, "weight_grad_ms": r.weight_grad_s * 1e3,
                     "activation_bytes": r.activation_bytes}
                if r.send_bytes is not None:
                    m["send_bytes"] = r.send_bytes
                if kind == "layer" and i > 0 and rows[i - 1].send_bytes is not None:
                    m["checkpoint_bytes"] = min(rows[i - 1].send_bytes, r.activation_bytes)
                if kind == "layer" and r.selective_bytes is not None:
                    m["selective_bytes"] = r.selective_bytes
                    m["selective_recompute_ms"] = min(r.selective_recompute_s * 1e3, m["forward_ms"])
                measured.append(m)
            layers.append({"name": names[i] if names is not None else f"{kind}{i}", "kind": kind,
                           "parameter_bytes": stages[profile.sizes[0]][i].parameter_bytes, "measured": measured})
        return cls(name=name, global_batch=global_batch, num_ranks=num_ranks, memory_budget_bytes=memory_budget_bytes,
                   layers=layers)

    # ------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> LayerModel:
        """A model from a mapping of its fields (what :meth:`to_dict` gives)."""
        fields = _table("model", document, cls, ("layers", "global_batch", "num_ranks"))
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "global_batch": self.global_batch,
                               "num_ranks": list(self.num_ranks)}
        if self.memory_budget_bytes is not None:
            out["memory_budget_bytes"] = format_bytes(self.memory_budget_bytes)
        out["time_tolerance"] = self.time_tolerance
        for field in ("action_overhead_ms", "step_overhead_ms"):
            if getattr(self, field):
                out[field] = getattr(self, field)
        p2p = self.p2p.to_dict()
        if p2p:
            out["p2p"] = p2p
        out["layers"] = [layer.to_dict() for layer in self.layers]
        return out

    @classmethod
    def load(cls, path: str | Path) -> LayerModel:
        """Read a model from a ``.toml`` or ``.json`` file."""
        path = Path(path)
        text = read_text(path, f"model file {str(path)!r}", InvalidPipelineError)
        try:
            document = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise InvalidPipelineError(f"model file {str(path)!r}: not valid {path.suffix[1:] or 'TOML'}: {exc}") from None
        except RecursionError:
            raise InvalidPipelineError(f"model file {str(path)!r}: nested too deeply to read") from None
        return cls.from_dict(document)

    def save(self, path: str | Path) -> Path:
        """Write the model as TOML (or JSON when the name ends in ``.json``)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n" if path.suffix.lower() == ".json"
                        else self.to_toml())
        return path

    def to_toml(self) -> str:
        """The TOML text of :meth:`to_dict` (``[[layers]]`` tables, each with its ``[[layers.measured]]``)."""
        doc = self.to_dict()
        lines = [f"{k} = {toml_value(v)}" for k, v in doc.items() if k not in ("p2p", "layers")]
        if "p2p" in doc:
            lines.append("\n[p2p]")
            lines += [f"{k} = {toml_value(v)}" for k, v in doc["p2p"].items()]
        for layer in doc["layers"]:
            lines.append("\n[[layers]]")
            lines += [f"{k} = {toml_value(v)}" for k, v in layer.items() if k != "measured"]
            for m in layer["measured"]:
                lines.append("[[layers.measured]]")
                lines += [f"{k} = {toml_value(v)}" for k, v in m.items()]
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ a per-stage description in layers
_TIMES = ("forward_ms", "backward_ms", "input_grad_ms", "weight_grad_ms")
_AMOUNTS = ("activation_bytes", "parameter_bytes")


def _entry_microbatch_size(pipeline: Pipeline) -> int:
    """The micro-batch size the entries are measured at: the description's ``microbatch_sizes`` (all equal), else 1."""
    sizes = pipeline.microbatch_sizes
    if sizes is None:
        return 1
    if len(set(sizes)) > 1 or not float(sizes[0]).is_integer() or not 1 <= sizes[0] <= MAX_MICROBATCH_SIZE:
        raise InvalidPipelineError(
            f"pipeline: 'microbatch_sizes' {short_repr(list(sizes))} with 'layers_per_entry': a model in layers "
            f"is planned with micro-batches of one whole size (at most {MAX_MICROBATCH_SIZE:,}); give equal sizes")
    return int(sizes[0])


def _per_layer(stage: Stage, count: int) -> dict[str, Fraction | int | None]:
    """One of ``count`` equal layers of ``stage``: its times divided exactly, its bytes rounded up."""
    out: dict[str, Fraction | int | None] = {
        f: None if getattr(stage, f) is None else Fraction(repr(getattr(stage, f))) / count for f in _TIMES}
    out.update({f: -(-getattr(stage, f) // count) for f in _AMOUNTS})
    return out


def _end_layer(pipeline: Pipeline, e: int, kind: str, per: dict[str, Any], send_bytes: int) -> Layer:
    """The embedding (``e`` = 0) or the head (the last entry) as a layer: entry ``e`` less its layers at ``per``."""
    stage, count = pipeline.stages[e], pipeline.entry_layers()[e]
    figures: dict[str, Any] = {}
    for f in _TIMES + _AMOUNTS:
        total, share = getattr(stage, f), per[f]
        if total is None or share is None:
            figures[f] = None
            continue
        rest = (Fraction(repr(total)) if f in _TIMES else total) - count * share
        if rest < 0:
            neighbour = pipeline.stages[1 if e == 0 else e - 1]
            shown = f"{float(count * share):g}" if f in _TIMES else format_bytes(count * share)
            raise InvalidPipelineError(
                f"stage {stage.name!r}: {f!r} {total if f in _TIMES else format_bytes(total)} is less than its "
                f"{count} transformer layers take at the figures of entry {neighbour.name!r} beside it ({shown}): "
                f"with end_layers naming the {kind}, the entry holds the {kind} beyond its layers (leave "
                f"{kind!r} out of end_layers to divide the entry among its layers)")
        figures[f] = float(rest) if f in _TIMES else rest
    if (figures["input_grad_ms"] is None) != (figures["weight_grad_ms"] is None):
        figures["input_grad_ms"] = figures["weight_grad_ms"] = None
    return Layer(name=kind, kind=kind, parameter_bytes=figures.pop("parameter_bytes"), measured=[Measurement(
        microbatch_size=_entry_microbatch_size(pipeline), send_bytes=send_bytes, **figures)])


def _model_of_entries(pipeline: Pipeline) -> LayerModel:
    """:meth:`LayerModel.from_pipeline`."""
    counts = pipeline.entry_layers()
    if counts is None:
        raise InvalidPipelineError(f"{pipeline}: 'layers_per_entry' is not given: the description does not say how "
                                   f"many transformer layers each entry stands for")
    if pipeline.fb_overlap_ms is not None:
        raise InvalidPipelineError(
            f"pipeline: 'fb_overlap_ms' {pipeline.fb_overlap_ms!r} with 'layers_per_entry': it times an overlapped "
            f"pair of the description's stages, which a split into other stages does not keep; leave it out, or plan "
            f"the entries as stages (leave 'layers_per_entry' out)")
    size = _entry_microbatch_size(pipeline)
    stages, ends = pipeline.stages, pipeline.end_layers or ()
    E = len(stages)
    layers: list[Layer] = []
    for e, stage in enumerate(stages):
        send = stages[e if e < E - 1 or E == 1 else E - 2].p2p_bytes
        extra = "embedding" if e == 0 and "embedding" in ends else "head" if e == E - 1 and "head" in ends else None
        per = _per_layer(stages[1 if e == 0 else e - 1], counts[1 if e == 0 else e - 1]) if extra \
            else _per_layer(stage, counts[e])
        block = Layer(name=stage.name or f"entry{e}", repeat=counts[e], parameter_bytes=per["parameter_bytes"],
                      measured=[Measurement(
                          microbatch_size=size, activation_bytes=per["activation_bytes"],
                          checkpoint_bytes=min(send, per["activation_bytes"]), send_bytes=send,
                          **{f: None if per[f] is None else float(per[f]) for f in _TIMES})])
        if extra == "embedding":
            layers.append(_end_layer(pipeline, e, extra, per, stage.p2p_bytes))
        layers.append(block)
        if extra == "head":
            layers.append(_end_layer(pipeline, e, extra, per, stage.p2p_bytes))
    return LayerModel(layers=layers, global_batch=pipeline.num_microbatches * size, num_ranks=pipeline.num_ranks,
                      memory_budget_bytes=pipeline.memory_budget_bytes, p2p=pipeline.p2p,
                      time_tolerance=pipeline.time_tolerance, action_overhead_ms=pipeline.action_overhead_ms,
                      step_overhead_ms=pipeline.step_overhead_ms, name=pipeline.name)


#: The origin of the split a per-stage description gives (one stage per entry), among the splits searched.
DESCRIPTION_SPLIT = "the description's split"


def entry_proposals(pipeline: Pipeline) -> tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]:
    """The description's own split, in the layers of :meth:`LayerModel.from_pipeline`: one stage per entry (the
    embedding and the head in their end entries), named ``"the description's split"``; none without
    ``layers_per_entry``.

    Examples
    --------
    >>> from schedsearch import Pipeline
    >>> from schedsearch.plan.layers import entry_proposals
    >>> entry_proposals(Pipeline(num_ranks=2, num_microbatches=4, layers_per_entry=2, end_layers=["head"],
    ...                          stages=[{"forward_ms": 4.0, "backward_ms": 8.0}, {"forward_ms": 5.0, "backward_ms": 9.0}]))
    (("the description's split", ((0, 1), (2, 3, 4))),)
    """
    counts = pipeline.entry_layers()
    if counts is None:
        return ()
    ends = pipeline.end_layers or ()
    sizes = list(counts)
    sizes[0] += "embedding" in ends
    sizes[-1] += "head" in ends
    edges = [0]
    for n in sizes:
        edges.append(edges[-1] + n)
    return ((DESCRIPTION_SPLIT, tuple(tuple(range(edges[k], edges[k + 1])) for k in range(len(sizes)))),)


def entry_notes(pipeline: Pipeline) -> tuple[str, ...]:
    """What :meth:`LayerModel.from_pipeline` assumes of ``pipeline``, in words, for the result of its plan.

    Examples
    --------
    >>> from schedsearch import Pipeline
    >>> from schedsearch.plan.layers import entry_notes
    >>> pipeline = Pipeline(num_ranks=2, num_microbatches=4, layers_per_entry=4,
    ...                     stages=[{"forward_ms": 4.0, "backward_ms": 8.0}] * 2)
    >>> for line in entry_notes(pipeline):
    ...     print(line)
    the 2 entries stand for 8 transformer layers (layers_per_entry = 4), planned as a model in layers: the layers of an entry are equal, each with the entry's times and bytes divided by its layer count (bytes rounded up); a layer sends what its entry sends (the last entry's layers what the entry before it sends) and, recomputed, holds as much (at most its activations)
    end_layers is not given: whatever the end entries hold beyond their layers (an embedding, a head) is divided among their layers, moves with them in a split and is recomputed with them; set end_layers = ["embedding", "head"] to plan the embedding and the head as layers of their own
    micro-batching: the entries are measured at micro-batch size 1, so the global batch is 4 micro-batches of 1 and no other size has a cost (a model in layers measured at several sizes searches them)
    """
    counts = pipeline.entry_layers()
    if counts is None:
        return ()
    given = (f"layers_per_entry = {counts[0]}" if isinstance(pipeline.layers_per_entry, int)
             else f"layers_per_entry = {list(counts)}")
    out = [f"the {len(counts)} entries stand for {sum(counts)} transformer layers ({given}), planned as a model in "
           "layers: the layers of an entry are equal, each with the entry's times and bytes divided by its layer "
           "count (bytes rounded up); a layer sends what its entry sends (the last entry's layers what the entry "
           "before it sends) and, recomputed, holds as much (at most its activations)"]
    ends = pipeline.end_layers
    if ends is None:
        out.append("end_layers is not given: whatever the end entries hold beyond their layers (an embedding, a head) "
                   "is divided among their layers, moves with them in a split and is recomputed with them; set "
                   'end_layers = ["embedding", "head"] to plan the embedding and the head as layers of their own')
    else:
        for kind, e, beside in (("embedding", 0, 1), ("head", len(counts) - 1, len(counts) - 2)):
            if kind in ends:
                out.append(f"the {kind} is a layer of its own: entry {pipeline.stages[e].name!r} less its "
                           f"{counts[e]} layers, each costing what a layer of entry "
                           f"{pipeline.stages[beside].name!r} costs (end_layers)")
        if not ends:
            out.append("end_layers = []: the end entries hold their transformer layers only")
    size = _entry_microbatch_size(pipeline)
    out.append(f"micro-batching: the entries are measured at micro-batch size {size}, so the global batch is "
               f"{pipeline.num_microbatches} micro-batches of {size} and no other size has a cost (a model in layers "
               f"measured at several sizes searches them)")
    return tuple(out)


# ------------------------------------------------------------------ configurations
def stage_ranks(num_stages: int, num_ranks: int, layout: str) -> tuple[tuple[int, ...], ...]:
    """The stages each rank holds: ``"loop"`` gives rank ``r`` stages ``r, r + p, ...``; ``"v"``
    (two per rank) stages ``r`` and ``2p - 1 - r``, as torchtitan places them.

    Examples
    --------
    >>> from schedsearch.plan.layers import stage_ranks
    >>> stage_ranks(8, 4, "loop"), stage_ranks(8, 4, "v")
    (((0, 4), (1, 5), (2, 6), (3, 7)), ((0, 7), (1, 6), (2, 5), (3, 4)))
    """
    if layout == "v":
        return tuple((r, 2 * num_ranks - 1 - r) for r in range(num_ranks))
    return tuple(tuple(range(r, num_stages, num_ranks)) for r in range(num_ranks))


def _layer_set(value: Any) -> frozenset[int]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, set, frozenset)):
        raise InvalidPipelineError(f"recomputation: 'layers' must be a list of layer indices, got {short_repr(value)}")
    return frozenset(_integer("recomputation", "layers", i, 0, MAX_LAYERS) for i in value)


@attrs.frozen(kw_only=True)
class Recomputation:
    """Which transformer blocks are recomputed in the backward (see the module docstring).

    Examples
    --------
    >>> from schedsearch.plan.layers import Recomputation
    >>> Recomputation(mode="selective", every=2).torchtitan_mode, Recomputation(mode="layers", layers=[3]).torchtitan_mode
    ('selective', None)
    >>> Recomputation(mode="selective", every=2).torchtitan_releases
    ('0.2',)
    >>> Recomputation(mode="selective", every=1)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidPipelineError: recomputation: 'every' must be an integer from 2 to 100,000 (every = 1 is mode 'full'), got 1
    """

    mode: str = "none"
    every: int | None = None
    layers: frozenset[int] = attrs.field(default=frozenset(), converter=_layer_set)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in RECOMPUTATION_MODES:
            raise InvalidPipelineError(
                f"recomputation: 'mode' must be one of {list(RECOMPUTATION_MODES)}, got {short_repr(self.mode)}")
        if self.mode == "selective":
            if isinstance(self.every, bool) or not isinstance(self.every, int) or not 2 <= self.every <= MAX_LAYERS:
                raise InvalidPipelineError(
                    f"recomputation: 'every' must be an integer from 2 to {MAX_LAYERS:,} (every = 1 is mode 'full'), "
                    f"got {short_repr(self.every)}")
        elif self.every is not None:
            raise InvalidPipelineError(f"recomputation: 'every' applies to mode 'selective' only, got mode "
                                       f"{self.mode!r} with every={short_repr(self.every)}")
        if self.mode != "layers" and self.layers:
            raise InvalidPipelineError(f"recomputation: 'layers' applies to mode 'layers' only, got mode {self.mode!r}")

    @property
    def torchtitan_mode(self) -> str | None:
        """torchtitan's ``activation_checkpoint.mode`` for it; None when no single setting runs it."""
        return None if self.mode == "layers" else "selective" if self.mode == "op" else self.mode

    @property
    def torchtitan_releases(self) -> tuple[str, ...]:
        """The torchtitan releases whose ``activation_checkpoint`` options run it: ``none``, ``full`` and the
        per-operator ``selective`` (mode ``"op"``; 0.2 with ``selective_ac_option = "op"``) in 0.2 and 0.3.0,
        ``selective`` every k-th layer in 0.2 only, an explicit set in none."""
        return {"none": ("0.2", "0.3.0"), "full": ("0.2", "0.3.0"), "selective": ("0.2",), "op": ("0.2", "0.3.0"),
                "layers": ()}[self.mode]

    @property
    def every_block(self) -> bool:
        """True when it recomputes every transformer block (modes ``"full"`` and ``"op"``)."""
        return self.mode in ("full", "op")

    @property
    def recomputes(self) -> bool:
        """False only when nothing can be recomputed (mode ``"none"``, or an empty set of layers)."""
        return self.mode != "none" and not (self.mode == "layers" and not self.layers)

    def label(self) -> str:
        if self.mode == "selective":
            return f"recompute every {self.every}"
        if self.mode == "layers":
            return f"recompute {len(self.layers)} blocks"
        return {"none": "no recomputation", "full": "full recomputation",
                "op": "per-operator recomputation"}[self.mode]


def _split(value: Any) -> tuple[tuple[int, ...], ...]:
    groups = _list("configuration", "split", value, MAX_LAYERS)
    out, following = [], 0
    for k, group in enumerate(groups):
        if isinstance(group, (str, bytes, Mapping)) or not isinstance(group, Sequence) or not group:
            raise InvalidPipelineError(
                f"configuration: 'split' stage {k} must be a non-empty list of layer indices, got {short_repr(group)}")
        for i in group:
            if i != following or isinstance(i, bool):
                raise InvalidPipelineError(
                    f"configuration: 'split' stage {k} must continue the layers in order (layer {following} next), "
                    f"got {short_repr(i)}")
            following += 1
        out.append(tuple(group))
    return tuple(out)


def _recomputation(value: Any) -> Recomputation:
    if isinstance(value, Recomputation):
        return value
    if isinstance(value, str):
        return Recomputation(mode=value)
    return Recomputation(**_table("configuration: 'recomputation'", value, Recomputation, ("mode",)))


@attrs.frozen(kw_only=True)
class Configuration:
    """What torchtitan lets one set for a model in layers: the split, the stages per rank, micro-batching, recomputation.

    Parameters
    ----------
    split:
        The layer indices of each stage, in stage order: contiguous, from
        layer 0, every stage non-empty (stages may differ in size).
        :meth:`from_boundaries` and :meth:`from_module_names` build it.
    num_ranks:
        Pipeline ranks; the number of stages is a multiple of it.
    layout:
        ``"loop"`` (rank ``r`` holds stages ``r, r + p, ...``) or ``"v"``
        (two stages per rank, ``r`` and ``2p - 1 - r``).
    microbatch_size, num_microbatches:
        Their product is the model's global batch.
    recomputation:
        A :class:`Recomputation` (or its mode's name).
    """

    split: tuple[tuple[int, ...], ...] = attrs.field(converter=_split)
    num_ranks: int
    layout: str = "loop"
    microbatch_size: int
    num_microbatches: int
    recomputation: Recomputation = attrs.field(factory=Recomputation, converter=_recomputation)

    def __attrs_post_init__(self) -> None:
        _integer("configuration", "num_ranks", self.num_ranks, 1, MAX_LAYERS)
        _integer("configuration", "microbatch_size", self.microbatch_size, 1, MAX_MICROBATCH_SIZE)
        _integer("configuration", "num_microbatches", self.num_microbatches, 1, MAX_MICROBATCHES)
        if self.layout not in ("loop", "v"):
            raise InvalidPipelineError(f"configuration: 'layout' must be 'loop' or 'v', got {short_repr(self.layout)}")
        if len(self.split) % self.num_ranks:
            raise InvalidPipelineError(
                f"configuration: 'split' must give a multiple of num_ranks ({self.num_ranks}) stages, got "
                f"{len(self.split)}")
        if self.layout == "v" and self.stages_per_rank != 2:
            raise InvalidPipelineError(
                f"configuration: layout 'v' places two stages per rank, got {self.stages_per_rank}")

    def __str__(self) -> str:
        return f"configuration {self.label()}"

    def label(self) -> str:
        sizes = "/".join(str(len(g)) for g in self.split)
        return (f"[{sizes}] on {self.num_ranks} ranks ({self.layout}, v={self.stages_per_rank}), "
                f"{self.num_microbatches} x {self.microbatch_size}, {self.recomputation.label()}")

    @property
    def num_stages(self) -> int:
        return len(self.split)

    @property
    def stages_per_rank(self) -> int:
        return len(self.split) // self.num_ranks

    @classmethod
    def from_boundaries(cls, counts: Sequence[int], **fields: Any) -> Configuration:
        """A configuration whose stages hold ``counts[k]`` layers each, in order.

        Examples
        --------
        >>> from schedsearch.plan.layers import Configuration
        >>> Configuration.from_boundaries([2, 1, 3], num_ranks=3, microbatch_size=1, num_microbatches=4).split
        ((0, 1), (2,), (3, 4, 5))
        """
        out, start = [], 0
        for k, c in enumerate(_list("configuration", "counts", counts, MAX_LAYERS)):
            _integer("configuration", f"counts[{k}]", c, 1, MAX_LAYERS)
            out.append(list(range(start, start + c)))
            start += c
        return cls(split=out, **fields)

    @classmethod
    def from_module_names(cls, model: LayerModel, names: Sequence[Sequence[str]], **fields: Any) -> Configuration:
        """A configuration from torchtitan's ``module_fqns_per_model_part`` (one list of module names per stage).

        Every name must exist in the model (``tok_embeddings``, ``layers.<i>``,
        ``norm`` with ``lm_head``, or ``output`` as torchtitan before 0.3.0
        calls it), each once, the stages in model order.
        """
        index: dict[str, int] = {}
        for i, modules in enumerate(model.module_names()):
            for name in modules:
                index[name] = i
        index.setdefault(OLD_OUTPUT_MODULE, index.get("lm_head", -1))
        seen: set[str] = set()
        split = []
        for k, stage in enumerate(_list("configuration", "module names", names, MAX_LAYERS)):
            layers: list[int] = []
            for name in _list(f"configuration: stage {k}", "module names", stage, MAX_LAYERS):
                if not isinstance(name, str) or index.get(name, -1) < 0:
                    raise InvalidPipelineError(
                        f"configuration: stage {k}: module {short_repr(name)} is not a module of the model "
                        f"(its modules: tok_embeddings, layers.0..layers.{sum(k == 'layer' for k in model.kinds()) - 1}, "
                        f"norm, lm_head)")
                key = "lm_head" if name == OLD_OUTPUT_MODULE else name
                if key in seen:
                    raise InvalidPipelineError(f"configuration: stage {k}: module {name!r} is named twice")
                seen.add(key)
                if not layers or layers[-1] != index[name]:
                    layers.append(index[name])
            if split and layers and split[-1][-1] == layers[0]:
                raise InvalidPipelineError(
                    f"configuration: the modules of layer {layers[0]} ({', '.join(model.module_names()[layers[0]])}) "
                    f"must be in one stage, got stages {k - 1} and {k}")
            split.append(layers)
        for i, modules in enumerate(model.module_names()):
            missing = [m for m in modules if m not in seen]
            if missing:
                raise InvalidPipelineError(f"configuration: module {missing[0]!r} (layer {i}) is in no stage")
        return cls(split=split, **fields)

    def module_names(self, model: LayerModel) -> tuple[tuple[str, ...], ...]:
        """Each stage's torchtitan 0.3.0 module names (``module_fqns_per_model_part``)."""
        model.check(self)
        names = model.module_names()
        return tuple(tuple(n for i in group for n in names[i]) for group in self.split)

    def stage_of_rank(self) -> tuple[tuple[int, ...], ...]:
        """The stages each rank holds (:func:`stage_ranks`)."""
        return stage_ranks(self.num_stages, self.num_ranks, self.layout)

    def families(self) -> tuple[str, ...]:
        """The planner's families of this shape: their torch stage style is the layout and they run v stages per
        rank."""
        return tuple(key for key in planner_families()
                     if family(key).torch_style == self.layout and family(key).runs_chunks(self.stages_per_rank))

    def torchtitan_runs(self, variant: Variant) -> bool:
        """Whether torchtitan runs ``variant`` with this recomputation: a split backward only without any."""
        return not (variant.split_backward and self.recomputation.recomputes)

    def torchtitan_variants(self) -> tuple[tuple[Family, Variant], ...]:
        """The (family, variant) pairs of :meth:`families` torchtitan runs with this recomputation."""
        return tuple((family(key), v) for key in self.families() for v in family(key).variants
                     if self.torchtitan_runs(v))
