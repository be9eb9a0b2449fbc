"""Memory-capped V schedules: V-Half, V-Min and a V greedy under any activation cap.

Setting (Qi et al., *Pipeline Parallelism with Controllable Memory*,
2024): the ``"v"`` placement of :func:`~schedsearch.placements.vshape_chunks`
with two chunks, device ``r`` holding stages ``a = r`` (going down) and
``b = 2p - 1 - r`` (coming back up); backwards split into ``I`` and ``W``;
memory per chunk ``F`` +1 at its start, ``I`` 0, ``W`` -1 at its start
(the placement's convention; other deltas are read from the problem). The
paper lowers the activation memory of ZB-V (``2p`` chunk activations per
device, as much as 1F1B) by letting fewer micro-batches be in flight on
each device: *V-Half* about half of 1F1B's, *V-Min* about a third, at the
price of a few bubbles.

:func:`v_capped` builds such a schedule greedily, one device decision at a
time in time order, under a per-device cap ``C`` on the activation level:

* **Admission.** Device ``r`` starts the chunk-0 forward of a new
  micro-batch only when its level plus that forward plus a reserve for
  chunk-1 forwards stays within ``C``: the room of the chunk-1 forwards
  of every micro-batch it has admitted, this one included (``"all"``),
  or of one (``"oldest"``). A chunk-1 forward that does not fit waits
  for pending ``W`` to free room. The reserve keeps the greedy going: the
  oldest micro-batch whose forwards are unfinished always finds room for
  its chunk-1 forward on every device it has reached, its ``I`` need no
  room, and its ``W`` then free room for the next (``C >= 2`` chunk
  activations on every device suffice); a run that gets stuck anyway is
  dropped.
* **Priorities.** Among the ready actions a device runs the first by a
  priority order over ``I`` (chunk 1 before chunk 0, oldest first), the
  chunk-1 forward and the admissible chunk-0 forward. When none is ready
  it runs a pending ``W`` (the oldest): always (``eager``), or only when
  the ``W`` ends by the time the next action's input is known to arrive
  or no arrival is known yet (``fit``), else it waits; ``prompt`` ranks
  pending ``W`` right after ``I``. When a forward is ready but does not
  fit, pending ``W`` run first to make room.
* The greedy tries every priority order and both ``W`` policies and keeps
  the shortest schedule (the first of the order of :data:`V_VARIANTS` on
  ties); its simulated times equal the as-soon-as-possible times of the
  orders it writes (a device only waits when nothing it may run is ready).

The caps of the named schedules, in chunk activations (``p`` devices; one
1F1B activation of a whole device is two chunk activations):

* V-Half: ``p + 2`` (half of 1F1B's ``2p``, plus one micro-batch);
* V-Min: ``2 * ceil((p + 2) / 3)`` (about a third of 1F1B's, rounded to
  whole micro-batches).

Both are lowered to a device's capacity when the problem sets a smaller
one. For ``p = 4`` and ``p = 8`` they are the peaks the public greedy of
the paper's authors reaches (6 and 4; 10 and 8); the schedules are this
module's own greedy, not a transcription of that code, so their makespans
may differ from the published figures (the benchmark ``vhalf`` prints
both).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import Act, pipeline_view, run_actions
from schedsearch.placements.stages import stage_mapping
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["VVariant", "V_VARIANTS", "v_half_cap", "v_min_cap", "v_capped", "v_half", "v_min", "v_capped_orders"]


@attrs.frozen
class VVariant:
    """One rule set of the capped V greedy: the priority order of ``"I"``,
    ``"Fb"`` (chunk-1 forward) and ``"Fa"`` (chunk-0 forward), the ``W``
    policy (``"fit"``, ``"eager"`` or ``"prompt"``) and the reserve
    (``"all"`` or ``"oldest"``), see the module docstring.

    Examples
    --------
    >>> from schedsearch.handcrafted.v_capped import V_VARIANTS
    >>> V_VARIANTS[0]
    VVariant(priority=('I', 'Fb', 'Fa'), w_policy='fit', reserve='all')
    """

    priority: tuple[str, ...]
    w_policy: str
    reserve: str = "all"


#: The variants the greedy tries, in order.
V_VARIANTS = tuple(VVariant(tuple(order), w, reserve) for reserve in ("all", "oldest")
                   for w in ("fit", "eager", "prompt")
                   for order in itertools.permutations(("I", "Fb", "Fa")))


def v_half_cap(num_devices: int) -> int:
    """V-Half's activation cap in chunk activations: ``p + 2``.

    Examples
    --------
    >>> from schedsearch.handcrafted.v_capped import v_half_cap
    >>> v_half_cap(4), v_half_cap(8)
    (6, 10)
    """
    _check_devices(num_devices)
    return num_devices + 2


def v_min_cap(num_devices: int) -> int:
    """V-Min's activation cap in chunk activations: ``2 ceil((p + 2) / 3)``.

    Examples
    --------
    >>> from schedsearch.handcrafted.v_capped import v_min_cap
    >>> v_min_cap(4), v_min_cap(8), v_min_cap(16)
    (4, 8, 12)
    """
    _check_devices(num_devices)
    return 2 * math.ceil((num_devices + 2) / 3)


def _check_devices(p: object) -> None:
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise InvalidProblemError(f"V cap: 'num_devices' must be an integer >= 1, got {p!r}")


class _Setup:
    """The V placement read from a problem: stages per device, durations, memory deltas, caps."""

    def __init__(self, problem: Problem, cap: int | None, what: str) -> None:
        view = pipeline_view(problem)
        if list(view.pipelines) != [""]:
            raise InvalidProblemError(f"{what}: needs a single pipeline, got pipelines {sorted(view.pipelines)}")
        if not view.split:
            raise InvalidProblemError(f"{what}: needs backwards split into I and W (placements.vshape_chunks)")
        p = len(problem.cluster.devices)
        mapping = view.mapping()
        if len(mapping) != 2 * p or tuple(mapping) != stage_mapping("v", p, 2 * p):
            raise InvalidProblemError(
                f"{what}: needs 2 stages per device in the 'v' mapping ({list(stage_mapping('v', p, 2 * p))}), "
                f"got device ranks {list(mapping)} (build it with placements.vshape_chunks)"
            )
        if problem.duration_overrides or problem.releases or problem.fixed_orders:
            raise InvalidProblemError(
                f"{what}: needs alike micro-batches (no duration overrides, releases or fixed orders)"
            )
        if any(e.size for e in problem.graph.edges):
            raise InvalidProblemError(f"{what}: communication times are not modelled (edge sizes must be 0)")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int)):
            raise InvalidProblemError(f"{what}: 'cap' must be an integer or None, got {cap!r}")
        blocks = problem.graph.by_name()
        stages = view.stages()
        self.view, self.p, self.m = view, p, problem.num_microbatches
        self.dur: dict[tuple[str, int], int] = {}
        self.mem: dict[tuple[str, int], int] = {}
        for s, st in enumerate(stages):
            for kind, name in (("F", st.forward), ("I", st.input_grad), ("W", st.weight_grad)):
                block = blocks[name]
                d = block.options[0].duration
                if d < 1:
                    raise InvalidProblemError(f"{what}: block {name!r}: 'duration' must be >= 1, got {d}")
                if block.workspace:
                    raise InvalidProblemError(f"{what}: block {name!r}: 'workspace' is not modelled, got "
                                              f"{block.workspace}")
                self.dur[kind, s] = d
                self.mem[kind, s] = block.memory
        for s in range(2 * p):
            if self.mem["F", s] < 0 or self.mem["I", s] != 0 or self.mem["W", s] > 0:
                raise InvalidProblemError(
                    f"{what}: stage {s}: needs memory deltas F >= 0, I = 0, W <= 0, got "
                    f"F {self.mem['F', s]}, I {self.mem['I', s]}, W {self.mem['W', s]}"
                )
        devices = problem.cluster.device_names
        self.init = [problem.initial_memory_of(d) for d in devices]
        self.caps: list[int | None] = []
        for r, d in enumerate(devices):
            caps = [c for c in (cap, problem.capacity(d)) if c is not None]
            self.caps.append(min(caps) if caps else None)


class _NoProgress(Exception):
    """The greedy cannot go on: every device waits (the cap is too small)."""


def _run(su: _Setup, variant: VVariant) -> tuple[int, dict[int, list[Act]]]:
    """One greedy run: the makespan and each device's order of actions."""
    p, m, dur, mem = su.p, su.m, su.dur, su.mem
    ends: dict[tuple[str, int, int], int] = {}
    nxt = {(k, s): 0 for k in "FIW" for s in range(2 * p)}
    level = list(su.init)
    free = [0] * p
    orders: dict[int, list[Act]] = {r: [] for r in range(p)}
    pending_w: list[list[tuple[int, int]]] = [[] for _ in range(p)]  # (stage, mb), oldest first
    events: list[int] = []
    total = 6 * p * m
    placed = 0
    last = 0

    def pred(kind: str, s: int, k: int) -> tuple[str, int, int] | None:
        if kind == "F":
            return ("F", s - 1, k) if s > 0 else None
        if kind == "I":
            return ("I", s + 1, k) if s < 2 * p - 1 else ("F", s, k)
        return ("I", s, k)

    def ready_at(kind: str, s: int, k: int) -> int | None:
        """When (kind, s, k)'s input is there, or None while its predecessor has not started."""
        q = pred(kind, s, k)
        return 0 if q is None else ends.get(q)

    def place(r: int, kind: str, s: int, t: int) -> None:
        nonlocal placed, last
        k = nxt[kind, s]
        end = t + dur[kind, s]
        ends[kind, s, k] = end
        nxt[kind, s] = k + 1
        level[r] += mem[kind, s]
        free[r] = end
        last = max(last, end)
        orders[r].append(Act(kind, s, k))
        heapq.heappush(events, end)
        if kind == "I":
            pending_w[r].append((s, k))
        placed += 1

    def run_w(r: int, t: int) -> None:
        s, k = pending_w[r].pop(0)
        if nxt["W", s] != k:  # the W of one stage run in their I order (FIFO keeps it)
            raise AssertionError("W out of order")  # pragma: no cover
        place(r, "W", s, t)

    # devices decide in time order
    tick = itertools.count()  # a device that waits goes after the others deciding at the same time
    heap = [(0, next(tick), r) for r in range(p)]
    heapq.heapify(heap)
    done = [False] * p
    stalled = 0
    while heap:
        t, _, r = heapq.heappop(heap)
        while events and events[0] <= t:
            heapq.heappop(events)
        a, b = r, 2 * p - 1 - r
        cap = su.caps[r]
        # candidates ready at t
        cands: dict[str, tuple[str, int]] = {}
        arrivals: list[int] = []
        ib, ia = nxt["I", b], nxt["I", a]
        i_choice = None
        for s, k in ((b, ib), (a, ia)):
            if k < m:
                at = ready_at("I", s, k)
                if at is not None and at <= t and (i_choice is None or k < i_choice[1]):
                    i_choice = (s, k)
                elif at is not None and at > t:
                    arrivals.append(at)
        if i_choice is not None:
            cands["I"] = ("I", i_choice[0])
        kb = nxt["F", b]
        fb_blocked = False
        if kb < m and kb < nxt["F", a]:
            at = ready_at("F", b, kb)
            if at is not None and at <= t:
                if cap is None or level[r] + mem["F", b] <= cap:
                    cands["Fb"] = ("F", b)
                else:
                    fb_blocked = True
            elif at is not None:
                arrivals.append(at)
        ka = nxt["F", a]
        fa_blocked = False
        if ka < m:
            at = ready_at("F", a, ka)
            if at is not None and at <= t:
                reserve = (ka + 1 - kb if variant.reserve == "all" else 1) * mem["F", b]
                if cap is None or level[r] + mem["F", a] + reserve <= cap:
                    cands["Fa"] = ("F", a)
                else:
                    fa_blocked = True
            elif at is not None:
                arrivals.append(at)
        if pending_w[r] and variant.w_policy == "prompt":
            cands["W"] = ("W", -1)
        priority = variant.priority
        if variant.w_policy == "prompt":
            i = priority.index("I") + 1
            priority = priority[:i] + ("W",) + priority[i:]
        choice = next((cands[x] for x in priority if x in cands), None)
        if choice == ("W", -1):
            run_w(r, t)
        elif choice is not None:
            place(r, choice[0], choice[1], t)
        elif pending_w[r] and (fa_blocked or fb_blocked or variant.w_policy == "eager" or not arrivals
                               or t + dur["W", pending_w[r][0][0]] <= min(arrivals)):
            run_w(r, t)
        elif nxt["W", a] >= m and nxt["W", b] >= m:
            done[r] = True
            continue
        else:
            if events:
                heapq.heappush(heap, (events[0], next(tick), r))
            else:  # nothing runs: only a device deciding at t may still start something
                stalled += 1
                if not heap or stalled > len(heap):
                    raise _NoProgress
                heapq.heappush(heap, (max(t, heap[0][0]), next(tick), r))
            continue
        stalled = 0
        heapq.heappush(heap, (free[r], next(tick), r))
    if placed != total:
        raise _NoProgress  # pragma: no cover - every device finished means every task ran
    return last, orders


