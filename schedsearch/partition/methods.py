"""One entry point for every partitioner: ``partition(workload, method=...)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition.dp import partition_dp, partition_dpl
from schedsearch.partition.heuristics import (
    partition_annealing,
    partition_evolutionary,
    partition_greedy,
    partition_heft,
    partition_met,
)
from schedsearch.partition.modules import partition_modules
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload
from schedsearch.partition.result import PartitionResult
from schedsearch.partition.slicegraph import partition_slicegraph

__all__ = ["METHODS", "partition"]

#: method name -> partitioner(graph, devices, **options)
METHODS: dict[str, Callable[..., PartitionResult]] = {
    "dp": partition_dp,
    "dpl": partition_dpl,
    "slicegraph": partition_slicegraph,
    "modules": partition_modules,
    "greedy": partition_greedy,
    "met": partition_met,
    "heft": partition_heft,
    "annealing": partition_annealing,
    "evolutionary": partition_evolutionary,
}


def partition(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    method: str = "dp",
    **options: Any,
) -> PartitionResult:
    """Split ``graph`` with the named method (see :data:`METHODS`)."""
    try:
        fn = METHODS[method]
    except KeyError:
        raise InvalidOperatorGraphError(
            f"partition: unknown method {method!r}; choose one of {', '.join(sorted(METHODS))}"
        ) from None
    return fn(graph, devices, **options)
