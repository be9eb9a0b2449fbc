"""Pipeline placements: forward chains over devices, backward chains back.

A *pipeline* is the list of devices its stages run on, in stage order. For
each pipeline the graph of one micro-batch holds a forward block per stage
(chained in stage order) and, for training, a backward block per stage
(chained in reverse order, the last stage's backward after its forward).

Block names: ``F{s}``, ``B{s}`` (and, with the zero-bubble split, ``I{s}``
and ``W{s}``) followed by the pipeline's suffix; every block carries its
``stage`` index and its ``kind`` (``F``, ``B``, ``I``, ``W``).

Zero-bubble split (``split_backward=True``): the backward of stage ``s`` is
an input-gradient block ``I{s}`` (after ``I{s+1}``, or after the last
forward for the last stage) and a weight-gradient block ``W{s}`` that only
waits for its own ``I{s}``.

Conventions: forward blocks allocate ``forward_memory`` (activations, +) at
their start; a full backward adds ``backward_memory`` (default
``-forward_memory``) at its start (Tessel's convention). With the split,
``I`` adds ``input_grad_memory`` (default 0) and ``W`` adds
``weight_grad_memory`` (default: whatever frees the rest, so each
micro-batch's deltas sum to zero): an activation is held from the start of
its forward to the start of its weight gradient. Device ``i`` is named
``d{i}``.

Overlapped groups (see :class:`~schedsearch.problem.Overlap`):
``full_backward=True`` (with the split) declares ``I{s}`` and ``W{s}`` as a
group named ``"B"`` lasting ``backward`` (a schedule may run the backward
of a micro-batch whole, as PyTorch's ``B`` action, or split);
``overlap_forward_backward=T`` declares, for every device, a group named
``"F&B"`` of each forward with the (full) backward of each *other* stage
on that device, lasting ``T`` (DualPipe's overlapped pair).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Overlap, Problem

__all__ = ["device_names", "chain_pipelines", "vshape", "bidirectional"]

IntOrSeq = int | Sequence[int]


def device_names(num_devices: int) -> tuple[str, ...]:
    """The names every builder gives its devices: ``d0 .. d{num_devices-1}``, in rank order.

    Examples
    --------
    >>> from schedsearch.placements import device_names
    >>> device_names(3)
    ('d0', 'd1', 'd2')
    """
    return tuple(f"d{i}" for i in range(num_devices))


def check_positive(name: str, value: int, minimum: int = 1) -> None:
    """Refuse a count below ``minimum`` (or not an integer); shared by the builders of this package."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidProblemError(f"placement: {name!r} must be an integer >= {minimum}, got {value!r}")


