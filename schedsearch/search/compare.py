"""Search against a handcrafted baseline under the same memory.

:func:`search_against` caps every device's memory at the peak the
handcrafted schedule reaches there (or at limits you give), runs the exact
time-optimal search warm-started from the handcrafted schedule, and
reports by how much the result improves on it (makespan, bubble, peak
memory). The search never returns anything worse: the warm start bounds
the makespan, and when the solver finds nothing in time the handcrafted
schedule stands.

Overlapped groups (DualPipe's ``F&B`` pairs, fused ``I+W`` backwards): the
exact backends do not model them, so the search runs on the problem
without its overlaps, i.e. over schedules that run every task on its own.
The handcrafted schedule is then *flattened*
(:func:`~schedsearch.rewrite.flatten_overlaps`:
each group's members run one after the other inside the group's interval,
frees first) to serve as the warm start; when a group is shorter than its
members together (``F&B < F + B``) it cannot be flattened, the search
starts cold, and the comparison says so (``warm_started=False``). Either
way the comparison's ``best`` schedule is never worse than the
handcrafted one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Problem
from schedsearch.result import SearchResult
from schedsearch.rewrite import flatten_overlaps, with_capacities
from schedsearch.schedule import Metrics, Schedule, metrics
from schedsearch.search.exact import optimal
from schedsearch.validate import assert_valid, validate

__all__ = ["Comparison", "search_against"]


@attrs.frozen(kw_only=True)
class Comparison:
    """A handcrafted schedule beside the search under the same memory.

    ``searched`` is the search's own schedule (None when it found none);
    ``best`` is the better of the two, never worse than the handcrafted
    one. ``improvement`` holds handcrafted minus best figures (positive =
    the search improved) in the problem's time unit; divide time figures by
    ``time_scale`` for the published unit.
    """

    problem: Problem
    searched_problem: Problem
    handcrafted: Schedule
    handcrafted_metrics: Metrics
    result: SearchResult
    searched: Schedule | None
    searched_metrics: Metrics | None
    memory_limits: Mapping[str, int | None]
    warm_started: bool
    overlaps_dropped: bool
    time_scale: int = 1

    @property
    def search_better(self) -> bool:
        return self.searched_metrics is not None and self.searched_metrics.makespan < self.handcrafted_metrics.makespan

    @property
    def best(self) -> Schedule:
        """The search's schedule when strictly shorter, else the handcrafted one."""
        return self.searched if self.search_better else self.handcrafted  # type: ignore[return-value]

    @property
    def best_metrics(self) -> Metrics:
        return self.searched_metrics if self.search_better else self.handcrafted_metrics  # type: ignore[return-value]

    @property
    def improvement(self) -> dict[str, int]:
        a, b = self.handcrafted_metrics, self.best_metrics
        return {
            "makespan": a.makespan - b.makespan,
            "bubble": a.bubble_global - b.bubble_global,
            "peak_memory": max(a.peak_memory.values()) - max(b.peak_memory.values()),
        }

    @property
    def verdict(self) -> str:
        """``"beats"``, ``"ties"`` (the search reached the same makespan), or
        ``"kept"`` (the search found nothing as short; the handcrafted schedule stands)."""
        if self.search_better:
            return "beats"
        if self.searched_metrics is not None and self.searched_metrics.makespan == self.handcrafted_metrics.makespan:
            return "ties"
        return "kept"

    def to_dict(self) -> dict[str, Any]:
        k = self.time_scale

        def t(x: int | None) -> float | int | None:
            return x if x is None or k == 1 else x / k

        def fig(m: Metrics | None) -> dict[str, Any] | None:
            if m is None:
                return None
            return {"makespan": t(m.makespan), "bubble": t(m.bubble_global), "peak_memory": dict(m.peak_memory)}

        return {
            "problem": self.problem.name,
            "memory_limits": dict(self.memory_limits),
            "time_scale": k,
            "handcrafted": fig(self.handcrafted_metrics),
            "searched": fig(self.searched_metrics),
            "status": self.result.status.value,
            "lower_bound": t(self.result.lower_bound),
            "wall_time_s": self.result.wall_time_s,
            "warm_started": self.warm_started,
            "overlaps_dropped": self.overlaps_dropped,
            "improvement": self.improvement,
            "verdict": self.verdict,
        }

    def __str__(self) -> str:
        a, b, k = self.handcrafted_metrics, self.searched_metrics, self.time_scale
        unit = "" if k == 1 else f" (problem units; / {k} for the published unit)"
        lb = self.result.lower_bound
        scope = " (without overlapped groups)" if self.overlaps_dropped else ""
        status = f"[{self.result.status.value}{'' if lb is None else f', lower bound {lb}'}, {self.result.wall_time_s:.1f} s]"
        lines = [
            f"search under the handcrafted schedule's memory {dict(self.memory_limits)}{unit}:",
            f"  handcrafted: makespan {a.makespan}, bubble {a.bubble_global}, peak {max(a.peak_memory.values())}",
            (f"  searched{scope}: makespan {b.makespan}, bubble {b.bubble_global}, peak {max(b.peak_memory.values())}  "
             if b is not None else f"  searched{scope}: no schedule  ") + status,
        ]
        imp = self.improvement
        if self.verdict == "kept":
            lines.append("  the search found nothing as short: the handcrafted schedule stands")
        else:
            lines.append(
                f"  the search {self.verdict} the handcrafted schedule (makespan {imp['makespan']:+d}, "
                f"bubble {imp['bubble']:+d}, peak memory {imp['peak_memory']:+d}; positive = better)"
            )
        if self.overlaps_dropped and not self.warm_started:
            lines.append("  note: no warm start (an overlapped group is shorter than its members and cannot be flattened)")
        return "\n".join(lines)


