"""Lower bounds that certify how good a plan is.

* :mod:`~schedsearch.bounds.analytic` -- solver-free bounds on a schedule's
  makespan (critical path, per-device work, average load).
* :mod:`~schedsearch.bounds.schedule_bounds` -- :func:`lower_bound`: the
  analytic bounds, the memory bound and an LP relaxation combined.
* :mod:`~schedsearch.bounds.mip` -- the one MIP layer (a solver-free model
  solved by HiGHS, SCIP or CBC from the OR-tools wheel).
* :mod:`~schedsearch.bounds.partition_ip` -- Tarnawski et al.'s IPs
  (non-contiguous and contiguous max-load, latency).
* :mod:`~schedsearch.bounds.throughput_ip` -- Archer et al.'s max-throughput
  bounds (exact, three-superblock, bottleneck-guess MIPs).
* :mod:`~schedsearch.bounds.diviml` -- DiviML's MILP for heterogeneous
  devices.
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
from schedsearch.bounds.diviml import diviml as diviml
from schedsearch.bounds.diviml import diviml_supports as diviml_supports
from schedsearch.bounds.mip import (
    MipModel as MipModel,
    MipOptions as MipOptions,
    MipResult as MipResult,
    available_solvers as available_solvers,
    solve_mip as solve_mip,
)
from schedsearch.bounds.partition_ip import (
    PartitionBound as PartitionBound,
    contiguous_ip as contiguous_ip,
    latency_ip as latency_ip,
    latency_of_split as latency_of_split,
    latency_problem as latency_problem,
    noncontiguous_ip as noncontiguous_ip,
)
from schedsearch.bounds.schedule_bounds import (
    ScheduleBound as ScheduleBound,
    assignment_lp_bound as assignment_lp_bound,
    lower_bound as lower_bound,
    memory_bounds as memory_bounds,
)
from schedsearch.bounds.throughput_ip import (
    ThroughputBound as ThroughputBound,
    bottleneck_guess_mip as bottleneck_guess_mip,
    exact_mip as exact_mip,
    simple_bound as simple_bound,
    three_superblock_mip as three_superblock_mip,
)

__all__ = [
    "AnalyticBound",
    "MipModel",
    "MipOptions",
    "MipResult",
    "PartitionBound",
    "ScheduleBound",
    "ThroughputBound",
    "analytic_lower_bound",
    "assignment_lp_bound",
    "available_solvers",
    "bottleneck_guess_mip",
    "contiguous_ip",
    "critical_path",
    "device_bounds",
    "diviml",
    "diviml_supports",
    "exact_mip",
    "heads_and_tails",
    "latency_ip",
    "latency_of_split",
    "latency_problem",
    "lower_bound",
    "memory_bounds",
    "noncontiguous_ip",
    "objective_lower_bound",
    "simple_bound",
    "solve_mip",
    "span_lower_bound",
    "three_superblock_mip",
]