def _per_stage(name: str, value: IntOrSeq | None, num_stages: int, minimum: int | None) -> list[int | None]:
    """Expand an int (or None) or a per-stage sequence to one value per stage."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        values = [value] * num_stages
    else:
        values = list(value)
        if len(values) != num_stages:
            raise InvalidProblemError(
                f"placement: {name!r} must be one value for every stage or one value per stage "
                f"({num_stages} stages), got {len(values)} values: {values}"
            )
    for s, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidProblemError(f"placement: {name!r} of stage {s} must be an integer, got {v!r}")
        if minimum is not None and v < minimum:
            raise InvalidProblemError(f"placement: {name!r} of stage {s} must be >= {minimum}, got {v!r}")
    return values


def chain_pipelines(
    pipelines: Sequence[Sequence[int]],
    num_devices: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq | None = 2,
    forward_memory: IntOrSeq = 1,
    backward_memory: IntOrSeq | None = None,
    memory: int | Sequence[int | None] | None = None,
    free_at_end: bool = False,
    initial_memory: int = 0,
    suffixes: Sequence[str] | None = None,
    name: str = "",
    split_backward: bool = False,
    input_grad: IntOrSeq | None = None,
    weight_grad: IntOrSeq | None = None,
    input_grad_memory: IntOrSeq = 0,
    weight_grad_memory: IntOrSeq | None = None,
    full_backward: bool = False,
    overlap_forward_backward: int | None = None,
) -> Problem:
    """A Problem whose micro-batch runs each pipeline forward then backward.

    Parameters
    ----------
    pipelines:
        Per pipeline, the device index of each stage, in stage order.
    num_devices:
        Devices ``d0 .. d{num_devices-1}``.
    num_microbatches:
        Micro-batches of the problem (each runs every pipeline once).
    forward, backward:
        Durations of a stage's forward and (full) backward block, one value
        for every stage or one per stage; ``backward=None`` builds a
        forward-only (inference) graph.
    forward_memory, backward_memory:
        Memory deltas at the start of forward / backward blocks (one value
        or one per stage); ``backward_memory`` defaults to
        ``-forward_memory``.
    memory:
        Capacity of every device (None = unbounded), or one per device.
    free_at_end:
        Hold freed memory until the freeing block *ends*, as a real runtime
        does: each block with a negative delta also holds that amount as
        workspace while it runs (the model's deltas take effect at the
        start). Off by default (Tessel's convention, the published figures'
        one).
    initial_memory:
        Memory every device holds at time 0.
    suffixes:
        Per pipeline, a suffix for its block names (default: none for one
        pipeline, ``.p0``, ``.p1``, ... for several).
    split_backward:
        Split each backward into ``I`` (input gradient) and ``W`` (weight
        gradient) blocks (zero-bubble).
    input_grad, weight_grad:
        Durations of ``I`` and ``W`` (one value or one per stage);
        ``weight_grad`` defaults to ``max(1, backward // 2)`` and
        ``input_grad`` to ``backward - weight_grad``.
    input_grad_memory, weight_grad_memory:
        Memory deltas of ``I`` (default 0) and ``W`` (default
        ``-(forward_memory + input_grad_memory)``).
    full_backward:
        With the split, declare ``I{s}`` + ``W{s}`` as an overlapped group
        ``"B"`` lasting ``backward`` (a full backward).
    overlap_forward_backward:
        Declare an ``"F&B"`` group of every forward with the full backward
        of every other stage on the same device, lasting this many time
        units (DualPipe's overlapped forward and backward).

    Examples
    --------
    One pipeline over two devices: ``F0 -> F1 -> B1 -> B0``, stage ``s`` on
    ``d{s}``:

    >>> from schedsearch.placements import chain_pipelines
    >>> problem = chain_pipelines([[0, 1]], 2, 4)
    >>> problem.graph.block_names
    ('F0', 'F1', 'B1', 'B0')
    >>> [(e.src, e.dst) for e in problem.graph.edges]
    [('F0', 'F1'), ('F1', 'B1'), ('B1', 'B0')]

    Two pipelines in opposite directions, a forward-only (inference) graph:

    >>> chain_pipelines([[0, 1], [1, 0]], 2, 1, backward=None).graph.block_names
    ('F0.p0', 'F1.p0', 'F0.p1', 'F1.p1')
    """
    suffixes = _check_chain_settings(pipelines, num_devices, num_microbatches, suffixes, training=backward is not None,
                                     split_backward=split_backward, full_backward=full_backward,
                                     overlap_forward_backward=overlap_forward_backward)
    names = device_names(num_devices)
    capacities = _capacities(memory, num_devices)
    chain = _Chain(names=names)
    for p, (stages, sfx) in enumerate(zip(pipelines, suffixes)):
        if not stages:
            raise InvalidProblemError(f"placement: pipeline {p} must hold at least one stage, got []")
        values = _StageValues.of(len(stages), forward=forward, backward=backward, forward_memory=forward_memory,
                                 backward_memory=backward_memory, split_backward=split_backward,
                                 input_grad=input_grad, weight_grad=weight_grad, input_grad_memory=input_grad_memory,
                                 weight_grad_memory=weight_grad_memory)
        chain.add_forwards(p, stages, sfx, values)
        if backward is not None:
            chain.add_backwards(stages, sfx, values, split_backward=split_backward, full_backward=full_backward)
    if overlap_forward_backward is not None:
        chain.pair_forwards_with_backwards(overlap_forward_backward)
    blocks = chain.blocks
    if free_at_end:
        blocks = [attrs.evolve(b, workspace=b.workspace - b.memory) if b.memory < 0 else b for b in blocks]
    cluster = Cluster(devices=[Device(name=n, memory=c) for n, c in zip(names, capacities)])
    return Problem(
        graph=Graph(blocks=blocks, edges=chain.edges),
        num_microbatches=num_microbatches,
        cluster=cluster,
        initial_memory={n: initial_memory for n in names} if initial_memory else {},
        name=name,
        overlaps=chain.overlaps,
    )


def _check_chain_settings(pipelines: Sequence[Sequence[int]], num_devices: int, num_microbatches: int,
                          suffixes: Sequence[str] | None, *, training: bool, split_backward: bool,
                          full_backward: bool, overlap_forward_backward: int | None) -> Sequence[str]:
    """The settings of :func:`chain_pipelines` that hold across pipelines; the pipelines' name suffixes."""
    check_positive("num_devices", num_devices)
    check_positive("num_microbatches", num_microbatches)
    if not pipelines:
        raise InvalidProblemError("placement: 'pipelines' must hold at least one pipeline, got []")
    if suffixes is None:
        suffixes = [""] if len(pipelines) == 1 else [f".p{p}" for p in range(len(pipelines))]
    if len(suffixes) != len(pipelines):
        raise InvalidProblemError(
            f"placement: 'suffixes' must give one suffix per pipeline ({len(pipelines)}), got {list(suffixes)}"
        )
    if len(set(suffixes)) != len(suffixes):
        raise InvalidProblemError(f"placement: 'suffixes' must be distinct, got {list(suffixes)}")
    if split_backward and not training:
        raise InvalidProblemError("placement: 'split_backward' needs a backward pass ('backward' is None)")
    if full_backward and not split_backward:
        raise InvalidProblemError("placement: 'full_backward' groups need 'split_backward=True'")
    if overlap_forward_backward is not None:
        check_positive("overlap_forward_backward", overlap_forward_backward)
        if not training:
            raise InvalidProblemError("placement: 'overlap_forward_backward' needs a backward pass")
        if split_backward and not full_backward:
            raise InvalidProblemError(
                "placement: 'overlap_forward_backward' with the zero-bubble split needs 'full_backward=True' "
                "(the pair overlaps a forward with a full backward)"
            )
    return suffixes


def _capacities(memory: int | Sequence[int | None] | None, num_devices: int) -> list[int | None]:
    """Every device's capacity: ``memory`` for all of them, or one per device."""
    if memory is None or isinstance(memory, int) and not isinstance(memory, bool):
        return [memory] * num_devices
    capacities = list(memory)
    if len(capacities) != num_devices:
        raise InvalidProblemError(
            f"placement: 'memory' must give one capacity per device ({num_devices}), got {capacities}"
        )
    return capacities


@attrs.frozen(kw_only=True)
class _StageValues:
    """One pipeline's durations and memory deltas, one per stage (None: the default, or no backward)."""

    fwd: list[int | None]
    bwd: list[int | None]
    fmem: list[int | None]
    bmem: list[int | None]
    #: with the zero-bubble split: the I and W durations (defaults applied) and memory deltas
    ig: list[int | None] = attrs.field(factory=list)
    wg: list[int | None] = attrs.field(factory=list)
    imem: list[int | None] = attrs.field(factory=list)
    wmem: list[int | None] = attrs.field(factory=list)

    @classmethod
    def of(cls, S: int, *, forward: IntOrSeq, backward: IntOrSeq | None, forward_memory: IntOrSeq,
           backward_memory: IntOrSeq | None, split_backward: bool, input_grad: IntOrSeq | None,
           weight_grad: IntOrSeq | None, input_grad_memory: IntOrSeq,
           weight_grad_memory: IntOrSeq | None) -> _StageValues:
        """The values of a pipeline of ``S`` stages, checked (``weight_grad`` defaults to ``max(1, B // 2)``
        and ``input_grad`` to ``B - weight_grad``)."""
        fwd = _per_stage("forward", forward, S, 1)
        bwd = _per_stage("backward", backward, S, 1) if backward is not None else [None] * S
        fmem = _per_stage("forward_memory", forward_memory, S, None)
        bmem = _per_stage("backward_memory", backward_memory, S, None)
        if not split_backward:
            return cls(fwd=fwd, bwd=bwd, fmem=fmem, bmem=bmem)
        wg = _per_stage("weight_grad", weight_grad, S, 1)
        ig = _per_stage("input_grad", input_grad, S, 1)
        for s in range(S):
            if wg[s] is None:
                wg[s] = max(1, bwd[s] // 2)
            if ig[s] is None:
                ig[s] = bwd[s] - wg[s]
                if ig[s] < 1:
                    raise InvalidProblemError(
                        f"placement: stage {s}: 'input_grad' defaults to backward - weight_grad = "
                        f"{bwd[s]} - {wg[s]}, which is < 1; give 'input_grad' or a larger 'backward'"
                    )
        imem = _per_stage("input_grad_memory", input_grad_memory, S, None)
        wmem = _per_stage("weight_grad_memory", weight_grad_memory, S, None)
        return cls(fwd=fwd, bwd=bwd, fmem=fmem, bmem=bmem, ig=ig, wg=wg, imem=imem, wmem=wmem)


@attrs.define
class _Chain:
    """The blocks, edges and overlapped groups of :func:`chain_pipelines`, pipeline after pipeline."""

    names: tuple[str, ...]
    blocks: list[Block] = attrs.field(factory=list)
    edges: list[Edge] = attrs.field(factory=list)
    overlaps: list[Overlap] = attrs.field(factory=list)
    #: per device: (forward block, backward blocks (B) or (I, W), full backward duration)
    per_device: dict[int, list[tuple[str, tuple[str, ...], int]]] = attrs.field(factory=dict)

    def add_forwards(self, p: int, stages: Sequence[int], sfx: str, values: _StageValues) -> None:
        """Pipeline ``p``'s forward chain ``F0 -> F1 -> ...``, stage ``s`` on device ``stages[s]``."""
        num_devices = len(self.names)
        for s, dev in enumerate(stages):
            if isinstance(dev, bool) or not isinstance(dev, int) or not 0 <= dev < num_devices:
                raise InvalidProblemError(
                    f"placement: pipeline {p}, stage {s}: device must be in 0..{num_devices - 1}, got {dev!r}"
                )
            self.blocks.append(
                Block(name=f"F{s}{sfx}", kind="F", options=[Option(devices=(self.names[dev],), duration=values.fwd[s])],
                      memory=values.fmem[s], stage=s)
            )
            if s:
                self.edges.append(Edge(src=f"F{s - 1}{sfx}", dst=f"F{s}{sfx}"))

    def add_backwards(self, stages: Sequence[int], sfx: str, values: _StageValues, *, split_backward: bool,
                      full_backward: bool) -> None:
        """The backward chain from the last stage down, after the last forward: ``B`` blocks, or ``I`` then
        ``W`` per stage with the split (with ``full_backward``, the pair as an overlapped group ``"B"``)."""
        last = len(stages) - 1
        for s in range(last, -1, -1):
            dev = self.names[stages[s]]
            if split_backward:
                i_mem = values.imem[s]
                w_mem = values.wmem[s] if values.wmem[s] is not None else -(values.fmem[s] + i_mem)
                self.blocks.append(Block(name=f"I{s}{sfx}", kind="I",
                                         options=[Option(devices=(dev,), duration=values.ig[s])], memory=i_mem,
                                         stage=s))
                self.blocks.append(Block(name=f"W{s}{sfx}", kind="W",
                                         options=[Option(devices=(dev,), duration=values.wg[s])], memory=w_mem,
                                         stage=s))
                self.edges.append(Edge(src=f"I{s + 1}{sfx}" if s < last else f"F{last}{sfx}", dst=f"I{s}{sfx}"))
                self.edges.append(Edge(src=f"I{s}{sfx}", dst=f"W{s}{sfx}"))
                if full_backward:
                    self.overlaps.append(Overlap(blocks=(f"I{s}{sfx}", f"W{s}{sfx}"), duration=values.bwd[s], name="B",
                                                 same_microbatch=((f"I{s}{sfx}", f"W{s}{sfx}"),)))
                back: tuple[str, ...] = (f"I{s}{sfx}", f"W{s}{sfx}")
            else:
                b_mem = values.bmem[s] if values.bmem[s] is not None else -values.fmem[s]
                self.blocks.append(Block(name=f"B{s}{sfx}", kind="B",
                                         options=[Option(devices=(dev,), duration=values.bwd[s])], memory=b_mem,
                                         stage=s))
                self.edges.append(Edge(src=f"B{s + 1}{sfx}" if s < last else f"F{last}{sfx}", dst=f"B{s}{sfx}"))
                back = (f"B{s}{sfx}",)
            self.per_device.setdefault(stages[s], []).append((f"F{s}{sfx}", back, values.bwd[s]))

    def pair_forwards_with_backwards(self, duration: int) -> None:
        """An ``"F&B"`` group of every forward with the full backward of every other stage on its device."""
        for dev in sorted(self.per_device):
            entries = self.per_device[dev]
            for f_block, _, _ in entries:
                for other_f, back, _ in entries:
                    if other_f == f_block:
                        continue
                    self.overlaps.append(Overlap(blocks=(f_block, *back), duration=duration, name="F&B",
                                                 same_microbatch=(back,) if len(back) > 1 else ()))


def vshape(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq | None = 2,
    forward_memory: IntOrSeq = 1,
    backward_memory: IntOrSeq | None = None,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """The V-shape (1F1B / GPipe placement): stage ``i`` on device ``i``.

    The forward chain runs down devices ``0 .. D-1``, the backward chain back
    up ``D-1 .. 0``.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> print(vshape(4, 8, forward=1, backward=2, memory=4))
    vshape-4x8: 8 blocks x 8 micro-batches, 7 edges, devices [d0(mem=4), d1(mem=4), d2(mem=4), d3(mem=4)], 0 channels
    >>> vshape(2, 1).graph.block("B1").options
    (Option(devices=('d1',), duration=2),)
    """
    return chain_pipelines(
        [list(range(num_devices))],
        num_devices,
        num_microbatches,
        forward=forward,
        backward=backward,
        forward_memory=forward_memory,
        backward_memory=backward_memory,
        memory=memory,
        free_at_end=free_at_end,
        name=f"vshape-{num_devices}x{num_microbatches}",
    )


def bidirectional(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq | None = 2,
    forward_memory: IntOrSeq = 1,
    backward_memory: IntOrSeq | None = None,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """Two opposite V's, Chimera's placement: two model replicas, a down and an up pipeline.

    Device ``d`` holds stage ``d`` of the down pipeline (blocks ``*.down``)
    and stage ``D-1-d`` of the up pipeline (``*.up``). Half of the
    ``num_microbatches`` (even) run down, half up: the problem's micro-batch
    ``k`` holds the pair of pipeline micro-batches ``2k`` (down) and ``2k+1``
    (up). :func:`schedsearch.placements.chimera` is this builder under
    Chimera's name (the same function).

    Examples
    --------
    >>> from schedsearch.placements import bidirectional, chimera
    >>> problem = bidirectional(2, 4)
    >>> problem.num_microbatches, problem.graph.block_names
    (2, ('F0.down', 'F1.down', 'B1.down', 'B0.down', 'F0.up', 'F1.up', 'B1.up', 'B0.up'))
    >>> problem.graph.block("F0.up").options[0].devices
    ('d1',)
    >>> chimera is bidirectional
    True
    """
    check_positive("num_devices", num_devices)
    check_positive("num_microbatches", num_microbatches, 2)
    if num_microbatches % 2:
        raise InvalidProblemError(
            f"placement 'bidirectional': 'num_microbatches' must be even (half run down, half up), got {num_microbatches}"
        )
    return chain_pipelines(
        [list(range(num_devices)), list(range(num_devices - 1, -1, -1))],
        num_devices,
        num_microbatches // 2,
        forward=forward,
        backward=backward,
        forward_memory=forward_memory,
        backward_memory=backward_memory,
        memory=memory,
        free_at_end=free_at_end,
        suffixes=[".down", ".up"],
        name=f"bidirectional-{num_devices}x{num_microbatches}",
    )
