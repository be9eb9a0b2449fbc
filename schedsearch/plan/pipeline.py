"""A pipeline described as its engineer knows it: milliseconds, bytes, ranks.

:class:`Pipeline` is the input of :func:`schedsearch.plan`: the number of
pipeline ranks, the stages (or the layers, to be split into stages by the
library's DP for each schedule family), each with its forward, backward and
optionally input-gradient / weight-gradient times in milliseconds (floats),
the activation bytes one micro-batch holds between its forward and its
backward, the bytes a stage sends to the next one (its output; the gradient
coming back is the same size), and the parameter bytes the stage keeps for
the whole step; the
memory budget per rank; the point-to-point transfer between neighbouring
ranks; the number of micro-batches; the schedule families allowed.

It is read from TOML or JSON and written back the same
(:meth:`Pipeline.load`, :meth:`Pipeline.save`); byte amounts may be given as
strings with a unit (``"80 GiB"``, ``"512 MB"``). Bad values raise
:class:`~schedsearch.errors.InvalidPipelineError` naming the entity, the field
and the value. :meth:`Pipeline.from_profile` builds one from the runtime
profiler's :class:`~schedsearch.runtime.profile.Profile` or from a PipeDream
profile file (``graph.txt``).

The integers the solver needs are chosen once, later, by
:func:`schedsearch.units.choose_units`; nothing here is rounded.
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

from schedsearch._io import toml_value as _toml_value
from schedsearch._json import short_repr
from schedsearch.errors import FormatError, InvalidPipelineError, InvalidProblemError
from schedsearch.handcrafted.families import planner_families
from schedsearch.problem import MAX_INT, MAX_MICROBATCHES, MAX_TOTAL
from schedsearch.plan.calibration import P2P as P2P, Calibration
from schedsearch.plan.model_spec import parse_model_spec
from schedsearch.units import (
    Units,
    format_bytes as format_bytes,
    number as _number,
    parse_bytes as parse_bytes,
    read_ms as _time,
)

__all__ = [
    "FAMILIES",
    "Stage",
    "P2P",
    "Pipeline",
    "parse_bytes",
    "format_bytes",
    "split_layers",
]

#: The schedule families :func:`schedsearch.plan` searches, in table order: the
#: records of :mod:`schedsearch.handcrafted.families` the planner offers
#: (``"1f1b"``: one stage per rank, 1F1B or ZB-H1; ``"interleaved"``: the
#: "loop" layout with 2..4 chunks per rank; ``"zb-v"`` and ``"dualpipev"``: the
#: "v" layout; ``"dualpipe"``: two opposite pipelines, two parameter copies per rank).
FAMILIES = planner_families()

#: Smallest relative rounding tolerance on the times: tighter ones need time units so fine that
#: the integers outgrow the model's range for ordinary ratios of times, and no profile is that precise.
MIN_TIME_TOLERANCE = 1e-6

def _name(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidPipelineError(f"{where}: 'name' must be a string, got {short_repr(value)}")
    return value


@attrs.frozen(kw_only=True)
class Stage:
    """One stage (or one layer) of the model: times in milliseconds, memory in bytes.

    ``activation_bytes`` is what one micro-batch holds on the stage's rank
    from the start of its forward until its backward ends (with the split,
    until its weight gradient ends); ``parameter_bytes`` is what the stage
    holds for the whole step (weights, and gradients and optimizer state as
    you count them). ``send_bytes`` is the tensor one micro-batch's forward
    sends to the next stage (its output; the gradient the next stage sends
    back is as large): it sizes the point-to-point transfer at the stage's
    boundary. Not given (None), the transfer is sized by ``activation_bytes``,
    an upper bound when the stage keeps its output for its backward; give it
    whenever the two differ (a transformer block holds many times what it
    sends). ``input_grad_ms`` and ``weight_grad_ms`` (both or neither) are
    the two halves of a split backward (zero-bubble I and W).

    Examples
    --------
    >>> from schedsearch.plan.pipeline import Stage
    >>> Stage(name="block0", forward_ms=1.5, backward_ms=3.0, activation_bytes="256 MiB").activation_bytes
    268435456
    >>> Stage(name="block0", forward_ms=1.5, backward_ms=3.0, activation_bytes="256 MiB",
    ...       send_bytes="16 MiB").p2p_bytes
    16777216
    >>> Stage(name="block1", forward_ms=-1.0, backward_ms=3.0)
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidPipelineError: stage 'block1': 'forward_ms' must be a time in milliseconds from 0 to 1e12, got -1.0
    """

    name: str = ""
    forward_ms: float
    backward_ms: float
    input_grad_ms: float | None = None
    weight_grad_ms: float | None = None
    activation_bytes: int = attrs.field(default=0)
    parameter_bytes: int = attrs.field(default=0)
    send_bytes: int | None = None

    def __attrs_post_init__(self) -> None:
        where = f"stage {_name('stage', self.name)!r}"
        for field in ("forward_ms", "backward_ms"):
            object.__setattr__(self, field, _time(where, field, getattr(self, field)))
        for field in ("input_grad_ms", "weight_grad_ms"):
            object.__setattr__(self, field, _time(where, field, getattr(self, field), optional=True))
        if (self.input_grad_ms is None) != (self.weight_grad_ms is None):
            raise InvalidPipelineError(
                f"{where}: give both 'input_grad_ms' and 'weight_grad_ms' or neither, got "
                f"input_grad_ms={self.input_grad_ms!r}, weight_grad_ms={self.weight_grad_ms!r}"
            )
        for field in ("activation_bytes", "parameter_bytes"):
            object.__setattr__(self, field, parse_bytes(getattr(self, field), where, field))
        if self.send_bytes is not None:
            object.__setattr__(self, "send_bytes", parse_bytes(self.send_bytes, where, "send_bytes"))

    @property
    def p2p_bytes(self) -> int:
        """The bytes one micro-batch sends to the next stage: ``send_bytes``, or ``activation_bytes`` when not given."""
        return self.activation_bytes if self.send_bytes is None else self.send_bytes

    @property
    def has_split(self) -> bool:
        """True when the input- and weight-gradient times are given."""
        return self.input_grad_ms is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "forward_ms": self.forward_ms, "backward_ms": self.backward_ms}
        if self.has_split:
            out.update(input_grad_ms=self.input_grad_ms, weight_grad_ms=self.weight_grad_ms)
        out.update(activation_bytes=format_bytes(self.activation_bytes),
                   parameter_bytes=format_bytes(self.parameter_bytes))
        if self.send_bytes is not None:
            out["send_bytes"] = format_bytes(self.send_bytes)
        return out


def _stages(value: Any) -> tuple[Stage, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidPipelineError(f"pipeline: 'stages' must be a list of stages, got {short_repr(value)}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Stage):
            out.append(item)
        elif isinstance(item, Mapping):
            unknown = sorted(set(item) - {f.name for f in attrs.fields(Stage)}, key=repr)
            if unknown:
                raise InvalidPipelineError(f"pipeline: stage {i}: unknown field(s) {short_repr(unknown)}")
            missing = [f for f in ("forward_ms", "backward_ms") if f not in item]
            if missing:
                raise InvalidPipelineError(f"pipeline: stage {i}: missing field(s) {missing}")
            out.append(Stage(**{"name": f"s{i}", **item}))
        else:
            raise InvalidPipelineError(f"pipeline: stage {i} must be a table of fields, got {short_repr(item)}")
    return tuple(out)


def _p2p(value: Any) -> P2P:
    if isinstance(value, P2P):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {f.name for f in attrs.fields(P2P)}, key=repr)
        if unknown:
            raise InvalidPipelineError(f"pipeline: 'p2p': unknown field(s) {short_repr(unknown)}")
        return P2P(**value)
    raise InvalidPipelineError(
        f"pipeline: 'p2p' must be a table (latency_ms, bandwidth_bytes_per_s or time_ms), got {short_repr(value)}")


def _families(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidPipelineError(
            f"pipeline: 'families' must be a family name or a list of them, got {short_repr(value)}")
    out = tuple(value)
    for f in out:
        allowed = planner_families()  # read at each check: the registry is the only list
        if not isinstance(f, str) or f not in allowed:
            raise InvalidPipelineError(
                f"pipeline: 'families' entry must be one of {list(allowed)}, got {short_repr(f)}")
    if not out:
        raise InvalidPipelineError("pipeline: 'families' must name at least one family, got []")
    twice = sorted({f for f in out if out.count(f) > 1})
    if twice:
        raise InvalidPipelineError(f"pipeline: 'families' names {twice[0]!r} more than once")
    return out


def _sizes(value: Any) -> tuple[float, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidPipelineError(f"pipeline: 'microbatch_sizes' must be a list of numbers, got {short_repr(value)}")
    out = []
    for i, size in enumerate(value):
        number = _number(size)
        if number is None or not number > 0:
            raise InvalidPipelineError(
                f"pipeline: 'microbatch_sizes' entry {i} must be a positive number, got {short_repr(size)}")
        out.append(number)
    return tuple(out)


def _model_spec(value: Any) -> str | None:
    """A model spec (``mlp:8x64``, ``transformer:4x32``) in its normal form, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidPipelineError(f"pipeline: 'model_spec' must be a model spec such as 'transformer:4x32', got "
                                   f"{short_repr(value)}")
    try:
        return str(parse_model_spec(value))
    except InvalidProblemError as exc:
        raise InvalidPipelineError(f"pipeline: 'model_spec': {exc}") from None


