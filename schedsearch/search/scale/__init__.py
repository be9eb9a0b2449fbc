"""Search strategies for large problems.

* :mod:`~schedsearch.search.scale.list_scheduling`: memory-aware non-delay
  list scheduling with priority rules (fast, valid schedules of thousands of
  tasks);
* :mod:`~schedsearch.search.scale.ties`: start-time ties (periodic
  micro-batches, mirror symmetry) that restrict an exact search;
* :mod:`~schedsearch.search.scale.driver`: :func:`scale_search`, which
  drops redundant overlap declarations
  (:func:`schedsearch.rewrite.reduced_problem`), computes the analytic bound, tries
  warm starts and list schedules, and runs an exact (optionally tied)
  search when the bound is not reached.
"""

from schedsearch.search.scale.driver import (
    TIES_AUTO_TASKS as TIES_AUTO_TASKS,
    scale_search as scale_search,
)
from schedsearch.search.scale.list_scheduling import (
    DEFAULT_RULES as DEFAULT_RULES,
    PriorityRule as PriorityRule,
    best_list_schedule as best_list_schedule,
    list_plan as list_plan,
    list_schedule as list_schedule,
)
from schedsearch.search.scale.ties import (
    mirror_ties as mirror_ties,
    periodic_ties as periodic_ties,
    steady_period as steady_period,
)

__all__ = [
    "TIES_AUTO_TASKS",
    "scale_search",
    "DEFAULT_RULES",
    "PriorityRule",
    "best_list_schedule",
    "list_plan",
    "list_schedule",
    "mirror_ties",
    "periodic_ties",
    "steady_period",
]
