"""The zero-bubble paper's greedy schedule builder (Qi et al., "Zero Bubble
Pipeline Parallelism", the heuristic of its public implementation).

Setting: one pipeline, stage ``s`` alone on its device, backward split
into ``I`` (input gradient) and ``W`` (weight gradient); per-stage
durations and memory deltas; a memory capacity per device; a
communication time per stage boundary (the least transfer time of the
edge's size over the channels joining the two devices, read as a delay:
the builder assumes the channel free). The builder writes each device's
order of actions one micro-batch at a time and times every action as
soon as its device
and its dependency allow (the result is the as-soon-as-possible schedule
of those orders). Its figure of merit is the longest device span (last
end minus first start on a device), the ``"max_span"`` objective.

Rules (``m`` micro-batches, ``S`` stages, ``idle(s)`` = idle time a device
has had since its first forward, ``worst`` = the largest ``idle``):

* Micro-batch 0: every stage runs its first forward; then, from the last
  stage but one down to the first, each stage adds forwards while they fit
  in memory and before the backward of micro-batch 0 can reach it (with
  ``allow_idle_before_first_backward``: while the next forward still ends
  by then); the counts are then made strictly decreasing from stage to
  stage (a stage never runs as many as the stage before it unless it has
  run out of micro-batches); the forwards run, then ``I`` of micro-batch 0
  from the last stage to the first.
* Micro-batch ``i >= 1``: a stage wants one more forward unless it has run
  them all, or (with ``prioritise_backward``) it is at least two forwards
  ahead of the next stage and either already later than the next stage's
  next forward plus input gradient, or too late to fit its forward (plus
  the ``W`` that free room for it) before then while waiting for it costs
  no more idle than ``worst - idle(s)``. A stage only runs its forward if
  every later stage does. Before a forward (from the first stage to the
  last) and before ``I`` of micro-batch ``i`` (from the last stage to the
  first), the device runs deferred ``W`` while memory would overflow, then
  while a ``W`` still ends by the time the action's input arrives; if the
  input arrives later still, one more ``W`` runs, unless waiting costs no
  more than ``worst - idle(s)`` and ``fill_idle_with_w`` is off. The first
  stage runs every deferred ``W`` before its last input gradients once its
  forwards are done.
* Finally every stage runs its remaining ``W``.

:func:`zb_greedy` tries the eight combinations of the three switches and
keeps the one with the shortest longest span (the first in the order
``(True, True, True), (True, True, False), ...`` on ties). A combination
that cannot fit a forward or an input gradient in memory (no ``W`` left to
free room) is skipped; when all are, :class:`~schedsearch.errors.InvalidProblemError`
says so.
"""

from __future__ import annotations

import itertools
import time

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import Act, pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["GreedyVariant", "GREEDY_VARIANTS", "zb_greedy", "zb_greedy_orders", "zb_greedy_all", "zb_greedy_best"]


@attrs.frozen
class GreedyVariant:
    """The three switches of the greedy (see the module docstring)."""

    allow_idle_before_first_backward: bool
    prioritise_backward: bool
    fill_idle_with_w: bool

    def __str__(self) -> str:
        return (f"idle-before-first-backward={self.allow_idle_before_first_backward}, "
                f"prioritise-backward={self.prioritise_backward}, fill-idle-with-W={self.fill_idle_with_w}")


#: The eight variants, in the order they are tried.
GREEDY_VARIANTS = tuple(GreedyVariant(a, b, c) for a, b, c in itertools.product((True, False), repeat=3))


class _NoRoom(Exception):
    """A forward or input gradient does not fit in memory and no W is left to free room."""


class _OutOfOrder(Exception):
    """The variant's rules would place a block before the block it depends on.

    The greedy's warm-up and steady-state rules are written for stage times
    alike enough that every stage has fewer forwards in flight than the one
    before; with very uneven stage times a variant may ask a stage for a
    micro-batch its predecessor has not produced. That variant then has no
    schedule (as when it cannot fit the memory).
    """


