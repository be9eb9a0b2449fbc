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
  the smallest head among them and before the smallest tail among them::

      makespan >= min head + sum of durations + min tail

* average load: total minimal device-time (duration x devices occupied) over
  the number of devices, rounded up.

The bound is the maximum of these.

Overlapped groups (:class:`~schedsearch.problem.Overlap`): a group lasts at
least its longest member, so the formulas stay valid for edges between
tasks that are not in one group; an edge ``u -> v`` between two blocks of
one declared overlap counts as ``head(v) >= head(u)`` and ``tail(u) >=
tail(v)`` (the group may run them together). When some overlap lasts less
than the sum of its members, the device bounds and the average load do not
hold and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from schedsearch.problem import Problem, TaskKey

__all__ = ["AnalyticBound", "heads_and_tails", "critical_path", "device_bounds", "analytic_lower_bound"]


def _min_duration(problem: Problem, block: str, mb: int) -> int:
    return min(problem.durations(block, mb))


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
    """Earliest starts (heads) and minimal remaining times after the end (tails)."""
    order = problem.graph.topological_order()
    preds = problem.graph.predecessors()
    succs = problem.graph.successors()
    delay = {(e.src, e.dst): _unavoidable_transfer(problem, e.src, e.dst, e.size) for e in problem.graph.edges}
    grouped = {
        (e.src, e.dst)
        for e in problem.graph.edges
        if any(e.src in ov.blocks and e.dst in ov.blocks for ov in problem.overlaps)
    }
    heads: dict[TaskKey, int] = {}
    tails: dict[TaskKey, int] = {}
    for m in range(problem.num_microbatches):
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
    return heads, tails


def critical_path(problem: Problem) -> int:
    """Longest chain of one micro-batch (releases and unavoidable transfers included)."""
    heads, tails = heads_and_tails(problem)
    return max(heads[k] + _min_duration(problem, *k) + tails[k] for k in heads)


def device_bounds(problem: Problem) -> dict[str, int]:
    """Per device: ``min head + mandatory work + min tail`` (0 without mandatory work)."""
    heads, tails = heads_and_tails(problem)
    out: dict[str, int] = {}
    for d in problem.cluster.device_names:
        keys = [
            (b.name, m)
            for b in problem.graph.blocks
            if all(d in o.devices for o in b.options)
            for m in range(problem.num_microbatches)
        ]
        if not keys:
            out[d] = 0
            continue
        work = sum(_min_duration(problem, *k) for k in keys)
        out[d] = min(heads[k] for k in keys) + work + min(tails[k] for k in keys)
    return out


def _average_load(problem: Problem) -> int:
    total = 0
    for b in problem.graph.blocks:
        for m in range(problem.num_microbatches):
            durations = problem.durations(b.name, m)
            total += min(d * len(o.devices) for d, o in zip(durations, b.options))
    return math.ceil(total / len(problem.cluster.devices))


@attrs.frozen(kw_only=True)
class AnalyticBound:
    """An analytic lower bound and the parts it is the maximum of."""

    value: int
    parts: Mapping[str, int]

    @property
    def tight_part(self) -> str:
        """Name of the part that gives the bound."""
        return max(self.parts, key=lambda k: self.parts[k])


def analytic_lower_bound(problem: Problem) -> AnalyticBound:
    """Maximum of the critical path, the per-device bounds and the average load."""
    parts: dict[str, int] = {"critical_path": critical_path(problem)}
    least: dict[str, int] = {}
    for ov in problem.overlaps:
        for b in ov.blocks:
            if b not in least:
                least[b] = min(_min_duration(problem, b, m) for m in range(problem.num_microbatches))
    shortening = any(ov.duration < sum(least[b] for b in ov.blocks) for ov in problem.overlaps)
    if not shortening:
        parts["average_load"] = _average_load(problem)
        for d, v in device_bounds(problem).items():
            parts[f"device {d}"] = v
    return AnalyticBound(value=max(parts.values()), parts=parts)
