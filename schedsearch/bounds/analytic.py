"""Analytic lower bounds on the makespan (no solver).

Assumptions and formulas
------------------------
Durations are taken at their minimum over a block's options (and its
per-micro-batch overrides). A transfer counts only when it is unavoidable:
the edge has a size and every pair of options of its two ends lies on
disjoint device sets; it then costs the cheapest channel's transfer time.

* ``head(b, m)``: earliest possible start of task ``(b, m)``: its release,
  or the longest path of (durations + unavoidable transfers) into it.
* ``tail(b, m)``: least time that must follow the task's end until the
  last task ends (longest path out of it).
* critical path: ``max(head + duration + tail)`` over all tasks.
* device bound: for each device ``d``, the tasks every option of which
  occupies ``d`` (mandatory on ``d``) must run one at a time there, after
  the smallest head among them and before the smallest tail among them,
  and the device idles at least the time its memory forces on it before
  its first free (:func:`memory_idle`)::

      makespan >= min head + sum of durations + forced idle + min tail

  where ``min tail`` may be replaced by the time that must follow the
  device's last allocation less the most work that can still run on the
  device after it (:func:`memory_tails`), when that is larger.

* average load: total minimal device-time (duration x devices occupied) over
  the number of devices, rounded up.
* flow bound (:func:`flow_bounds`): a device waits for its neighbours'
  throughput. The ``k``-th instance of a block to start on ``d`` cannot
  start before some device upstream has done ``k`` instances of an ancestor
  (and of that device's blocks before it), nor can the ``k``-th last end
  later than what ``k`` instances of a descendant need downstream; these
  per-rank releases and tails feed the preemptive one-device bound
  (Jackson's schedule). Off when the problem declares overlaps.

The bound is the maximum of these.

For the ``"max_span"`` objective (the longest device span, last end minus
first start on a device), :func:`span_lower_bound` gives the maximum over
the devices of their mandatory work plus forced idle (run one at a time
between the device's first start and last end) and the longest single
task;
:func:`objective_lower_bound` picks the bound of a problem's objective.

Overlapped groups (:class:`~schedsearch.problem.Overlap`): a group lasts at
least its longest member, so the formulas stay valid for edges between
tasks that are not in one group; an edge ``u -> v`` between two blocks of
one declared overlap counts as ``head(v) >= head(u)`` and ``tail(u) >=
tail(v)`` (the group may run them together). When some overlap lasts less
than the sum of its members, the device bounds and the average load count
each task's work less the most it can save in a group: a group of ``k``
members saving ``s`` time units charges ``s / k`` to each member, and a
task joins at most one group.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

import attrs

from schedsearch.deadline import checkpoint, counted
from schedsearch.problem import Problem, TaskKey

__all__ = [
    "AnalyticBound",
    "heads_and_tails",
    "critical_path",
    "device_bounds",
    "analytic_lower_bound",
    "span_lower_bound",
    "objective_lower_bound",
    "memory_idle",
    "memory_tails",
    "flow_bounds",
    "preemptive_one_device",
]


def _min_duration(problem: Problem, block: str, mb: int) -> int:
    return min(problem.durations(block, mb))


def _block_least(problem: Problem) -> dict[str, int] | None:
    """Each block's least option duration when no task instance overrides its durations (then every
    instance's :func:`_min_duration` is its block's), else None."""
    if problem.duration_overrides:
        return None
    return {b.name: min(o.duration for o in b.options) for b in problem.graph.blocks}


def _work(problem: Problem, keys: Sequence[TaskKey]) -> int:
    """The least total duration of the task instances ``keys``."""
    least = _block_least(problem)
    if least is not None:
        return sum(least[b] for b, _ in keys)
    return sum(_min_duration(problem, *k) for k in keys)


def _unavoidable_transfer(problem: Problem, src: str, dst: str, size: int) -> int:
    if size <= 0:
        return 0
    a, b = problem.graph.block(src), problem.graph.block(dst)
    best: int | None = None
    for oa in a.options:
        for ob in b.options:
            if set(oa.devices) & set(ob.devices):
                return 0
            times = [c.transfer_time(size) for c in problem.cluster.channels_between(oa.devices[0], ob.devices[0])]
            if times:
                t = min(times)
                best = t if best is None else min(best, t)
    return best or 0


def heads_and_tails(problem: Problem) -> tuple[dict[TaskKey, int], dict[TaskKey, int]]:
    """Earliest starts (heads) and minimal remaining times after the end (tails).

    Both are per task instance, from the dependency edges, releases and
    unavoidable transfers alone; every bound of this module is built on them.

    Examples
    --------
    On 1F1B's placement (F = 1, B = 2, 4 devices), ``F3`` of micro-batch 0
    can start at 3 at the earliest and leaves at least ``B3 .. B0`` = 8
    after it ends:

    >>> from schedsearch.bounds import heads_and_tails
    >>> from schedsearch.placements import vshape
    >>> heads, tails = heads_and_tails(vshape(4, 8))
    >>> heads[("F3", 0)], tails[("F3", 0)]
    (3, 8)
    """
    order = problem.graph.topological_order()
    preds = problem.graph.predecessors()
    succs = problem.graph.successors()
    delay = {(e.src, e.dst): _unavoidable_transfer(problem, e.src, e.dst, e.size) for e in problem.graph.edges}
    grouped = {
        (e.src, e.dst)
        for e in problem.graph.edges
        if any(e.src in ov.blocks and e.dst in ov.blocks for ov in problem.overlaps)
    }
    # without releases or duration overrides every micro-batch has the same heads and tails
    alike = not problem.releases and not problem.duration_overrides
    heads: dict[TaskKey, int] = {}
    tails: dict[TaskKey, int] = {}
    for m in range(1 if alike else problem.num_microbatches):
        checkpoint(len(order))
        for b in order:
            h = problem.release_of(b, m)
            for e in preds[b]:
                if (e.src, e.dst) in grouped:
                    h = max(h, heads[(e.src, m)])
                else:
                    h = max(h, heads[(e.src, m)] + _min_duration(problem, e.src, m) + delay[(e.src, e.dst)])
            heads[(b, m)] = h
        for b in reversed(order):
            t = 0
            for e in succs[b]:
                if (e.src, e.dst) in grouped:
                    t = max(t, tails[(e.dst, m)])
                else:
                    t = max(t, delay[(e.src, e.dst)] + _min_duration(problem, e.dst, m) + tails[(e.dst, m)])
            tails[(b, m)] = t
    if alike:
        heads = {(b, m): heads[(b, 0)] for m in counted(range(problem.num_microbatches)) for b in order}
        tails = {(b, m): tails[(b, 0)] for m in counted(range(problem.num_microbatches)) for b in order}

    return heads, tails


def critical_path(problem: Problem, *, heads_tails: tuple[dict[TaskKey, int], dict[TaskKey, int]] | None = None) -> int:
    """Longest chain of one micro-batch (releases and unavoidable transfers included).

    ``heads_tails``: :func:`heads_and_tails` of ``problem`` when the caller has them.

    Examples
    --------
    >>> from schedsearch.bounds import critical_path
    >>> from schedsearch.placements import vshape
    >>> critical_path(vshape(4, 8, forward=1, backward=2))  # 4 forwards and 4 backwards
    12
    """
    heads, tails = heads_tails or heads_and_tails(problem)
    least = _block_least(problem)
    if least is not None:
        return max(heads[k] + least[k[0]] + tails[k] for k in counted(heads))
    return max(heads[k] + _min_duration(problem, *k) + tails[k] for k in counted(heads))


def _descendants(problem: Problem) -> dict[str, set[str]]:
    succ = problem.graph.successors()
    out: dict[str, set[str]] = {}
    for name in reversed(problem.graph.topological_order()):
        acc: set[str] = set()
        for e in succ[name]:
            acc.add(e.dst)
            acc |= out[e.dst]
        out[name] = acc
    return out


def _least_durations(problem: Problem) -> dict[str, int]:
    """Each block's least duration over the micro-batches (and its options)."""
    if not problem.duration_overrides:
        return {b.name: b.min_duration for b in problem.graph.blocks}
    return {b.name: min(_min_duration(problem, b.name, m) for m in range(problem.num_microbatches))
            for b in problem.graph.blocks}


