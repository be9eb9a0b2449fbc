"""GPipe, 1F1B and Megatron's interleaved 1F1B.

Each generator takes a problem built by :mod:`schedsearch.placements` (or
any problem with the same block structure), writes the published per-device
action order and returns the validated as-soon-as-possible schedule.

Closed forms (uniform per-stage durations ``F``, ``B``, no communication;
``p`` devices, ``m`` micro-batches; bubble = makespan minus busy time of
the worst device):

* GPipe and 1F1B: makespan ``(m + p - 1)(F + B)``, bubble ``(p - 1)(F + B)``;
  peak activations (forward +1, backward -1): GPipe ``m`` on every device,
  1F1B ``min(p - r, m)`` on device ``r``.
* Interleaved 1F1B, ``v`` chunks of per-chunk durations ``F_c``, ``B_c``:
  bubble ``(p - 1)(F_c + B_c)`` (the published ``(p - 1)(F + B) / v`` for
  whole-model times ``F = v F_c``).
"""

from __future__ import annotations

from schedsearch.actions import Action
from schedsearch.deadline import checkpoint
from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import PipelineView, pipeline_view, run_actions
from schedsearch.placements.stages import stage_mapping
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["gpipe", "one_f_one_b", "interleaved_1f1b", "megatron_order"]


def _single(view: PipelineView, what: str) -> None:
    if list(view.pipelines) != [""]:
        raise InvalidProblemError(
            f"{what}: needs a single pipeline, but problem {view.problem.name!r} has pipelines {sorted(view.pipelines)}"
        )
    if not view.training:
        raise InvalidProblemError(f"{what}: needs a training problem (with backward blocks)")


def _one_stage_per_device(view: PipelineView, what: str) -> tuple[int, ...]:
    _single(view, what)
    mapping = view.mapping()
    if len(set(mapping)) != len(mapping):
        raise InvalidProblemError(
            f"{what}: needs one stage per device, but the stages run on device ranks {list(mapping)} "
            f"(use interleaved_1f1b for several stages per device)"
        )
    return mapping


def gpipe(problem: Problem) -> Schedule:
    """GPipe: every device runs all its forwards, then all its backwards (micro-batch order).

    Examples
    --------
    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.vshape(2, 2, forward=1, backward=2)
    >>> schedule = handcrafted.gpipe(problem)
    >>> schedule.makespan, dict(metrics(problem, schedule).peak_memory)  # (m+p-1)(F+B); m activations
    (9, {'d0': 2, 'd1': 2})
    """
    view = pipeline_view(problem)
    mapping = _one_stage_per_device(view, "GPipe")
    m = problem.num_microbatches
    orders = {}
    for s, rank in enumerate(mapping):
        orders[rank] = [Action(s, "F", i) for i in range(m)] + [Action(s, "B", i) for i in range(m)]
    return run_actions(view, orders, name="GPipe")


def one_f_one_b(problem: Problem) -> Schedule:
    """1F1B (PipeDream-flush / DAPPLE): stage ``s`` of ``S`` warms up with
    ``min(S - s - 1, m)`` forwards, then alternates one forward and one
    backward, then drains the remaining backwards.

    Examples
    --------
    GPipe's makespan with fewer activations in flight (``p - r`` on device
    ``r``):

    >>> from schedsearch import metrics
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2, forward=1, backward=2)
    >>> schedule = one_f_one_b(problem)
    >>> schedule.makespan, dict(metrics(problem, schedule).peak_memory)
    (9, {'d0': 2, 'd1': 1})
    >>> schedule.device_orders()["d1"]
    (('F1', 0), ('B1', 0), ('F1', 1), ('B1', 1))
    """
    view = pipeline_view(problem)
    mapping = _one_stage_per_device(view, "1F1B")
    S, m = len(mapping), problem.num_microbatches
    orders = {}
    for s, rank in enumerate(mapping):
        warm = min(S - s - 1, m)
        acts: list[Action] = [Action(s, "F", i) for i in range(warm)]
        for i in range(m - warm):
            acts += [Action(s, "F", warm + i), Action(s, "B", i)]
        acts += [Action(s, "B", i) for i in range(m - warm, m)]
        orders[rank] = acts
        checkpoint(len(acts))

    return run_actions(view, orders, name="1F1B")


