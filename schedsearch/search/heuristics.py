"""List scheduling (HEFT-like): a fast feasible schedule, no solver.

The heuristic is the baseline of the job-shop planner and its warm start.

Algorithm
---------
Task instances are ranked by a priority rule, then placed one at a time: at
each step the ready task (all predecessors placed) of highest priority that
can be placed is put on the placement option where it **finishes earliest**
(HEFT's rule), at the earliest time its devices are free for its whole
duration, its data have arrived and its release has passed.

* Data arrival: for an edge ``u -> v`` of size > 0 whose two ends run on
  disjoint device sets, a transfer of the channel's transfer time is booked
  on the channel serving ``lead(u) -> lead(v)`` where it ends earliest, no
  earlier than ``u`` ends; ``v`` starts after it. Other edges (and fixed
  orders) only require ``v`` to start after ``u`` ends.
* Insertion: on a device without a memory capacity, and on channels, a task
  may go into an idle gap before already placed work (HEFT's insertion
  policy). On a device with a capacity it is appended after the last task
  placed there, so the device runs its tasks in placement order and the
  memory level at each start is ``initial + sum of deltas placed so far +
  delta + workspace``; a task is only placed when that stays within the
  capacity. When no ready task fits anywhere the heuristic gives up
  (returns None): list scheduling is not complete under memory limits.

Priority rules (higher runs first; ties by block order, then micro-batch):

* ``"upward_rank"`` (HEFT): ``rank(t) = mean duration + max over
  successors s of (mean transfer time + rank(s))``; the mean transfer time
  is the mean channel time times the share of option pairs that need a
  transfer;
* ``"longest_path"``: the same with minimal durations and no transfers
  (the remaining critical path);
* ``"work_remaining"``: mean duration plus the sum of the mean durations of
  every descendant (most work remaining first);
* ``"upward_downward"`` (CPOP): upward rank plus the longest path into the
  task (its earliest start with minimal durations).

Every schedule returned has passed the independent validator.

Results. :func:`list_schedule` and :func:`heft` return a
:class:`~schedsearch.result.SearchResult` like every strategy (FEASIBLE
with the plan and the analytic lower bound, OPTIMAL when the plan meets
it; UNKNOWN when memory blocks every rule; INFEASIBLE when fixed orders
contradict the edges); :func:`list_plan` gives the bare schedule (or None)
to callers that build on it.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence

import attrs

from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.problem import Problem, TaskKey
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance, Transfer, objective_value
from schedsearch.validate import assert_valid

__all__ = ["PRIORITY_RULES", "priorities", "list_plan", "list_schedule", "heft", "heuristic_result"]

PRIORITY_RULES = ("upward_rank", "longest_path", "work_remaining", "upward_downward")


class _PrecedenceCycle(ValueError):
    """Fixed orders and edges form a cycle: no schedule exists."""


@attrs.frozen(kw_only=True)
class _Pred:
    task: int
    size: int  # transfer size (0: precedence only)


class _TaskGraph:
    """Task instances of a problem with their predecessors and successors."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.keys: list[TaskKey] = list(problem.tasks)
        self.index = {k: i for i, k in enumerate(self.keys)}
        blocks = problem.graph.by_name()
        self.options = [blocks[b].options for b, _ in self.keys]
        self.durations = [problem.durations(b, m) for b, m in self.keys]
        self.memory = [blocks[b].memory for b, _ in self.keys]
        self.workspace = [blocks[b].workspace for b, _ in self.keys]
        self.release = [problem.release_of(b, m) for b, m in self.keys]
        n = len(self.keys)
        preds: list[dict[int, int]] = [{} for _ in range(n)]
        for m in range(problem.num_microbatches):
            for e in problem.graph.edges:
                u, v = self.index[(e.src, m)], self.index[(e.dst, m)]
                preds[v][u] = max(preds[v].get(u, 0), e.size)
        for order in problem.fixed_orders:
            for a, b in zip(order, order[1:]):
                u, v = self.index[a], self.index[b]
                preds[v].setdefault(u, 0)
        self.preds = [[_Pred(task=u, size=s) for u, s in sorted(p.items())] for p in preds]
        self.succs: list[list[_Pred]] = [[] for _ in range(n)]
        for v, plist in enumerate(self.preds):
            for p in plist:
                self.succs[p.task].append(_Pred(task=v, size=p.size))
        self.topo = self._topological()

    def _topological(self) -> list[int]:
        indeg = [len(p) for p in self.preds]
        ready = [i for i, d in enumerate(indeg) if d == 0]
        out: list[int] = []
        while ready:
            t = ready.pop()
            out.append(t)
            for s in self.succs[t]:
                indeg[s.task] -= 1
                if indeg[s.task] == 0:
                    ready.append(s.task)
        if len(out) != len(self.keys):
            # the graph is acyclic, but fixed orders may contradict its edges
            raise _PrecedenceCycle("list scheduling: fixed orders and edges form a cycle (the problem is infeasible)")
        return out

    def mean_transfer(self, u: int, v: int, size: int) -> float:
        if size <= 0:
            return 0.0
        cluster = self.problem.cluster
        total, count = 0.0, 0
        for ou in self.options[u]:
            for ov in self.options[v]:
                count += 1
                if set(ou.devices) & set(ov.devices):
                    continue
                times = [c.transfer_time(size) for c in cluster.channels_between(ou.devices[0], ov.devices[0])]
                if times:
                    total += sum(times) / len(times)
        return total / count if count else 0.0


