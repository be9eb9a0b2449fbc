"""Loaders: instance files of other communities as Problems (job shop, flexible job shop)."""

from schedsearch.loaders.jobshop import (
    IndexEntry as IndexEntry,
    JobShopInstance as JobShopInstance,
    detect_format as detect_format,
    flexible_jobshop_problem as flexible_jobshop_problem,
    jobs_of as jobs_of,
    jobshop_problem as jobshop_problem,
    machine_name as machine_name,
    operation_name as operation_name,
    parse_flexible_jobshop as parse_flexible_jobshop,
    parse_jobshop as parse_jobshop,
    read_flexible_jobshop as read_flexible_jobshop,
    read_index as read_index,
    read_instance as read_instance,
    read_jobshop as read_jobshop,
)

__all__ = [
    "IndexEntry",
    "JobShopInstance",
    "detect_format",
    "flexible_jobshop_problem",
    "jobs_of",
    "jobshop_problem",
    "machine_name",
    "operation_name",
    "parse_flexible_jobshop",
    "parse_jobshop",
    "read_flexible_jobshop",
    "read_index",
    "read_instance",
    "read_jobshop",
]