def v_capped_orders(problem: Problem, cap: int | None, variant: VVariant) -> dict[int, list[Act]] | None:
    """Each device's order of actions (by cluster rank) under one variant, or
    None when the cap leaves the greedy no move.

    Examples
    --------
    >>> from schedsearch.handcrafted.v_capped import V_VARIANTS, v_capped_orders
    >>> from schedsearch.placements import vshape_chunks
    >>> orders = v_capped_orders(vshape_chunks(2, 2), 3, V_VARIANTS[0])
    >>> [str(a) for a in orders[0][:4]]
    ['0F0', '3F0', '3I0', '3W0']
    """
    su = _Setup(problem, cap, "capped V greedy")
    try:
        return _run(su, variant)[1]
    except _NoProgress:
        return None


def v_capped(problem: Problem, cap: int | None = None, *, name: str = "capped V greedy",
             time_limit_s: float | None = None) -> Schedule:
    """The shortest schedule of the capped V greedy over :data:`V_VARIANTS`.

    ``cap`` is the activation cap of every device in the problem's memory
    units (chunk activations with the default deltas); a device's capacity,
    when smaller, is its cap; ``None`` with no capacity: uncapped. The
    schedule is validated (the capacities included). With ``time_limit_s``
    the variants are tried in order until that time has passed (at least
    until one has a schedule).

    Raises
    ------
    InvalidProblemError
        The problem is not a V placement of two chunks with split backwards,
        or no variant can go on under the cap (a cap below two chunk
        activations on some device).

    Examples
    --------
    The V-Half cap on 4 devices, 8 micro-batches, unit times (ZB-V runs
    at ``2p = 8`` activations in ``6m + p - 1 = 51``):

    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_capped
    >>> problem = placements.vshape_chunks(4, 8)
    >>> figures = metrics(problem, v_capped(problem, 6))
    >>> max(figures.peak_memory.values()) <= 6, figures.makespan >= 51
    (True, True)
    """
    su = _Setup(problem, cap, name)
    best: tuple[int, int, dict[int, list[Act]]] | None = None
    t0 = time.monotonic()
    for i, variant in enumerate(V_VARIANTS):
        if best is not None and time_limit_s is not None and time.monotonic() - t0 >= time_limit_s:
            break
        try:
            span, orders = _run(su, variant)
        except _NoProgress:
            continue
        if best is None or span < best[0]:
            best = (span, i, orders)
    if best is None:
        raise InvalidProblemError(
            f"{name}: no variant can go on under the cap {cap} (capacities "
            f"{ {d.name: d.memory for d in problem.cluster.devices} }); a device needs room for at least one "
            f"forward of each chunk"
        )
    return run_actions(su.view, best[2], name=f"{name} ({V_VARIANTS[best[1]].priority}, W {V_VARIANTS[best[1]].w_policy})")


def v_half(problem: Problem) -> Schedule:
    """V-Half: the capped V greedy at :func:`v_half_cap` (or the devices' capacity when smaller).

    Examples
    --------
    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_half
    >>> problem = placements.vshape_chunks(4, 8)
    >>> max(metrics(problem, v_half(problem)).peak_memory.values()) <= 6
    True
    """
    return v_capped(problem, v_half_cap(len(problem.cluster.devices)), name="V-Half")


def v_min(problem: Problem) -> Schedule:
    """V-Min: the capped V greedy at :func:`v_min_cap` (or the devices' capacity when smaller).

    Examples
    --------
    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_min
    >>> problem = placements.vshape_chunks(4, 8)
    >>> max(metrics(problem, v_min(problem)).peak_memory.values()) <= 4
    True
    """
    return v_capped(problem, v_min_cap(len(problem.cluster.devices)), name="V-Min")
