"""Memory-aware list scheduling: fast schedules for large pipeline problems.

A *non-delay list scheduler* simulates the devices in time. Whenever a
device is free it starts, among the task instances that are ready there
(every predecessor ended, release reached, every device of the task free)
and that fit in memory (level + delta + workspace <= capacity on each of
the task's devices), the one a :class:`PriorityRule` ranks first; a device
only idles when nothing ready fits. The device orders it produces are then
timed as soon as possible (:func:`~schedsearch.handcrafted.schedule_from_orders`,
which also books transfers on channels) and checked by the independent
validator, so what comes back is always a valid schedule of the problem.

Memory never deadlocks silently: when no task can ever start (every device
waits for memory that only a task which cannot start would free), the
scheduler returns None.

Assumptions: every block has exactly one placement option (a fixed
placement; several devices at once are fine); no fixed orders. Declared
overlapped groups are not formed (every task runs alone, which the model
always allows). Transfers delay readiness by the fastest channel's time;
the final timing books them exactly.

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

import heapq
import itertools
from collections.abc import Iterable

import attrs

from schedsearch.errors import UnsupportedFeatureError
from schedsearch.handcrafted.simulate import schedule_from_orders
from schedsearch.problem import Problem, TaskKey
from schedsearch.schedule import Schedule

__all__ = ["PriorityRule", "DEFAULT_RULES", "list_schedule", "list_orders", "best_list_schedule"]

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


def list_orders(problem: Problem, rule: PriorityRule = PriorityRule()) -> dict[str, list[TaskKey]] | None:
    """The device orders of the non-delay list schedule under ``rule``, or
    None when memory deadlocks (see the module docstring)."""
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
    delay: dict[tuple[str, str], int] = {}
    for e in graph.edges:
        a, b = blocks[e.src].options[0].devices, blocks[e.dst].options[0].devices
        if e.size > 0 and not set(a) & set(b):
            times = [c.transfer_time(e.size) for c in problem.cluster.channels_between(a[0], b[0])]
            delay[(e.src, e.dst)] = min(times, default=0)
    devs_of = {b.name: b.options[0].devices for b in graph.blocks}
    key_of = {(b.name, m): rule.key(b.kind, b.stage, m) for b in graph.blocks for m in range(n)}
    waiting = {(b.name, m): len(preds[b.name]) for b in graph.blocks for m in range(n)}
    ready_at: dict[TaskKey, int] = {}
    pool: dict[str, list[TaskKey]] = {d: [] for d in devices}
    for task, count in waiting.items():
        if count == 0:
            ready_at[task] = problem.release_of(*task)
            for d in devs_of[task[0]]:
                pool[d].append(task)
    orders: dict[str, list[TaskKey]] = {d: [] for d in devices}
    running: list[tuple[int, int, TaskKey]] = []  # (end, tiebreak, task)
    counter = itertools.count()
    remaining = len(waiting)
    t = 0

    def fits(task: TaskKey) -> bool:
        b = blocks[task[0]]
        need = b.memory + b.workspace
        return all(cap[d] is None or level[d] + need <= cap[d] for d in devs_of[task[0]])

    while remaining:
        started = True
        while started:
            started = False
            for d in devices:
                if free[d] > t or not pool[d]:
                    continue
                best = None
                for task in pool[d]:
                    if ready_at[task] > t or any(free[e] > t for e in devs_of[task[0]]) or not fits(task):
                        continue
                    if best is None or key_of[task] < key_of[best]:
                        best = task
                if best is None:
                    continue
                b = blocks[best[0]]
                duration = problem.durations(*best)[0]
                for e in devs_of[best[0]]:
                    pool[e].remove(best)
                    free[e] = t + duration
                    level[e] += b.memory + b.workspace
                    orders[e].append(best)
                heapq.heappush(running, (t + duration, next(counter), best))
                remaining -= 1
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
                ready_at[nxt] = max(ready_at.get(nxt, problem.release_of(*nxt)), end + delay.get((e.src, e.dst), 0))
                if waiting[nxt] == 0:
                    for d in devs_of[e.dst]:
                        pool[d].append(nxt)
    return orders


def list_schedule(problem: Problem, rule: PriorityRule = PriorityRule(), *, name: str = "") -> Schedule | None:
    """The validated as-soon-as-possible schedule of :func:`list_orders`, or None on a memory deadlock."""
    orders = list_orders(problem, rule)
    if orders is None:
        return None
    return schedule_from_orders(problem, orders, name=name or f"list schedule ({rule})")


def best_list_schedule(
    problem: Problem,
    rules: Iterable[PriorityRule] = DEFAULT_RULES,
    *,
    objective: str | None = None,
    target: int | None = None,
) -> tuple[Schedule | None, PriorityRule | None, int]:
    """The best schedule over ``rules`` (objective: the problem's, by default).

    Stops at the first schedule whose objective is at most ``target``.
    Returns ``(schedule, its rule, number of rules tried)``; ``(None, None,
    k)`` when every rule deadlocks.
    """
    from schedsearch.schedule import objective_value

    objective = objective or problem.objective
    best: tuple[int, Schedule, PriorityRule] | None = None
    tried = 0
    for rule in rules:
        tried += 1
        schedule = list_schedule(problem, rule)
        if schedule is None:
            continue
        value = objective_value(schedule, objective)
        if best is None or value < best[0]:
            best = (value, schedule, rule)
        if target is not None and value <= target:
            break
    if best is None:
        return None, None, tried
    return best[1], best[2], tried
