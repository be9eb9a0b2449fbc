"""Zero-bubble schedules: ZB-H1 (ZB1P), interleaved ZB1P and ZB-V.

The backward is split into ``I`` (input gradient, on the critical path) and
``W`` (weight gradient, needed by nothing but the optimizer step), and the
``W`` passes fill the bubbles (Qi et al., *Zero Bubble Pipeline
Parallelism*). Problems: :func:`~schedsearch.placements.zero_bubble`,
:func:`~schedsearch.placements.interleaved` with ``split_backward=True``,
:func:`~schedsearch.placements.vshape_chunks`.

Closed forms (uniform ``F``, ``I``, ``W``, no communication, ``p``
devices; global bubble):

* ZB-H1: makespan ``m (F + I + W) + (p - 1)(F + I - W)`` and bubble
  ``(p - 1)(F + I - W)`` when ``I >= W`` and ``m >= p``; at most ``p``
  activations in flight per device (an activation is held from the start
  of its forward to the start of its ``W``).
* Interleaved ZB1P, ``v`` chunks, per-chunk ``F_c, I_c, W_c``: bubble
  ``(p - 1)(F_c + I_c - W_c)`` (the published ``(p-1)(F+I-W)/v``).
* ZB-V (2 stages per device, ``"v"`` mapping, ``F = I = W``, ``m >= 2p - 1``):
  every device runs without a gap from its first start to its last end
  (span bubble 0); makespan ``6 m F + (p - 1) F``, global bubble
  ``(p - 1) F``.
"""

from __future__ import annotations

from collections import deque

from schedsearch.actions import Action
from schedsearch.deadline import checkpoint
from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import check_v_mapping, PipelineView, pipeline_view, run_actions
from schedsearch.handcrafted.classic import _one_stage_per_device, _single, check_interleaved, megatron_order
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["zb_h1", "interleaved_zero_bubble", "zb_v"]


def _need_split(view: PipelineView, what: str) -> None:
    if not view.split:
        raise InvalidProblemError(
            f"{what}: needs backwards split into I and W (build the problem with split_backward=True, e.g. "
            f"placements.zero_bubble)"
        )


def _zb_device(fwd: list[Action], bwd: list[tuple[str, int, int]], warm: int, deferred: int) -> list[Action]:
    """One device of ZB1P: ``warm`` forwards, then (forward, I, maybe W) steps, then (I, maybe W).

    The weight gradient of the k-th input gradient runs after the
    ``(k + deferred)``-th one (FIFO); the rest drain at the end.
    """
    total = len(fwd)
    acts: list[Action] = list(fwd[:warm])
    pending: deque[Action] = deque()

    def backward_step(k: int) -> None:
        _, stage, mb = bwd[k]
        acts.append(Action(stage, "I", mb))
        pending.append(Action(stage, "W", mb))
        if k >= deferred:
            acts.append(pending.popleft())

    for k in range(total - warm):
        acts.append(fwd[warm + k])
        backward_step(k)
    for k in range(total - warm, total):
        backward_step(k)
    acts.extend(pending)
    return acts


def zb_h1(problem: Problem) -> Schedule:
    """ZB-H1 (ZB1P): 1F1B with ``I`` in place of ``B``; stage ``s`` defers its
    first ``s`` weight gradients, which fill the cooldown bubbles (so at most
    ``p`` activations are in flight on every device).

    Examples
    --------
    The bubble is ``(p-1)(F+I-W)``, a third of 1F1B's with unit times:

    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.zero_bubble(4, 8)
    >>> figures = metrics(problem, handcrafted.zb_h1(problem))
    >>> figures.makespan, figures.bubble_global
    (27, 3)
    """
    view = pipeline_view(problem)
    mapping = _one_stage_per_device(view, "ZB-H1")
    _need_split(view, "ZB-H1")
    S, m = len(mapping), problem.num_microbatches
    orders = {}
    for s, rank in enumerate(mapping):
        warm = min(S - s - 1, m)
        fwd = [Action(s, "F", i) for i in range(m)]
        bwd = [("I", s, i) for i in range(m)]
        orders[rank] = _zb_device(fwd, bwd, warm, deferred=s)
        checkpoint(len(orders[rank]))

    return run_actions(view, orders, name="ZB-H1")


