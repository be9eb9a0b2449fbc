"""Loaders: files of other communities as schedsearch data.

* :mod:`~schedsearch.loaders.jobshop` -- job-shop and flexible job-shop
  instances as problems (:class:`~schedsearch.problem.Problem`);
* :mod:`~schedsearch.loaders.opgraph` -- operator graphs for the
  partitioners (dnn-partitioning JSON, PipeDream profiles, expert splits).
"""

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
from schedsearch.loaders.opgraph import (
    find_expert_split as find_expert_split,
    parse_dnn_partitioning as parse_dnn_partitioning,
    parse_pipedream_profile as parse_pipedream_profile,
    parse_split as parse_split,
    read_dnn_partitioning as read_dnn_partitioning,
    read_pipedream_profile as read_pipedream_profile,
    read_split as read_split,
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
    "find_expert_split",
    "parse_dnn_partitioning",
    "parse_pipedream_profile",
    "parse_split",
    "read_dnn_partitioning",
    "read_pipedream_profile",
    "read_split",
]