def _capped_devices(problem: Problem) -> list[tuple[str, int, list]]:
    """The devices the memory bounds apply to, each with its capacity and blocks: a capacity, and every
    block on the device fixed there and in no declared overlap."""
    in_overlap = {b for ov in problem.overlaps for b in ov.blocks}
    out = []
    for d in problem.cluster.device_names:
        cap = problem.capacity(d)
        on = [b for b in problem.graph.blocks if d in b.devices]
        if cap is None or not on:
            continue
        if any(not (b.is_fixed and d in b.options[0].devices) or b.name in in_overlap for b in on):
            continue
        out.append((d, cap, on))
    return out


def memory_idle(problem: Problem) -> dict[str, int]:
    """Idle time each device's memory capacity forces on it before its first free.

    On a device ``d`` with a capacity, whose tasks are all fixed on it and
    in no declared overlap: until the first task that frees memory (a
    negative delta) starts, the level only rises, so the tasks run there
    allocate at most ``capacity - initial`` in total. Their work (each task
    counted with its least duration over its options, as the device bound
    counts it) is at most the fractional knapsack ``W`` of the allocating
    blocks that do not depend on a free on ``d`` (by duration per unit
    allocated; a block's duration is the largest over its micro-batches,
    since any of them may run early), plus the zero-delta tasks that do
    not depend on such a free. The first free starts at least ``G`` after
    the device's first start ``s``, where ``G`` is, over the freeing
    blocks, the least of the longest path from an allocating block on
    ``d`` it depends on to it. A zero-delta task that depends on an
    allocating block of ``d`` cannot start before that path allows, so
    only what fits of it in ``[s, s + G)`` counts (:func:`_window_work`);
    the others count whole. So the device idles at least ``G - W - Z``
    before its first free, ``Z`` that zero-delta work. (ZB-H1-style
    pipelines with forwards allocating 2 and input and weight gradients
    freeing 1 each: the first stage waits a whole round trip for its
    first input gradient and can fill only ``capacity / 2`` forwards of
    it. On the V placement with ``p`` devices and unit times at ``p + 1``
    chunk activations, the middle device starts at ``p - 1``, waits
    ``2p + 1`` for its first ``W``, fills it with ``p + 1`` forwards and
    one ``I``, and so idles ``p - 1`` more: ``6m + 2p - 2`` in all, and
    ``6m + 3p - 4`` with the tail of :func:`memory_tails`.)
    """
    out = {d: 0 for d in problem.cluster.device_names}
    capped = [(d, cap, on) for d, cap, on in _capped_devices(problem) if any(b.memory < 0 for b in on)]
    if not capped:
        return out
    descendants = _descendants(problem)
    # one longest-path pass per allocating block of these devices
    longest = _longest_paths(problem, _least_durations(problem),
                             [b.name for _, _, on in capped for b in on if b.memory > 0])
    n = problem.num_microbatches
    for d, cap, on in capped:
        frees = [b for b in on if b.memory < 0]
        after_free = set().union(*(descendants[f.name] for f in frees))
        gap: int | None = None
        for f in frees:
            g = max((longest[a.name][f.name] for a in on if a.memory > 0 and f.name in longest[a.name]), default=0)
            gap = g if gap is None else min(gap, g)
        if not gap:
            continue
        # the work that may run before the first free is bounded from above: each instance counts with its
        # own least duration (what the device bound counts), and a block's instances in the knapsack with the
        # largest of those (any of its micro-batches may be the ones run early)
        free_work = _window_work(problem, on, after_free, gap, longest)
        room = cap - problem.initial_memory_of(d)
        top = {b.name: max(_min_duration(problem, b.name, m) for m in range(n)) for b in on if b.memory > 0}
        items = sorted(((top[b.name], b.memory) for b in on if b.memory > 0 and b.name not in after_free),
                       key=lambda x: -x[0] / x[1])
        work = 0.0
        for duration, delta in items:
            take = min(n, room / delta)
            work += take * duration
            room -= take * delta
            if room <= 0:
                break
        out[d] = max(0, gap - free_work - math.floor(work))
    return out


