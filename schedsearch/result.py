"""Solver-neutral search results.

A :class:`SearchResult` carries a status, the schedule (already validated by
the caller that built it), the objective, the best proven lower bound and
solver statistics. Infeasible and timed-out searches are statuses.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.schedule import Schedule

__all__ = ["Status", "SearchResult"]


class Status(enum.Enum):
    """Outcome of a search.

    * ``OPTIMAL``: a schedule whose objective equals a proven lower bound
      (wherever the bound comes from: the solver, an analytic or LP bound);
    * ``FEASIBLE``: a schedule, optimality not proven (the time limit was
      reached, or the search was restricted);
    * ``INFEASIBLE``: proven that no schedule exists (no bound is carried);
    * ``TIMEOUT``: the time limit was reached with no schedule and no proof
      (a proven lower bound may be carried);
    * ``UNKNOWN``: the search stopped for another reason with no schedule.
    """

    OPTIMAL = "OPTIMAL"  #: a schedule proven optimal
    FEASIBLE = "FEASIBLE"  #: a schedule, optimality not proven (limit reached)
    INFEASIBLE = "INFEASIBLE"  #: proven: no schedule exists
    TIMEOUT = "TIMEOUT"  #: limit reached with no schedule and no proof
    UNKNOWN = "UNKNOWN"  #: the search stopped for another reason

    @property
    def has_schedule(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@attrs.frozen(kw_only=True)
class SearchResult:
    """What a search returns.

    ``objective`` is the value of the problem's objective for ``schedule``
    (recomputed from it: the makespan, or the longest device span for a
    ``"max_span"`` problem, named by ``objective_name``);
    ``lower_bound`` is the best proven lower bound on the optimum (the
    objective itself when OPTIMAL, None when unknown); ``gap`` is
    ``(objective - lower_bound) / objective``.
    """

    status: Status
    schedule: Schedule | None = None
    objective: int | None = None
    lower_bound: int | None = None
    wall_time_s: float = 0.0
    backend: str = ""
    stats: Mapping[str, Any] = attrs.field(factory=dict)
    strategy: str = ""
    objective_name: str = "makespan"

    def __attrs_post_init__(self) -> None:
        # One rule for every strategy: a schedule whose objective meets a proven
        # bound is OPTIMAL; an OPTIMAL result's bound is its objective; a
        # proof of infeasibility carries no bound.
        if self.status is Status.INFEASIBLE:
            object.__setattr__(self, "lower_bound", None)
        elif self.status is Status.FEASIBLE and self.objective is not None and self.lower_bound is not None \
                and self.lower_bound >= self.objective:
            object.__setattr__(self, "status", Status.OPTIMAL)
        if self.status is Status.OPTIMAL and self.objective is not None and self.lower_bound is None:
            object.__setattr__(self, "lower_bound", self.objective)

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.lower_bound is None or self.objective == 0:
            return None
        return (self.objective - self.lower_bound) / self.objective

    @property
    def proven_optimal(self) -> bool:
        return self.status is Status.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "objective": self.objective,
            "objective_name": self.objective_name,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "wall_time_s": self.wall_time_s,
            "backend": self.backend,
            "strategy": self.strategy,
            "stats": dict(self.stats),
            "schedule": self.schedule.to_dict() if self.schedule is not None else None,
        }

    def __str__(self) -> str:
        parts = [f"{self.status.value}"]
        if self.objective is not None:
            parts.append(f"{self.objective_name.replace('_', ' ')} {self.objective}")
        if self.lower_bound is not None:
            parts.append(f"lower bound {self.lower_bound}")
        if self.gap is not None:
            parts.append(f"gap {100 * self.gap:.2f}%")
        parts.append(f"{self.wall_time_s:.2f} s")
        if self.backend:
            parts.append(f"backend {self.backend}")
        return ", ".join(parts)
