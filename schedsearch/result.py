"""Solver-neutral search results.

A :class:`SearchResult` carries a status, the schedule (already validated by
the caller that built it), the objective, the best proven lower bound and
solver statistics. Infeasible and timed-out searches are statuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from schedsearch.schedule import Schedule
from schedsearch.status import Status as Status

if TYPE_CHECKING:  # pragma: no cover
    from schedsearch.problem import Problem

__all__ = ["Status", "Level", "SearchResult"]


@attrs.frozen(kw_only=True)
class Level:
    """One level of a lexicographic objective: its name, the plan's value and the proven bound.

    A level is *proven* when its bound equals its value: no plan that ties
    on every earlier level does better on this one.

    Examples
    --------
    >>> from schedsearch import Level
    >>> Level(name="peak_memory", value=3, bound=3).proven, Level(name="peak_memory", value=3, bound=2).proven
    (True, False)
    """

    name: str
    value: int | None
    bound: int | None = None
    engine: str = ""

    @property
    def proven(self) -> bool:
        return self.value is not None and self.bound is not None and self.bound >= self.value

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "bound": self.bound, "proven": self.proven,
                "engine": self.engine}


#: What :meth:`SearchResult.export` leaves out of a JSON plan's ``meta``: the plan itself, and how the search ran
#: (its statistics and the facts of its run), which the plan does not depend on.
_NOT_IN_EXPORT = ("schedule", "stats", "deterministic_s", "wall_guard_hit", "notes", "exact_status",
                  "restricted_status", "ties")


@attrs.frozen(kw_only=True)
class SearchResult:
    """What a search returns.

    ``objective`` is the value of the problem's objective for ``schedule``
    (recomputed from it: the makespan, or the longest device span for a
    ``"max_span"`` problem, named by ``objective_name``);
    ``lower_bound`` is the best proven lower bound on the optimum (the
    objective itself when OPTIMAL, None when unknown); ``gap`` is
    ``(objective - lower_bound) / objective``.

    ``engine`` names what found the plan (``"list scheduling (...)"``,
    ``"handcrafted zb-h1"``, ``"exact search (cpsat)"``, ...) and
    ``bound_engine`` what proved the bound (``"analytic"``, ``"cpsat"``, ...).

    With a lexicographic objective, ``levels`` holds one :class:`Level` per
    objective in order (the first is ``objective`` / ``lower_bound``);
    OPTIMAL then means every level is proven, and :attr:`proven_levels`
    says how many leading levels are.

    ``problem`` is the problem the plan solves (what :meth:`export` needs).

    The facts of how the search went that callers act on are fields too:
    ``deterministic_s`` (the deterministic time its backend searches
    reported using; None when none reported one), ``wall_guard_hit`` (a
    deterministic search was stopped by its wall-clock guard: the result
    may differ on another run), ``notes`` (what the search left out, and
    why), ``exact_status`` (the status of the exact sub-search a strategy
    ran; None when it ran none), ``restricted_status`` and ``ties`` (the
    status of an exact search restricted by ``ties`` start-time ties, which
    holds for the tied plans only). ``stats`` holds the solver's and the
    strategy's other figures, for reading only.

    Examples
    --------
    Strategies build results; one rule holds for all of them: a plan that
    meets a proven bound is OPTIMAL.

    >>> from schedsearch import SearchResult, Status
    >>> print(SearchResult(status=Status.FEASIBLE, objective=10, lower_bound=8))
    FEASIBLE, makespan 10, lower bound 8, gap 20.00%, 0.00 s
    >>> SearchResult(status=Status.FEASIBLE, objective=9, lower_bound=9).status
    <Status.OPTIMAL: 'OPTIMAL'>
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
    engine: str = ""
    bound_engine: str = ""
    levels: tuple[Level, ...] = attrs.field(default=(), converter=tuple)
    deterministic_s: float | None = None
    wall_guard_hit: bool = False
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    exact_status: Status | None = None
    restricted_status: Status | None = None
    ties: int = 0
    problem: Problem | None = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # One rule for every strategy: a schedule whose objective meets a proven
        # bound is OPTIMAL; an OPTIMAL result's bound is its objective; a
        # proof of infeasibility carries no bound.
        if self.status is Status.INFEASIBLE:
            object.__setattr__(self, "lower_bound", None)
        elif self.status is Status.FEASIBLE and self.objective is not None and self.lower_bound is not None \
                and self.lower_bound >= self.objective and all(lv.proven for lv in self.levels[1:]):
            object.__setattr__(self, "status", Status.OPTIMAL)
        if self.status is Status.OPTIMAL and self.objective is not None and self.lower_bound is None:
            object.__setattr__(self, "lower_bound", self.objective)
        if self.status is Status.OPTIMAL and not all(lv.proven for lv in self.levels[1:]):
            # OPTIMAL means every level is proven; the first alone is not enough
            object.__setattr__(self, "status", Status.FEASIBLE)

    @property
    def proven_levels(self) -> int:
        """How many leading objective levels are proven (1 or 0 for a single objective)."""
        if not self.levels:
            return int(self.status is Status.OPTIMAL)  # a met bound made the status OPTIMAL already
        count = 0
        for lv in self.levels:
            if not lv.proven:
                break
            count += 1
        return count

    def export(self, format: str, path: str | Path | None = None, **options: Any) -> str | Path:
        """Write the plan in ``format`` (see :data:`schedsearch.export.EXPORT_FORMATS`).

        Returns the text when ``path`` is None (pictures need a path).
        Raises :class:`~schedsearch.errors.FormatError` when the result has
        no plan or does not carry its problem.
        """
        from schedsearch.errors import FormatError
        from schedsearch.export import export

        if self.schedule is None:
            raise FormatError(f"export: the result is {self.status.value} and has no plan to export")
        if self.problem is None:
            raise FormatError("export: the result does not carry its problem; use schedsearch.export.export("
                              "problem, result.schedule, format, path)")
        if format == "html":
            options.setdefault("result", self)
        meta = options.pop("meta", None) if format == "json" else None
        if format == "json":
            meta = {"result": {k: v for k, v in self.to_dict().items() if k not in _NOT_IN_EXPORT},
                    **dict(meta or {})}
            options["meta"] = meta
        return export(self.problem, self.schedule, format, path, **options)

    def _repr_html_(self) -> str:
        """The plan report (:mod:`schedsearch.export.html`) in a notebook; the summary alone without a plan."""
        import html

        if self.schedule is None or self.problem is None:
            return f"<pre>{html.escape(str(self))}</pre>"
        from schedsearch.export import export

        page = str(export(self.problem, self.schedule, "html", result=self))
        return (f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:640px;border:0" '
                f'title="{html.escape(str(self), quote=True)}"></iframe>')

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
            "engine": self.engine,
            "bound_engine": self.bound_engine,
            "levels": [lv.to_dict() for lv in self.levels],
            "deterministic_s": self.deterministic_s,
            "wall_guard_hit": self.wall_guard_hit,
            "notes": list(self.notes),
            "exact_status": None if self.exact_status is None else self.exact_status.value,
            "restricted_status": None if self.restricted_status is None else self.restricted_status.value,
            "ties": self.ties,
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
        for lv in self.levels[1:]:
            text = f"{lv.name.replace('_', ' ')} {lv.value}"
            text += " (proven)" if lv.proven else (f" (bound {lv.bound})" if lv.bound is not None else " (not proven)")
            parts.append(text)
        parts.append(f"{self.wall_time_s:.2f} s")
        if self.engine:
            parts.append(f"found by {self.engine}")
        if self.bound_engine and self.lower_bound is not None:
            parts.append(f"bound by {self.bound_engine}")
        if self.backend:
            parts.append(f"backend {self.backend}")
        return ", ".join(parts)