def memory_tails(problem: Problem) -> dict[str, int]:
    """Per device: the least time the makespan runs past the device's work because of its last allocation.

    On a device ``d`` with a capacity ``C`` whose tasks are all fixed on
    it, in no declared overlap and at least one time unit long, let ``y``
    be the start of the last allocating task (positive delta) on ``d``.
    Every task after it frees memory or holds none; the frees after ``y``
    release at most ``level(y) - L_end <= C - L_end`` (``L_end`` the level
    after every task: the initial memory plus all deltas). A zero-delta
    task after ``y`` has every freeing descendant on ``d`` of its
    micro-batch after ``y`` too, so it counts against one of them. The
    work ``R`` run after ``y`` is then at most a fractional knapsack: each
    freeing block weighs its release and is worth its duration plus the
    durations of the zero-delta blocks charged to it (each charged to one
    freeing descendant; the least knapsack over the ways to charge them);
    zero-delta blocks without a freeing descendant on ``d`` count whole.
    Durations in it are each block's largest least duration over its
    micro-batches.

    When all allocations together exceed ``C`` less the initial memory,
    some free starts before ``y``, so the idle :func:`memory_idle` forces
    before the first free lies before ``y``, and with the device's first
    start ``s``::

        makespan >= y + (end of the last allocation to the end)
                 >= s + forced idle + work - R + least tail of an allocating block

    (the duration of the last allocation cancels). This value is
    ``least allocating tail - R``; the device bound takes the larger of it
    and the least tail of all the device's tasks. 0 where the conditions
    fail. (V placement, ``p`` devices, unit times, ``p + 1`` chunk
    activations: after the middle device's last forward, ``p + 1`` weight
    gradients and their ``p + 1`` input gradients at most remain, while
    ``3p`` must follow that forward's end: the tail is ``p - 2``, and the
    bound ``6m + 3p - 4``, the optimum CP-SAT proves for ``p`` = 4, 5, 6
    and 8.)

    Examples
    --------
    >>> from schedsearch.bounds.analytic import memory_tails
    >>> from schedsearch.placements import vshape_chunks
    >>> memory_tails(vshape_chunks(4, 16, memory=5))["d3"]
    2
    """
    return _memory_tails(problem, None)


