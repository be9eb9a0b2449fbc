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

:func:`v_capped` keeps the shortest of four constructions that fit the cap.

**Communication time.** An edge between two devices that carries data
(size > 0) delays its consumer by the least transfer time over the
channels joining them, read as a delay (the channel assumed free, as the
zero-bubble greedy of :mod:`~schedsearch.handcrafted.zb_greedy` and the
paper's own greedy read it); the turn at the bottom of the V and every
``W`` stay on one device. The greedy, the blocks and the as-soon-as-possible
timing that ranks the candidates add these delays; the orders kept are
timed by the simulator, which also queues transfers that share a channel,
and validated.

**Stable pattern, squeezed** (the paper's own greedy, :func:`v_stable_pattern`).
On a grid of unit slots, device ``s`` (of ``p``) runs micro-batch ``k``'s
chunk-0 forward, chunk-1 forward, chunk-1 ``I`` and chunk-0 ``I`` at four
fixed slots plus ``6k``. V-Min: with ``d = 2`` when ``3 | p`` (else 0),
slots ``s``, ``2p - s - 1``, ``2p + d + s``, ``4p + d - s - 1``; V-Half:
with ``d = 3`` when ``p`` is even (else 0), slots ``2s``, ``3p - s - 2``,
``3p + d + 2s - 1``, ``6p + d - s - 2``. The W's go into the free slots
after their ``I`` (each ``I`` adds one pending ``W``, each free slot takes
one, leftovers take the slots after the end); the cap is the largest
device peak of these lists. A squeeze then walks every task in slot order
(ties by device, type, micro-batch) and moves it to the earliest free
slot of its device after its inputs at which the device's peak stays
within the cap, in the warm-up (until device 0's first chunk-0 ``I``) and
the cool-down (from the last micro-batch's chunk-0 forward); the steady
state stays. It runs once with the W's in the lists, once without them
(their places then follow from the ``I``'s, chunk-1 ``W`` first), and the
W's are put in again by chunk. The devices' slot orders are timed as soon
as possible with the real durations. With unit times this gives the
published figures (V-Half 53, 101, 113, 209 for ``p, m`` = 4, 8; 4, 16;
8, 16; 8, 32 at peaks 6 and 10; V-Min 59, 107, 123, 219 at 4 and 8; with
F / I / W = 2 / 2 / 1 on 4 devices and 8 micro-batches V-Half 95 at 6,
V-Min 117 at 4); on those rows the makespan and the longest device span
(first forward's start to last ``W``'s end) coincide. For even ``p >= 4``
and ``m >= 2p`` V-Half's unit-time makespan is the paper's closed form
``6(m - 1) + 3p - 1``; for odd ``p`` (where its pattern has no ``d``) and
``p <= 2`` it is 2-4 units longer, at a peak of ``p + 1``. The pattern is
not always shorter than the other constructions (V-Min's often is not,
nor either pattern with a forward three times the ``I``).

**V-Min-spaced patterns with turn delays, squeezed under the cap.**
V-Min's spacing (one slot per stage along the V) with delays ``t1``,
``t2``, ``t3`` at its three turns: slots ``s``, ``2p - 2 + t1 - s``,
``2p - 2 + t1 + t2 + s``, ``4p - 4 + t1 + t2 + t3 - s`` (V-Min is ``1, 1 +
d, 1``), for the delays of :data:`V_TURNS` whose four slots are distinct
modulo 6 on every device. Their steady state holds about ``2p / 3`` chunk
activations; the squeeze moves every task, the steady state's too, into
the room the cap leaves above that (a W into the earliest free slot after
its ``I``, a forward only where the level stays within the cap). With
unit times at ``p + 1`` chunk activations this lands within 1% of the
lower bound ``6m + 3p - 4`` for ``p`` from 4 to 64 and ``m = 4p`` (the
benchmark ``zbv_scale``); V-Half's pattern needs ``p + 2`` there. They are
tried first when the devices have a cap.

**Building block, repeated** (the paper's construction). One micro-batch's
block gives each (kind, stage) an offset: the forwards down and up the V,
the input gradients back, then the weight gradients, each at the earliest
offset after its input whose busy interval, taken modulo the period
``T`` (the largest work of one micro-batch on a device, or one more),
meets none on its device; optionally ``hold`` time units before the
first chunk-1 forward. Micro-batch ``k`` runs the block from ``k T``;
each device's order is that timetable's, and the schedule is its
as-soon-as-possible timing (the squeeze: the warm-up and cool-down
close up; memory follows the order, so it keeps the timetable's peak).
With the tightest block (no hold, period ``2(F+I+W)``) every activation
lives as briefly as the chain allows: about ``2p/3`` chunk activations
per device, makespan ``(m - 1) T + 4p + 1`` for unit times, V-Min's
published figures. Blocks are tried at periods ``T`` and ``T + 1`` and
holds ``0 .. T``.

**Greedy**, one device decision at a time in time order, under a
per-device cap ``C`` on the activation level:

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
* The greedy tries the variants of :data:`V_VARIANTS`; its simulated
  times equal the as-soon-as-possible times of the orders it writes (a
  device only waits when nothing it may run is ready). It uses the memory
  above V-Min's to start micro-batches earlier (V-Half).

Candidates are compared by their as-soon-as-possible makespan, the first
kept on ties, in the order: under a cap the turn-delay patterns, the
V-Half and V-Min stable patterns (kept when their peaks fit the cap), the
tightest block, the six greedy variants
that win most often on small grids, the other blocks, the other variants;
the one kept is validated.

The caps of the named schedules, in chunk activations (``p`` devices; one
1F1B activation of a whole device is two chunk activations):

* V-Half: ``p + 2`` (half of 1F1B's ``2p``, plus one micro-batch);
* V-Min: ``2 * ceil((p + 2) / 3)`` (about a third of 1F1B's, rounded to
  whole micro-batches).

Both are lowered to a device's capacity when the problem sets a smaller
one. For ``p = 4`` and ``p = 8`` they are the peaks the public greedy of
the paper's authors reaches (6 and 4; 10 and 8), and the peaks the
stable patterns reach for even ``p``. The code is this module's own,
written from the paper's description; the benchmark ``vhalf`` prints the
published figures next to the computed ones.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import time

import attrs

from schedsearch.actions import Action
from schedsearch.deadline import STRIDE, checkpoint, counted


from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import check_v_mapping, pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["VVariant", "V_VARIANTS", "V_PATTERNS", "V_TURNS", "V_TASKS_PER_S", "V_FIRST_S_PER_TASK", "v_capped_applies",
           "v_half_cap", "v_min_cap", "v_capped", "v_half", "v_min",
           "v_capped_orders", "v_stable_pattern", "v_pattern_fit"]


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
    VVariant(priority=('Fb', 'Fa', 'I'), w_policy='fit', reserve='oldest')
    """

    priority: tuple[str, ...]
    w_policy: str
    reserve: str = "all"


_ORDERS = (("Fb", "Fa", "I"), ("I", "Fb", "Fa"), ("Fb", "I", "Fa"), ("I", "Fa", "Fb"), ("Fa", "I", "Fb"),
           ("Fa", "Fb", "I"))

#: The variants the greedy tries, in order (the ones most often shortest on small grids first).
V_VARIANTS = tuple(VVariant(order, w, reserve) for reserve in ("oldest", "all") for order in _ORDERS
                   for w in ("fit", "eager", "prompt"))


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


#: Task instances per second the candidates of :func:`v_capped` are counted at when a limit in
#: deterministic seconds becomes a ``work_limit`` (a candidate takes about 3 us per task instance on one
#: core at a few thousand task instances, a stable pattern's squeeze about 30 us at 100,000: a count, not
#: a measurement, the same on every machine).
V_TASKS_PER_S = 100_000

#: Seconds per task instance assumed for the first candidate of :func:`v_capped` and the run of its orders
#: (which :func:`v_capped` always finishes): 12-16 us at 24,000-288,000 task instances on one loaded core,
#: on V placements with and without overlapped groups. A wall-clock estimate, for a caller deciding whether
#: to start it.
V_FIRST_S_PER_TASK = 2e-5


def v_capped_applies(problem: Problem) -> bool:
    """Whether :func:`v_capped` takes the problem's placement (a single V pipeline of two chunks with split
    backwards, alike micro-batches, the memory deltas it models); checked per block, not per task instance.

    Examples
    --------
    >>> from schedsearch.placements import vshape, vshape_chunks
    >>> from schedsearch.handcrafted.v_capped import v_capped_applies
    >>> v_capped_applies(vshape_chunks(4, 8)), v_capped_applies(vshape(4, 8))
    (True, False)
    """
    try:
        _Setup(problem, None, "capped V greedy")
    except InvalidProblemError:
        return False
    return True


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
        p = check_v_mapping(view, what, "build it with placements.vshape_chunks")
        if problem.duration_overrides or problem.releases or problem.fixed_orders:
            raise InvalidProblemError(
                f"{what}: needs alike micro-batches (no duration overrides, releases or fixed orders)"
            )
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
        # the time an input takes to arrive (read as a delay, the channel assumed free): per (kind, stage),
        # from its predecessor (F from the stage before, I from the one after, the last stage's I from its F,
        # W from its I); 0 on one device or for an edge of size 0
        sizes = {(e.src, e.dst): e.size for e in problem.graph.edges}
        self.delay: dict[tuple[str, int], int] = {}
        for s, st in enumerate(stages):
            for kind, name, q in (("F", st.forward, stages[s - 1].forward if s else None),
                                  ("I", st.input_grad, stages[s + 1].input_grad if s < 2 * p - 1 else st.forward),
                                  ("W", st.weight_grad, st.input_grad)):
                self.delay[kind, s] = 0 if q is None else _transfer(problem, what, q, name, sizes.get((q, name), 0))
        self.init = [problem.initial_memory_of(d) for d in devices]
        self.caps: list[int | None] = []
        for r, d in enumerate(devices):
            caps = [c for c in (cap, problem.capacity(d)) if c is not None]
            self.caps.append(min(caps) if caps else None)


def _transfer(problem: Problem, what: str, src: str, dst: str, size: int) -> int:
    """The least transfer time of ``size`` units from block ``src``'s device to ``dst``'s (0 on one device)."""
    blocks = problem.graph.by_name()
    a, b = blocks[src].options[0].devices[0], blocks[dst].options[0].devices[0]
    if not size or a == b:
        return 0
    times = [c.transfer_time(size) for c in problem.cluster.channels_between(a, b)]
    if not times:  # pragma: no cover - a Problem refuses an edge with a size and no channel
        raise InvalidProblemError(
            f"{what}: edge {src!r} -> {dst!r} carries {size} units but no channel joins devices {a!r} and {b!r}"
        )
    return min(times)


class _NoProgress(Exception):
    """The greedy cannot go on: every device waits (the cap is too small)."""


def _run(su: _Setup, variant: VVariant) -> tuple[int, dict[int, list[Action]]]:
    """One greedy run: the makespan and each device's order of actions.

    Deliberately one long function: it is the event loop that every candidate variant of the search
    runs (devices deciding in time order, one decision per action placed), its state held in locals
    that the small closures share; split into functions over a state object, each decision would pay
    calls and attribute lookups.
    """
    p, m, dur, mem, delay = su.p, su.m, su.dur, su.mem, su.delay
    ends: dict[tuple[str, int, int], int] = {}
    nxt = {(k, s): 0 for k in "FIW" for s in range(2 * p)}
    level = list(su.init)
    free = [0] * p
    orders: dict[int, list[Action]] = {r: [] for r in range(p)}
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
        if q is None:
            return 0
        end = ends.get(q)
        return None if end is None else end + delay[kind, s]

    def place(r: int, kind: str, s: int, t: int) -> None:
        nonlocal placed, last
        k = nxt[kind, s]
        end = t + dur[kind, s]
        ends[kind, s, k] = end
        nxt[kind, s] = k + 1
        level[r] += mem[kind, s]
        free[r] = end
        last = max(last, end)
        orders[r].append(Action(s, kind, k))
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
        checkpoint()
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


def _block(su: _Setup, period: int, hold: int) -> dict[tuple[str, int], int] | None:
    """The building block: each (kind, stage)'s start offset in one micro-batch, or None.

    Modulo list scheduling at ``period``: the forwards down and up the V,
    the input gradients back, then the weight gradients, each at the
    earliest offset after its input (plus ``hold`` before the first
    chunk-1 forward) whose busy interval, taken modulo ``period``, meets
    none already on its device.
    """
    p, dur = su.p, su.dur
    busy: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    off: dict[tuple[str, int], int] = {}

    def put(kind: str, s: int, ready: int) -> bool:
        r, d = (s if s < p else 2 * p - 1 - s), dur[kind, s]
        for t in range(ready, ready + period):
            a = t % period
            if all((a - b) % period >= db and (b - a) % period >= d for b, db in busy[r]):
                off[kind, s] = t
                busy[r].append((a, d))
                return True
        return False

    delay = su.delay
    for s in range(2 * p):
        ready = off["F", s - 1] + dur["F", s - 1] + delay["F", s] + (hold if s == p else 0) if s else 0
        if not put("F", s, ready):
            return None
    for s in range(2 * p - 1, -1, -1):
        ready = off["I", s + 1] + dur["I", s + 1] if s < 2 * p - 1 else off["F", s] + dur["F", s]
        if not put("I", s, ready + delay["I", s]):
            return None
    for s in range(2 * p - 1, -1, -1):
        if not put("W", s, off["I", s] + dur["I", s] + delay["W", s]):
            return None
    return off


def _block_orders(su: _Setup, off: dict[tuple[str, int], int], period: int) -> dict[int, list[Action]]:
    """Each device's order of the block repeated every ``period`` (micro-batch ``k`` at ``k period``)."""
    p = su.p
    timed: list[list[tuple[int, int, str, int]]] = [[] for _ in range(p)]
    for (kind, s), o in off.items():
        r = s if s < p else 2 * p - 1 - s
        timed[r].extend((o + k * period, k, kind, s) for k in range(su.m))
    return {r: [Action(s, kind, k) for _, k, kind, s in sorted(lst)] for r, lst in enumerate(timed)}


def _evaluate(su: _Setup, orders: dict[int, list[Action]]) -> tuple[int, list[int]] | None:
    """The as-soon-as-possible makespan of ``orders`` and each device's peak level, or None when they deadlock."""
    p = su.p
    dur, mem = su.dur, su.mem
    ends: dict[tuple[str, int, int], int] = {}
    head, free, level = [0] * p, [0] * p, list(su.init)
    peak = list(su.init)
    waiting: dict[tuple[str, int, int], list[int]] = {}
    last = 0

    def pred(a: Action) -> tuple[str, int, int] | None:
        if a.kind == "F":
            return ("F", a.stage - 1, a.microbatch) if a.stage > 0 else None
        if a.kind == "I":
            return ("I", a.stage + 1, a.microbatch) if a.stage < 2 * p - 1 else ("F", a.stage, a.microbatch)
        return ("I", a.stage, a.microbatch)

    stack = list(range(p))
    while stack:
        r = stack.pop()
        seq = orders[r]
        while head[r] < len(seq):
            checkpoint()  # a call's hard stop ends the evaluation here (one unit per action)
            a = seq[head[r]]
            q = pred(a)
            if q is not None and q not in ends:
                waiting.setdefault(q, []).append(r)
                break
            start = max(free[r], ends[q] + su.delay[a.kind, a.stage] if q is not None else 0)
            end = start + dur[a.kind, a.stage]
            key = (a.kind, a.stage, a.microbatch)
            ends[key] = end
            free[r] = end
            last = max(last, end)
            level[r] += mem[a.kind, a.stage]
            peak[r] = max(peak[r], level[r])
            head[r] += 1
            stack.extend(waiting.pop(key, ()))
    if any(head[r] < len(orders[r]) for r in range(p)):
        return None
    return last, peak


# --- the stable pattern, squeezed (the paper's own construction) -------------------------------------

# The task types of a device in the stable pattern: "F0" / "F1" the chunk-0 / chunk-1 forward (stages ``r`` and
# ``2p - 1 - r``), "I1" / "I0" their input gradients, then weight gradients ("W" before they are told apart by
# chunk, "W1" / "W0" after). A device holds one task per slot.

#: The stable patterns :func:`v_stable_pattern` knows.
V_PATTERNS = ("half", "min")


def _pattern_slots(p: int, pattern: str) -> list[dict[str, int]]:
    """Per device, the unit slot of micro-batch 0's four F / I tasks in a period of 6 slots."""
    if pattern == "min":
        d = 2 if p % 3 == 0 else 0
        return [{"F0": s, "F1": 2 * p - s - 1, "I1": 2 * p + d + s, "I0": 4 * p + d - s - 1} for s in range(p)]
    d = 3 if p % 2 == 0 else 0
    return [{"F0": 2 * s, "F1": 3 * p - s - 2, "I1": 3 * p + d + 2 * s - 1, "I0": 6 * p + d - s - 2}
            for s in range(p)]


#: Turn delays of the V-Min-spaced patterns :func:`v_capped` tries under a cap (first-leg forward to
#: second-leg forward on the last device, second-leg forward to its ``I`` on device 0, chunk-1 ``I`` to
#: chunk-0 ``I`` on the last device), the ones most often shortest on unit times at ``p + 1`` first.
V_TURNS = ((5, 3, 3), (3, 5, 3), (5, 5, 5), (1, 3, 5), (1, 5, 1), (3, 5, 5), (5, 3, 5), (3, 1, 5), (5, 1, 3),
           (3, 3, 1), (1, 1, 1), (1, 1, 3), (3, 3, 3), (5, 5, 3), (1, 5, 5), (3, 5, 1), (5, 5, 1), (1, 3, 1),
           (1, 3, 3), (3, 1, 3), (3, 3, 5), (1, 5, 3), (5, 1, 1), (5, 1, 5), (5, 3, 1), (3, 1, 1), (1, 1, 5))


def _turn_slots(p: int, turns: tuple[int, int, int]) -> list[dict[str, int]] | None:
    """V-Min's spacing (one slot per stage along the V) with the given turn delays, or None when two of a
    device's four slots meet modulo 6."""
    d1, d2, d3 = turns
    out = []
    for s in range(p):
        slots = {"F0": s, "F1": 2 * p - 2 + d1 - s, "I1": 2 * p - 2 + d1 + d2 + s,
                 "I0": 4 * p - 4 + d1 + d2 + d3 - s}
        if len({t % 6 for t in slots.values()}) < 4:
            return None
        out.append(slots)
    return out


def _put_w(grid: dict[int, tuple[str, int]], split: bool) -> dict[int, tuple[str, int]]:
    """``grid`` (slot -> (type, micro-batch), F and I only) with its W's put in.

    Walking the slots in time order, each I adds a pending W and each slot
    without a task takes one (the oldest); W's left at the end take the
    following slots. With ``split`` a W belongs to its I's chunk and an empty
    slot takes a pending chunk-1 W before a chunk-0 one.
    """
    out = dict(grid)
    # per W key: the next W's micro-batch and how many are pending (a device's W's of one key come in order)
    keys = ("W1", "W0") if split else ("W",)
    given = dict.fromkeys(keys, 0)
    taken = dict.fromkeys(keys, 0)
    waiting = 0
    last = max(grid, default=-1)
    t = 0
    while t <= last or waiting:
        task = grid.get(t)
        if task is not None:
            if task[0][0] == "I":
                given["W" + task[0][1] if split else "W"] += 1
                waiting += 1
        elif waiting:
            key = ("W1" if given["W1"] > taken["W1"] else "W0") if split else "W"
            out[t] = (key, taken[key])
            taken[key] += 1
            waiting -= 1
        t += 1
    return out


def _grid_peak(grid: dict[int, tuple[str, int]], delta: dict[str, int], base: int, before: int | None = None) -> int:
    """The peak level of a device's slot list (W's in it) from ``base`` (over the slots before ``before``)."""
    level = peak = base
    for t in sorted(grid):
        if before is not None and t >= before:
            break
        level += delta[grid[t][0]]
        peak = max(peak, level)
    return peak


def _squeeze(p: int, m: int, grids: list[dict[int, tuple[str, int]]], caps: list[int],
             deltas: list[dict[str, int]], base: list[int], with_w: bool, steady: bool = False) -> None:
    """Move tasks to earlier slots (in place), in increasing slot order, ties by device (one task per slot).

    Phase 0 runs until device 0's first chunk-0 ``I``; phase 1 (the steady
    state, nothing moves) until the last micro-batch's chunk-0 forward;
    phase 2 (the cool-down) to the end. In phase 2, and in phase 0 when the
    W's are in the lists, a task moves to the earliest free slot of its
    device after its inputs' slots (the flow's previous task, the same
    device's previous type of the micro-batch, the same type's previous
    micro-batch; the ``k``-th W after the device's ``k``-th I) at which the
    device's peak stays within its cap (without W's in the lists, the peak
    of the lists with W's put in by chunk); else it stays. With ``steady``
    the tasks of phase 1 move too (when the W's are in the lists).

    With the W's in the lists a move changes the level only between the
    two slots, so the check reads the level there (kept per slot).
    """
    pos: dict[tuple[int, str, int], int] = {}
    # the tasks by (slot, device): a device has one task per slot, so bucketed by slot in device order (no
    # sort of every task at once: a phase the hard stop could not cut on a loaded machine)
    by_slot: list[list[tuple[int, str, int]]] = [[] for _ in range(max((max(g, default=-1) for g in grids),
                                                                      default=-1) + 1)]
    for r, g in enumerate(grids):
        checkpoint(len(g))
        for t, (typ, k) in g.items():
            pos[r, typ, k] = t
            by_slot[t].append((r, typ, k))
    order = [key for bucket in counted(by_slot, p) for key in bucket]

    # without the W's in the lists: the lists' W's put in by chunk (:func:`_put_w`) and the level are
    # scanned from a checkpoint, as a move at slot x changes nothing before x
    marks: dict[int, tuple[int, tuple[list[int], list[int]], dict[str, int], int, int]] = {}

    def scan(r: int, t: int, pending: dict[str, list[int]], count: dict[str, int], level: int, peak: int,
             stop: int | None) -> tuple[int, dict[str, list[int]], dict[str, int], int, int]:
        g, dl = grids[r], deltas[r]
        last = max(g, default=-1)
        while (t < stop) if stop is not None else (t <= last or pending["W1"] or pending["W0"]):
            checkpoint()
            task = g.get(t)
            if task is not None:
                level += dl[task[0]]
                if task[0][0] == "I":
                    key = "W" + task[0][1]
                    pending[key].append(count[key])
                    count[key] += 1
            elif pending["W1"] or pending["W0"]:
                key = "W1" if pending["W1"] else "W0"
                pending[key].pop(0)
                level += dl[key]
            peak = max(peak, level)
            t += 1
        return t, pending, count, level, peak

    def fits(r: int, x: int) -> bool:
        mark = marks.get(r)
        if mark is None or mark[0] > x:
            _, pend, cnt, lvl, pk = scan(r, 0, {"W1": [], "W0": []}, {"W1": 0, "W0": 0}, base[r], base[r], x)
            mark = marks[r] = (x, (pend["W1"], pend["W0"]), cnt, lvl, pk)
        c, (w1, w0), cnt, lvl, pk = mark
        return scan(r, c, {"W1": list(w1), "W0": list(w0)}, dict(cnt), lvl, pk, None)[4] <= caps[r]

    # per device, the slots of its I's in time order (the k-th W goes after the k-th I)
    i_slots = []
    for g in grids:
        checkpoint(len(g))
        i_slots.append(sorted(t for t, (ty, _) in g.items() if ty[0] == "I"))
    levels: list[list[int]] = []
    if with_w:  # the level after each slot, per device (slots past the list's end keep the last level)
        for r, g in enumerate(grids):
            checkpoint(len(g))
            lv, run = [], base[r]
            for t in range(max(g, default=-1) + 1):
                if t in g:
                    run += deltas[r][g[t][0]]
                lv.append(run)
            levels.append(lv)

    phase = 0
    for i, key in enumerate(order):
        if not i % STRIDE:
            checkpoint(STRIDE)
        r, typ, k = key
        cur = pos[key]
        if phase == 0 and r == 0 and typ == "I0":
            phase = 1
        if typ == "F0" and k == m - 1:
            phase = 2
        if (phase == 1 and not (steady and with_w)) or (phase == 0 and not with_w):
            continue
        deps = [(r, typ, k - 1)] if k else []
        if typ == "F0" and r > 0:
            deps.append((r - 1, "F0", k))
        elif typ == "F1":
            deps += [(r, "F0", k)] + ([(r + 1, "F1", k)] if r < p - 1 else [])
        elif typ == "I1":
            deps += [(r, "F1", k)] + ([(r - 1, "I1", k)] if r > 0 else [])
        elif typ == "I0":
            deps += [(r, "I1", k)] + ([(r + 1, "I0", k)] if r < p - 1 else [])
        earliest = max((pos[d] + 1 for d in deps), default=0)
        g = grids[r]
        if typ == "W":
            earliest = max(earliest, i_slots[r][k] + 1)
        if with_w:
            # moved from cur to x, the task's delta counts in the slots x .. cur - 1 too
            delta, lv = deltas[r][typ], levels[r]
            for x in range(earliest, cur):
                checkpoint(1 + (cur - x) // STRIDE)
                if x in g or (delta > 0 and max(lv[x:cur]) + delta > caps[r]):
                    continue
                g[x] = g.pop(cur)
                for y in range(x, cur):
                    lv[y] += delta
                pos[key] = x
                if typ[0] == "I":
                    _move_slot(i_slots[r], cur, x)
                break
            continue
        # without the W's in the lists, moving an I moves W's: the peak is checked on the whole list
        for x in range(earliest, cur):
            checkpoint()
            if x in g:
                continue
            g[x] = g.pop(cur)
            if not fits(r, x):
                g[cur] = g.pop(x)
                continue
            pos[key] = x
            if typ[0] == "I":
                _move_slot(i_slots[r], cur, x)
            break


def _move_slot(slots: list[int], old: int, new: int) -> None:
    """Replace ``old`` by ``new`` in the sorted list ``slots``."""
    del slots[bisect.bisect_left(slots, old)]
    bisect.insort(slots, new)


def _pattern_orders(su: _Setup, pattern: str | list[dict[str, int]],
                    cap: int | None = None) -> dict[int, list[Action]] | None:
    """Each device's order from a stable pattern squeezed (module docstring), or None when its slots clash
    or its own peak exceeds ``cap``.

    ``pattern`` is a name of :data:`V_PATTERNS` or the slots themselves
    (:func:`_turn_slots`). The squeeze keeps every device within the
    pattern's own peak, or within ``cap`` when that is larger (the warm-up
    and cool-down then use the room the steady state leaves).
    """
    laid = _pattern_grids(su, pattern)
    if laid is None:
        return None
    with_w, deltas, own = laid
    if cap is not None and own > cap:
        return None
    return _squeezed_orders(su, with_w, deltas, own if cap is None else cap, steady=not isinstance(pattern, str))


def _pattern_grids(su: _Setup, pattern: str | list[dict[str, int]], microbatches: int | None = None
                   ) -> tuple[list[dict[int, tuple[str, int]]], list[dict[str, int]], int] | None:
    """A stable pattern laid out: each device's slot list with its W's put in (unsplit), each device's
    deltas by task type, and the lists' peak (the most of any device); None when its slots clash.

    With ``microbatches = k`` (fewer than the problem's), only the first
    ``k`` micro-batches are laid out and the peak is read over the slots
    before ``6 k``: no later micro-batch has a slot there, so those slots
    hold the same tasks (W's included, put in from the same pending ones)
    in the whole pattern, and this peak is at most the whole pattern's.
    """
    p, m = su.p, su.m if microbatches is None else min(su.m, microbatches)
    window = None if m == su.m else 6 * m
    grids: list[dict[int, tuple[str, int]]] = []
    for r, slots in enumerate(_pattern_slots(p, pattern) if isinstance(pattern, str) else pattern):
        g: dict[int, tuple[str, int]] = {}
        checkpoint(len(slots) * m)
        for typ, t0 in slots.items():
            for k in range(m):
                if t0 + 6 * k in g:
                    return None
                g[t0 + 6 * k] = (typ, k)
        grids.append(g)
    deltas = []
    for r in range(p):
        a, b = r, 2 * p - 1 - r
        deltas.append({"F0": su.mem["F", a], "F1": su.mem["F", b], "I0": 0, "I1": 0, "W0": su.mem["W", a],
                       "W1": su.mem["W", b]})
    # the unsplit W of the first squeeze frees one chunk-0 or chunk-1 activation: count the smaller release
    for dl in deltas:
        dl["W"] = max(dl["W0"], dl["W1"])
    with_w = []
    for g in grids:
        checkpoint(len(g))
        with_w.append(_put_w(g, False))
    own = max(_grid_peak(g, deltas[r], su.init[r], window) for r, g in enumerate(counted(with_w, len(with_w[0]))))
    return with_w, deltas, own


def _squeezed_orders(su: _Setup, with_w: list[dict[int, tuple[str, int]]], deltas: list[dict[str, int]],
                     cap: int, steady: bool) -> dict[int, list[Action]]:
    """Each device's order from a laid-out pattern (:func:`_pattern_grids`) squeezed within ``cap`` (at
    least the pattern's own peak): ``with_w`` is squeezed in place."""
    p, m = su.p, su.m
    caps = [cap] * p
    _squeeze(p, m, with_w, caps, deltas, su.init, True, steady=steady)
    bare = [{t: v for t, v in g.items() if v[0] != "W"} for g in counted(with_w, len(with_w[0]))]
    _squeeze(p, m, bare, caps, deltas, su.init, False)
    orders: dict[int, list[Action]] = {}
    for r, g in enumerate(bare):
        checkpoint(len(g))
        full = _put_w(g, True)
        orders[r] = [Action(r if full[t][0][1] == "0" else 2 * p - 1 - r, full[t][0][0], full[t][1])
                     for t in sorted(full)]
    return orders


def v_stable_pattern(problem: Problem, pattern: str = "half") -> Schedule:
    """V-Half (``"half"``) or V-Min (``"min"``) as the paper builds them: the stable pattern, squeezed.

    Each device repeats micro-batch 0's four F / I slots every 6 unit
    slots (the paper's stable pattern), its W's go into the free slots
    after their I's, the warm-up and cool-down are squeezed into earlier
    free slots under the pattern's own peak, and the orders are timed as
    soon as possible with the problem's durations (module docstring). The
    peak is the plan's own (about ``p + 2`` chunk activations for
    ``"half"``, ``2p / 3`` for ``"min"``); the schedule is validated
    against the problem (its capacities included).

    Raises
    ------
    InvalidProblemError
        The problem is not a V placement of two chunks with split
        backwards, or ``pattern`` is not one of :data:`V_PATTERNS`.

    Examples
    --------
    The published V-Half figure for 4 devices, 8 micro-batches, unit times
    (53 at a peak of 6 chunk activations):

    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_stable_pattern
    >>> problem = placements.vshape_chunks(4, 8)
    >>> schedule = v_stable_pattern(problem, "half")
    >>> schedule.makespan, max(metrics(problem, schedule).peak_memory.values())
    (53, 6)
    """
    if pattern not in V_PATTERNS:
        raise InvalidProblemError(f"V stable pattern: 'pattern' must be one of {V_PATTERNS}, got {pattern!r}")
    su = _Setup(problem, None, "V stable pattern")
    orders = _pattern_orders(su, pattern)
    if orders is None:  # pragma: no cover - the two patterns have distinct slots modulo 6 for every p
        raise InvalidProblemError(f"V stable pattern: the {pattern!r} pattern's slots clash for p = {su.p}")
    return run_actions(su.view, orders, name=f"V-{pattern.capitalize()} (stable pattern)")


#: :func:`v_pattern_fit` reads a pattern's peak off its first ``_PEAK_PROBE * p`` micro-batches first (its
#: warm-up and the start of its steady state) when the problem has more and its devices are alike.
_PEAK_PROBE = 2


def v_pattern_fit(problem: Problem) -> Schedule:
    """The paper's own V-Half, else its V-Min: the first stable pattern, squeezed, whose peak fits every
    device's capacity (V-Half's with no capacity).

    One construction each, the cost of the paper's greedy: the quick first
    plan of a V placement; :func:`v_capped` then tries the other
    constructions under the same capacities. A pattern whose own peak (as
    laid out, before the squeeze, which keeps every device within it) is
    within every device's capacity fits as it is: it is squeezed and timed
    at once. Otherwise the squeezed pattern's peak is read device by
    device. Where the devices are alike (one capacity, one initial level,
    each device's two chunks holding the same), a pattern whose own peak
    is above the capacity is tried after the other (its own peak is then
    its squeezed plan's), read off its first ``2p`` micro-batches when it
    has more, so the whole of it is not laid out first. The schedule is
    validated.

    Raises
    ------
    InvalidProblemError
        The problem is not a V placement of two chunks with split
        backwards, or neither pattern's peak fits the capacities.

    Examples
    --------
    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_pattern_fit
    >>> problem = placements.vshape_chunks(4, 8, memory=5)
    >>> schedule = v_pattern_fit(problem)
    >>> schedule.name, schedule.makespan, max(metrics(problem, schedule).peak_memory.values())
    ('V-Min (stable pattern, squeezed)', 59, 4)
    """
    su = _Setup(problem, None, "V stable pattern")
    p = su.p
    low = min((c for c in su.caps if c is not None), default=None)
    alike = (len(set(su.caps)) == 1 and len(set(su.init)) == 1
             and all(su.mem[k, r] == su.mem[k, 2 * p - 1 - r] for k in ("F", "W") for r in range(p)))
    later = []
    for pattern in V_PATTERNS:
        if alike and low is not None and su.m > _PEAK_PROBE * p:
            # the first micro-batches' peak is at most the whole pattern's: above the capacity, the pattern
            # waits its turn without being laid out whole
            probe = _pattern_grids(su, pattern, _PEAK_PROBE * p)
            if probe is not None and probe[2] > low:
                later.append(pattern)
                continue
        laid = _pattern_grids(su, pattern)
        if laid is None:  # pragma: no cover - the two patterns have distinct slots modulo 6 for every p
            continue
        with_w, deltas, own = laid
        if low is None or own <= low:  # squeezed within its own peak: within every capacity
            return _pattern_plan(su, pattern, _squeezed_orders(su, with_w, deltas, own, steady=False))
        if alike:
            later.append(pattern)  # laid out again in its turn: the layout is not kept meanwhile
            continue
        schedule = _fitting_pattern(su, pattern, with_w, deltas, own)
        if schedule is not None:
            return schedule
    for pattern in later:
        laid = _pattern_grids(su, pattern)
        if laid is None:  # pragma: no cover - as above
            continue
        schedule = _fitting_pattern(su, pattern, *laid)
        if schedule is not None:
            return schedule
    raise InvalidProblemError(
        f"V stable pattern: neither pattern's peak fits the capacities "
        f"{ {d.name: d.memory for d in problem.cluster.devices} }"
    )


def _fitting_pattern(su: _Setup, pattern: str, with_w: list[dict[int, tuple[str, int]]],
                     deltas: list[dict[str, int]], own: int) -> Schedule | None:
    """A laid-out pattern squeezed within its own peak and timed, when its peak fits every device's capacity
    (read device by device), else None."""
    orders = _squeezed_orders(su, with_w, deltas, own, steady=False)
    got = _evaluate(su, orders)
    if got is None or any(c is not None and pk > c for pk, c in zip(got[1], su.caps)):
        return None
    return _pattern_plan(su, pattern, orders)


def _pattern_plan(su: _Setup, pattern: str, orders: dict[int, list[Action]]) -> Schedule:
    """The squeezed pattern's orders timed as soon as possible and validated, named after the pattern."""
    return run_actions(su.view, orders, name=f"V-{pattern.capitalize()} (stable pattern, squeezed)")


def v_capped_orders(problem: Problem, cap: int | None, variant: VVariant) -> dict[int, list[Action]] | None:
    """Each device's order of actions (by cluster rank) under one variant, or
    None when the cap leaves the greedy no move.

    Examples
    --------
    >>> from schedsearch.handcrafted.v_capped import V_VARIANTS, v_capped_orders
    >>> from schedsearch.placements import vshape_chunks
    >>> orders = v_capped_orders(vshape_chunks(2, 2), 3, V_VARIANTS[0])
    >>> [str(a) for a in orders[0][:4]]
    ['0F0', '0F1', '3F0', '3I0']
    """
    su = _Setup(problem, cap, "capped V greedy")
    try:
        return _run(su, variant)[1]
    except _NoProgress:
        return None


def v_capped(problem: Problem, cap: int | None = None, *, name: str = "capped V greedy",
             time_limit_s: float | None = None, work_limit: int | None = None,
             stable_patterns: bool = True) -> Schedule:
    """The shortest schedule of the stable patterns, the building blocks and the greedy variants under the cap.

    ``cap`` is the activation cap of every device in the problem's memory
    units (chunk activations with the default deltas); a device's capacity,
    when smaller, is its cap; ``None`` with no capacity: uncapped. The
    schedule is validated (the capacities included). With ``time_limit_s``
    the candidates are tried in order while the next one, taking as long
    as the longest so far, would end within it (at least until one fits).
    ``work_limit`` bounds the work instead, the same on any machine and
    load: each candidate counts the problem's task instances, and the next
    one is tried only while the count stays within it (at least until one
    fits; :data:`V_TASKS_PER_S` converts seconds of deterministic time).
    ``stable_patterns=False`` leaves out the stable patterns (the two
    named ones and the V-Min-spaced ones with turn delays; the blocks and
    the greedy only).

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
    best: tuple[int, str, dict[int, list[Action]]] | None = None
    t0 = time.monotonic()
    period = max(sum(su.dur[k, s] for k in "FIW" for s in (r, 2 * su.p - 1 - r)) for r in range(su.p))
    blocks = [(stretch, hold) for stretch in range(2) for hold in range(period + 1)]
    # the tightest block, the greedy variants that win most often, the other blocks, the other variants
    # under one cap on every device, the V-Min-spaced patterns with turn delays squeezed into the room above
    # their own peak come first: at p + 1 chunk activations they are the shortest
    low = min((c for c in su.caps if c is not None), default=None)
    turns = [t for t in V_TURNS if low is not None and stable_patterns and _turn_slots(su.p, t) is not None]
    candidates = [*turns, *(V_PATTERNS if stable_patterns else ()), blocks[0], *V_VARIANTS[:6], *blocks[1:],
                  *V_VARIANTS[6:]]
    # the longest candidate so far: with a limit, the next one is not started when it would end past it
    longest, started = 0.0, None
    tasks, work = problem.num_tasks, 0
    for cand in candidates:
        now = time.monotonic()
        if started is not None:
            longest = max(longest, now - started)
        started = now
        if best is not None and time_limit_s is not None and now - t0 + longest >= time_limit_s:
            break
        if best is not None and work_limit is not None and work + tasks > work_limit:
            break
        work += tasks
        if isinstance(cand, str) or (isinstance(cand, tuple) and len(cand) == 3):
            slots = cand if isinstance(cand, str) else _turn_slots(su.p, cand)
            assert slots is not None
            orders = _pattern_orders(su, slots, None if isinstance(cand, str) else low)
            got = _evaluate(su, orders) if orders is not None else None
            if got is None or any(c is not None and pk > c for pk, c in zip(got[1], su.caps)):
                continue
            span = got[0]
            label = (f"stable pattern {cand!r}, squeezed" if isinstance(cand, str) else
                     f"V-Min-spaced pattern, turns {cand}, squeezed under {low}")
        elif isinstance(cand, VVariant):
            try:
                span, orders = _run(su, cand)
            except _NoProgress:
                continue
            label = f"greedy {cand.priority}, W {cand.w_policy}, reserve {cand.reserve}"
        else:
            stretch, hold = cand
            off = _block(su, period + stretch, hold)
            orders = _block_orders(su, off, period + stretch) if off is not None else None
            got = _evaluate(su, orders) if orders is not None else None
            if got is None or any(c is not None and pk > c for pk, c in zip(got[1], su.caps)):
                continue
            span, label = got[0], f"block, period {period + stretch}, hold {hold}"
        if best is None or span < best[0]:
            best = (span, label, orders)
    if best is None:
        raise InvalidProblemError(
            f"{name}: no variant can go on under the cap {cap} (capacities "
            f"{ {d.name: d.memory for d in problem.cluster.devices} }); a device needs room for at least one "
            f"forward of each chunk"
        )
    return run_actions(su.view, best[2], name=f"{name} ({best[1]})")


def v_half(problem: Problem, *, time_limit_s: float | None = None, work_limit: int | None = None) -> Schedule:
    """V-Half: :func:`v_capped` at :func:`v_half_cap` (or the devices' capacity when smaller).

    Examples
    --------
    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_half
    >>> problem = placements.vshape_chunks(4, 8)
    >>> max(metrics(problem, v_half(problem)).peak_memory.values()) <= 6
    True
    """
    return v_capped(problem, v_half_cap(len(problem.cluster.devices)), name="V-Half", time_limit_s=time_limit_s,
                    work_limit=work_limit)


def v_min(problem: Problem, *, time_limit_s: float | None = None, work_limit: int | None = None) -> Schedule:
    """V-Min: :func:`v_capped` at :func:`v_min_cap` (or the devices' capacity when smaller).

    Examples
    --------
    >>> from schedsearch import metrics, placements
    >>> from schedsearch.handcrafted.v_capped import v_min
    >>> problem = placements.vshape_chunks(4, 8)
    >>> max(metrics(problem, v_min(problem)).peak_memory.values()) <= 4
    True
    """
    return v_capped(problem, v_min_cap(len(problem.cluster.devices)), name="V-Min", time_limit_s=time_limit_s,
                    work_limit=work_limit)
