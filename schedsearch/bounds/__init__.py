"""Lower bounds on the optimum of a scheduling problem."""

from schedsearch.bounds.analytic import (
    AnalyticBound as AnalyticBound,
    analytic_lower_bound as analytic_lower_bound,
    critical_path as critical_path,
    device_bounds as device_bounds,
    heads_and_tails as heads_and_tails,
)

__all__ = ["AnalyticBound", "analytic_lower_bound", "critical_path", "device_bounds", "heads_and_tails"]