def megatron_order(num_microbatches: int, num_chunks: int, group_size: int) -> list[tuple[int, int]]:
    """Megatron's forward order of (micro-batch, chunk) on every device.

    Micro-batches are taken in groups of ``group_size``; each group runs
    through chunk 0, then chunk 1, ... (the last group may be smaller).

    Examples
    --------
    >>> from schedsearch.handcrafted import megatron_order
    >>> megatron_order(4, 2, 2)
    [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    """
    order = []
    for first in range(0, num_microbatches, group_size):
        group = range(first, min(first + group_size, num_microbatches))
        for c in range(num_chunks):
            order += [(mb, c) for mb in group]
    return order


def check_interleaved(problem: Problem, group_size: int | None, what: str) -> tuple[PipelineView, int, int, int]:
    """Preconditions of the interleaved schedules; returns (view, p, v, N)."""
    view = pipeline_view(problem)
    _single(view, what)
    mapping = view.mapping()
    p = len(problem.cluster.devices)
    S = len(mapping)
    if S % p or tuple(mapping) != stage_mapping("loop", p, S):
        raise InvalidProblemError(
            f"{what}: needs the 'loop' stage-to-device mapping (stage s on device s mod {p}, a multiple of {p} "
            f"stages), got device ranks {list(mapping)}"
        )
    v = S // p
    m = problem.num_microbatches
    N = p if group_size is None else group_size
    if isinstance(N, bool) or not isinstance(N, int):
        raise InvalidProblemError(f"{what}: 'group_size' must be an integer, got {N!r}")
    if N < p:
        raise InvalidProblemError(
            f"{what}: 'group_size' ({N}) must be >= the number of devices ({p}): with smaller groups a "
            f"micro-batch comes back to device 0 for its next chunk before that device is free, and the "
            f"order deadlocks"
        )
    if N > m:
        raise InvalidProblemError(
            f"{what}: 'group_size' ({N}) must be <= the number of micro-batches ({m}); "
            f"with {m} micro-batches use a group size between {p} and {m}"
            if m >= p
            else f"{what}: needs at least as many micro-batches as devices ({p}) for a group size >= {p}, got {m}"
        )
    return view, p, v, N


def interleaved_1f1b(problem: Problem, *, group_size: int | None = None) -> Schedule:
    """Megatron-LM's interleaved 1F1B (depth-first, ``v`` chunks per device).

    Needs the ``"loop"`` mapping (see :func:`~schedsearch.placements.interleaved`)
    and ``p <= group_size <= m`` (default ``group_size = p``). On device
    ``r``: forwards follow :func:`megatron_order` (chunk ``c`` is stage
    ``c p + r``), backwards the same order with chunks reversed; the warm-up
    runs ``2 (p - r - 1) + (v - 1) group_size`` forwards (at most all of
    them), then one forward and one backward alternate, then the remaining
    backwards drain.

    Examples
    --------
    The problem counts time in per-chunk units (``v`` times the published
    unit): the bubble of 3 units is the published ``(p-1)(F+B)/v = 1.5``.

    >>> from schedsearch import metrics
    >>> from schedsearch.handcrafted import interleaved_1f1b
    >>> from schedsearch.placements import interleaved
    >>> problem = interleaved(2, 2, 4)
    >>> schedule = interleaved_1f1b(problem)
    >>> schedule.makespan, metrics(problem, schedule).bubble_global
    (27, 3)
    """
    view, p, v, N = check_interleaved(problem, group_size, "interleaved 1F1B")
    m = problem.num_microbatches
    fwd = megatron_order(m, v, N)
    bwd = [(mb, v - 1 - c) for mb, c in fwd]
    total = m * v
    orders = {}
    for r in range(p):
        warm = min(2 * (p - r - 1) + (v - 1) * N, total)
        acts: list[Action] = [Action(c * p + r, "F", mb) for mb, c in fwd[:warm]]
        for k in range(total - warm):
            mb, c = fwd[warm + k]
            acts.append(Action(c * p + r, "F", mb))
            mb, c = bwd[k]
            acts.append(Action(c * p + r, "B", mb))
        for mb, c in bwd[total - warm:]:
            acts.append(Action(c * p + r, "B", mb))
        orders[r] = acts
        checkpoint(len(acts))

    return run_actions(view, orders, name=f"interleaved 1F1B (v={v}, group {N})")