def interleaved_zero_bubble(problem: Problem, *, group_size: int | None = None) -> Schedule:
    """Interleaved ZB1P (PyTorch's interleaved zero bubble): Megatron's
    interleaved order with ``I`` for ``B``, a warm-up of ``(v - 1) N + p - 1 - r``
    forwards on device ``r`` and ``r`` deferred weight gradients.

    Examples
    --------
    >>> from schedsearch import metrics
    >>> from schedsearch.handcrafted import interleaved_zero_bubble
    >>> from schedsearch.placements import interleaved
    >>> problem = interleaved(2, 2, 4, split_backward=True, input_grad=1, weight_grad=1)
    >>> schedule = interleaved_zero_bubble(problem)
    >>> schedule.makespan, metrics(problem, schedule).bubble_global  # (p-1)(F+I-W)/v = 0.5 published units
    (25, 1)
    """
    view, p, v, N = check_interleaved(problem, group_size, "interleaved zero bubble")
    _need_split(view, "interleaved zero bubble")
    m = problem.num_microbatches
    fwd_order = megatron_order(m, v, N)
    total = m * v
    orders = {}
    for r in range(p):
        warm = min((v - 1) * N + (p - 1 - r), total)
        fwd = [Action(c * p + r, "F", mb) for mb, c in fwd_order]
        bwd = [("I", (v - 1 - c) * p + r, mb) for mb, c in fwd_order]
        orders[r] = _zb_device(fwd, bwd, warm, deferred=r)
        checkpoint(len(orders[r]))
    return run_actions(view, orders, name=f"interleaved ZB1P (v={v}, group {N})")


def zb_v(problem: Problem) -> Schedule:
    """ZB-V: two stages per device in the ``"v"`` mapping (device ``r`` holds
    stages ``r`` and ``2p-1-r``), backwards split into I and W.

    Device ``r`` runs: ``2(p - r) - 1`` forwards of its first stage; ``r``
    pairs (second-stage forward, first-stage forward); ``p - r`` triples
    (F, I, W) of its second stage; then steady steps (first-stage F, I, W,
    second-stage F, I, W) while forwards remain; then ``r`` pairs of input
    gradients (first, second stage), ``p - r`` (I, W) pairs of the first
    stage, and the deferred weight gradients. With fewer than ``2p - 1``
    micro-batches the order is that of ``2p - 1`` with the extra ones left
    out.

    Examples
    --------
    No bubble inside any device's span, makespan ``(6m+p-1)F``:

    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.vshape_chunks(2, 3)
    >>> figures = metrics(problem, handcrafted.zb_v(problem))
    >>> figures.makespan, figures.bubble_span
    (19, 0)
    """
    view = pipeline_view(problem)
    _single(view, "ZB-V")
    _need_split(view, "ZB-V")
    p = check_v_mapping(view, "ZB-V", "build it with placements.vshape_chunks")
    m = problem.num_microbatches
    n = max(2 * p - 1, m)
    orders = {}
    for r in range(p):
        a, b = r, 2 * p - 1 - r  # first and second stage of the device
        acts: list[Action] = []
        cnt = {"fa": 0, "fb": 0, "ia": 0, "ib": 0}
        wa: deque[int] = deque()
        wb: deque[int] = deque()

        def f(which: str) -> None:
            stage = a if which == "a" else b
            acts.append(Action(stage, "F", cnt["f" + which]))
            cnt["f" + which] += 1

        def i(which: str, with_w: bool) -> None:
            stage, queue = (a, wa) if which == "a" else (b, wb)
            mb = cnt["i" + which]
            acts.append(Action(stage, "I", mb))
            cnt["i" + which] += 1
            queue.append(mb)
            if with_w:
                acts.append(Action(stage, "W", queue.popleft()))

        for _ in range(2 * (p - r) - 1):
            f("a")
        for _ in range(r):
            f("b")
            f("a")
        for _ in range(p - r):
            f("b")
            i("b", True)
        while cnt["fb"] < cnt["fa"] or cnt["fa"] < n:
            if cnt["fa"] < n:
                f("a")
            i("a", True)
            f("b")
            i("b", True)
        for _ in range(r):
            i("a", False)
            i("b", False)
        for _ in range(p - r):
            i("a", True)
        acts += [Action(b, "W", mb) for mb in wb]
        acts += [Action(a, "W", mb) for mb in wa]
        if not (cnt["fa"] == cnt["fb"] == cnt["ia"] == cnt["ib"] == n):
            raise AssertionError(f"ZB-V order of device {r} is incomplete: {cnt}")  # pragma: no cover
        orders[r] = [x for x in acts if x.microbatch < m]
        checkpoint(len(acts))

    return run_actions(view, orders, name="ZB-V")
