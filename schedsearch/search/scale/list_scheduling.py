"""Memory-aware list scheduling: fast schedules for large pipeline problems.

A *non-delay list scheduler* simulates the devices in time. Whenever a
device is free it starts, among the task instances that are ready there
(every predecessor ended and its transfer arrived, release reached, every
device of the task free) and that fit in memory (level + delta +
workspace <= capacity on each of the task's devices), the one a
:class:`PriorityRule` ranks first; a device only idles when nothing ready
fits. A transfer is booked when its source ends, in the first gap of the
channel (serving the two lead devices) where it ends soonest. The
schedule is checked by the independent validator, so what comes back is
always a valid schedule of the problem.

Memory never deadlocks silently: when no task can ever start (every device
waits for memory that only a task which cannot start would free), the
scheduler returns None.

Assumptions: every block has exactly one placement option (a fixed
placement; several devices at once are fine); no fixed orders. Declared
overlapped groups are formed only on request (``form_groups``) and only
when they save time (a group lasting less than its members together, such
as DualPipe's ``F&B`` pair with ``F&B < F + B``); otherwise every task runs
alone, which the model always allows. (Greedy pairing is often worse than
no pairing: a pair makes its backward end later, which delays the
backward chain.)

Rules. A rule ranks tasks by a tuple: the rank of the block's ``kind`` in
``kind_order`` (``B`` ranks with ``I``; other kinds after the listed
ones), then the micro-batch and the stage (ascending, descending or not at
all), micro-batch first or stage first. For pipelines with a split
backward the rule ``F > I > W``, oldest micro-batch first, reaches the
per-device lower bound on DualPipe's placement with ``PP`` activations per
device (see the project's benchmarks); :data:`DEFAULT_RULES` tries a
portfolio of rules in turn.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time
from collections.abc import Iterable

import attrs
from networkx.utils import UnionFind

from schedsearch.errors import UnsupportedFeatureError
from schedsearch.problem import Problem, TaskKey
from schedsearch.result import SearchResult
from schedsearch.schedule import Schedule, TaskInstance, Transfer, objective_value
from schedsearch.search.heuristics import heuristic_result
from schedsearch.validate import assert_valid

__all__ = ["PriorityRule", "DEFAULT_RULES", "list_plan", "list_schedule", "best_list_schedule"]

_STAGE_ORDERS = ("ascending", "descending", "none")


def _check_kind_order(inst: PriorityRule, attribute: attrs.Attribute, value: str) -> None:
    if not isinstance(value, str) or len(set(value)) != len(value):
        raise ValueError(f"PriorityRule: 'kind_order' must be a string of distinct kind letters, got {value!r}")


def _check_stage_order(inst: PriorityRule, attribute: attrs.Attribute, value: str) -> None:
    if value not in _STAGE_ORDERS:
        raise ValueError(f"PriorityRule: 'stage_order' must be one of {_STAGE_ORDERS}, got {value!r}")


@attrs.frozen(kw_only=True)
class PriorityRule:
    """How a list scheduler ranks the ready tasks of a device (lowest key first).

    Parameters
    ----------
    kind_order:
        Block kinds, most urgent first (``"FIW"``: forwards, then input
        gradients (and full backwards), then weight gradients).
    stage_order:
        Tie-break on the block's ``stage``: ``"ascending"``,
        ``"descending"`` or ``"none"``.
    microbatch_first:
        Compare micro-batches before stages (oldest micro-batch first).
    """

    kind_order: str = attrs.field(default="FIW", validator=_check_kind_order)
    stage_order: str = attrs.field(default="none", validator=_check_stage_order)
    microbatch_first: bool = True

    def key(self, kind: str, stage: int | None, microbatch: int) -> tuple[int, int, int]:
        order = self.kind_order
        k = kind if kind in order or kind != "B" else "I"
        rank = order.index(k) if k in order else len(order)
        s = stage or 0
        s = s if self.stage_order == "ascending" else -s if self.stage_order == "descending" else 0
        return (rank, microbatch, s) if self.microbatch_first else (rank, s, microbatch)

    def __str__(self) -> str:
        first = "micro-batch" if self.microbatch_first else "stage"
        return f"{' > '.join(self.kind_order)}, {first} first, stages {self.stage_order}"


#: A portfolio: forward-first rules first (they reach the bound on the
#: bidirectional placements), then the other kind orders.
DEFAULT_RULES: tuple[PriorityRule, ...] = tuple(
    PriorityRule(kind_order="".join(order), stage_order=stage, microbatch_first=first)
    for order in ("FIW", "IFW", "FWI", "IWF", "WFI", "WIF")
    for stage in ("none", "descending", "ascending")
    for first in (True, False)
    if not (stage == "none" and not first)
)


def _check(problem: Problem) -> None:
    flexible = [b.name for b in problem.graph.blocks if not b.is_fixed]
    if flexible:
        raise UnsupportedFeatureError(
            f"list scheduling needs a fixed placement, but blocks {flexible[:3]} have several options; "
            f"search them with schedsearch.search.optimal"
        )
    if problem.fixed_orders:
        raise UnsupportedFeatureError(
            "list scheduling does not follow fixed orders; search the problem with schedsearch.search.optimal"
        )


class _Channels:
    """Busy intervals per channel; a transfer goes in the first gap that fits."""

    def __init__(self) -> None:
        self.busy: dict[str, list[tuple[int, int]]] = {}

    def earliest(self, name: str, ready: int, length: int) -> int:
        t = ready
        if length == 0:
            return t
        for s, e in self.busy.get(name, ()):
            if e <= t:
                continue
            if t + length <= s:
                break
            t = max(t, e)
        return t

    def book(self, name: str, start: int, length: int) -> None:
        if length > 0:
            bisect.insort(self.busy.setdefault(name, []), (start, start + length))


def _group_templates(problem: Problem) -> dict[str, list[tuple[str, int, list[list[str]], dict[str, int]]]]:
    """Per device: the declared overlaps that save time there, as (tag,
    duration, components, internal predecessor counts, blocks).

    The list scheduler forms a group only from members of one micro-batch
    per component, where a component joins the members linked by an edge
    and those the overlap's ``same_microbatch`` sets join (a restriction of
    what the model allows, never more). An overlap with an edge between two
    members against its block order cannot run (the model's rule) and is
    never formed.
    """
    graph = problem.graph
    edges = {(e.src, e.dst) for e in graph.edges}
    out: dict[str, list] = {}
    for ov in problem.overlaps:
        least = sum(graph.block(b).min_duration for b in ov.blocks)
        if ov.duration >= least:
            continue  # the group saves nothing: run the members alone
        order = {b: i for i, b in enumerate(ov.blocks)}
        if any((a, b) in edges and order[a] > order[b] for a in ov.blocks for b in ov.blocks):
            continue  # a group against an edge cannot run
        joined = UnionFind(ov.blocks)
        for a in ov.blocks:
            for b in ov.blocks:
                if (a, b) in edges:
                    joined.union(a, b)
        for members in ov.same_microbatch:
            joined.union(*members)
        comps: dict[str, list[str]] = {}
        for b in ov.blocks:
            comps.setdefault(joined[b], []).append(b)
        internal = {b: sum((a, b) in edges for a in ov.blocks) for b in ov.blocks}
        tag = ov.name or "+".join(ov.blocks)
        for d in graph.block(ov.blocks[0]).options[0].devices:
            out.setdefault(d, []).append((tag, ov.duration, list(comps.values()), internal, ov.blocks))
    return out


def list_plan(
    problem: Problem,
    rule: PriorityRule = PriorityRule(),
    *,
    form_groups: bool = False,
    name: str = "",
) -> Schedule | None:
    """The non-delay list schedule under ``rule`` (validated), or None when
    memory deadlocks (see the module docstring).

    The bare plan, for callers that build on it; :func:`list_schedule` gives
    it as a search result.

    With ``form_groups``, when the task the rule would start belongs to a
    declared overlapped group that lasts less than its members together,
    and an instance of that group holding it is ready and fits in memory,
    the group starts instead: each other linked part of the group takes,
    among its ready micro-batches, the one the rule ranks first; members
    wait only for dependencies outside the group.
    """
    _check(problem)
    graph = problem.graph
    blocks = graph.by_name()
    succs = graph.successors()
    preds = graph.predecessors()
    n = problem.num_microbatches
    devices = problem.cluster.device_names
    cap = {d: problem.capacity(d) for d in devices}
    level = {d: problem.initial_memory_of(d) for d in devices}
    free = {d: 0 for d in devices}
    devs_of = {b.name: b.options[0].devices for b in graph.blocks}
    routes: dict[tuple[str, str], tuple[int, tuple]] = {}
    for e in graph.edges:
        a, b = devs_of[e.src], devs_of[e.dst]
        if e.size > 0 and not set(a) & set(b):
            routes[(e.src, e.dst)] = (e.size, problem.cluster.channels_between(a[0], b[0]))
    key_of = {(b.name, m): rule.key(b.kind, b.stage, m) for b in graph.blocks for m in range(n)}
    waiting = {(b.name, m): len(preds[b.name]) for b in graph.blocks for m in range(n)}
    ready_at: dict[TaskKey, int] = {task: problem.release_of(*task) for task in waiting}
    templates = _group_templates(problem) if form_groups else {}
    pool: dict[str, list[TaskKey]] = {d: [] for d in devices}
    for task, count in waiting.items():
        if count == 0:
            for d in devs_of[task[0]]:
                pool[d].append(task)
    scheduled: set[TaskKey] = set()
    placed: list[TaskInstance] = []
    transfers: list[Transfer] = []
    channels = _Channels()
    running: list[tuple[int, int, TaskKey]] = []  # (end, tiebreak, task)
    counter = itertools.count()
    remaining = len(waiting)
    t = 0

    def fits(members: list[TaskKey]) -> bool:
        need = sum(blocks[b].memory + blocks[b].workspace for b, _ in members)
        return all(cap[d] is None or level[d] + need <= cap[d] for d in devs_of[members[0][0]])

    def group_at(d: str, lead: TaskKey | None) -> tuple[tuple, list[TaskKey], int, str] | None:
        """The best-ranked group instance that can start on ``d`` at ``t`` and
        holds ``lead`` (the single task the rule would start)."""
        if lead is None:
            return None
        best = None
        for tag, duration, comps, internal, order in templates.get(d, ()):
            if lead[0] not in order or any(free[e] > t for e in devs_of[order[0]]):
                continue
            chosen: list[TaskKey] = []
            for comp in comps:
                pick = None
                for m in ([lead[1]] if lead[0] in comp else range(n)):
                    tasks = [(b, m) for b in comp]
                    if all(task not in scheduled and waiting[task] == internal[task[0]] and ready_at[task] <= t
                           for task in tasks):
                        key = min(key_of[task] for task in tasks)
                        if pick is None or key < pick[0]:
                            pick = (key, tasks)
                if pick is None:
                    break
                chosen.extend(pick[1])
            else:
                if fits(chosen):
                    key = min(key_of[task] for task in chosen)
                    if best is None or key < best[0]:
                        members = sorted(chosen, key=lambda task: order.index(task[0]))
                        # the model's rule: a group lasts its declared duration, or its
                        # longest member instance's own duration when that is longer
                        longest = max(problem.durations(b, m)[0] for b, m in members)
                        best = (key, members, max(duration, longest), tag)
        return best

    def start(members: list[TaskKey], duration: int, tag: str | None) -> None:
        nonlocal remaining
        for task in members:
            b = blocks[task[0]]
            for e in devs_of[task[0]]:
                if task in pool[e]:
                    pool[e].remove(task)
                level[e] += b.memory + b.workspace
            scheduled.add(task)
            placed.append(TaskInstance(block=task[0], microbatch=task[1], devices=devs_of[task[0]], start=t,
                                       end=t + duration, overlap=tag))
            heapq.heappush(running, (t + duration, next(counter), task))
            remaining -= 1
        for e in devs_of[members[0][0]]:
            free[e] = t + duration

    while remaining:
        started = True
        while started:
            started = False
            for d in devices:
                if free[d] > t:
                    continue
                best = None
                for task in pool[d]:
                    if ready_at[task] > t or any(free[e] > t for e in devs_of[task[0]]) or not fits([task]):
                        continue
                    if best is None or key_of[task] < key_of[best]:
                        best = task
                if templates:
                    group = group_at(d, best)
                    if group is not None:
                        start(group[1], group[2], group[3])
                        started = True
                        continue
                if best is None:
                    continue
                start([best], problem.durations(*best)[0], None)
                started = True
        if not remaining:
            break
        upcoming = [running[0][0]] if running else []
        upcoming += [ready_at[task] for d in devices for task in pool[d] if ready_at[task] > t]
        if not upcoming:
            return None  # nothing runs and nothing will become ready: memory deadlock
        t = min(upcoming)  # every event still to come lies after t
        while running and running[0][0] <= t:
            end, _, task = heapq.heappop(running)
            b = blocks[task[0]]
            for d in devs_of[task[0]]:
                level[d] -= b.workspace
            for e in succs[task[0]]:
                nxt = (e.dst, task[1])
                waiting[nxt] -= 1
                if nxt in scheduled:
                    continue  # ran in the same group: the edge was the group's internal order
                arrive = end
                route = routes.get((e.src, e.dst))
                if route is not None:
                    size, options = route
                    best_channel = None
                    for ch in options:
                        length = ch.transfer_time(size)
                        begin = channels.earliest(ch.name, end, length)
                        if best_channel is None or begin + length < best_channel[0] + best_channel[2]:
                            best_channel = (begin, ch.name, length)
                    begin, channel, length = best_channel
                    channels.book(channel, begin, length)
                    transfers.append(Transfer(src=e.src, dst=e.dst, microbatch=task[1], channel=channel,
                                              start=begin, end=begin + length))
                    arrive = begin + length
                ready_at[nxt] = max(ready_at[nxt], arrive)
                if waiting[nxt] == 0:
                    for d in devs_of[e.dst]:
                        pool[d].append(nxt)
    schedule = Schedule(tasks=placed, transfers=transfers, name=name or f"list schedule ({rule})")
    assert_valid(problem, schedule, "list schedule")
    return schedule


def list_schedule(
    problem: Problem,
    rule: PriorityRule = PriorityRule(),
    *,
    form_groups: bool = False,
    name: str = "",
) -> SearchResult:
    """The non-delay list schedule under ``rule`` as a search result (see :func:`list_plan`).

    FEASIBLE with the plan and the analytic lower bound of the problem's
    objective (OPTIMAL when the plan meets it), UNKNOWN when memory
    deadlocks; ``engine`` names the rule.
    """
    t0 = time.perf_counter()
    schedule = list_plan(problem, rule, form_groups=form_groups, name=name)
    return heuristic_result(problem, schedule, strategy="list_schedule",
                            engine=f"list scheduling ({rule}{', pairs formed' if form_groups else ''})",
                            stats={"rule": str(rule)}, wall_time_s=time.perf_counter() - t0)


def best_list_schedule(
    problem: Problem,
    rules: Iterable[PriorityRule] = DEFAULT_RULES,
    *,
    objective: str | None = None,
    target: int | None = None,
) -> SearchResult:
    """The best list schedule over ``rules`` (objective: the problem's, by default), as a search result.

    Stops at the first schedule whose objective is at most ``target``.
    FEASIBLE (OPTIMAL when the plan meets the analytic bound) or UNKNOWN
    when every rule deadlocks; ``engine`` names the winning rule,
    ``stats["rules_tried"]`` counts the rules run.
    """
    t0 = time.perf_counter()
    objective = objective or problem.objective
    best: tuple[int, Schedule, PriorityRule] | None = None
    tried = 0
    for rule in rules:
        tried += 1
        schedule = list_plan(problem, rule)
        if schedule is None:
            continue
        value = objective_value(schedule, objective)
        if best is None or value < best[0]:
            best = (value, schedule, rule)
        if target is not None and value <= target:
            break
    stats = {"rules_tried": tried, "rule": None if best is None else str(best[2])}
    return heuristic_result(problem, None if best is None else best[1], strategy="list_schedule",
                            engine="" if best is None else f"list scheduling ({best[2]})", stats=stats,
                            wall_time_s=time.perf_counter() - t0)
