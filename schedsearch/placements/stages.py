"""Pipeline placements from a stage-to-device mapping, and the published ones.

Every builder returns a :class:`~schedsearch.problem.Problem` whose blocks
follow :mod:`schedsearch.placements.chains`'s naming (``F{s}``, ``B{s}``,
``I{s}``, ``W{s}`` + suffix, with ``stage`` and ``kind`` set).

Stage-to-device mappings (PyTorch pipelining's names):

* ``"loop"``: stage ``s`` on device ``s mod p`` (interleaved 1F1B: device
  ``d`` holds stages ``d, d+p, d+2p, ...``);
* ``"v"``: stages go down the devices and back up: ``0 .. p-1`` on devices
  ``0 .. p-1``, ``p .. 2p-1`` on devices ``p-1 .. 0``, and so on (ZB-V,
  DualPipeV).

Time units. All durations are integers. The published interleaved figures
use per-chunk times ``F/v`` and ``B/v``; build such a problem with
integer per-chunk durations (``forward=1, backward=2``) and divide the
times of the result by ``v`` to compare (the problem's name records the
scale: ``time_scale`` below).
"""

from __future__ import annotations

from collections.abc import Sequence

from schedsearch.errors import InvalidProblemError
from schedsearch.placements.chains import IntOrSeq, check_positive, bidirectional, chain_pipelines
from schedsearch.problem import Problem

__all__ = [
    "MAPPING_STYLES",
    "stage_mapping",
    "mapping_style",
    "stage_pipeline",
    "zero_bubble",
    "interleaved",
    "vshape_chunks",
    "chimera",
    "dualpipe",
    "dualpipev",
]

MAPPING_STYLES = ("loop", "v")


def stage_mapping(style: str, num_devices: int, num_stages: int) -> tuple[int, ...]:
    """Device index of each stage under the ``"loop"`` or ``"v"`` mapping.

    ``"loop"`` deals stages round-robin (Megatron's interleaving); ``"v"``
    goes down the devices and back up (ZB-V, DualPipeV).

    Examples
    --------
    >>> from schedsearch.placements import stage_mapping
    >>> stage_mapping("loop", 2, 4)
    (0, 1, 0, 1)
    >>> stage_mapping("v", 2, 4)
    (0, 1, 1, 0)
    """
    _check_style(style)
    check_positive("num_devices", num_devices)
    check_positive("num_stages", num_stages)
    if style == "loop":
        return tuple(s % num_devices for s in range(num_stages))
    if style == "v":
        if num_stages % num_devices:
            raise InvalidProblemError(
                f"placement: the 'v' mapping needs 'num_stages' ({num_stages}) to be a multiple of "
                f"'num_devices' ({num_devices})"
            )
        out = []
        for s in range(num_stages):
            lap, pos = divmod(s, num_devices)
            out.append(pos if lap % 2 == 0 else num_devices - 1 - pos)
        return tuple(out)
    raise AssertionError(style)  # unreachable: _check_style accepted it


def _check_style(style: str) -> None:
    if style not in MAPPING_STYLES:
        raise InvalidProblemError(f"placement: mapping style must be one of {MAPPING_STYLES}, got {style!r}")


def mapping_style(mapping: Sequence[int], num_devices: int) -> str | None:
    """``"loop"`` or ``"v"`` when ``mapping`` is that style (loop wins when both), else None.

    It tells which published schedules may apply to a stage-to-device
    mapping given explicitly.

    Examples
    --------
    >>> from schedsearch.placements import mapping_style
    >>> mapping_style([0, 1, 1, 0], 2), mapping_style([0, 1, 0, 1], 2), mapping_style([1, 0], 2)
    ('v', 'loop', None)
    """
    for style in MAPPING_STYLES:
        try:
            if tuple(mapping) == stage_mapping(style, num_devices, len(mapping)):
                return style
        except InvalidProblemError:
            continue
    return None


