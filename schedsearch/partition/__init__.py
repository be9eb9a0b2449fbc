"""Partitioners: split an operator graph into pipeline stages.

* :func:`partition_dp` - exact contiguous DP over ideals (Tarnawski et al.);
  :func:`partition_dpl` - its one-linear-order variant;
* :func:`partition_slicegraph` - SliceGraph (Archer et al.): optimal
  segmentation of topological orders searched by random restarts or BRKGA;
* :func:`partition_modules` - module splitting with a DP across modules;
* baselines :func:`partition_met`, :func:`partition_greedy`,
  :func:`partition_heft`, :func:`partition_annealing`,
  :func:`partition_evolutionary`;
* :func:`partition` - any of them by name;
* :func:`evaluate_split` - the independent max-load cost every result is
  checked with; :func:`split_to_problem` / :func:`partition_and_schedule` -
  from a split to a block-level scheduling problem and a schedule;
* certified bounds on a split, integer programs solved through
  :mod:`schedsearch.bounds.mip`: Tarnawski et al.'s :func:`noncontiguous_ip`,
  :func:`contiguous_ip` and :func:`latency_ip`
  (:mod:`~schedsearch.partition.partition_ip`), Archer et al.'s
  max-throughput bounds :func:`exact_mip`, :func:`three_superblock_mip`,
  :func:`bottleneck_guess_mip` and :func:`simple_bound`
  (:mod:`~schedsearch.partition.throughput_ip`).

The operator graphs they split are the solver-free data of
:mod:`~schedsearch.partition.opgraph`; :mod:`schedsearch.loaders.opgraph`
reads them from files.
"""

from schedsearch.partition.contraction import ContractedGraph, contract, linearize
from schedsearch.partition.cost import SplitCost, complete_split, evaluate_split, one_device_split
from schedsearch.partition.dp import partition_dp, partition_dpl, solve_contracted
from schedsearch.partition.heuristics import (
    partition_annealing,
    partition_evolutionary,
    partition_greedy,
    partition_heft,
    partition_met,
)
from schedsearch.partition.ideals import enumerate_ideals
from schedsearch.partition.methods import METHODS, partition
from schedsearch.partition.modules import find_modules, partition_modules
from schedsearch.partition.opgraph import (
    DeviceLimits,
    Operator,
    OperatorGraph,
    PartitionWorkload,
    Slot,
    Split,
    training_graph_from_forward,
)
from schedsearch.partition.partition_ip import (
    PartitionBound,
    contiguous_ip,
    latency_ip,
    latency_of_split,
    latency_problem,
    noncontiguous_ip,
)
from schedsearch.partition.result import PartitionResult
from schedsearch.partition.slicegraph import partition_slicegraph, slice_order
from schedsearch.partition.throughput_ip import (
    ThroughputBound,
    block_bound,
    bottleneck_guess_mip,
    certified_bound,
    exact_mip,
    family_dp_incumbent,
    simple_bound,
    subposet_bound,
    three_superblock_mip,
)
from schedsearch.partition.to_problem import (
    PipelineResult,
    StagedProblem,
    partition_and_schedule,
    split_to_problem,
)

__all__ = [
    "METHODS",
    "ContractedGraph",
    "DeviceLimits",
    "Operator",
    "OperatorGraph",
    "PartitionBound",
    "PartitionResult",
    "PartitionWorkload",
    "PipelineResult",
    "Slot",
    "Split",
    "StagedProblem",
    "SplitCost",
    "ThroughputBound",
    "block_bound",
    "bottleneck_guess_mip",
    "certified_bound",
    "complete_split",
    "contiguous_ip",
    "contract",
    "enumerate_ideals",
    "evaluate_split",
    "exact_mip",
    "family_dp_incumbent",
    "find_modules",
    "latency_ip",
    "latency_of_split",
    "latency_problem",
    "linearize",
    "noncontiguous_ip",
    "one_device_split",
    "partition",
    "partition_and_schedule",
    "partition_annealing",
    "partition_dp",
    "partition_dpl",
    "partition_evolutionary",
    "partition_greedy",
    "partition_heft",
    "partition_met",
    "partition_modules",
    "partition_slicegraph",
    "simple_bound",
    "slice_order",
    "solve_contracted",
    "subposet_bound",
    "split_to_problem",
    "three_superblock_mip",
    "training_graph_from_forward",
]