@attrs.define
class _Stage:
    cost: dict[str, int]
    mem: dict[str, int]
    cap: int | None
    level: int
    clock: int = 0
    idle: int = 0
    nxt: dict[str, int] = attrs.field(factory=lambda: {"F": 0, "I": 0, "W": 0})
    order: list[Act] = attrs.field(factory=list)


class _Builder:
    def __init__(self, problem: Problem) -> None:
        view = pipeline_view(problem)
        if list(view.pipelines) != [""]:
            raise InvalidProblemError(
                f"zero-bubble greedy: needs a single pipeline, got pipelines {sorted(view.pipelines)}"
            )
        if not view.split:
            raise InvalidProblemError(
                "zero-bubble greedy: needs backwards split into I and W (placements.zero_bubble)"
            )
        stages = view.stages()
        devices = [s.device for s in stages]
        if len(set(devices)) != len(devices):
            raise InvalidProblemError(
                f"zero-bubble greedy: needs one stage per device, got stage devices {devices}"
            )
        if problem.duration_overrides or problem.releases or problem.fixed_orders:
            raise InvalidProblemError(
                "zero-bubble greedy: needs alike micro-batches (no duration overrides, releases or fixed orders)"
            )
        self.view = view
        self.problem = problem
        self.m = problem.num_microbatches
        self.S = len(stages)
        self.names = [{"F": s.forward, "I": s.input_grad, "W": s.weight_grad} for s in stages]
        self.devices = devices
        blocks = problem.graph.by_name()
        self.template = [
            (
                {k: blocks[n].options[0].duration for k, n in names.items()},
                {k: blocks[n].memory for k, n in names.items()},
                problem.capacity(dev),
                problem.initial_memory_of(dev),
            )
            for names, dev in zip(self.names, devices)
        ]
        # the time a stage's input takes to arrive from its neighbour: F from the stage before, I from the one
        # after (the least transfer time of the edge over the channels between the two devices)
        sizes = {(e.src, e.dst): e.size for e in problem.graph.edges}
        self.comm_f = [0] + [self._transfer(sizes, self.names[s - 1]["F"], self.names[s]["F"], s - 1, s)
                             for s in range(1, self.S)]
        self.comm_i = [self._transfer(sizes, self.names[s + 1]["I"], self.names[s]["I"], s + 1, s)
                       for s in range(self.S - 1)] + [0]

    def _transfer(self, sizes: dict[tuple[str, str], int], src: str, dst: str, a: int, b: int) -> int:
        size = sizes.get((src, dst), 0)
        if not size:
            return 0
        times = [c.transfer_time(size) for c in self.problem.cluster.channels_between(self.devices[a],
                                                                                      self.devices[b])]
        if not times:
            raise InvalidProblemError(
                f"zero-bubble greedy: edge {src!r} -> {dst!r} carries {size} units but no channel joins devices "
                f"{self.devices[a]!r} and {self.devices[b]!r}"
            )
        return min(times)

    # -- one run ------------------------------------------------------------

    def run(self, variant: GreedyVariant) -> dict[int, list[Act]]:
        return self.run_timed(variant)[0]

    def run_timed(self, variant: GreedyVariant) -> tuple[dict[int, list[Act]], int, int]:
        """Each device's order (by cluster rank), and the makespan and longest device span of the
        as-soon-as-possible schedule of those orders (the times the builder placed the actions at)."""
        st = [_Stage(cost=c, mem=mm, cap=cap, level=init) for c, mm, cap, init in self.template]
        ends: dict[tuple[str, int, int], int] = {}
        S, m = self.S, self.m

        def fits(s: int, kind: str, extra: int = 0) -> bool:
            x = st[s]
            return x.cap is None or x.level + extra + x.mem[kind] <= x.cap

        comm_f, comm_i = self.comm_f, self.comm_i

        def ready_time(s: int, kind: str, mb: int) -> int:
            if kind == "F" and s > 0:
                return ended("F", s - 1, mb) + comm_f[s]
            if kind == "I" and s < S - 1:
                return ended("I", s + 1, mb) + comm_i[s]
            if kind == "I":
                ended("F", s, mb)  # the last stage's own forward comes first
            if kind == "W":
                ended("I", s, mb)
            return 0

        def ended(kind: str, s: int, mb: int) -> int:
            end = ends.get((kind, s, mb))
            if end is None:
                raise _OutOfOrder
            return end

        def place(s: int, kind: str) -> None:
            x = st[s]
            mb = x.nxt[kind]
            if not fits(s, kind):
                raise _NoRoom
            start = max(x.clock, ready_time(s, kind, mb))
            if x.nxt["F"] > 0:
                x.idle += start - x.clock
            x.clock = start + x.cost[kind]
            ends[(kind, s, mb)] = x.clock
            x.level += x.mem[kind]
            x.nxt[kind] += 1
            x.order.append(Act(kind, s, mb))

        def deferred(s: int) -> int:
            return st[s].nxt["I"] - st[s].nxt["W"]

        def make_room(s: int, kind: str) -> None:
            while not fits(s, kind):
                if not deferred(s):
                    raise _NoRoom
                place(s, "W")

        def fill_before(s: int, ready: int) -> None:
            """W that end before the input arrives; then maybe one more."""
            x = st[s]
            while deferred(s) and x.clock + x.cost["W"] <= ready:
                place(s, "W")
            if deferred(s) and x.clock < ready:
                worst = max(y.idle for y in st)
                if ready - x.clock <= worst - x.idle:
                    if variant.fill_idle_with_w:
                        place(s, "W")
                else:
                    place(s, "W")

        # micro-batch 0
        for s in range(S):
            place(s, "F")
        extra = [0] * S
        last = ends[("F", S - 1, 0)] + st[S - 1].cost["I"]
        for s in range(S - 2, -1, -1):
            last += comm_i[s]  # when micro-batch 0's input gradient can reach stage s
            x = st[s]
            level, clock, count = x.level, x.clock, 0
            while x.nxt["F"] + count < m and (x.cap is None or level + x.mem["F"] <= x.cap):
                if variant.allow_idle_before_first_backward:
                    if clock + x.cost["F"] > last:
                        break
                elif clock >= last:
                    break
                level += x.mem["F"]
                clock += x.cost["F"]
                count += 1
            extra[s] = count
            last = max(clock, last) + x.cost["I"]
        for s in range(1, S):
            while extra[s] > 0 and extra[s] >= extra[s - 1] and st[s].nxt["F"] + extra[s] < m:
                extra[s] -= 1
        for s in range(S):
            for _ in range(extra[s]):
                place(s, "F")
        for s in range(S - 1, -1, -1):
            place(s, "I")

        for i in range(1, m):
            want = [0] * S
            for s in range(S):
                x = st[s]
                if x.nxt["F"] >= m:
                    continue
                if variant.prioritise_backward and s + 1 < S and x.nxt["F"] >= st[s + 1].nxt["F"] + 2:
                    y = st[s + 1]
                    target = y.clock + y.cost["F"] + y.cost["I"] + comm_i[s]
                    if x.clock >= target:
                        continue
                    w_cost, level, k = 0, x.level + x.mem["F"], 0
                    while x.cap is not None and level > x.cap and k < deferred(s):
                        w_cost += x.cost["W"]
                        level += x.mem["W"]
                        k += 1
                    if x.clock + x.cost["F"] + w_cost <= target:
                        want[s] = 1
                        continue
                    worst = max(z.idle for z in st)
                    if target - x.clock <= worst - x.idle:
                        continue
                want[s] = 1
            for s in range(S - 2, -1, -1):
                want[s] = min(want[s], want[s + 1])
            for s in range(S):
                if not want[s]:
                    continue
                make_room(s, "F")
                if s > 0:
                    fill_before(s, ended("F", s - 1, st[s].nxt["F"]) + comm_f[s])
                place(s, "F")
            for s in range(S - 1, -1, -1):
                make_room(s, "I")
                if s + 1 < S:
                    fill_before(s, ended("I", s + 1, i) + comm_i[s])
                if s == 0 and st[s].nxt["F"] == m:
                    while deferred(s):
                        place(s, "W")
                place(s, "I")
        for s in range(S):
            while deferred(s):
                place(s, "W")
        ranks = self.problem.cluster.device_names
        orders = {ranks.index(self.devices[s]): st[s].order for s in range(S)}
        firsts = [ends[("F", s, 0)] - st[s].cost["F"] for s in range(S)]
        makespan = max(x.clock for x in st) - min(firsts)
        span = max(x.clock - first for x, first in zip(st, firsts))
        return orders, makespan, span


