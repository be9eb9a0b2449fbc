"""Partitioners: split an operator graph into pipeline stages.

Exact contiguous DP over ideals (:func:`partition_dp`), its linear-order
variant (:func:`partition_dpl`), the cost model shared by all of them
(:func:`evaluate_split`), and the contraction rules they work on.
"""

from schedsearch.partition.contract import ContractedGraph, contract, linearize
from schedsearch.partition.cost import SplitCost, complete_split, evaluate_split, one_device_split
from schedsearch.partition.dp import partition_dp, partition_dpl, solve_contracted
from schedsearch.partition.ideals import enumerate_ideals
from schedsearch.partition.result import PartitionResult

__all__ = [
    "ContractedGraph",
    "PartitionResult",
    "SplitCost",
    "complete_split",
    "contract",
    "enumerate_ideals",
    "evaluate_split",
    "linearize",
    "one_device_split",
    "partition_dp",
    "partition_dpl",
    "solve_contracted",
]
