"""Pipeline placements: forward chains over devices, backward chains back.

A *pipeline* is the list of devices its stages run on, in stage order. For
each pipeline the graph of one micro-batch holds a forward block per stage
(chained in stage order) and, for training, a backward block per stage
(chained in reverse order, the last stage's backward after its forward).

Conventions: forward blocks allocate ``forward_memory`` (activations, +) at
their start; backward blocks free ``-backward_memory`` ... i.e. they add
``backward_memory`` (normally negative) at their start (Tessel's
convention). Device ``i`` is named ``d{i}``.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem

__all__ = ["device_names", "chain_pipelines", "vshape", "bidirectional"]


def device_names(num_devices: int) -> tuple[str, ...]:
    return tuple(f"d{i}" for i in range(num_devices))


def _check_positive(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidProblemError(f"placement: {name!r} must be an integer >= {minimum}, got {value!r}")


def chain_pipelines(
    pipelines: Sequence[Sequence[int]],
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int | None = 2,
    forward_memory: int = 1,
    backward_memory: int | None = None,
    memory: int | None = None,
    initial_memory: int = 0,
    suffixes: Sequence[str] | None = None,
    name: str = "",
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
        Durations of a stage's forward and backward block; ``backward=None``
        builds a forward-only (inference) graph.
    forward_memory, backward_memory:
        Memory deltas at the start of forward / backward blocks;
        ``backward_memory`` defaults to ``-forward_memory``.
    memory:
        Capacity of every device (None = unbounded).
    initial_memory:
        Memory every device holds at time 0.
    suffixes:
        Per pipeline, a suffix for its block names (default: none for one
        pipeline, ``.p0``, ``.p1``, ... for several).
    """
    _check_positive("num_devices", num_devices)
    _check_positive("num_microbatches", num_microbatches)
    _check_positive("forward", forward)
    if backward is not None:
        _check_positive("backward", backward)
    if not pipelines:
        raise InvalidProblemError("placement: 'pipelines' must hold at least one pipeline, got []")
    if backward_memory is None:
        backward_memory = -forward_memory
    if suffixes is None:
        suffixes = [""] if len(pipelines) == 1 else [f".p{p}" for p in range(len(pipelines))]
    if len(suffixes) != len(pipelines):
        raise InvalidProblemError(
            f"placement: 'suffixes' must give one suffix per pipeline ({len(pipelines)}), got {list(suffixes)}"
        )
    names = device_names(num_devices)
    blocks: list[Block] = []
    edges: list[Edge] = []
    for p, (stages, sfx) in enumerate(zip(pipelines, suffixes)):
        if not stages:
            raise InvalidProblemError(f"placement: pipeline {p} must hold at least one stage, got []")
        for s, dev in enumerate(stages):
            if not isinstance(dev, int) or not 0 <= dev < num_devices:
                raise InvalidProblemError(
                    f"placement: pipeline {p}, stage {s}: device must be in 0..{num_devices - 1}, got {dev!r}"
                )
            blocks.append(
                Block(name=f"F{s}{sfx}", kind="F", options=[Option(devices=(names[dev],), duration=forward)],
                      memory=forward_memory, stage=s)
            )
            if s:
                edges.append(Edge(src=f"F{s - 1}{sfx}", dst=f"F{s}{sfx}"))
        if backward is not None:
            last = len(stages) - 1
            for s in range(last, -1, -1):
                blocks.append(
                    Block(name=f"B{s}{sfx}", kind="B", options=[Option(devices=(names[stages[s]],), duration=backward)],
                          memory=backward_memory, stage=s)
                )
                edges.append(Edge(src=f"B{s + 1}{sfx}" if s < last else f"F{last}{sfx}", dst=f"B{s}{sfx}"))
    cluster = Cluster(devices=[Device(name=n, memory=memory) for n in names])
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=num_microbatches,
        cluster=cluster,
        initial_memory={n: initial_memory for n in names} if initial_memory else {},
        name=name,
    )


def vshape(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int | None = 2,
    forward_memory: int = 1,
    backward_memory: int | None = None,
    memory: int | None = None,
) -> Problem:
    """The V-shape (1F1B / GPipe placement): stage ``i`` on device ``i``.

    The forward chain runs down devices ``0 .. D-1``, the backward chain back
    up ``D-1 .. 0``.
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
        name=f"vshape-{num_devices}x{num_microbatches}",
    )


def bidirectional(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int | None = 2,
    forward_memory: int = 1,
    backward_memory: int | None = None,
    memory: int | None = None,
) -> Problem:
    """Two opposite V's: even micro-batches run down ``0 .. D-1``, odd ones up.

    The problem's micro-batch ``k`` holds the pair of pipeline micro-batches
    ``2k`` (down, blocks ``*.down``) and ``2k+1`` (up, blocks ``*.up``), so
    ``num_microbatches`` must be even.
    """
    _check_positive("num_microbatches", num_microbatches, 2)
    if num_microbatches % 2:
        raise InvalidProblemError(
            f"placement 'bidirectional': 'num_microbatches' must be even (pairs of down and up), got {num_microbatches}"
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
        suffixes=[".down", ".up"],
        name=f"bidirectional-{num_devices}x{num_microbatches}",
    )