def zb_greedy_orders(problem: Problem, variant: GreedyVariant) -> dict[int, list[Act]] | None:
    """Each device's order of actions under one variant (by cluster rank), or
    None when the variant cannot fit the memory (or its rules cannot order
    these stage times, see ``_OutOfOrder``)."""
    try:
        return _Builder(problem).run(variant)
    except (_NoRoom, _OutOfOrder):
        return None


def _figures(builder: _Builder, time_limit_s: float | None = None
             ) -> dict[GreedyVariant, tuple[dict[int, list[Act]], int, int]]:
    """Per variant that fits: its orders, makespan and longest span (from the builder's own times).

    With ``time_limit_s`` the variants are tried in order while the next
    one, taking as long as the longest so far, would end within it (at
    least until one fits).
    """
    out = {}
    t0 = time.monotonic()
    longest = 0.0
    for variant in GREEDY_VARIANTS:
        now = time.monotonic()
        if out and time_limit_s is not None and now - t0 + longest > time_limit_s:
            break
        try:
            out[variant] = builder.run_timed(variant)
        except (_NoRoom, _OutOfOrder):
            continue
        finally:
            longest = max(longest, time.monotonic() - now)
    return out


def zb_greedy_best(problem: Problem, *, time_limit_s: float | None = None) -> dict[GreedyVariant, Schedule]:
    """The variant of least longest span and the variant of least makespan (the first in
    :data:`GREEDY_VARIANTS` on ties; one entry when they are the same), each simulated and validated.
    With ``time_limit_s`` only the variants tried within it compete (:func:`_figures`).

    The variants are ranked by the times the builder gives its actions (the
    as-soon-as-possible times of its orders; where one channel carries
    transfers both ways, the simulator may delay one behind another and
    give later times), so only the chosen ones go through the simulator
    and the validator. Empty when no variant fits.
    """
    builder = _Builder(problem)
    figures = _figures(builder, time_limit_s)
    if not figures:
        return {}
    by_span = min(figures, key=lambda v: figures[v][2])
    by_makespan = min(figures, key=lambda v: figures[v][1])
    return {v: run_actions(builder.view, figures[v][0], name=f"zero-bubble greedy ({v})")
            for v in dict.fromkeys((by_span, by_makespan))}