def priorities(problem: Problem, rule: str = "upward_rank") -> dict[TaskKey, float]:
    """Priority of every task instance under ``rule`` (see the module notes)."""
    return _priorities(_TaskGraph(problem), rule)


def _priorities(g: _TaskGraph, rule: str) -> dict[TaskKey, float]:
    n = len(g.keys)
    mean = [sum(d) / len(d) for d in g.durations]
    least = [min(d) for d in g.durations]
    rank = [0.0] * n
    if rule in ("upward_rank", "upward_downward"):
        for t in reversed(g.topo):
            rank[t] = mean[t] + max((g.mean_transfer(t, s.task, s.size) + rank[s.task] for s in g.succs[t]), default=0.0)
        if rule == "upward_downward":
            down = [0.0] * n
            for t in g.topo:
                down[t] = max([float(g.release[t])] + [down[p.task] + least[p.task] for p in g.preds[t]])
            rank = [r + d for r, d in zip(rank, down)]
    elif rule == "longest_path":
        for t in reversed(g.topo):
            rank[t] = least[t] + max((rank[s.task] for s in g.succs[t]), default=0.0)
    elif rule == "work_remaining":
        # descendants as bit sets: exact "work of every descendant", not a path sum
        desc = [0] * n
        for t in reversed(g.topo):
            acc = 0
            for s in g.succs[t]:
                acc |= desc[s.task] | (1 << s.task)
            desc[t] = acc
        for t in range(n):
            bits, total, i = desc[t], mean[t], 0
            while bits:
                if bits & 1:
                    total += mean[i]
                bits >>= 1
                i += 1
            rank[t] = total
    else:
        raise ValueError(f"list scheduling: 'rule' must be one of {PRIORITY_RULES}, got {rule!r}")
    return {k: rank[i] for i, k in enumerate(g.keys)}


