"""One entry point for every partitioner: ``partition(workload, method=...)``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from schedsearch.options import Rule, check_option, check_partition_options
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
    """Split ``graph`` with the named method (see :data:`METHODS`).

    ``options`` go to the method. The command line and the benchmarks pick
    partitioners by name through it. A method or option name the method
    does not know, or an option out of its range, raises
    :class:`~schedsearch.errors.InvalidOptionsError` before any work.

    Examples
    --------
    >>> from schedsearch.partition import METHODS, DeviceLimits, Operator, OperatorGraph, partition
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> sorted(METHODS)
    ['annealing', 'dp', 'dpl', 'evolutionary', 'greedy', 'heft', 'met', 'modules', 'slicegraph']
    >>> partition(graph, DeviceLimits(num_accelerators=2), method="slicegraph", seed=3).max_load
    7.0
    """
    check_option("partition", "method", method, Rule.choice(sorted(METHODS)))
    check_partition_options(f"partition (method {method!r})", options, method_options(method))
    return METHODS[method](graph, devices, **options)


def method_options(method: str) -> list[str]:
    """The option names the partitioner ``METHODS[method]`` takes (its keyword-only parameters)."""
    return [name for name, p in inspect.signature(METHODS[method]).parameters.items() if p.kind is p.KEYWORD_ONLY]