def zb_greedy_all(problem: Problem) -> dict[GreedyVariant, Schedule | None]:
    """The schedule of every variant (None where it cannot fit the memory or order the stage times)."""
    builder = _Builder(problem)
    out: dict[GreedyVariant, Schedule | None] = {}
    for variant in GREEDY_VARIANTS:
        try:
            orders = builder.run(variant)
        except (_NoRoom, _OutOfOrder):
            out[variant] = None
            continue
        out[variant] = run_actions(builder.view, orders, name=f"zero-bubble greedy ({variant})")
    return out


def zb_greedy(problem: Problem) -> Schedule:
    """The best of the eight greedy variants by longest device span.

    Needs a problem from :func:`~schedsearch.placements.zero_bubble` (or
    any single pipeline, one stage per device, backward split into ``I``
    and ``W``). The schedule is validated (memory capacities included).
    """
    best = next(iter(zb_greedy_best(problem).values()), None)  # the least longest span comes first
    if best is None:
        caps = {d.name: d.memory for d in problem.cluster.devices}
        raise InvalidProblemError(
            f"zero-bubble greedy: no variant fits the memory capacities {caps} (a forward or input gradient "
            f"needs room that no pending weight gradient can free), or the stage times are too uneven for "
            f"its rules to order the blocks"
        )
    return attrs.evolve(best, name="zero-bubble greedy")