def stage_pipeline(
    mapping: Sequence[int] | str,
    num_devices: int,
    num_microbatches: int,
    *,
    num_stages: int | None = None,
    forward: IntOrSeq = 1,
    backward: IntOrSeq | None = 2,
    input_grad: IntOrSeq | None = None,
    weight_grad: IntOrSeq | None = None,
    split_backward: bool = False,
    forward_memory: IntOrSeq = 1,
    backward_memory: IntOrSeq | None = None,
    input_grad_memory: IntOrSeq = 0,
    weight_grad_memory: IntOrSeq | None = None,
    full_backward: bool = False,
    overlap_forward_backward: int | None = None,
    memory: int | Sequence[int | None] | None = None,
    free_at_end: bool = False,
    initial_memory: int = 0,
    name: str = "",
) -> Problem:
    """One pipeline from a stage-to-device mapping, per-stage durations and memory.

    Parameters
    ----------
    mapping:
        Device index of each stage, or a style name (``"loop"``, ``"v"``)
        together with ``num_stages``.
    forward, backward, input_grad, weight_grad:
        Durations per stage (one value or one per stage) of F, B and, with
        ``split_backward``, I and W.
    forward_memory, backward_memory, input_grad_memory, weight_grad_memory:
        Memory deltas per stage (see :func:`~schedsearch.placements.chain_pipelines`).
    full_backward, overlap_forward_backward:
        Declare overlapped groups (fused ``I+W`` = ``B``; ``F&B`` pairs).
    free_at_end:
        Free activations when the freeing block ends, as a real runtime
        does (see :func:`~schedsearch.placements.chain_pipelines`).

    Examples
    --------
    >>> from schedsearch.placements import stage_pipeline
    >>> p = stage_pipeline("v", 2, 3, num_stages=4, split_backward=True)
    >>> [b.name for b in p.graph.blocks][:4], p.graph.block("F2").options[0].devices
    (['F0', 'F1', 'F2', 'F3'], ('d1',))
    """
    if isinstance(mapping, str):
        _check_style(mapping)
        if num_stages is None:
            raise InvalidProblemError(f"placement: mapping style {mapping!r} needs 'num_stages'")
        stages = stage_mapping(mapping, num_devices, num_stages)
    else:
        stages = tuple(mapping)
        if num_stages is not None and num_stages != len(stages):
            raise InvalidProblemError(
                f"placement: 'num_stages' ({num_stages}) differs from the mapping's length ({len(stages)})"
            )
    return chain_pipelines(
        [list(stages)],
        num_devices,
        num_microbatches,
        forward=forward,
        backward=backward,
        forward_memory=forward_memory,
        backward_memory=backward_memory,
        memory=memory,
        free_at_end=free_at_end,
        initial_memory=initial_memory,
        name=name or f"pipeline-{num_devices}dev-{len(stages)}st-m{num_microbatches}",
        split_backward=split_backward,
        input_grad=input_grad,
        weight_grad=weight_grad,
        input_grad_memory=input_grad_memory,
        weight_grad_memory=weight_grad_memory,
        full_backward=full_backward,
        overlap_forward_backward=overlap_forward_backward,
    )


