"""Loaders: files of other communities as schedsearch data.

* :mod:`~schedsearch.loaders.jobshop` -- job-shop and flexible job-shop
  instances as problems (:class:`~schedsearch.problem.Problem`);
* :mod:`~schedsearch.loaders.opgraph` -- operator graphs for the
  partitioners (dnn-partitioning JSON, PipeDream profiles, expert splits),
  loaded on first use.
"""

from typing import Any

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

#: the operator-graph readers, loaded when first used: they stand on the partitioners (networkx, numpy),
#: which reading a job shop does not need
_OPGRAPH = ("find_expert_split", "parse_dnn_partitioning", "parse_pipedream_profile", "parse_split",
            "read_dnn_partitioning", "read_pipedream_profile", "read_split")


def __getattr__(name: str) -> Any:
    if name not in _OPGRAPH:
        raise AttributeError(f"module 'schedsearch.loaders' has no attribute {name!r}")
    from schedsearch.loaders import opgraph

    value = getattr(opgraph, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_OPGRAPH))


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