def _memory_tails(problem: Problem, tails: Mapping[TaskKey, int] | None) -> dict[str, int]:
    """:func:`memory_tails`, with the tails of :func:`heads_and_tails` when the caller has them."""
    out = {d: 0 for d in problem.cluster.device_names}
    n = problem.num_microbatches
    descendants: dict[str, set[str]] | None = None
    for d, cap, on in _capped_devices(problem):
        checkpoint(2 * len(on) * n)  # a call's hard stop ends the bound here (a unit per duration read)
        top = {b.name: max(_min_duration(problem, b.name, m) for m in range(n)) for b in on}
        if any(_min_duration(problem, b.name, m) < 1 for b in on for m in range(n)):
            continue
        allocs = [b for b in on if b.memory > 0]
        frees = [b for b in on if b.memory < 0]
        init = problem.initial_memory_of(d)
        if not allocs or n * sum(b.memory for b in allocs) <= cap - init:
            continue
        room = cap - (init + n * sum(b.memory for b in on))
        if room < 0:
            continue
        if descendants is None:
            descendants = _descendants(problem)
        if tails is None:
            tails = heads_and_tails(problem)[1]
        loose = 0
        choices: list[tuple[int, list[str]]] = []
        for z in on:
            if z.memory != 0:
                continue
            targets = [f.name for f in frees if f.name in descendants[z.name]]
            if targets:
                choices.append((top[z.name], targets))
            else:
                loose += n * top[z.name]
        combos = 1
        for _, targets in choices:
            combos *= len(targets)
        if combos > 256:  # too many ways: charge each to its first freeing descendant (still an upper bound)
            choices = [(w, targets[:1]) for w, targets in choices]
        best: float | None = None
        for pick in itertools.product(*(targets for _, targets in choices)):
            worth = {f.name: top[f.name] for f in frees}
            for (w, _), f in zip(choices, pick):
                worth[f] += w
            left, work = room, 0.0
            for f in sorted(frees, key=lambda f: -worth[f.name] / -f.memory):
                take = min(n, left / -f.memory)
                work += take * worth[f.name]
                left -= take * -f.memory
                if left <= 0:
                    break
            best = work if best is None else min(best, work)
        rem = loose + math.floor(best or 0)
        least_alloc_tail = min(tails[(a.name, m)] for a in allocs for m in range(n))
        out[d] = max(0, least_alloc_tail - rem)
    return out