def zero_bubble(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    input_grad: IntOrSeq = 1,
    weight_grad: IntOrSeq = 1,
    forward_memory: IntOrSeq = 1,
    input_grad_memory: IntOrSeq = 0,
    weight_grad_memory: IntOrSeq | None = None,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """The V-shape with the zero-bubble split (ZB-H1): stage ``i`` on device ``i``, B = I + W.

    Each backward becomes an input gradient ``I{s}`` (on the critical path)
    and a weight gradient ``W{s}`` that may run later, to fill bubbles.

    Examples
    --------
    >>> from schedsearch.placements import zero_bubble
    >>> problem = zero_bubble(2, 2)
    >>> problem.graph.block_names
    ('F0', 'F1', 'I1', 'W1', 'I0', 'W0')
    >>> [(e.src, e.dst) for e in problem.graph.edges if e.dst.startswith("W")]
    [('I1', 'W1'), ('I0', 'W0')]
    """
    return stage_pipeline(
        list(range(num_devices)),
        num_devices,
        num_microbatches,
        forward=forward,
        backward=_sum(input_grad, weight_grad),
        input_grad=input_grad,
        weight_grad=weight_grad,
        split_backward=True,
        forward_memory=forward_memory,
        input_grad_memory=input_grad_memory,
        weight_grad_memory=weight_grad_memory,
        memory=memory,
        free_at_end=free_at_end,
        name=f"zero-bubble-p{num_devices}-m{num_microbatches}",
    )


def interleaved(
    num_devices: int,
    num_chunks: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq = 2,
    split_backward: bool = False,
    input_grad: IntOrSeq | None = None,
    weight_grad: IntOrSeq | None = None,
    forward_memory: IntOrSeq = 1,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """Interleaved pipeline: ``num_chunks`` (v) stages per device, ``"loop"`` mapping.

    Stage ``c * p + d`` (chunk ``c`` of device ``d``) runs on device ``d``.
    Durations are per chunk; the published figures (per-chunk ``F/v``,
    ``B/v``) are these times divided by ``v`` (``time_scale = v``, recorded
    in the name).

    Examples
    --------
    >>> from schedsearch.placements import interleaved
    >>> problem = interleaved(2, 2, 4)
    >>> problem.name
    'interleaved-1f1b-p2-v2-m4 (time x2)'
    >>> [(b.name, b.options[0].devices[0]) for b in problem.graph.blocks if b.kind == "F"]
    [('F0', 'd0'), ('F1', 'd1'), ('F2', 'd0'), ('F3', 'd1')]
    """
    check_positive("num_chunks", num_chunks)
    kind = "zb" if split_backward else "1f1b"
    return stage_pipeline(
        "loop",
        num_devices,
        num_microbatches,
        num_stages=num_devices * num_chunks,
        forward=forward,
        backward=backward,
        split_backward=split_backward,
        input_grad=input_grad,
        weight_grad=weight_grad,
        forward_memory=forward_memory,
        memory=memory,
        free_at_end=free_at_end,
        name=f"interleaved-{kind}-p{num_devices}-v{num_chunks}-m{num_microbatches} (time x{num_chunks})",
    )


def vshape_chunks(
    num_devices: int,
    num_microbatches: int,
    *,
    num_chunks: int = 2,
    forward: IntOrSeq = 1,
    input_grad: IntOrSeq = 1,
    weight_grad: IntOrSeq = 1,
    split_backward: bool = True,
    backward: IntOrSeq | None = None,
    forward_memory: IntOrSeq = 1,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """The ``"v"`` mapping with ``num_chunks`` stages per device (ZB-V's placement).

    With the default split the backward is ``I + W``; ``split_backward=False``
    uses full backward blocks of duration ``backward``.

    Examples
    --------
    >>> from schedsearch.placements import vshape_chunks
    >>> problem = vshape_chunks(2, 4)
    >>> [(b.name, b.options[0].devices[0]) for b in problem.graph.blocks if b.kind == "F"]
    [('F0', 'd0'), ('F1', 'd1'), ('F2', 'd1'), ('F3', 'd0')]
    """
    check_positive("num_chunks", num_chunks)
    if split_backward:
        backward = _sum(input_grad, weight_grad) if backward is None else backward
    elif backward is None:
        backward = 2
    return stage_pipeline(
        "v",
        num_devices,
        num_microbatches,
        num_stages=num_devices * num_chunks,
        forward=forward,
        backward=backward,
        split_backward=split_backward,
        input_grad=input_grad if split_backward else None,
        weight_grad=weight_grad if split_backward else None,
        forward_memory=forward_memory,
        memory=memory,
        free_at_end=free_at_end,
        name=f"vshape-chunks-p{num_devices}-v{num_chunks}-m{num_microbatches}",
    )


#: Chimera's bidirectional placement (Li and Hoefler): the same function as
#: :func:`schedsearch.placements.chains.bidirectional`, kept under the paper's name.
chimera = bidirectional


def dualpipe(
    num_devices: int,
    num_chunks: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq = 2,
    weight_grad: IntOrSeq = 1,
    overlap: int = 3,
    forward_memory: IntOrSeq = 1,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """DualPipe's placement: device ``r`` holds stage ``r`` of the down and stage ``PP-1-r`` of the up pipeline.

    Backwards are split into ``I`` (``backward - weight_grad``) and ``W``
    and may also run whole (a ``"B"`` group lasting ``backward``); a
    forward of one direction may overlap the full backward of the other on
    the same device (an ``"F&B"`` group lasting ``overlap``). Half of the
    ``num_chunks`` micro-batches run each way; the problem's micro-batch
    ``k`` holds down and up micro-batch ``k``.

    Examples
    --------
    >>> from schedsearch.placements import dualpipe
    >>> problem = dualpipe(2, 4)
    >>> print(problem)
    dualpipe-p2-m4-fb3: 12 blocks x 2 micro-batches, 10 edges, devices [d0(mem=inf), d1(mem=inf)], 0 channels
    >>> sorted({overlap.name for overlap in problem.overlaps})
    ['B', 'F&B']
    """
    check_positive("num_devices", num_devices)
    check_positive("num_chunks", num_chunks, 2)
    if num_chunks % 2:
        raise InvalidProblemError(
            f"placement 'dualpipe': 'num_chunks' must be even (half run each way), got {num_chunks}"
        )
    return chain_pipelines(
        [list(range(num_devices)), list(range(num_devices - 1, -1, -1))],
        num_devices,
        num_chunks // 2,
        forward=forward,
        backward=backward,
        weight_grad=weight_grad,
        split_backward=True,
        full_backward=True,
        overlap_forward_backward=overlap,
        forward_memory=forward_memory,
        memory=memory,
        free_at_end=free_at_end,
        suffixes=[".down", ".up"],
        name=f"dualpipe-p{num_devices}-m{num_chunks}-fb{overlap}",
    )


def dualpipev(
    num_devices: int,
    num_microbatches: int,
    *,
    forward: IntOrSeq = 1,
    backward: IntOrSeq = 2,
    weight_grad: IntOrSeq = 1,
    overlap: int = 3,
    forward_memory: IntOrSeq = 1,
    memory: int | None = None,
    free_at_end: bool = False,
) -> Problem:
    """DualPipeV's placement: ``2 p`` stages on ``p`` devices, ``"v"`` mapping.

    Device ``r`` holds stages ``r`` and ``2p-1-r``. Backwards are split into
    ``I`` and ``W`` and may run whole (``"B"`` groups); the forward of one
    of a device's stages may overlap the full backward of the other
    (``"F&B"`` groups lasting ``overlap``).

    Examples
    --------
    >>> from schedsearch.placements import dualpipev
    >>> problem = dualpipev(2, 4)
    >>> problem.graph.block("F3").options[0].devices  # stage 3 of 4 comes back to d0
    ('d0',)
    >>> [(o.name, o.blocks, o.duration) for o in problem.overlaps][:2]
    [('B', ('I3', 'W3'), 2), ('B', ('I2', 'W2'), 2)]
    """
    check_positive("num_devices", num_devices)
    return stage_pipeline(
        "v",
        num_devices,
        num_microbatches,
        num_stages=2 * num_devices,
        forward=forward,
        backward=backward,
        weight_grad=weight_grad,
        split_backward=True,
        full_backward=True,
        overlap_forward_backward=overlap,
        forward_memory=forward_memory,
        memory=memory,
        free_at_end=free_at_end,
        name=f"dualpipev-p{num_devices}-m{num_microbatches}-fb{overlap}",
    )


def _sum(a: IntOrSeq, b: IntOrSeq) -> IntOrSeq:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(a, int):
        return [a + y for y in b]
    if isinstance(b, int):
        return [x + b for x in a]
    if len(a) != len(b):
        raise InvalidProblemError(f"placement: per-stage 'input_grad' {list(a)} and 'weight_grad' {list(b)} differ in length")
    return [x + y for x, y in zip(a, b)]
