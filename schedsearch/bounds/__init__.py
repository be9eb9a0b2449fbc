"""Lower bounds on a schedule's objective: solver-free unless asked.

* :mod:`~schedsearch.bounds.analytic` -- solver-free bounds on a schedule's
  makespan (critical path, per-device work, average load); the encoders
  use them to prune and to close proofs.
* :mod:`~schedsearch.bounds.schedule_bounds` -- :func:`lower_bound`: the
  analytic bounds, the memory bound and, where blocks choose among
  options, an assignment LP (solved through the MIP layer, imported only
  when the LP runs).
* :mod:`~schedsearch.bounds.mip` -- the one MIP layer (a solver-free model
  solved by HiGHS, SCIP or CBC from the OR-tools wheel). Import it as
  ``schedsearch.bounds.mip``: ``import schedsearch.bounds`` does not load it.

The integer programs that bound a *partition* of an operator graph
(Tarnawski et al., Archer et al.) sit beside the partitioners, in
:mod:`schedsearch.partition.partition_ip` and
:mod:`schedsearch.partition.throughput_ip`; DiviML's MILP is a scheduler
(:mod:`schedsearch.search.diviml`).
"""

from schedsearch.bounds.analytic import (
    AnalyticBound as AnalyticBound,
    analytic_lower_bound as analytic_lower_bound,
    critical_path as critical_path,
    device_bounds as device_bounds,
    heads_and_tails as heads_and_tails,
    objective_lower_bound as objective_lower_bound,
    span_lower_bound as span_lower_bound,
)
from schedsearch.bounds.schedule_bounds import (
    ScheduleBound as ScheduleBound,
    assignment_lp_bound as assignment_lp_bound,
    lower_bound as lower_bound,
    memory_area_bounds as memory_area_bounds,
    memory_bounds as memory_bounds,
)

__all__ = [
    "AnalyticBound",
    "ScheduleBound",
    "analytic_lower_bound",
    "assignment_lp_bound",
    "critical_path",
    "device_bounds",
    "heads_and_tails",
    "lower_bound",
    "memory_area_bounds",
    "memory_bounds",
    "objective_lower_bound",
    "span_lower_bound",
]