def search_against(
    problem: Problem,
    handcrafted: Schedule,
    *,
    memory: str | Mapping[str, int | None] = "peak",
    time_limit_s: float = 30.0,
    workers: int = 2,
    seed: int = 0,
    backend: str = "cpsat",
    time_scale: int = 1,
    **search_options: Any,
) -> Comparison:
    """Search ``problem`` under the same memory as ``handcrafted``, warm-started from it.

    Parameters
    ----------
    memory:
        ``"peak"`` (default): each device's capacity is the handcrafted
        schedule's peak there; ``"problem"``: keep the problem's
        capacities; or a mapping device -> capacity.
    time_limit_s, workers, seed, backend:
        Passed to :func:`~schedsearch.search.optimal`; other keyword
        arguments too.
    time_scale:
        Problem time units per published unit (for reports only).
    """
    assert_valid(problem, handcrafted, "handcrafted schedule")
    if memory == "peak":
        limits: dict[str, int | None] = dict(metrics(problem, handcrafted).peak_memory)
    elif memory == "problem":
        limits = {d.name: d.memory for d in problem.cluster.devices}
    elif isinstance(memory, Mapping):
        limits = {d.name: d.memory for d in problem.cluster.devices}
        limits.update(memory)
    else:
        raise InvalidProblemError(f"search_against: 'memory' must be 'peak', 'problem' or a mapping, got {memory!r}")
    limited = with_capacities(problem, limits)
    assert_valid(limited, handcrafted, "handcrafted schedule under the memory limits")
    overlaps_dropped = bool(problem.overlaps)
    searched_problem = limited.with_(overlaps=()) if overlaps_dropped else limited
    warm: Schedule | None = handcrafted
    if overlaps_dropped:
        warm = flatten_overlaps(problem, handcrafted)
        if warm is not None and validate(searched_problem, warm):
            warm = None
    result = optimal(
        searched_problem,
        backend=backend,
        time_limit_s=time_limit_s,
        workers=workers,
        seed=seed,
        warm_start=warm,
        **search_options,
    )
    searched = result.schedule
    return Comparison(
        problem=limited,
        searched_problem=searched_problem,
        handcrafted=handcrafted,
        handcrafted_metrics=metrics(limited, handcrafted),
        result=result,
        searched=searched,
        searched_metrics=metrics(searched_problem, searched) if searched is not None else None,
        memory_limits=limits,
        warm_started=warm is not None,
        overlaps_dropped=overlaps_dropped,
        time_scale=time_scale,
    )
