"""Tessel's placement shapes: V, X, M, NN and K.

Conventions of Tessel (She et al.'s search paper and its public code), each
value a parameter here: a forward block spans 1 time unit and allocates 1
(``forward``, ``forward_memory``), a backward block spans 3 and frees 1
(``backward``, ``backward_memory``), a *full-shard* block runs on all
devices at once, spans 1 and holds no memory (``shard``,
``shard_memory``). Memory deltas apply at a block's start.

Shapes (``D`` devices, ``h = D // 2``; one micro-batch of the graph):

* **V**: ``F0 .. F{D-1}`` on devices ``0 .. D-1``, then ``B{D-1} .. B0`` back.
* **X**: a V down (blocks ``*.down``) and a V up (``*.up``, forwards on
  ``D-1 .. 0``) in the same micro-batch, independent of each other.
* **M**: a full-shard forward ``FS``, the V, then a full-shard backward ``BS``.
* **NN**: ``FS0``, ``F0 .. F{h-1}``, ``FS1``, ``F{h} .. F{D-1}``, then
  ``B{D-1} .. B{h}``, ``BS1``, ``B{h-1} .. B0``, ``BS0``.
* **K**: two V branches on devices ``0 .. h-1`` (``*.b0``) and ``h .. D-1``
  (``*.b1``) that join in a full-shard forward ``FJ`` and backward ``BJ``
  (the loss, on all devices; both branches' last forwards precede ``FJ``,
  ``BJ`` precedes both branches' first backwards). In Tessel's code the
  joint blocks allocate and free memory like a stage (``joint_memory`` = 1).

Full-shard blocks are named as above, have ``stage=None`` and the kind of
their pass (``F`` / ``B``).
"""

from __future__ import annotations

from schedsearch.errors import InvalidProblemError
from schedsearch.placements.chains import check_positive, chain_pipelines, device_names
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem

__all__ = ["TESSEL_SHAPES", "tessel_shape", "tessel_v", "tessel_x", "tessel_m", "tessel_nn", "tessel_k"]

TESSEL_SHAPES = ("V", "X", "M", "NN", "K")


