"""The outcome of a search or a solver call, a leaf below every layer that reports one.

:class:`Status` is the status of a :class:`~schedsearch.result.SearchResult`
(which re-exports it) and of the MIP layer's results
(:class:`~schedsearch.bounds.mip.MipResult`); it imports nothing.
"""

from __future__ import annotations

import enum

__all__ = ["Status"]


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

    Examples
    --------
    >>> from schedsearch import Status
    >>> Status.FEASIBLE.has_schedule, Status.TIMEOUT.has_schedule
    (True, False)
    """

    OPTIMAL = "OPTIMAL"  #: a schedule proven optimal
    FEASIBLE = "FEASIBLE"  #: a schedule, optimality not proven (limit reached)
    INFEASIBLE = "INFEASIBLE"  #: proven: no schedule exists
    TIMEOUT = "TIMEOUT"  #: limit reached with no schedule and no proof
    UNKNOWN = "UNKNOWN"  #: the search stopped for another reason

    @property
    def has_schedule(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)