def _window_work(problem: Problem, on: list, after_free: set[str], gap: int,
                 longest: Mapping[str, Mapping[str, int]]) -> int:
    """Most work of zero-delta tasks on a device in the window ``[s, s + gap)``
    after its first start ``s`` (see :func:`memory_idle`).

    A zero-delta block ``b`` that depends on an allocating block ``a`` of
    the device (same micro-batch) starts each instance at least ``L(a ->
    b)`` after the start of ``a``'s instance, so at least ``L_b`` (the
    largest such path) after ``s``. All these tasks run one at a time, so
    those with ``L_b >= l`` fit at most ``gap - l`` work into the window:
    taken from the largest ``L_b`` down, the running total is capped by
    each ``gap - L_b`` (a preemptive one-machine schedule with releases
    ``L_b`` is the most that fits). The other zero-delta blocks count
    with all their instances.
    """
    n = problem.num_microbatches
    loose = 0
    timed: list[tuple[int, int]] = []
    for b in on:
        if b.memory != 0 or b.name in after_free:
            continue
        work = sum(_min_duration(problem, b.name, m) for m in range(n))
        release = max((longest[a.name][b.name] for a in on if a.memory > 0 and b.name in longest[a.name]),
                      default=None)
        if release is None:
            loose += work
        else:
            timed.append((release, work))
    fitted = 0
    for release, work in sorted(timed, reverse=True):
        fitted = min(fitted + work, max(0, gap - release))
    return loose + fitted


def _savings(problem: Problem) -> dict[TaskKey, Fraction]:
    """Per task instance: the most time it can save by joining a group.

    A group of ``k`` members lasts at least the overlap's duration, so it
    saves at most ``sum of its members' durations - overlap duration``. As
    a task joins at most one group, charging each member ``saving / k`` of
    the best group it could join bounds the total saving of any set of
    tasks run one at a time on a device. The best group of task ``(b, m)``
    is bounded with its own duration and, for the other members, their
    longest duration over all micro-batches (members may come from any
    micro-batches).
    """
    out: dict[TaskKey, Fraction] = {}
    n = problem.num_microbatches
    if not problem.overlaps:
        return out
    longest = {b.name: max(max(problem.durations(b.name, m)) for m in range(n)) for b in problem.graph.blocks}
    for ov in problem.overlaps:
        others = sum(longest[b] for b in ov.blocks)
        for b in ov.blocks:
            for m in range(n):
                saving = _min_duration(problem, b, m) + others - longest[b] - ov.duration
                if saving > 0:
                    key = (b, m)
                    out[key] = max(out.get(key, Fraction(0)), Fraction(saving, len(ov.blocks)))
    return out


def _block_savings(problem: Problem) -> dict[str, Fraction] | None:
    """:func:`_savings` per block when no task instance overrides its durations (every micro-batch of a
    block then saves the same), computed once per block instead of per instance; None otherwise."""
    least = _block_least(problem)
    if least is None:
        return None
    out: dict[str, Fraction] = {}
    longest = {b.name: max(o.duration for o in b.options) for b in problem.graph.blocks}
    for ov in problem.overlaps:
        others = sum(longest[b] for b in ov.blocks)
        for b in ov.blocks:
            saving = least[b] + others - longest[b] - ov.duration
            if saving > 0:
                out[b] = max(out.get(b, Fraction(0)), Fraction(saving, len(ov.blocks)))
    return out


def _saved(problem: Problem) -> Callable[[Iterable[str]], Fraction]:
    """The most that every micro-batch of the given blocks together can save by joining groups (the sum of
    :func:`_savings` over their task instances; by block when no instance overrides its durations)."""
    n = problem.num_microbatches
    if not problem.overlaps:
        return lambda names: Fraction(0)
    per_block = _block_savings(problem)
    if per_block is not None:
        return lambda names: sum((per_block[b] * n for b in names if b in per_block), Fraction(0))
    savings = _savings(problem)
    return lambda names: sum((savings[(b, m)] for b in names for m in range(n) if (b, m) in savings), Fraction(0))


def device_bounds(problem: Problem, *, heads_tails: tuple[dict[TaskKey, int], dict[TaskKey, int]] | None = None) -> dict[str, int]:
    """Per device: ``min head + mandatory work + forced idle + min tail`` (0
    without mandatory work; the forced idle is :func:`memory_idle`; the work
    is less the most that overlapped groups can save, see
    :func:`_savings`). ``heads_tails``: :func:`heads_and_tails` of ``problem`` when the caller has them.

    Examples
    --------
    On 1F1B's placement (F = 1, B = 2, 8 micro-batches), device ``r`` waits
    ``r`` units for its first forward, has 8 x 3 units of work, and leaves
    at least ``2r`` (the backwards below it) after its last task:

    >>> from schedsearch.bounds import device_bounds
    >>> from schedsearch.placements import vshape
    >>> device_bounds(vshape(4, 8))
    {'d0': 24, 'd1': 27, 'd2': 30, 'd3': 33}

    Memory for two activations forces idle time before the first free
    and a tail after the last forward (when at most two backwards remain):

    >>> device_bounds(vshape(4, 8, memory=2))
    {'d0': 39, 'd1': 36, 'd2': 33, 'd3': 33}
    """
    heads, tails = heads_tails or heads_and_tails(problem)
    idle = memory_idle(problem)
    after = _memory_tails(problem, tails)
    saved = _saved(problem)
    out: dict[str, int] = {}
    for d in problem.cluster.device_names:
        names = [b.name for b in problem.graph.blocks if all(d in o.devices for o in b.options)]
        keys = [(b, m) for b in names for m in range(problem.num_microbatches)]
        checkpoint(len(keys))
        if not keys:
            out[d] = 0
            continue
        work = _work(problem, keys) - math.floor(saved(names))
        out[d] = min(heads[k] for k in keys) + work + idle[d] + max(min(tails[k] for k in keys), after[d])
    return out