def _check_memory(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProblemError(f"placement: {name!r} must be an integer, got {value!r}")


def tessel_v(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int = 3,
    forward_memory: int = 1,
    backward_memory: int = -1,
    memory: int | None = None,
) -> Problem:
    """Tessel's V shape (same graph as :func:`~schedsearch.placements.vshape`, Tessel's defaults).

    Examples
    --------
    >>> from schedsearch.placements import tessel_v
    >>> problem = tessel_v(4, 2)
    >>> problem.graph.block_names
    ('F0', 'F1', 'F2', 'F3', 'B3', 'B2', 'B1', 'B0')
    >>> problem.graph.block("B0").options[0].duration, problem.graph.block("B0").memory
    (3, -1)
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
        name=f"tessel-V-{num_devices}x{num_microbatches}",
    )


def tessel_x(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int = 3,
    forward_memory: int = 1,
    backward_memory: int = -1,
    memory: int | None = None,
) -> Problem:
    """Tessel's X shape: a V down and a V up in every micro-batch.

    Examples
    --------
    >>> from schedsearch.placements import tessel_x
    >>> problem = tessel_x(2, 1)
    >>> problem.graph.block_names
    ('F0.down', 'F1.down', 'B1.down', 'B0.down', 'F0.up', 'F1.up', 'B1.up', 'B0.up')
    >>> problem.graph.block("F0.up").options[0].devices
    ('d1',)
    """
    return chain_pipelines(
        [list(range(num_devices)), list(range(num_devices - 1, -1, -1))],
        num_devices,
        num_microbatches,
        forward=forward,
        backward=backward,
        forward_memory=forward_memory,
        backward_memory=backward_memory,
        memory=memory,
        suffixes=[".down", ".up"],
        name=f"tessel-X-{num_devices}x{num_microbatches}",
    )


class _Chain:
    """Builds blocks and chain edges of one micro-batch."""

    def __init__(self, num_devices: int) -> None:
        self.devices = device_names(num_devices)
        self.blocks: list[Block] = []
        self.edges: list[Edge] = []

    def add(self, name: str, kind: str, devices: tuple[str, ...], duration: int, memory: int,
            after: tuple[str, ...] = (), stage: int | None = None) -> str:
        self.blocks.append(Block(name=name, kind=kind, options=[Option(devices=devices, duration=duration)],
                                 memory=memory, stage=stage))
        for a in after:
            self.edges.append(Edge(src=a, dst=name))
        return name

    def run(self, specs: list[tuple[str, str, tuple[str, ...], int, int, int | None]], after: tuple[str, ...] = ()) -> str:
        """Chain ``specs`` (name, kind, devices, duration, memory, stage) one after the other."""
        prev = after
        last = ""
        for name, kind, devs, dur, mem, stage in specs:
            last = self.add(name, kind, devs, dur, mem, prev, stage)
            prev = (last,)
        return last

    def problem(self, num_microbatches: int, memory: int | None, name: str) -> Problem:
        return Problem(
            graph=Graph(blocks=self.blocks, edges=self.edges),
            num_microbatches=num_microbatches,
            cluster=Cluster(devices=[Device(name=d, memory=memory) for d in self.devices]),
            name=name,
        )


def _check_common(num_devices: int, num_microbatches: int, durations: dict[str, int], memories: dict[str, int],
                  min_devices: int) -> None:
    check_positive("num_devices", num_devices, min_devices)
    check_positive("num_microbatches", num_microbatches)
    for k, v in durations.items():
        check_positive(k, v)
    for k, v in memories.items():
        _check_memory(k, v)


def tessel_m(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int = 3,
    shard: int = 1,
    forward_memory: int = 1,
    backward_memory: int = -1,
    shard_memory: int = 0,
    memory: int | None = None,
) -> Problem:
    """Tessel's M shape: full-shard forward, V, full-shard backward.

    Examples
    --------
    >>> from schedsearch.placements import tessel_m
    >>> problem = tessel_m(2, 1)
    >>> [(b.name, b.options[0].devices) for b in problem.graph.blocks]
    [('FS', ('d0', 'd1')), ('F0', ('d0',)), ('F1', ('d1',)), ('B1', ('d1',)), ('B0', ('d0',)), ('BS', ('d0', 'd1'))]
    """
    _check_common(num_devices, num_microbatches, {"forward": forward, "backward": backward, "shard": shard},
                  {"forward_memory": forward_memory, "backward_memory": backward_memory, "shard_memory": shard_memory}, 1)
    c = _Chain(num_devices)
    alld = c.devices
    D = num_devices
    specs = [("FS", "F", alld, shard, shard_memory, None)]
    specs += [(f"F{s}", "F", (alld[s],), forward, forward_memory, s) for s in range(D)]
    specs += [(f"B{s}", "B", (alld[s],), backward, backward_memory, s) for s in range(D - 1, -1, -1)]
    specs += [("BS", "B", alld, shard, shard_memory, None)]
    c.run(specs)
    return c.problem(num_microbatches, memory, f"tessel-M-{num_devices}x{num_microbatches}")


def tessel_nn(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int = 3,
    shard: int = 1,
    forward_memory: int = 1,
    backward_memory: int = -1,
    shard_memory: int = 0,
    memory: int | None = None,
) -> Problem:
    """Tessel's NN shape: two full-shard blocks cut the V at its start and its middle.

    Examples
    --------
    >>> from schedsearch.placements import tessel_nn
    >>> tessel_nn(4, 2).graph.block_names
    ('FS0', 'F0', 'F1', 'FS1', 'F2', 'F3', 'B3', 'B2', 'BS1', 'B1', 'B0', 'BS0')
    """
    _check_common(num_devices, num_microbatches, {"forward": forward, "backward": backward, "shard": shard},
                  {"forward_memory": forward_memory, "backward_memory": backward_memory, "shard_memory": shard_memory}, 2)
    c = _Chain(num_devices)
    alld = c.devices
    D, h = num_devices, num_devices // 2
    specs = [("FS0", "F", alld, shard, shard_memory, None)]
    specs += [(f"F{s}", "F", (alld[s],), forward, forward_memory, s) for s in range(h)]
    specs += [("FS1", "F", alld, shard, shard_memory, None)]
    specs += [(f"F{s}", "F", (alld[s],), forward, forward_memory, s) for s in range(h, D)]
    specs += [(f"B{s}", "B", (alld[s],), backward, backward_memory, s) for s in range(D - 1, h - 1, -1)]
    specs += [("BS1", "B", alld, shard, shard_memory, None)]
    specs += [(f"B{s}", "B", (alld[s],), backward, backward_memory, s) for s in range(h - 1, -1, -1)]
    specs += [("BS0", "B", alld, shard, shard_memory, None)]
    c.run(specs)
    return c.problem(num_microbatches, memory, f"tessel-NN-{num_devices}x{num_microbatches}")


def tessel_k(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: int = 1,
    backward: int = 3,
    shard: int = 1,
    forward_memory: int = 1,
    backward_memory: int = -1,
    joint_memory: int = 1,
    memory: int | None = None,
) -> Problem:
    """Tessel's K shape: two V branches joined by a full-shard loss (``FJ``, ``BJ``).

    Examples
    --------
    >>> from schedsearch.placements import tessel_k
    >>> problem = tessel_k(4, 2)
    >>> problem.graph.block_names
    ('F0.b0', 'F1.b0', 'F0.b1', 'F1.b1', 'FJ', 'BJ', 'B1.b0', 'B0.b0', 'B1.b1', 'B0.b1')
    >>> problem.graph.block("FJ").options[0].devices
    ('d0', 'd1', 'd2', 'd3')
    """
    _check_common(num_devices, num_microbatches, {"forward": forward, "backward": backward, "shard": shard},
                  {"forward_memory": forward_memory, "backward_memory": backward_memory, "joint_memory": joint_memory}, 2)
    c = _Chain(num_devices)
    alld = c.devices
    D, h = num_devices, num_devices // 2
    branches = [list(range(h)), list(range(h, D))]
    lasts = []
    for i, devs in enumerate(branches):
        lasts.append(c.run([(f"F{s}.b{i}", "F", (alld[d],), forward, forward_memory, s) for s, d in enumerate(devs)]))
    c.add("FJ", "F", alld, shard, joint_memory, tuple(lasts))
    c.add("BJ", "B", alld, shard, -joint_memory, ("FJ",))
    for i, devs in enumerate(branches):
        c.run([(f"B{s}.b{i}", "B", (alld[devs[s]],), backward, backward_memory, s) for s in range(len(devs) - 1, -1, -1)],
              after=("BJ",))
    return c.problem(num_microbatches, memory, f"tessel-K-{num_devices}x{num_microbatches}")


def tessel_shape(shape: str, num_devices: int, num_microbatches: int, **kwargs) -> Problem:
    """Build Tessel's shape ``shape`` (one of ``TESSEL_SHAPES``, case-insensitive).

    Keyword arguments go to the shape's builder.

    Examples
    --------
    >>> from schedsearch.placements import TESSEL_SHAPES, tessel_shape
    >>> for shape in TESSEL_SHAPES:
    ...     problem = tessel_shape(shape, 4, 2)
    ...     print(shape, len(problem.graph.blocks))
    V 8
    X 16
    M 10
    NN 12
    K 10
    """
    builders = {"V": tessel_v, "X": tessel_x, "M": tessel_m, "NN": tessel_nn, "K": tessel_k}
    key = shape.upper() if isinstance(shape, str) else shape
    if key not in builders:
        raise InvalidProblemError(f"placement: Tessel 'shape' must be one of {TESSEL_SHAPES}, got {shape!r}")
    return builders[key](num_devices, num_microbatches, **kwargs)
