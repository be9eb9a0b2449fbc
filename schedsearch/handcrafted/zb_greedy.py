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
says so. A combination is not run when an earlier one's run shows that
its switches would change none of that run's decisions (it is the same
run, and would lose the tie).

The builder keeps its state in plain lists (one entry per stage) and
places each action at the time its device and its input allow; the
chosen combinations' schedules are those times when the validator accepts
them (they are then exactly the simulator's), else the simulator's times
of the same orders.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import attrs

from schedsearch.actions import Action
from schedsearch.deadline import checkpoint

from schedsearch.errors import InvalidOptionsError, InvalidProblemError
from schedsearch.handcrafted.actions import pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import validate

__all__ = ["GreedyVariant", "GREEDY_VARIANTS", "zb_greedy", "zb_greedy_orders", "zb_greedy_all", "zb_greedy_best",
           "zb_greedy_plans"]


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


#: The builder's action kinds, as the numbers it keeps them under.
_F, _I, _W = 0, 1, 2
_KIND = ("F", "I", "W")

#: A capacity larger than any memory level: a device without a memory limit.
_NO_CAP = 1 << 62


@attrs.frozen
class _Outcome:
    """One variant's run: each stage's actions in order as ``(kind, micro-batch, start)`` (kinds ``_F``, ``_I``,
    ``_W``; the start the builder placed it at), and the makespan and longest device span of those times."""

    actions: tuple[list[tuple[int, int, int]], ...]
    makespan: int
    span: int


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
        #: per stage, its blocks by kind (``_F``, ``_I``, ``_W``)
        self.names = [(s.forward, s.input_grad, s.weight_grad) for s in stages]
        self.devices = devices
        blocks = problem.graph.by_name()
        # per kind, per stage: duration and memory change
        self.cost = [[blocks[names[k]].options[0].duration for names in self.names] for k in (_F, _I, _W)]
        self.mem = [[blocks[names[k]].memory for names in self.names] for k in (_F, _I, _W)]
        caps = [problem.capacity(dev) for dev in devices]
        self.cap = [_NO_CAP if c is None else c for c in caps]
        self.init = [problem.initial_memory_of(dev) for dev in devices]
        # the time a stage's input takes to arrive from its neighbour: F from the stage before, I from the one
        # after (the least transfer time of the edge over the channels between the two devices)
        sizes = {(e.src, e.dst): e.size for e in problem.graph.edges}
        self.comm_f = [0] + [self._transfer(sizes, self.names[s - 1][_F], self.names[s][_F], s - 1, s)
                             for s in range(1, self.S)]
        self.comm_i = [self._transfer(sizes, self.names[s + 1][_I], self.names[s][_I], s + 1, s)
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

    def run(self, variant: GreedyVariant) -> dict[int, list[Action]]:
        """Each device's order of actions (by cluster rank)."""
        return self.orders(self.run_timed(variant))

    def orders(self, outcome: _Outcome) -> dict[int, list[Action]]:
        """The orders of ``outcome`` as actions, by cluster rank."""
        ranks = self.problem.cluster.device_names
        return {ranks.index(self.devices[s]): [Action(s, _KIND[k], mb) for k, mb, _ in acts]
                for s, acts in enumerate(outcome.actions)}

    def run_timed(self, variant: GreedyVariant, matters: list[bool] | None = None) -> _Outcome:
        """Run one variant: each stage's actions with the times the builder placed them at (the
        as-soon-as-possible schedule of its orders, every channel assumed free), and that schedule's
        makespan and longest device span.

        Raises ``_NoRoom`` or ``_OutOfOrder`` when the variant has no schedule. The state is kept in
        lists indexed by stage (and micro-batch), the rules of the module docstring read off them.

        ``matters`` (three flags, one per switch in :class:`GreedyVariant`'s
        order) is set, as the run goes, for each switch whose other value
        would have changed a decision the run took (up to its end or the
        error): a run whose flags stay clear for some switches is also the
        run of every variant that differs from it only in those switches.

        Deliberately one long function: it is the builder's inner loop, run for every variant the
        search tries, with its state in local lists and the three placements written out inline;
        split into methods over the builder's attributes, each action placed would pay calls and
        attribute lookups.
        """
        if matters is None:
            matters = [False, False, False]
        S, m = self.S, self.m
        cost_f, cost_i, cost_w = self.cost
        mem_f, mem_i, mem_w = self.mem
        cap = self.cap
        comm_f, comm_i = self.comm_f, self.comm_i
        clock = [0] * S
        idle = [0] * S
        level = list(self.init)
        n_f = [0] * S  # the next micro-batch of each kind, per stage
        n_i = [0] * S
        n_w = [0] * S
        end_f = [[-1] * m for _ in range(S)]  # -1: not placed yet
        end_i = [[-1] * m for _ in range(S)]
        actions: tuple[list[tuple[int, int, int]], ...] = tuple([] for _ in range(S))
        worst = 0  # the largest idle time of any stage (idle times only grow)

        # place_f / place_i / place_w: the stage's next action of that kind, as soon as its device and its
        # input allow; the wait counts as idle once the stage has run a forward (the three repeat the
        # same steps inline: they are the builder's inner loop)
        def place_f(s: int) -> None:
            nonlocal worst
            mb = n_f[s]
            if level[s] + mem_f[s] > cap[s]:
                raise _NoRoom
            start = clock[s]
            if s:
                ready = end_f[s - 1][mb]
                if ready < 0:
                    raise _OutOfOrder
                ready += comm_f[s]
                if ready > start:
                    if mb:
                        idle[s] += ready - start
                        if idle[s] > worst:
                            worst = idle[s]
                    start = ready
            clock[s] = end_f[s][mb] = start + cost_f[s]
            level[s] += mem_f[s]
            n_f[s] = mb + 1
            actions[s].append((_F, mb, start))

        def place_i(s: int) -> None:
            nonlocal worst
            mb = n_i[s]
            if level[s] + mem_i[s] > cap[s]:
                raise _NoRoom
            start = clock[s]
            if s < S - 1:
                ready = end_i[s + 1][mb]
                if ready < 0:
                    raise _OutOfOrder
                ready += comm_i[s]
                if ready > start:
                    if n_f[s]:
                        idle[s] += ready - start
                        if idle[s] > worst:
                            worst = idle[s]
                    start = ready
            elif end_f[s][mb] < 0:  # the last stage's own forward comes first
                raise _OutOfOrder
            clock[s] = end_i[s][mb] = start + cost_i[s]
            level[s] += mem_i[s]
            n_i[s] = mb + 1
            actions[s].append((_I, mb, start))

        def place_w(s: int) -> None:
            mb = n_w[s]
            if level[s] + mem_w[s] > cap[s]:
                raise _NoRoom
            if end_i[s][mb] < 0:
                raise _OutOfOrder
            start = clock[s]
            clock[s] = start + cost_w[s]
            level[s] += mem_w[s]
            n_w[s] = mb + 1
            actions[s].append((_W, mb, start))

        def make_room(s: int, mem: int) -> None:
            while level[s] + mem > cap[s]:
                if n_i[s] == n_w[s]:
                    raise _NoRoom
                place_w(s)

        fill_idle_with_w = variant.fill_idle_with_w

        def fill_before(s: int, ready: int) -> None:
            """W that end before the input arrives; then maybe one more."""
            w = cost_w[s]
            while n_i[s] > n_w[s] and clock[s] + w <= ready:
                place_w(s)
            if n_i[s] > n_w[s] and clock[s] < ready:
                if ready - clock[s] <= worst - idle[s]:
                    matters[2] = True  # the one decision the switch makes: fill the wait with a W or not
                    if fill_idle_with_w:
                        place_w(s)
                else:
                    place_w(s)

        # micro-batch 0
        for s in range(S):
            place_f(s)
        extra = [0] * S
        last = end_f[S - 1][0] + cost_i[S - 1]
        allow_idle = variant.allow_idle_before_first_backward
        for s in range(S - 2, -1, -1):
            last += comm_i[s]  # when micro-batch 0's input gradient can reach stage s
            lv, ck, count = level[s], clock[s], 0
            while n_f[s] + count < m and lv + mem_f[s] <= cap[s]:
                idle_ends = ck + cost_f[s] > last  # the forward would end after the backward arrives
                starts_late = ck >= last  # it would start after
                if idle_ends != starts_late:
                    matters[0] = True
                if idle_ends if allow_idle else starts_late:
                    break
                lv += mem_f[s]
                ck += cost_f[s]
                count += 1
            extra[s] = count
            last = max(ck, last) + cost_i[s]
        for s in range(1, S):
            while extra[s] > 0 and extra[s] >= extra[s - 1] and n_f[s] + extra[s] < m:
                extra[s] -= 1
        for s in range(S):
            for _ in range(extra[s]):
                place_f(s)
        for s in range(S - 1, -1, -1):
            place_i(s)

        prioritise = variant.prioritise_backward
        for i in range(1, m):
            checkpoint(S)
            want = [0] * S
            for s in range(S):
                if n_f[s] >= m:
                    continue
                if s + 1 < S and n_f[s] >= n_f[s + 1] + 2:
                    # what prioritising the backward decides (read whatever the switch, to set its flag)
                    target = clock[s + 1] + cost_f[s + 1] + cost_i[s + 1] + comm_i[s]
                    if clock[s] >= target:
                        wait = True
                    else:
                        w_cost, lv, k = 0, level[s] + mem_f[s], 0
                        while lv > cap[s] and k < n_i[s] - n_w[s]:
                            w_cost += cost_w[s]
                            lv += mem_w[s]
                            k += 1
                        wait = clock[s] + cost_f[s] + w_cost > target and target - clock[s] <= worst - idle[s]
                    if wait:  # without the switch the stage wants its forward
                        matters[1] = True
                        if prioritise:
                            continue
                want[s] = 1
            for s in range(S - 2, -1, -1):
                if not want[s + 1]:
                    want[s] = 0
            for s in range(S):
                if not want[s]:
                    continue
                if level[s] + mem_f[s] > cap[s]:
                    make_room(s, mem_f[s])
                if s > 0:
                    ready = end_f[s - 1][n_f[s]]
                    if ready < 0:
                        raise _OutOfOrder
                    if n_i[s] > n_w[s]:  # deferred W to fill with
                        fill_before(s, ready + comm_f[s])
                place_f(s)
            for s in range(S - 1, -1, -1):
                if level[s] + mem_i[s] > cap[s]:
                    make_room(s, mem_i[s])
                if s + 1 < S:
                    ready = end_i[s + 1][i]
                    if ready < 0:
                        raise _OutOfOrder
                    if n_i[s] > n_w[s]:
                        fill_before(s, ready + comm_i[s])
                if s == 0 and n_f[s] == m:
                    while n_i[s] > n_w[s]:
                        place_w(s)
                place_i(s)
        for s in range(S):
            while n_i[s] > n_w[s]:
                place_w(s)
        firsts = [end_f[s][0] - cost_f[s] for s in range(S)]
        makespan = max(clock) - min(firsts)
        span = max(c - first for c, first in zip(clock, firsts))
        return _Outcome(actions=actions, makespan=makespan, span=span)

    # -- the schedule of a run ------------------------------------------------

    def schedule(self, outcome: _Outcome, name: str) -> Schedule:
        """The validated schedule of ``outcome``'s orders.

        The builder's own times, with each transfer on the first of the
        fastest channels from the moment its data is ready, are the
        simulator's (:func:`~schedsearch.handcrafted.actions.run_actions`)
        whenever they form a valid plan: every channel then was free when
        the builder assumed it, and every dependency the builder does not
        read was met. When the validator rejects them (one channel carrying
        transfers both ways, say), the orders go through the simulator.
        """
        schedule = self._direct(outcome, name)
        if schedule is not None and not validate(self.problem, schedule):
            return schedule
        return run_actions(self.view, self.orders(outcome), name=name)

    def _direct(self, outcome: _Outcome, name: str) -> Schedule | None:
        """The schedule of the builder's own times (not validated), or None when a transfer has no channel."""
        problem = self.problem
        cost = self.cost
        end: dict[tuple[str, int], int] = {}
        device_of: dict[str, str] = {}
        tasks = []
        for s, acts in enumerate(outcome.actions):
            names, devices = self.names[s], (self.devices[s],)
            for kind in (_F, _I, _W):
                device_of[names[kind]] = self.devices[s]
            for kind, mb, start in acts:
                block, stop = names[kind], start + cost[kind][s]
                end[(block, mb)] = stop
                tasks.append(TaskInstance(block=block, microbatch=mb, devices=devices, start=start, end=stop))
        transfers = []
        cluster = problem.cluster
        for e in problem.graph.edges:
            if not e.size:
                continue
            a, b = device_of.get(e.src), device_of.get(e.dst)
            if a is None or b is None or a == b:
                continue
            fastest = None
            for ch in cluster.channels_between(a, b):
                if fastest is None or ch.transfer_time(e.size) < fastest.transfer_time(e.size):
                    fastest = ch
            if fastest is None:
                return None
            length = fastest.transfer_time(e.size)
            for mb in range(self.m):
                ready = end.get((e.src, mb))
                if ready is None:
                    return None
                transfers.append(Transfer(src=e.src, dst=e.dst, microbatch=mb, channel=fastest.name, start=ready,
                                          end=ready + length))
        return Schedule(tasks=tasks, transfers=transfers, name=name)


def zb_greedy_orders(problem: Problem, variant: GreedyVariant) -> dict[int, list[Action]] | None:
    """Each device's order of actions under one variant (by cluster rank), or
    None when the variant cannot fit the memory (or its rules cannot order
    these stage times, see ``_OutOfOrder``)."""
    try:
        return _Builder(problem).run(variant)
    except (_NoRoom, _OutOfOrder):
        return None


def _figures(builder: _Builder, time_limit_s: float | None = None) -> dict[GreedyVariant, _Outcome]:
    """Per variant that fits: its run (orders, the builder's times, makespan and longest span).

    A variant that differs from one already run only in switches that
    changed none of that run's decisions (see :meth:`_Builder.run_timed`)
    has the same run and is left out: it comes later in
    :data:`GREEDY_VARIANTS`, so it would lose every tie to the one run
    (and when that one has no schedule, neither has it). With
    ``time_limit_s`` the variants are tried in order while the next one,
    taking as long as the longest so far, would end within it (at least
    until one fits).
    """
    out = {}
    ran: list[tuple[GreedyVariant, list[bool]]] = []
    t0 = time.monotonic()
    longest = 0.0
    for variant in GREEDY_VARIANTS:
        if any(all(flag == other or not moot for flag, other, moot in zip(attrs.astuple(variant), attrs.astuple(u),
                                                                              matters))
               for u, matters in ran):
            continue  # the run of an earlier variant
        now = time.monotonic()
        if out and time_limit_s is not None and now - t0 + longest > time_limit_s:
            break
        matters = [False, False, False]
        ran.append((variant, matters))
        try:
            out[variant] = builder.run_timed(variant, matters)
        except (_NoRoom, _OutOfOrder):
            continue
        finally:
            longest = max(longest, time.monotonic() - now)
    return out


def zb_greedy_plans(problem: Problem, *, objective: str = "max_span", time_limit_s: float | None = None
                    ) -> Iterator[tuple[GreedyVariant, Schedule]]:
    """The variant of least ``objective`` first, then the variant of least other figure (longest span,
    makespan) when it is another one.

    The variants run at the call (a placement that is not the greedy's
    raises :class:`~schedsearch.errors.InvalidProblemError` there); each
    schedule is built, and validated, only when the iterator reaches it.

    ``objective``: ``"max_span"`` (the longest device span, the greedy's own
    figure of merit) or ``"makespan"``; the first in :data:`GREEDY_VARIANTS`
    wins a tie. With ``time_limit_s`` only the variants tried within it
    compete (see :func:`zb_greedy_best`). Nothing when no variant fits.

    Examples
    --------
    >>> from schedsearch.handcrafted.zb_greedy import zb_greedy_plans
    >>> from schedsearch.placements import zero_bubble
    >>> variant, schedule = next(zb_greedy_plans(zero_bubble(4, 8, memory=4), objective="makespan"))
    >>> schedule.makespan
    27
    """
    if objective not in ("max_span", "makespan"):
        raise InvalidOptionsError(
            f"zero-bubble greedy: 'objective' must be 'max_span' or 'makespan', got {objective!r}")
    builder = _Builder(problem)  # the placement is checked (and the variants run) at the call
    figures = _figures(builder, time_limit_s)
    if not figures:
        return iter(())
    by_span = min(figures, key=lambda v: figures[v].span)
    by_makespan = min(figures, key=lambda v: figures[v].makespan)
    first, second = (by_span, by_makespan) if objective == "max_span" else (by_makespan, by_span)
    return ((variant, builder.schedule(figures[variant], name=f"zero-bubble greedy ({variant})"))
            for variant in dict.fromkeys((first, second)))


def zb_greedy_best(problem: Problem, *, time_limit_s: float | None = None) -> dict[GreedyVariant, Schedule]:
    """The variant of least longest span and the variant of least makespan (the first in
    :data:`GREEDY_VARIANTS` on ties; one entry when they are the same), each validated.
    With ``time_limit_s`` only the variants tried within it compete (:func:`_figures`).

    The variants are ranked by the times the builder gives its actions (the
    as-soon-as-possible times of its orders, every channel assumed free),
    and only the chosen ones become schedules: the builder's times when the
    validator accepts them (they are then the simulator's), else the
    simulator's (where one channel carries transfers both ways, it may
    delay one behind another and give later times). Empty when no variant
    fits.
    """
    return dict(zb_greedy_plans(problem, objective="max_span", time_limit_s=time_limit_s))


def zb_greedy_all(problem: Problem) -> dict[GreedyVariant, Schedule | None]:
    """The schedule of every variant (None where it cannot fit the memory or order the stage times), each
    timed by the simulator (:func:`~schedsearch.handcrafted.actions.run_actions`)."""
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
    _, best = next(zb_greedy_plans(problem), (None, None))  # the least longest span
    if best is None:
        caps = {d.name: d.memory for d in problem.cluster.devices}
        raise InvalidProblemError(
            f"zero-bubble greedy: no variant fits the memory capacities {caps} (a forward or input gradient "
            f"needs room that no pending weight gradient can free), or the stage times are too uneven for "
            f"its rules to order the blocks"
        )
    return attrs.evolve(best, name="zero-bubble greedy")
