"""Search strategies for large problems.

* :mod:`~schedsearch.search.scale.ties`: start-time ties (periodic
  micro-batches, mirror symmetry) that restrict an exact search;
* :mod:`~schedsearch.search.scale.driver`: :func:`scale_search`, which
  drops redundant overlap declarations
  (:func:`schedsearch.rewrite.reduced_problem`), computes the analytic bound, tries
  warm starts and the list schedules of the pipeline rules
  (:mod:`schedsearch.search.list_scheduling`), and runs an exact
  (optionally tied) search when the bound is not reached.
"""

from schedsearch.search.scale.driver import (
    TIES_AUTO_TASKS as TIES_AUTO_TASKS,
    scale_search as scale_search,
)
from schedsearch.search.scale.ties import (
    mirror_ties as mirror_ties,
    periodic_ties as periodic_ties,
    steady_period as steady_period,
)

__all__ = [
    "TIES_AUTO_TASKS",
    "scale_search",
    "mirror_ties",
    "periodic_ties",
    "steady_period",
]