class _Timeline:
    """Busy intervals of one resource, sorted by start."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    @property
    def last_end(self) -> int:
        return max(self.ends, default=0)

    def conflict(self, start: int, duration: int) -> int | None:
        """End of a busy interval overlapping ``[start, start + duration)``, or None."""
        if duration <= 0:
            return None
        end = start + duration
        i = bisect.bisect_right(self.starts, start) - 1
        # an interval starting before ``start`` may still cover it
        if i >= 0 and self.ends[i] > start:
            return self.ends[i]
        j = i + 1
        if j < len(self.starts) and self.starts[j] < end:
            return self.ends[j]
        return None

    def earliest(self, ready: int, duration: int) -> int:
        s = ready
        while True:
            c = self.conflict(s, duration)
            if c is None:
                return s
            s = c

    def book(self, start: int, duration: int) -> None:
        if duration <= 0:
            return
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, start + duration)


def _earliest_common(timelines: Sequence[_Timeline], ready: int, duration: int) -> int:
    s = ready
    while True:
        moved = False
        for tl in timelines:
            c = tl.conflict(s, duration)
            if c is not None:
                s, moved = c, True
        if not moved:
            return s


def list_plan(
    problem: Problem,
    *,
    rule: str = "upward_rank",
    priority: Mapping[TaskKey, float] | Callable[[TaskKey], float] | None = None,
    insertion: bool = True,
) -> Schedule | None:
    """One list schedule of ``problem`` (validated), or None when memory blocks it.

    The bare plan, for callers that build on it; :func:`list_schedule` gives
    the same plan as a search result.

    Parameters
    ----------
    problem:
        Any problem of the model (options, transfers, memory, workspace,
        releases, fixed orders, several micro-batches).
    rule:
        Priority rule (see :data:`PRIORITY_RULES`), unless ``priority`` is given.
    priority:
        Explicit priorities (higher first), as a mapping or a function of
        the task key.
    insertion:
        Allow placing a task into an idle gap on devices without a memory
        capacity (and on channels).

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> list_plan(p).makespan  # the optimum: m1 runs j1.o0 [0, 4) then j0.o1
    6
    """
    g = _TaskGraph(problem)
    if priority is None:
        prio = _priorities(g, rule)
    elif isinstance(priority, Mapping):
        missing = [k for k in g.keys if k not in priority]
        if missing:
            raise ValueError(f"list scheduling: 'priority' lacks task {missing[0]!r}")
        prio = dict(priority)
    else:
        prio = {k: float(priority(k)) for k in g.keys}
    return _schedule(g, prio, insertion)


def list_schedule(
    problem: Problem,
    *,
    rule: str = "upward_rank",
    priority: Mapping[TaskKey, float] | Callable[[TaskKey], float] | None = None,
    insertion: bool = True,
) -> SearchResult:
    """One list schedule of ``problem`` as a search result (see :func:`list_plan` for the parameters).

    FEASIBLE with the validated plan and the analytic lower bound (OPTIMAL
    when the plan meets it), UNKNOWN when memory blocks the list scheduler,
    INFEASIBLE when fixed orders and edges form a cycle.

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    >>> list_schedule(p).objective
    6
    """
    t0 = time.perf_counter()
    engine = "list scheduling (HEFT, " + (rule if priority is None else "given priorities") + ")"
    try:
        schedule = list_plan(problem, rule=rule, priority=priority, insertion=insertion)
    except _PrecedenceCycle as exc:
        return heuristic_result(problem, None, strategy="list_schedule", engine=engine, stats={"reason": str(exc)},
                                wall_time_s=time.perf_counter() - t0, infeasible=True)
    return heuristic_result(problem, schedule, strategy="list_schedule", engine=engine, stats={"rule": rule},
                            wall_time_s=time.perf_counter() - t0)


def heuristic_result(
    problem: Problem,
    schedule: Schedule | None,
    *,
    strategy: str,
    engine: str,
    stats: Mapping[str, object],
    wall_time_s: float,
    infeasible: bool = False,
) -> SearchResult:
    """A heuristic's plan as a :class:`~schedsearch.result.SearchResult`.

    With a (validated) ``schedule``: FEASIBLE, its objective and the
    analytic lower bound of the problem's objective, OPTIMAL when the plan
    meets the bound. Without: UNKNOWN (a heuristic proves nothing), or
    INFEASIBLE when the caller proved that no plan exists (``infeasible``).
    """
    name = "max_span" if problem.objective == "max_span" else "makespan"
    stats = dict(stats)
    if infeasible:
        return SearchResult(status=Status.INFEASIBLE, wall_time_s=wall_time_s, stats=stats, strategy=strategy,
                            objective_name=name, bound_engine="precedence check", problem=problem)
    bound = objective_lower_bound(problem).value
    stats["analytic_bound"] = bound
    if schedule is None:
        return SearchResult(status=Status.UNKNOWN, lower_bound=bound, wall_time_s=wall_time_s, stats=stats,
                            strategy=strategy, objective_name=name, bound_engine="analytic", problem=problem)
    value = objective_value(schedule, problem.objective)
    return SearchResult(
        status=Status.FEASIBLE,  # OPTIMAL when the bound meets it (SearchResult's rule)
        schedule=schedule,
        objective=value,
        lower_bound=min(bound, value),
        wall_time_s=wall_time_s,
        stats=stats,
        strategy=strategy,
        objective_name=name,
        engine=engine,
        bound_engine="analytic",
        problem=problem,
    )

def _schedule(g: _TaskGraph, prio: Mapping[TaskKey, float], insertion: bool) -> Schedule | None:
    problem = g.problem
    cluster = problem.cluster
    block_pos = {b.name: i for i, b in enumerate(problem.graph.blocks)}
    order_key = {t: (-prio[k], block_pos[k[0]], k[1]) for t, k in enumerate(g.keys)}
    devices = {d.name: _Timeline() for d in cluster.devices}
    channels = {c.name: _Timeline() for c in cluster.channels}
    capacity = {d.name: d.memory for d in cluster.devices}
    level = {d.name: problem.initial_memory_of(d.name) for d in cluster.devices}
    remaining = [len(p) for p in g.preds]
    ready = sorted((t for t, r in enumerate(remaining) if r == 0), key=order_key.__getitem__)
    chosen: dict[int, int] = {}
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    transfers: list[Transfer] = []
    while ready:
        placed = False
        for pos, t in enumerate(ready):
            best = _best_option(g, t, chosen, end, devices, channels, capacity, level, insertion)
            if best is None:
                continue
            option, s, bookings = best
            for name, b_start, b_dur, u in bookings:
                channels[name].book(b_start, b_dur)
                ku, kt = g.keys[u], g.keys[t]
                transfers.append(
                    Transfer(src=ku[0], dst=kt[0], microbatch=kt[1], channel=name, start=b_start, end=b_start + b_dur)
                )
            dur = g.durations[t][option]
            for d in g.options[t][option].devices:
                devices[d].book(s, dur)
                level[d] += g.memory[t]
            chosen[t], start[t], end[t] = option, s, s + dur
            ready.pop(pos)
            for succ in g.succs[t]:
                remaining[succ.task] -= 1
                if remaining[succ.task] == 0:
                    bisect.insort(ready, succ.task, key=order_key.__getitem__)
            placed = True
            break
        if not placed:
            return None
    tasks = [
        TaskInstance(
            block=g.keys[t][0], microbatch=g.keys[t][1], devices=g.options[t][chosen[t]].devices,
            start=start[t], end=end[t],
        )
        for t in range(len(g.keys))
    ]
    schedule = Schedule(tasks=tasks, transfers=transfers)
    return assert_valid(problem, schedule, "list schedule")


def _best_option(
    g: _TaskGraph,
    t: int,
    chosen: dict[int, int],
    end: dict[int, int],
    devices: dict[str, _Timeline],
    channels: dict[str, _Timeline],
    capacity: dict[str, int | None],
    level: dict[str, int],
    insertion: bool,
) -> tuple[int, int, list[tuple[str, int, int, int]]] | None:
    """(option, start, transfer bookings ``(channel, start, duration,
    source task)``) with the earliest finish, or None."""
    cluster = g.problem.cluster
    best: tuple[int, int, int, list[tuple[str, int, int, int]]] | None = None
    for i, option in enumerate(g.options[t]):
        devs = option.devices
        if any(
            capacity[d] is not None and level[d] + g.memory[t] + g.workspace[t] > capacity[d] for d in devs
        ):
            continue
        ready_at = g.release[t]
        bookings: list[tuple[str, int, int, int]] = []
        tentative: dict[str, list[tuple[int, int]]] = {}
        incoming = sorted(g.preds[t], key=lambda p: end[p.task])
        feasible = True
        for p in incoming:
            u_end = end[p.task]
            u_devs = g.options[p.task][chosen[p.task]].devices
            if p.size <= 0 or set(u_devs) & set(devs):
                ready_at = max(ready_at, u_end)
                continue
            best_ch: tuple[int, int, str] | None = None
            for ch in cluster.channels_between(u_devs[0], devs[0]):
                dur = ch.transfer_time(p.size)
                s = u_end
                while True:
                    c = channels[ch.name].conflict(s, dur)
                    if c is None:
                        c = next((b for a, b in tentative.get(ch.name, ()) if dur > 0 and a < s + dur and s < b), None)
                    if c is None:
                        break
                    s = c
                if best_ch is None or s + dur < best_ch[0] + best_ch[1]:
                    best_ch = (s, dur, ch.name)
            if best_ch is None:
                feasible = False
                break
            s, dur, name = best_ch
            tentative.setdefault(name, []).append((s, s + dur))
            bookings.append((name, s, dur, p.task))
            ready_at = max(ready_at, s + dur)
        if not feasible:
            continue
        dur = g.durations[t][i]
        timelines = [devices[d] for d in devs]
        if not insertion or any(capacity[d] is not None for d in devs):
            ready_at = max([ready_at] + [tl.last_end for tl in timelines])
        s = _earliest_common(timelines, ready_at, dur)
        if best is None or s + dur < best[1] + g.durations[t][best[0]]:
            best = (i, s, s + dur, bookings)
    if best is None:
        return None
    return best[0], best[1], best[3]


def heft(
    problem: Problem,
    *,
    rules: Sequence[str] = PRIORITY_RULES,
    insertion: bool = True,
) -> SearchResult:
    """The best list schedule over several priority rules, as a search result.

    Returns a FEASIBLE result (OPTIMAL when it meets the analytic lower
    bound) with the validated schedule, UNKNOWN when every rule was
    blocked by memory, or INFEASIBLE when fixed orders and edges form a
    cycle. ``engine`` names the winning rule, ``stats["makespans"]`` gives
    each rule's makespan (None when blocked) and ``stats["rule"]`` the
    winner.

    Examples
    --------
    >>> from schedsearch.loaders import jobshop_problem
    >>> result = heft(jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem)
    >>> result.status.value, result.objective, result.engine, result.bound_engine
    ('OPTIMAL', 6, 'list scheduling (HEFT, upward_rank)', 'analytic')
    """
    t0 = time.perf_counter()
    if not rules:
        raise ValueError("heft: 'rules' must name at least one priority rule")
    try:
        g = _TaskGraph(problem)
    except _PrecedenceCycle as exc:
        return heuristic_result(problem, None, strategy="heft", engine="", stats={"reason": str(exc)},
                                wall_time_s=time.perf_counter() - t0, infeasible=True)
    best: tuple[Schedule, str] | None = None
    makespans: dict[str, int | None] = {}
    for rule in rules:
        schedule = _schedule(g, _priorities(g, rule), insertion)
        makespans[rule] = schedule.makespan if schedule is not None else None
        if schedule is not None and (best is None or schedule.makespan < best[0].makespan):
            best = (schedule, rule)
    return heuristic_result(
        problem, best[0] if best else None, strategy="heft",
        engine=f"list scheduling (HEFT, {best[1]})" if best else "",
        stats={"makespans": makespans, "rule": best[1] if best else None}, wall_time_s=time.perf_counter() - t0,
    )