def _budget(value: Any) -> int | None:
    return None if value is None else parse_bytes(value, "pipeline", "memory_budget_bytes")


#: Most transformer layers one entry may stand for (``layers_per_entry``).
MAX_LAYERS_PER_ENTRY = 100_000
#: The layers an end entry may hold beyond its transformer layers (``end_layers``): the first, the last.
END_LAYERS = ("embedding", "head")


def _layers_per_entry(value: Any) -> int | tuple[int, ...] | None:
    if value is None:
        return None
    counts = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(counts, (str, bytes, Mapping)) or not isinstance(counts, Sequence) or not counts:
        raise InvalidPipelineError(f"pipeline: 'layers_per_entry' must be a count of transformer layers or a list of "
                                   f"one per entry, got {short_repr(value)}")
    for i, count in enumerate(counts):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_LAYERS_PER_ENTRY:
            where = "" if counts is not value else f" entry {i}"
            raise InvalidPipelineError(f"pipeline: 'layers_per_entry'{where} must be an integer from 1 to "
                                       f"{MAX_LAYERS_PER_ENTRY:,}, got {short_repr(count)}")
    return value if counts is not value else tuple(counts)


def _end_layers(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidPipelineError(f"pipeline: 'end_layers' must be a list of {list(END_LAYERS)}, got "
                                   f"{short_repr(value)}")
    out = tuple(value)
    for name in out:
        if not isinstance(name, str) or name not in END_LAYERS:
            raise InvalidPipelineError(f"pipeline: 'end_layers' entry must be one of {list(END_LAYERS)}, got "
                                       f"{short_repr(name)}")
    if len(set(out)) < len(out):
        raise InvalidPipelineError(f"pipeline: 'end_layers' names {short_repr(out)}: each at most once")
    return tuple(n for n in END_LAYERS if n in out)


@attrs.frozen(kw_only=True)
class Pipeline:
    """A pipeline-parallel training step to plan.

    Parameters
    ----------
    num_ranks:
        Pipeline ranks (GPUs in the pipeline dimension).
    stages:
        The stages in model order, or, with ``partition="dp"``, the layers.
    num_microbatches:
        Micro-batches per step.
    memory_budget_bytes:
        Memory per rank (bytes, or a string such as ``"80 GiB"``); None =
        unbounded.
    p2p:
        Transfer between neighbouring ranks (:class:`P2P`).
    families:
        Schedule families allowed (default: all of :data:`FAMILIES`).
    partition:
        ``"fixed"``: ``stages`` are the stages; a family applies when it
        needs that many (``num_ranks`` x chunks). ``"dp"``: ``stages`` are
        layers, split for each family into as many contiguous stages as it
        needs by the library's DP (least maximum forward + backward time).
    fb_overlap_ms:
        Duration of an overlapped forward-and-backward pair (DualPipe's F&B),
        if your runtime overlaps them; None = no overlapped pairs.
    time_tolerance:
        Largest relative rounding error allowed on any stage time when the
        times become integers (default 1%).
    action_overhead_ms:
        What the pipeline runtime adds to every action beyond its compute
        (its bookkeeping, posting sends and receives), in milliseconds: added
        to each stage's forward, backward, input- and weight-gradient time of
        every family's stages (:meth:`stages_for`; once per stage, not per
        layer); a smaller micro-batch's times scale with its size overhead
        included. ``fb_overlap_ms`` is an overlapped pair's own time, taken
        as given. A calibration (:mod:`schedsearch.plan.calibration`) measures it.
    step_overhead_ms:
        What a step costs once beyond its actions (its set-up, the gradient
        reduction at its end), in milliseconds: not part of any plan's
        makespan, added to it in the step time a run of the plan is
        predicted to take (``plan.json``'s ``prediction``). A calibration
        measures it.
    microbatch_sizes:
        Sizes of the micro-batches in order (samples or tokens; one per
        micro-batch), when they differ: a batch of 30 in 4 micro-batches is
        ``[8, 8, 7, 7]`` (how ``torch.tensor_split`` cuts it). The stage
        times and activation bytes are those of the largest; a smaller
        micro-batch's times scale with its size, while its activations are
        counted at the largest size's (an upper bound: a plan that fits the
        budget fits at run time). None: all the same size.
    model_spec:
        The model the stage times were measured on, as a spec of the
        runtime's built-in models (``transformer:4x32``, ``mlp:8x64``; see
        :func:`~schedsearch.plan.model_spec.parse_model_spec`), or None.
        ``schedsearch profile`` records the model it profiled;
        ``schedsearch run`` builds it to run the plan, so that the run's
        prediction is of the model that runs. A spec that does not parse is
        refused.
    layers_per_entry:
        How many transformer layers each entry stands for: one count for
        every entry (``4``) or a list of one per entry. Given, the
        description is planned as a model in layers
        (:meth:`~schedsearch.plan.layers.LayerModel.from_pipeline`): each
        entry's figures are divided among its layers, and the split, the
        stages per rank (interleaved and V families included) and the
        recomputation are searched with the schedule. None (default): the
        entries are planned as they are (``partition``).
    end_layers:
        With ``layers_per_entry``: what the end entries hold beyond their
        transformer layers, ``["embedding", "head"]`` (the first entry the
        embedding, the last the head), either, or ``[]`` (nothing). Each is
        planned as a layer of its own: the end entry's figures less its
        layers', which cost what a layer of the entry next to it costs. None
        (not said): each entry's figures are divided among its transformer
        layers, the end entries' included, and the result says so.
    name:
        Free text.

    Examples
    --------
    >>> from schedsearch import Pipeline
    >>> pipeline = Pipeline.from_dict({
    ...     "num_ranks": 2, "num_microbatches": 4, "memory_budget_bytes": "8 GiB",
    ...     "stages": [{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB"}] * 2})
    >>> print(pipeline)
    pipeline: 2 ranks, 2 stages, 4 micro-batches, budget 8 GiB per rank, families 1f1b, interleaved, zb-v, dualpipev, dualpipe
    >>> Pipeline.from_dict({**pipeline.to_dict(), "families": ["zb-h2"]})
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidPipelineError: pipeline: 'families' entry must be one of ['1f1b', 'interleaved', 'zb-v', 'dualpipev', 'dualpipe'], got 'zb-h2'
    """

    num_ranks: int
    stages: tuple[Stage, ...] = attrs.field(converter=_stages)
    num_microbatches: int
    memory_budget_bytes: int | None = attrs.field(default=None, converter=_budget)
    p2p: P2P = attrs.field(factory=P2P, converter=_p2p)
    families: tuple[str, ...] = attrs.field(default=FAMILIES, converter=_families)
    partition: str = "fixed"
    fb_overlap_ms: float | None = None
    time_tolerance: float = 0.01
    microbatch_sizes: tuple[float, ...] | None = attrs.field(default=None, converter=_sizes)
    action_overhead_ms: float = 0.0
    step_overhead_ms: float = 0.0
    model_spec: str | None = attrs.field(default=None, converter=_model_spec)
    layers_per_entry: int | tuple[int, ...] | None = attrs.field(default=None, converter=_layers_per_entry)
    end_layers: tuple[str, ...] | None = attrs.field(default=None, converter=_end_layers)
    name: str = ""

    def __attrs_post_init__(self) -> None:
        _name("pipeline", self.name)
        if not self.stages:
            raise InvalidPipelineError("pipeline: 'stages' must hold at least one stage, got []")
        self._check_entries()
        for field in ("num_ranks", "num_microbatches"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidPipelineError(f"pipeline: {field!r} must be an integer >= 1, got {short_repr(value)}")
        if self.num_microbatches > MAX_MICROBATCHES:
            raise InvalidPipelineError(
                f"pipeline: 'num_microbatches' must be at most {MAX_MICROBATCHES:,} (the schedule model's "
                f"limit), got {short_repr(self.num_microbatches)}")
        if not isinstance(self.partition, str) or self.partition not in ("fixed", "dp"):
            raise InvalidPipelineError(
                f"pipeline: 'partition' must be 'fixed' or 'dp', got {short_repr(self.partition)}")
        if self.partition == "fixed":
            for s in self.stages:
                if s.forward_ms <= 0 or s.backward_ms <= 0:
                    field = "forward_ms" if s.forward_ms <= 0 else "backward_ms"
                    raise InvalidPipelineError(
                        f"stage {s.name!r}: {field!r} must be > 0 for a stage, got {getattr(s, field)!r}"
                    )
        if self.num_ranks > len(self.stages):  # every family gives each rank at least one stage
            raise InvalidPipelineError(
                f"pipeline: 'num_ranks' must be at most the number of stages or layers ({len(self.stages)}): "
                f"each rank holds one at least, got {short_repr(self.num_ranks)}")
        object.__setattr__(self, "fb_overlap_ms", _time("pipeline", "fb_overlap_ms", self.fb_overlap_ms, True))
        if self.fb_overlap_ms == 0:
            raise InvalidPipelineError("pipeline: 'fb_overlap_ms' must be > 0 (or absent), got 0.0")
        object.__setattr__(self, "action_overhead_ms", _time("pipeline", "action_overhead_ms", self.action_overhead_ms))
        object.__setattr__(self, "step_overhead_ms", _time("pipeline", "step_overhead_ms", self.step_overhead_ms))
        tol = _number(self.time_tolerance)
        if tol is None or not MIN_TIME_TOLERANCE <= tol < 0.5:
            raise InvalidPipelineError(
                f"pipeline: 'time_tolerance' must be in [{MIN_TIME_TOLERANCE:g}, 0.5), got {short_repr(self.time_tolerance)}")
        if self.microbatch_sizes is not None and len(self.microbatch_sizes) != self.num_microbatches:
            raise InvalidPipelineError(
                f"pipeline: 'microbatch_sizes' must give one size per micro-batch ({self.num_microbatches}), "
                f"got {len(self.microbatch_sizes)}"
            )
        if self.size_ratios() is not None and min(self.size_ratios()) < MIN_TIME_TOLERANCE:
            raise InvalidPipelineError(
                f"pipeline: 'microbatch_sizes' range from {min(self.microbatch_sizes):g} to "
                f"{max(self.microbatch_sizes):g}: a ratio beyond {1 / MIN_TIME_TOLERANCE:g}")
        if self.memory_budget_bytes is not None:
            for s in self.stages:
                if s.parameter_bytes > self.memory_budget_bytes:
                    raise InvalidPipelineError(
                        f"stage {s.name!r}: 'parameter_bytes' {_gib(s.parameter_bytes)} exceed the memory budget "
                        f"per rank {_gib(self.memory_budget_bytes)}"
                    )

    def _check_entries(self) -> None:
        """``layers_per_entry`` gives one count per entry; ``end_layers`` goes with it, and each end it names has an
        entry of plain layers beside it (whose per-layer figures the end entry's layers take)."""
        E = len(self.stages)
        if isinstance(self.layers_per_entry, tuple) and len(self.layers_per_entry) != E:
            raise InvalidPipelineError(f"pipeline: 'layers_per_entry' must give one count per entry ({E}), got "
                                       f"{len(self.layers_per_entry)}: {short_repr(list(self.layers_per_entry))}")
        if self.end_layers is not None and self.layers_per_entry is None:
            raise InvalidPipelineError(f"pipeline: 'end_layers' {short_repr(list(self.end_layers))} says what the end "
                                       f"entries hold beyond their layers: give 'layers_per_entry' with it")
        if self.end_layers and E < 1 + len(self.end_layers):
            raise InvalidPipelineError(
                f"pipeline: 'end_layers' {short_repr(list(self.end_layers))} needs an entry of transformer layers "
                f"only beside each end entry that holds one, the description has {E} entries")

    def entry_layers(self) -> tuple[int, ...] | None:
        """The transformer layers each entry stands for (``layers_per_entry``), or None when not given."""
        if self.layers_per_entry is None:
            return None
        if isinstance(self.layers_per_entry, int):
            return (self.layers_per_entry,) * len(self.stages)
        return self.layers_per_entry

    def __str__(self) -> str:
        budget = "unbounded" if self.memory_budget_bytes is None else f"{format_bytes(self.memory_budget_bytes)} per rank"
        what = "layers" if self.partition == "dp" else "stages"
        return (
            f"pipeline{' ' + repr(self.name) if self.name else ''}: {self.num_ranks} ranks, {len(self.stages)} {what}, "
            f"{self.num_microbatches} micro-batches{self._sizes_text()}, budget {budget}, "
            f"families {', '.join(self.families)}"
        )

    def _sizes_text(self) -> str:
        if self.size_ratios() is None:
            return ""
        return f" (sizes {min(self.microbatch_sizes):g} to {max(self.microbatch_sizes):g})"

    # ------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Pipeline:
        """A pipeline from a mapping of its fields (what :meth:`to_dict` gives)."""
        if not isinstance(document, Mapping):
            raise InvalidPipelineError(f"pipeline: the description must be a table of fields, got {short_repr(document)}")
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(document) - known, key=repr)
        if unknown:
            raise InvalidPipelineError(f"pipeline: unknown field(s) {short_repr(unknown)}; known: {sorted(known)}")
        missing = sorted({"num_ranks", "stages", "num_microbatches"} - set(document))
        if missing:
            raise InvalidPipelineError(f"pipeline: missing field(s) {missing}")
        return cls(**document)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data; byte amounts as exact unit strings where one divides them."""
        out: dict[str, Any] = {"name": self.name}
        if self.model_spec is not None:
            out["model_spec"] = self.model_spec
        out.update(num_ranks=self.num_ranks, num_microbatches=self.num_microbatches)
        if self.memory_budget_bytes is not None:
            out["memory_budget_bytes"] = format_bytes(self.memory_budget_bytes)
        out["families"] = list(self.families)
        out["partition"] = self.partition
        if self.fb_overlap_ms is not None:
            out["fb_overlap_ms"] = self.fb_overlap_ms
        out["time_tolerance"] = self.time_tolerance
        if self.microbatch_sizes is not None:
            out["microbatch_sizes"] = [int(x) if x == int(x) else x for x in self.microbatch_sizes]
        if self.action_overhead_ms:
            out["action_overhead_ms"] = self.action_overhead_ms
        if self.step_overhead_ms:
            out["step_overhead_ms"] = self.step_overhead_ms
        if self.layers_per_entry is not None:
            out["layers_per_entry"] = (self.layers_per_entry if isinstance(self.layers_per_entry, int)
                                       else list(self.layers_per_entry))
        if self.end_layers is not None:
            out["end_layers"] = list(self.end_layers)
        p2p = self.p2p.to_dict()
        if p2p:
            out["p2p"] = p2p
        out["stages"] = [s.to_dict() for s in self.stages]
        return out

    @classmethod
    def load(cls, path: str | Path, calibration: Any = None) -> Pipeline:
        """Read a pipeline from a ``.toml`` or ``.json`` file, merged with a calibration.

        The file may name a calibration file (:mod:`schedsearch.plan.calibration`)
        with a top-level key ``calibration = "calibration.toml"`` (relative to
        the pipeline file); ``calibration`` (a
        :class:`~schedsearch.plan.calibration.Calibration` or the path of one)
        takes its place. The pipeline returned has the calibration applied
        (:meth:`calibrated`) and no reference to the file.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidPipelineError(f"pipeline file {str(path)!r}: cannot read it ({exc.strerror})") from None
        except UnicodeDecodeError as exc:
            raise InvalidPipelineError(f"pipeline file {str(path)!r}: not UTF-8 text ({exc.reason} at byte "
                                       f"{exc.start})") from None
        try:
            document = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise InvalidPipelineError(f"pipeline file {str(path)!r}: not valid {path.suffix[1:] or 'TOML'}: {exc}") from None
        except RecursionError:
            raise InvalidPipelineError(f"pipeline file {str(path)!r}: nested too deeply to read") from None
        if isinstance(document, dict) and "calibration" in document:
            named = document.pop("calibration")
            if not isinstance(named, str):
                raise InvalidPipelineError(f"pipeline file {str(path)!r}: 'calibration' must be the path of a "
                                           f"calibration file, got {short_repr(named)}")
            if calibration is None:
                calibration = path.parent / named
        pipeline = cls.from_dict(document)
        return pipeline if calibration is None else pipeline.calibrated(calibration)

    def calibrated(self, calibration: Any) -> Pipeline:
        """This pipeline with a calibration's link as its ``p2p``, its overhead per action as its
        ``action_overhead_ms`` and its overhead per step as its ``step_overhead_ms`` (a
        :class:`~schedsearch.plan.calibration.Calibration` or the path of its file). They replace what the
        pipeline had (calibrating twice gives the same pipeline as once); the stage times stay as given, the
        overhead per action being added where the stages of a family are made."""
        if isinstance(calibration, (str, Path)):
            calibration = Calibration.load(calibration)
        if not isinstance(calibration, Calibration):
            raise InvalidPipelineError(f"pipeline: 'calibration' must be a Calibration or the path of its file, got "
                                       f"{type(calibration).__name__}")
        return attrs.evolve(self, p2p=calibration.p2p, action_overhead_ms=calibration.action_overhead_ms,
                            step_overhead_ms=calibration.step_overhead_ms)

    def save(self, path: str | Path) -> Path:
        """Write the pipeline as TOML (or JSON when the name ends in ``.json``)."""
        path = Path(path)
        text = json.dumps(self.to_dict(), indent=2) + "\n" if path.suffix.lower() == ".json" else self.to_toml()
        path.write_text(text)
        return path

    def to_toml(self) -> str:
        """The TOML text of :meth:`to_dict`.

        Examples
        --------
        >>> from schedsearch import Pipeline
        >>> text = Pipeline(num_ranks=1, num_microbatches=2, stages=[{"forward_ms": 1.0, "backward_ms": 2.0}]).to_toml()
        >>> print(text)  # doctest: +ELLIPSIS
        name = ""
        num_ranks = 1
        num_microbatches = 2
        families = ["1f1b", "interleaved", "zb-v", "dualpipev", "dualpipe"]
        ...
        [[stages]]
        name = "s0"
        forward_ms = 1.0
        backward_ms = 2.0
        activation_bytes = 0
        parameter_bytes = 0
        <BLANKLINE>
        """
        doc = self.to_dict()
        lines: list[str] = []
        tables: list[str] = []
        for key, value in doc.items():
            if key == "stages":
                continue
            if isinstance(value, dict):
                tables.append(f"\n[{key}]")
                tables.extend(f"{k} = {_toml_value(v)}" for k, v in value.items())
            else:
                lines.append(f"{key} = {_toml_value(value)}")
        lines.extend(tables)
        for stage in doc["stages"]:
            lines.append("\n[[stages]]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in stage.items())
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ profiles
    @classmethod
    def from_profile(
        cls,
        profile: Any,
        *,
        num_ranks: int,
        num_microbatches: int,
        memory_budget_bytes: int | str | None = None,
        partition: str | None = None,
        weight_grad_share: float | None = None,
        microbatch_size: int | None = None,
        **fields: Any,
    ) -> Pipeline:
        """A pipeline from a profile: a runtime :class:`~schedsearch.runtime.profile.Profile` or a PipeDream ``graph.txt``.

        A runtime profile gives stages (its input-gradient and weight-gradient
        times too; ``microbatch_size`` picks one profiled size, default the
        base one) and the model it measured (``model_spec``, when the
        profile names one). A PipeDream profile (a path) gives layers in topological
        order; they are split into stages with the library's DP
        (``partition="dp"``, the default for it). PipeDream does not measure
        the split backward: ``weight_grad_share`` (for example 0.5) sets the
        weight gradient to that share of the backward, otherwise the split
        families are left out. ``fields`` go to :class:`Pipeline`
        (``p2p``, ``families``, ``fb_overlap_ms``, ...).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from schedsearch import Pipeline
        >>> rows = [f"node{i} -- Linear -- forward_compute_time={i}.0, backward_compute_time={2 * i}.0, "
        ...         f"activation_size=1048576.0, parameter_size=4096.0" for i in (1, 2, 3)]
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "mlp" / "graph.txt"
        ...     path.parent.mkdir()
        ...     _ = path.write_text("\\n".join(rows + ["\\tnode1 -- node2", "\\tnode2 -- node3"]))
        ...     pipeline = Pipeline.from_profile(path, num_ranks=2, num_microbatches=4)
        >>> print(pipeline)
        pipeline 'mlp': 2 ranks, 3 layers, 4 micro-batches, budget unbounded, families 1f1b, interleaved, zb-v, dualpipev, dualpipe
        >>> [(s.forward_ms, s.backward_ms) for s in pipeline.stages]
        [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]
        """
        if isinstance(profile, (str, Path)):
            stages = _pipedream_layers(Path(profile), weight_grad_share)
            path = Path(profile)
            fields.setdefault("name", path.parent.name if path.name == "graph.txt" else path.stem)
            partition = partition or "dp"
        else:
            stages = _runtime_stages(profile, microbatch_size)
            partition = partition or "fixed"
            fields.setdefault("model_spec", getattr(profile, "model_spec", None))
        return cls(num_ranks=num_ranks, num_microbatches=num_microbatches, memory_budget_bytes=memory_budget_bytes,
                   stages=stages, partition=partition, **fields)

    # ------------------------------------------------------------ stages of a family
    def size_ratios(self) -> tuple[float, ...] | None:
        """Each micro-batch's size over the largest (the factor on its stage times), or None when all are equal.

        Examples
        --------
        >>> from schedsearch import Pipeline
        >>> Pipeline(num_ranks=1, num_microbatches=4, microbatch_sizes=[8, 8, 7, 7],
        ...          stages=[{"forward_ms": 1.0, "backward_ms": 2.0}]).size_ratios()
        (1.0, 1.0, 0.875, 0.875)
        """
        sizes = self.microbatch_sizes
        if sizes is None or len(set(sizes)) == 1:
            return None
        top = max(sizes)
        return tuple(s / top for s in sizes)

    def stages_for(self, num_stages: int) -> tuple[tuple[Stage, ...], tuple[tuple[int, ...], ...]] | None:
        """The stages when the model runs as ``num_stages`` stages, and the layers of each.

        With ``partition="fixed"`` only the given count applies (None
        otherwise); with ``"dp"`` the layers are split by :func:`split_layers`
        (None when there are fewer layers than stages). Each stage's action
        times carry ``action_overhead_ms`` (added once per stage).
        """
        if self.partition == "fixed":
            if len(self.stages) != num_stages:
                return None
            return tuple(_with_overhead(s, self.action_overhead_ms) for s in self.stages), \
                tuple((i,) for i in range(num_stages))
        if len(self.stages) < num_stages:
            return None
        groups = split_layers(self.stages, num_stages)
        return tuple(_with_overhead(_merge(self.stages, g, k), self.action_overhead_ms)
                     for k, g in enumerate(groups)), groups


# ------------------------------------------------------------ checks of plan()'s input
def check_plan_arguments(where: str, pipeline: Any) -> None:
    """Refuse a ``pipeline`` argument of :func:`plan` or :func:`plan_sweep` that is not a :class:`Pipeline`.

    The other arguments are options, checked by :func:`schedsearch.options.check_options`.
    """
    if not isinstance(pipeline, Pipeline):
        raise InvalidPipelineError(f"{where}: 'pipeline' must be a Pipeline (Pipeline.load or Pipeline.from_dict "
                                   f"read one), got {type(pipeline).__name__}")


def exact_bytes(amount: int) -> str:
    """A byte amount, exactly: ``"1.5 GiB"``, ``"1073741825 B"``."""
    for name, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        text = f"{amount / size:.6g}"
        if amount >= size and Fraction(text) * size == amount:
            return f"{text} {name}"
    return f"{amount} B"


def exact_memory_unit(pipeline: Pipeline, amounts: Sequence[int], units: Units) -> Units:
    """``units`` with the largest memory unit dividing every amount (none rounded), when the budget stays in range.

    An amount rounded up to whole units can refuse a plan that fits in
    bytes; with a unit dividing every activation and parameter amount the
    integer memory is the byte memory (the budget rounded down loses nothing).
    """
    unit = 0
    for a in amounts:
        unit = math.gcd(unit, a)
    budget = pipeline.memory_budget_bytes or 0
    if unit == 0 or unit >= units.memory_unit_bytes or max(budget, *amounts) // unit > MAX_INT:
        return units
    return attrs.evolve(units, memory_unit_bytes=unit, max_memory_error=0.0)


def check_integer_range(pipeline: Pipeline, times: dict[str, float], amounts: Sequence[int], units: Units) -> None:
    """Refuse, before any search, times and amounts whose integers leave the schedule model's range.

    Every time in units and every memory amount in units is at most
    :data:`~schedsearch.problem.MAX_INT`, and the longest run (every
    micro-batch's blocks one after the other) at most
    :data:`~schedsearch.problem.MAX_TOTAL`. Whatever else the schedule
    model refuses, :func:`~schedsearch.plan.planner.plan` says per candidate
    before the search.
    """
    positive = {k: v for k, v in times.items() if v > 0}
    name = max(positive, key=lambda k: positive[k])
    longest, shortest = positive[name], min(positive.values())
    if longest / units.time_unit_ms > MAX_INT:
        raise InvalidPipelineError(
            f"{pipeline}: the times range from {shortest:g} ms to {longest:g} ms ({name}): on the time unit "
            f"{units.time_unit_ms:g} ms that keeps each within the tolerance {pipeline.time_tolerance:g}, the "
            f"longest is {longest / units.time_unit_ms:.3g} units, beyond the schedule model's 2**40")
    total = 4 * pipeline.num_microbatches * math.fsum(positive.values()) / units.time_unit_ms
    if total > MAX_TOTAL:
        raise InvalidPipelineError(
            f"{pipeline}: {pipeline.num_microbatches} micro-batches of these times run {total:.3g} time units of "
            f"{units.time_unit_ms:g} ms one after the other, beyond the schedule model's 2**61")
    largest = max(amounts, default=0)
    if -(-largest // units.memory_unit_bytes) > MAX_INT:
        raise InvalidPipelineError(
            f"{pipeline}: the memory amounts range from {exact_bytes(min(a for a in amounts if a > 0))} to "
            f"{exact_bytes(largest)}: on the memory unit {exact_bytes(units.memory_unit_bytes)} the largest is beyond the "
            f"schedule model's 2**40 units")


def _gib(amount: int) -> str:
    return f"{amount / 2**30:.3g} GiB"


def _sum_ms(values: Sequence[float]) -> float:
    """The sum of times as written (decimals, exactly), as the nearest float: 0.1 + 0.2 is 0.3."""
    return float(sum(Fraction(repr(v)) for v in values))


def _with_overhead(stage: Stage, overhead_ms: float) -> Stage:
    """``stage`` with ``overhead_ms`` added to each of its action times (exactly as decimals)."""
    if not overhead_ms:
        return stage
    times = {f: _sum_ms([getattr(stage, f), overhead_ms]) for f in ("forward_ms", "backward_ms")}
    if stage.has_split:
        times.update({f: _sum_ms([getattr(stage, f), overhead_ms]) for f in ("input_grad_ms", "weight_grad_ms")})
    return attrs.evolve(stage, **times)


def _merge(layers: Sequence[Stage], group: Sequence[int], index: int) -> Stage:
    split = all(layers[i].has_split for i in group)
    first, last = layers[group[0]].name, layers[group[-1]].name
    return Stage(
        name=f"stage{index} ({first}..{last})" if len(group) > 1 else f"stage{index} ({first})",
        forward_ms=_sum_ms([layers[i].forward_ms for i in group]),
        backward_ms=_sum_ms([layers[i].backward_ms for i in group]),
        input_grad_ms=_sum_ms([layers[i].input_grad_ms for i in group]) if split else None,
        weight_grad_ms=_sum_ms([layers[i].weight_grad_ms for i in group]) if split else None,
        activation_bytes=sum(layers[i].activation_bytes for i in group),
        parameter_bytes=sum(layers[i].parameter_bytes for i in group),
        send_bytes=layers[group[-1]].p2p_bytes,  # a stage sends what its last layer sends
    )


def split_layers(layers: Sequence[Stage], num_stages: int) -> tuple[tuple[int, ...], ...]:
    """Split layers (in model order) into ``num_stages`` non-empty contiguous stages.

    The split has the least maximum stage load (a layer's load: its forward
    + backward time), found by a DP over the chain (:func:`_least_max_split`,
    exact: the loads are summed as integers, so identical layers tie
    exactly); of the optimal splits it takes the one with the fewest stages
    and, from the last stage back, each stage as long as it can be. A stage
    it leaves empty is filled by cutting the stage with the most layers at
    its load's middle, so every stage holds at least one layer. (This is the
    split :func:`~schedsearch.partition.partition_dpl` gives a chain without
    communication, without its imports: a call pays nothing for it.)

    Examples
    --------
    >>> from schedsearch.plan.pipeline import Stage, split_layers
    >>> layers = [Stage(name=f"l{i}", forward_ms=t, backward_ms=2 * t) for i, t in enumerate([1.0, 1.0, 2.0, 4.0])]
    >>> split_layers(layers, 2)
    ((0, 1, 2), (3,))
    """
    n = len(layers)
    if not 1 <= num_stages <= n:
        raise InvalidPipelineError(f"pipeline: cannot split {n} layers into {num_stages} non-empty stages")
    load = [l.forward_ms + l.backward_ms for l in layers]
    groups = _least_max_split(load, num_stages)
    while len(groups) < num_stages:
        k = max(range(len(groups)), key=lambda j: (len(groups[j]), -j))
        g = groups[k]
        total, acc, cut = math.fsum(load[i] for i in g), 0.0, 1
        for j in range(1, len(g)):
            acc += load[g[j - 1]]
            cut = j
            if acc >= total / 2:
                break
        groups[k:k + 1] = [g[:cut], g[cut:]]
    return tuple(groups)


def _least_max_split(load: Sequence[float], most: int) -> list[tuple[int, ...]]:
    """Contiguous groups of ``range(len(load))``, at most ``most`` of them, whose largest sum of ``load`` is
    the least possible: of those, the fewest groups, and from the last group back each as long as it can be.

    The loads (finite, at least 0) are scaled to integers exactly (each float is a dyadic rational), so sums
    and ties are exact. ``best[j][i]``, the least largest load of the first ``i`` layers in at most ``j``
    groups, does not decrease in ``i``; the last group's start is found by bisection, ``O(most * n * log n)``.

    >>> _least_max_split([3.0, 1.0, 1.0, 1.0, 3.0], 3)
    [(0,), (1, 2, 3), (4,)]
    >>> _least_max_split([1.0, 1.0, 1.0, 1.0], 3)  # 2 per group is the least; the fewest groups hold it
    [(0, 1), (2, 3)]
    """
    n = len(load)
    ratios = [float(x).as_integer_ratio() for x in load]
    scale = max(d for _, d in ratios)  # powers of two: the largest is a multiple of every other
    prefix = [0]
    for num, den in ratios:
        prefix.append(prefix[-1] + num * (scale // den))
    inf = prefix[-1] + 1
    best = [[0] + [inf] * n]  # best[0]: no group holds nothing but the empty prefix
    for _ in range(most):
        prev, row = best[-1], [0] * (n + 1)
        for i in range(1, n + 1):
            # the last group is layers q..i-1 (q < i): max(prev[q], prefix[i] - prefix[q]); the first term does
            # not decrease in q, the second does not increase, so the least lies where they cross
            lo, hi = 0, i - 1  # first q in [0, i-1] with prev[q] >= prefix[i] - prefix[q]
            while lo < hi:
                mid = (lo + hi) // 2
                if prev[mid] >= prefix[i] - prefix[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            value = max(prev[lo], prefix[i] - prefix[lo])
            if lo > 0:
                value = min(value, max(prev[lo - 1], prefix[i] - prefix[lo - 1]))
            row[i] = min(value, prev[i])  # at most j groups: at most j - 1 may do
        best.append(row)
    groups: list[tuple[int, ...]] = []
    j, i = most, n
    while i > 0:
        here = best[j][i]
        while best[j - 1][i] <= here:  # fewer groups hold it
            j -= 1
        lo, hi = 0, i - 1  # the earliest start q of the last group: prefix[i] - prefix[q] <= here
        while lo < hi:
            mid = (lo + hi) // 2
            if prefix[i] - prefix[mid] <= here:
                hi = mid
            else:
                lo = mid + 1
        groups.append(tuple(range(lo, i)))
        j, i = j - 1, lo
    groups.reverse()
    return groups


def _pipedream_layers(path: Path, weight_grad_share: float | None) -> tuple[Stage, ...]:
    from schedsearch.loaders import read_pipedream_profile

    if weight_grad_share is not None and not 0 < weight_grad_share < 1:
        raise InvalidPipelineError(f"profile: 'weight_grad_share' must be in (0, 1), got {weight_grad_share!r}")
    graph = read_pipedream_profile(path, training=False, bandwidth_bytes_per_ms=1.0)
    ops = sorted(graph.operators, key=lambda op: op.id)
    preds: dict[int, set[int]] = {op.id: set() for op in ops}
    for a, b in graph.edges:
        preds[b].add(a)
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(ops):  # Kahn's order, smallest file position first
        ready = [op.id for op in ops if op.id not in done and preds[op.id] <= done]
        order.append(ready[0])
        done.add(ready[0])
    backward = _pipedream_backward(path)
    out = []
    for i in order:
        op = ops[i]
        bwd = backward[i]
        split = {}
        if weight_grad_share is not None:
            split = {"input_grad_ms": bwd * (1 - weight_grad_share), "weight_grad_ms": bwd * weight_grad_share}
        out.append(Stage(name=op.name.split(":", 1)[0], forward_ms=op.accel_latency, backward_ms=bwd,
                         activation_bytes=int(round(op.output_cost)), parameter_bytes=int(round(op.size)),
                         send_bytes=int(round(op.output_cost)), **split))
    return tuple(out)


def _pipedream_backward(path: Path) -> list[float]:
    from schedsearch.loaders import read_pipedream_profile

    graph = read_pipedream_profile(path, training=True, bandwidth_bytes_per_ms=1.0)
    n = len(graph.operators) // 2
    return [op.accel_latency for op in sorted(graph.operators, key=lambda op: op.id)[n:]]


def _runtime_stages(profile: Any, microbatch_size: int | None) -> tuple[Stage, ...]:
    sizes = getattr(profile, "sizes", None)
    if sizes is None or not hasattr(profile, "stages"):
        raise InvalidPipelineError(
            f"profile: expected a runtime Profile or the path of a PipeDream graph.txt, got {type(profile).__name__}"
        )
    size = sizes[0] if microbatch_size is None else microbatch_size
    if size not in profile.stages:
        raise InvalidPipelineError(f"profile: micro-batch size {size} was not profiled (profiled: {list(sizes)})")
    return tuple(
        Stage(name=f"stage{r.stage}", forward_ms=1e3 * r.forward_s, backward_ms=1e3 * r.backward_s,
              input_grad_ms=1e3 * r.input_grad_s, weight_grad_ms=1e3 * r.weight_grad_s,
              activation_bytes=r.activation_bytes, parameter_bytes=r.parameter_bytes, send_bytes=r.send_bytes)
        for r in profile.stages[size]
    )
