"""Helpers for bidirectional (DualPipe) and overlapped-pair schedules.

* :func:`mirror_pairs`: DualPipe's placement is symmetric: device ``r``
  holds down stage ``r`` and up stage ``PP-1-r``, so swapping the down and
  up pipelines and mirroring the devices maps the problem onto itself.
  Tying each down block to its up twin (``start(X{s}.down, m) =
  start(X{s}.up, m)``, :func:`~schedsearch.search.scale.mirror_ties`)
  restricts an exact search to mirror-symmetric schedules: half the free
  variables, and the optimum is often symmetric.
* :func:`regroup_overlaps`: the opposite of flattening: runs of tasks that
  a device runs back to back and that make up a declared overlapped group
  (DualPipe's ``F&B`` pair: a forward and the input and weight gradients
  of another stage; a fused ``B`` of one stage's ``I`` and ``W``) lasting
  exactly the group's duration become that group, when no dependency,
  transfer or memory capacity is broken. A schedule found without the
  declarations (see :func:`~schedsearch.search.scale.overlaps_redundant`)
  then exports with ``OVERLAP_F_B`` pairs and full ``B`` actions, the way
  DualPipe's runtime overlaps the communication of one half with the
  computation of the other.
* :func:`activation_walk`: the least uniform activation limit at which a
  makespan target is still reachable (list scheduling first, then exact
  feasibility searches, each answer proven or TIMEOUT).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance
from schedsearch.search.pareto import MemoryWalk, min_memory
from schedsearch.search.scale.list_scheduling import DEFAULT_RULES, best_list_schedule
from schedsearch.validate import validate

__all__ = ["mirror_pairs", "regroup_overlaps", "activation_walk", "list_heuristic"]


def mirror_pairs(problem: Problem, suffixes: tuple[str, str] = (".down", ".up")) -> list[tuple[str, str]]:
    """``(block.down, block.up)`` pairs of a bidirectional placement whose up
    pipeline mirrors the down one (same kinds, stages, durations and memory,
    device ``r`` of one on device ``D-1-r`` of the other)."""
    down, up = suffixes
    ranks = {d: i for i, d in enumerate(problem.cluster.device_names)}
    last = len(ranks) - 1
    pairs = []
    for b in problem.graph.blocks:
        if not b.name.endswith(down):
            continue
        twin_name = b.name[: -len(down)] + up
        try:
            twin = problem.graph.block(twin_name)
        except KeyError:
            raise InvalidProblemError(f"mirror pairs: block {b.name!r} has no twin {twin_name!r}") from None
        same = (b.kind, b.stage, b.memory, b.workspace, [o.duration for o in b.options]) == (
            twin.kind, twin.stage, twin.memory, twin.workspace, [o.duration for o in twin.options])
        mirrored = len(b.options) == len(twin.options) == 1 and [last - ranks[d] for d in b.options[0].devices] == [
            ranks[d] for d in twin.options[0].devices]
        if not (same and mirrored):
            raise InvalidProblemError(
                f"mirror pairs: blocks {b.name!r} and {twin_name!r} are not mirror images (kind, stage, durations, "
                f"memory, devices r <-> {last}-r)"
            )
        pairs.append((b.name, twin_name))
    if not pairs:
        raise InvalidProblemError(f"mirror pairs: the problem has no blocks ending in {down!r}")
    return pairs


def regroup_overlaps(problem: Problem, schedule: Schedule) -> Schedule:
    """``schedule`` with back-to-back runs of tasks merged into declared groups.

    A run of consecutive tasks on one device (no gap between them) whose
    blocks are exactly those of a declared overlap, whose members linked by
    a dependency share their micro-batch and follow the overlap's order,
    and which lasts exactly the overlap's duration becomes one group
    starting at the run's start, when every dependency from outside the run
    has ended by then, every dependent outside the run starts after its
    end, no member has a transfer, and the memory (all deltas and
    workspaces of the members at the group's start) fits. Runs are taken
    from left to right, longer overlaps first. Tasks already in a group
    stay as they are. The result is validated; when nothing merges, the
    schedule comes back unchanged.
    """
    if not problem.overlaps:
        return schedule
    blocks = problem.graph.by_name()
    preds = problem.graph.predecessors()
    succs = problem.graph.successors()
    by_key = schedule.by_key()
    with_transfer = {(tr.src, tr.microbatch) for tr in schedule.transfers} | {
        (tr.dst, tr.microbatch) for tr in schedule.transfers}
    overlaps = sorted(problem.overlaps, key=lambda ov: -len(ov.blocks))
    sizes = sorted({len(ov.blocks) for ov in overlaps}, reverse=True)
    caps = {d: problem.capacity(d) for d in problem.cluster.device_names}
    level_before = _levels(problem, schedule)
    new_tasks: dict[tuple[str, int], TaskInstance] = {}
    for d in problem.cluster.device_names:
        tasks = [t for t in schedule.on_device(d) if len(t.devices) == 1 and t.overlap is None]
        i = 0
        while i < len(tasks):
            merged = False
            for k in sizes:
                run = tasks[i:i + k]
                if len(run) < k or any(a.end != b.start for a, b in zip(run, run[1:])):
                    continue
                ov = problem.overlap_for(t.block for t in run)
                if ov is None or len({t.block for t in run}) != k or run[-1].end - run[0].start != ov.duration:
                    continue
                if _can_group(problem, ov, run, blocks, preds, succs, by_key, new_tasks, with_transfer, caps,
                              level_before):
                    start, end = run[0].start, run[0].start + ov.duration
                    for t in run:
                        new_tasks[t.key] = attrs.evolve(t, start=start, end=end, overlap=ov.name or "+".join(ov.blocks))
                    i += k
                    merged = True
                    break
            if not merged:
                i += 1
    if not new_tasks:
        return schedule
    out = Schedule(tasks=[new_tasks.get(t.key, t) for t in schedule.tasks], transfers=schedule.transfers,
                   name=schedule.name)
    if validate(problem, out):  # pragma: no cover - the local checks cover every rule
        return schedule
    return out


def _levels(problem: Problem, schedule: Schedule) -> dict[tuple[str, int], int]:
    """Memory level of each task's device just before the task starts (single-device tasks)."""
    blocks = problem.graph.by_name()
    out: dict[tuple[str, int], int] = {}
    for d in problem.cluster.device_names:
        level = problem.initial_memory_of(d)
        for t in schedule.on_device(d):
            out[t.key] = level
            level += blocks[t.block].memory
    return out


def _can_group(problem, ov, run, blocks, preds, succs, by_key, new_tasks, with_transfer, caps, level_before) -> bool:
    members = {t.key for t in run}
    order = {b: i for i, b in enumerate(ov.blocks)}
    start, end = run[0].start, run[0].start + ov.duration
    for t in run:
        if t.key in with_transfer:
            return False
        for e in preds[t.block]:
            src = (e.src, t.microbatch)
            if src in members:
                if order[e.src] > order[e.dst]:
                    return False  # against the group's order: not internal
                continue
            if e.src in order and any(m[0] == e.src for m in members):
                return False  # linked members must share the micro-batch
            if new_tasks.get(src, by_key[src]).end > start:
                return False
        for e in succs[t.block]:
            dst = (e.dst, t.microbatch)
            if dst in members:
                continue
            if e.dst in order and any(m[0] == e.dst for m in members):
                return False
            if new_tasks.get(dst, by_key[dst]).start < end:
                return False
    d = run[0].devices[0]
    cap = caps.get(d)
    if cap is not None:
        need = sum(blocks[t.block].memory for t in run) + sum(blocks[t.block].workspace for t in run)
        if level_before[run[0].key] + need > cap:
            return False
    return True


def list_heuristic(rules=DEFAULT_RULES, target: int | None = None) -> Callable[[Problem], Schedule | None]:
    """A heuristic for :func:`~schedsearch.search.pareto` and
    :func:`~schedsearch.search.min_memory`: the best list schedule over
    ``rules`` (stopping at ``target`` or at the analytic bound of the
    problem's objective)."""
    from schedsearch.bounds.analytic import objective_lower_bound

    def run(problem: Problem) -> Schedule | None:
        goal = target if target is not None else objective_lower_bound(problem).value
        return best_list_schedule(problem, rules, target=goal)[0]

    return run


def activation_walk(
    problem: Problem,
    target_makespan: int,
    *,
    start_capacity: int | None = None,
    time_limit_s: float | None = 60.0,
    **options: Any,
) -> MemoryWalk:
    """Least uniform activation limit reaching ``target_makespan``.

    :func:`~schedsearch.search.min_memory` with list scheduling as the
    heuristic of each step: a list schedule within the target answers a
    step at once (feasible); otherwise an exact feasibility search answers
    it (FEASIBLE, INFEASIBLE: proven; TIMEOUT: not). Redundant overlap
    declarations are dropped (same answers, smaller models).
    """
    return min_memory(problem, target_makespan, start_capacity=start_capacity, time_limit_s=time_limit_s,
                      heuristic=list_heuristic(target=target_makespan), **options)