def preemptive_one_device(jobs: Sequence[tuple[int, int, int]]) -> int:
    """Least makespan of jobs ``(release, duration, tail)`` on one device, preemption allowed.

    Jackson's preemptive schedule (at every moment run the released job
    with the longest tail) is optimal for this relaxation; its value is
    ``max over sets S of (min release + total duration + min tail)`` and so
    a lower bound on any schedule that runs the jobs one at a time after
    their releases and leaves each its tail.

    Examples
    --------
    Two jobs released at 0 and 1 with long tails, one long job without: the
    long job is interrupted, the tails decide.

    >>> from schedsearch.bounds.analytic import preemptive_one_device
    >>> preemptive_one_device([(0, 10, 0), (1, 2, 5), (1, 2, 5)])
    14
    >>> preemptive_one_device([])
    0
    """
    order = sorted(jobs)
    count = len(order)
    push, pop = heapq.heappush, heapq.heappop
    ready: list[tuple[int, int]] = []  # (-tail, remaining duration)
    t = best = i = 0
    while i < count or ready:
        if not ready and order[i][0] > t:
            t = order[i][0]
        while i < count:
            release, duration, tail = order[i]
            if release > t:
                break
            push(ready, (-tail, duration))
            i += 1
        neg_tail, left = pop(ready)
        if i < count and t + left > order[i][0]:
            push(ready, (neg_tail, left - (order[i][0] - t)))
            t = order[i][0]
        else:
            t += left
            if t - neg_tail > best:
                best = t - neg_tail
    return best


def _lines_max(lines: Mapping[int, int], n: int) -> list[int]:
    """``[max over lines of intercept + slope * k for k in 1..n]`` (lines: slope -> intercept)."""
    kept: list[tuple[int, int]] = []
    for slope in sorted(lines, reverse=True):  # a line below a steeper one at k = 1 never wins
        if not kept or lines[slope] + slope > max(c + s for s, c in kept):
            kept.append((slope, lines[slope]))
    out: list[int] = []
    for s, c in kept:  # the upper envelope, one line at a time over every k
        line = range(c + s, c + s * n + 1, s) if s else [c] * n
        out = list(line) if not out else [a if a >= b else b for a, b in zip(out, line)]
    return out


