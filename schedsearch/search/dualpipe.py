"""Helpers for bidirectional (DualPipe) and overlapped-pair schedules.

* :func:`mirror_pairs`: DualPipe's placement is symmetric: device ``r``
  holds down stage ``r`` and up stage ``PP-1-r``, so swapping the down and
  up pipelines and mirroring the devices maps the problem onto itself.
  Tying each down block to its up twin (``start(X{s}.down, m) =
  start(X{s}.up, m)``, :func:`~schedsearch.search.scale.mirror_ties`)
  restricts an exact search to mirror-symmetric schedules: half the free
  variables, and the optimum is often symmetric.
* :func:`activation_walk`: the least uniform activation limit at which a
  makespan target is still reachable (list scheduling first, then exact
  feasibility searches, each answer proven or TIMEOUT).

A schedule found without the overlap declarations becomes one with
DualPipe's ``F&B`` pairs again by :func:`schedsearch.rewrite.regroup_overlaps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schedsearch.errors import InvalidProblemError
from schedsearch.options import SearchOptions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule
from schedsearch.search.pareto_front import MemoryWalk, min_memory
from schedsearch.search.list_scheduling import PIPELINE_RULES, best_list_schedule

__all__ = ["mirror_pairs", "activation_walk", "list_heuristic"]


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


def list_heuristic(rules=PIPELINE_RULES, target: int | None = None) -> Callable[[Problem], Schedule | None]:
    """A heuristic for :func:`~schedsearch.search.pareto` and
    :func:`~schedsearch.search.min_memory`: the best list schedule over
    ``rules`` (stopping at ``target`` or at the analytic bound of the
    problem's objective)."""
    from schedsearch.bounds.analytic import objective_lower_bound

    def run(problem: Problem) -> Schedule | None:
        goal = target if target is not None else objective_lower_bound(problem).value
        return best_list_schedule(problem, rules, target=goal).schedule

    return run


def activation_walk(
    problem: Problem,
    target_makespan: int,
    *,
    start_capacity: int | None = None,
    options: SearchOptions | None = None,
    **common: Any,
) -> MemoryWalk:
    """Least uniform activation limit reaching ``target_makespan``.

    :func:`~schedsearch.search.min_memory` with list scheduling as the
    heuristic of each step: a list schedule within the target answers a
    step at once (feasible); otherwise an exact feasibility search answers
    it (FEASIBLE, INFEASIBLE: proven; TIMEOUT: not). Redundant overlap
    declarations are dropped (same answers, smaller models). ``options`` /
    ``common``: the common settings, as for ``min_memory``.
    """
    return min_memory(problem, target_makespan, start_capacity=start_capacity,
                      heuristic=list_heuristic(target=target_makespan), options=options, **common)
