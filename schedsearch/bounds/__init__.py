"""Lower bounds on the optimum of a scheduling problem."""

from schedsearch.bounds.analytic import (
    AnalyticBound as AnalyticBound,
    analytic_lower_bound as analytic_lower_bound,
    critical_path as critical_path,
    device_bounds as device_bounds,
    heads_and_tails as heads_and_tails,
    objective_lower_bound as objective_lower_bound,
    span_lower_bound as span_lower_bound,
)

__all__ = [
    "AnalyticBound",
    "analytic_lower_bound",
    "critical_path",
    "device_bounds",
    "heads_and_tails",
    "objective_lower_bound",
    "span_lower_bound",
]
