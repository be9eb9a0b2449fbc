"""Search strategies for large problems: list scheduling, ties, a driver."""

from schedsearch.search.scale.list_scheduling import (
    DEFAULT_RULES as DEFAULT_RULES,
    PriorityRule as PriorityRule,
    best_list_schedule as best_list_schedule,
    list_orders as list_orders,
    list_schedule as list_schedule,
)

__all__ = ["DEFAULT_RULES", "PriorityRule", "best_list_schedule", "list_orders", "list_schedule"]