def _longest_paths(problem: Problem, least: Mapping[str, int],
                   sources: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
    """Per source block (default: every block): the least time from its start to the start of each
    descendant of the same micro-batch (and 0 to itself), the longest path of durations ``least`` and
    unavoidable transfers; an edge inside a declared overlap counts 0 (the group may run both together)."""
    order = problem.graph.topological_order()
    position = {name: i for i, name in enumerate(order)}
    grouped = {(e.src, e.dst) for e in problem.graph.edges
               if any(e.src in ov.blocks and e.dst in ov.blocks for ov in problem.overlaps)}
    step = {name: [(e.dst, 0 if (e.src, e.dst) in grouped
                    else least[name] + _unavoidable_transfer(problem, e.src, e.dst, e.size)) for e in edges]
            for name, edges in problem.graph.successors().items()}
    out: dict[str, dict[str, int]] = {}
    for source in order if sources is None else dict.fromkeys(sources):
        checkpoint(len(order))
        dist = {source: 0}
        for name in order[position[source]:]:
            if name in dist:
                here = dist[name]
                for dst, length in step[name]:
                    if dist.get(dst, -1) < here + length:
                        dist[dst] = here + length
        out[source] = dist
    return out


def flow_bounds(problem: Problem, *, heads_tails: tuple[dict[TaskKey, int], dict[TaskKey, int]] | None = None) -> dict[str, int]:
    """Per device: the preemptive one-device bound with per-rank releases and tails from the other devices.

    Valid when the problem declares no overlaps (every device then runs one
    task at a time); otherwise every value is 0. For a block ``a`` fixed on
    a device ``j`` (every option occupies ``j``), let ``A`` be ``a`` and its
    ancestors fixed on ``j``: any ``k`` instances of ``a`` need their ``k``
    instances of every block of ``A`` done on ``j`` first, one at a time, so
    the last of them ends at least ``h + k x (durations of the blocks of A
    whose head is >= h)`` for every head ``h`` of ``A``. Hence the ``k``-th
    instance of a descendant ``b`` to start starts at least that plus the
    longest path from ``a``'s end to ``b``'s start. Symmetrically the
    ``k``-th last instance of ``b`` to end leaves at least the path to a
    descendant ``c`` plus ``k`` instances of ``c`` and of its descendants
    fixed on ``c``'s device plus the least tail among them. Instances of one
    block on one device start and end in the same order, so the ``k``-th
    to start is the ``(m - k + 1)``-th last to end; each device's tasks with
    these releases and tails go to :func:`preemptive_one_device`. Durations
    are the least over options and micro-batches, heads and tails the least
    over micro-batches. ``heads_tails``: :func:`heads_and_tails` of
    ``problem`` when the caller has them.

    Examples
    --------
    A first stage of F = 3 feeds a second of F = 1 (both B = 1, 4
    micro-batches): the second device gets a forward only every 3 units, so
    its last forward starts at 12 at the earliest and the step cannot end
    before 12 + F + B + B = 15, where the second device's own bound (wait
    3, work 8, then B = 1 on the first) says 12:

    >>> from schedsearch.bounds.analytic import device_bounds, flow_bounds
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 4, forward=[3, 1], backward=[1, 1])
    >>> flow_bounds(problem), device_bounds(problem)
    ({'d0': 16, 'd1': 15}, {'d0': 16, 'd1': 12})
    """
    out = {d: 0 for d in problem.cluster.device_names}
    if problem.overlaps:
        return out
    n = problem.num_microbatches
    heads, tails = heads_tails or heads_and_tails(problem)
    blocks = problem.graph.blocks
    fixed_on = {b.name: frozenset.intersection(*(frozenset(o.devices) for o in b.options)) for b in blocks}
    least = _least_durations(problem)
    head = {b.name: min(heads[(b.name, m)] for m in counted(range(n))) for b in blocks}
    tail = {b.name: min(tails[(b.name, m)] for m in counted(range(n))) for b in blocks}

    reach = _longest_paths(problem, least)  # start of a -> start of each descendant
    # per source block: lines (slope = work per instance, intercept = head or tail) of k instances' span
    before: dict[str, dict[int, int]] = {}
    after: dict[str, dict[int, int]] = {}
    for a in fixed_on:
        before[a], after[a] = {}, {}
        for j in fixed_on[a]:
            up = [x for x in fixed_on if j in fixed_on[x] and a in reach[x]]
            down = [y for y in reach[a] if j in fixed_on[y]]
            checkpoint(len(fixed_on) + len(up) ** 2 + len(down) ** 2)
            for x in up:
                slope = sum(least[y] for y in up if head[y] >= head[x])
                before[a][slope] = max(before[a].get(slope, 0), head[x])
            for y in down:
                slope = sum(least[z] for z in down if tail[z] >= tail[y])
                after[a][slope] = max(after[a].get(slope, 0), tail[y])
    for d in out:
        jobs: list[tuple[int, int, int]] = []
        for b in fixed_on:
            if d not in fixed_on[b]:
                continue
            rel: dict[int, int] = {0: head[b]}
            due: dict[int, int] = {0: tail[b]}
            for a in fixed_on:
                if b in reach[a]:
                    gap = reach[a][b] - least[a]
                    for slope, c in before[a].items():
                        rel[slope] = max(rel.get(slope, c + gap), c + gap)
                if a in reach[b]:
                    gap = reach[b][a] - least[b]
                    for slope, c in after[a].items():
                        due[slope] = max(due.get(slope, c + gap), c + gap)
            starts, ends = _lines_max(rel, n), _lines_max(due, n)
            jobs += [(starts[k], least[b], ends[n - 1 - k]) for k in range(n)]
            checkpoint(n)

        out[d] = preemptive_one_device(jobs)
    return out


def _average_load(problem: Problem) -> int:
    work = 0
    for b in problem.graph.blocks:
        sizes = [len(o.devices) for o in b.options]
        if problem.duration_overrides:
            work += sum(min(d * k for d, k in zip(problem.durations(b.name, m), sizes))
                        for m in range(problem.num_microbatches))
        else:
            work += problem.num_microbatches * min(o.duration * k for o, k in zip(b.options, sizes))
    blocks = problem.graph.by_name()
    saved_by = _saved(problem)
    saved = sum((saved_by([b]) * len(blocks[b].options[0].devices) for b in blocks), Fraction(0))
    return math.ceil((work - saved) / len(problem.cluster.devices))


@attrs.frozen(kw_only=True)
class AnalyticBound:
    """An analytic lower bound and the parts it is the maximum of.

    Examples
    --------
    >>> from schedsearch.bounds import AnalyticBound
    >>> bound = AnalyticBound(value=12, parts={"critical_path": 12, "average_load": 9})
    >>> bound.tight_part
    'critical_path'
    """

    value: int
    parts: Mapping[str, int]

    @property
    def tight_part(self) -> str:
        """Name of the part that gives the bound."""
        return max(self.parts, key=lambda k: self.parts[k])


def span_lower_bound(problem: Problem) -> AnalyticBound:
    """Lower bound on the longest device span (the ``"max_span"`` objective).

    Parts: the longest single task (at its least duration), and per device
    its mandatory work (less what overlapped groups can save) plus the idle
    its memory forces on it.

    Examples
    --------
    >>> from schedsearch.bounds import span_lower_bound
    >>> from schedsearch.placements import zero_bubble
    >>> bound = span_lower_bound(zero_bubble(2, 4).with_(objective="max_span"))
    >>> bound.value, bound.parts["longest_task"]  # 4 x (F + I + W) on each device
    (12, 1)
    """
    parts: dict[str, int] = {
        "longest_task": max(_min_duration(problem, b.name, m)
                            for b in problem.graph.blocks for m in range(problem.num_microbatches))
    }
    idle = memory_idle(problem)
    saved = _saved(problem)
    for d in problem.cluster.device_names:
        names = [b.name for b in problem.graph.blocks if all(d in o.devices for o in b.options)]
        keys = [(b, m) for b in names for m in range(problem.num_microbatches)]
        work = _work(problem, keys) - math.floor(saved(names))
        parts[f"device {d}"] = idle[d] + work
    return AnalyticBound(value=max(parts.values()), parts=parts)


def objective_lower_bound(problem: Problem) -> AnalyticBound:
    """The analytic bound of the problem's objective: :func:`span_lower_bound`
    for ``"max_span"``, :func:`analytic_lower_bound` otherwise.

    Examples
    --------
    >>> from schedsearch.bounds import objective_lower_bound
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> objective_lower_bound(problem).value, objective_lower_bound(problem.with_(objective="max_span")).value
    (9, 6)
    """
    return span_lower_bound(problem) if problem.objective == "max_span" else analytic_lower_bound(problem)


def analytic_lower_bound(problem: Problem) -> AnalyticBound:
    """Maximum of the critical path, the per-device bounds, the average load and the flow bounds.

    Cheap (linear in the problem's size, no solver), so every strategy
    starts from it; see :func:`~schedsearch.bounds.lower_bound` for the
    memory bound and the assignment LP on top.

    Examples
    --------
    1F1B's makespan ``(m+p-1)(F+B) = 33`` for 4 devices and 8 micro-batches
    is this bound, given by the last device:

    >>> from schedsearch.bounds import analytic_lower_bound
    >>> from schedsearch.placements import vshape
    >>> bound = analytic_lower_bound(vshape(4, 8, forward=1, backward=2))
    >>> bound.value, bound.tight_part, bound.parts["critical_path"]
    (33, 'device d3', 12)
    """
    heads_tails = heads_and_tails(problem)  # once, for the three bounds that read them
    parts: dict[str, int] = {"critical_path": critical_path(problem, heads_tails=heads_tails)}
    parts["average_load"] = _average_load(problem)
    for d, v in device_bounds(problem, heads_tails=heads_tails).items():
        parts[f"device {d}"] = v
    for d, v in flow_bounds(problem, heads_tails=heads_tails).items():
        if v > parts[f"device {d}"]:
            parts[f"flow {d}"] = v
    return AnalyticBound(value=max(parts.values()), parts=parts)
