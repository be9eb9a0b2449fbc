"""Helpers the partitioners share (internal to :mod:`schedsearch.partition`).

Their names are public inside the package and not exported by it: the
partitioners (the DP and DPL, the slice-graph and module DPs, the
heuristics, the IPs) import them from here instead of each other's private
names. The contiguous-split MIP model both IPs build is in
:mod:`schedsearch.partition._contiguous_model`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
import attrs
import numpy as np

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition.contraction import ContractedGraph
from schedsearch.partition.cost import evaluate_split
from schedsearch.partition.ideals import column_sums, ideals_to_words, membership_matrix
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload, Slot, Split
from schedsearch.partition.result import PartitionResult

__all__ = ["ContiguousSolution", "IdealTable", "partition_result", "resolve_workload", "split_of_stages"]


@attrs.frozen(kw_only=True)
class ContiguousSolution:
    """Result of a contiguous-split DP on a contracted graph (:func:`~schedsearch.partition.dp.solve_contracted`,
    the slice-graph DP).

    ``stages`` lists ``(kind, supernodes)`` in pipeline order; ``kind`` is
    ``"accel"`` or ``"cpu"``; empty devices are omitted.
    """

    max_load: float
    stages: tuple[tuple[str, tuple[int, ...]], ...]
    num_ideals: int
    num_pairs: int
    upper_bound: float


def split_of_stages(cg: ContractedGraph, stages: Sequence[tuple[str, Sequence[int]]]) -> Split:
    """The split of the operators from ordered stages ``(kind, supernodes)`` of a contracted graph."""
    counters = {"accel": 0, "cpu": 0}
    out = []
    for kind, nodes in stages:
        slot = Slot(kind=kind, index=counters[kind])
        counters[kind] += 1
        ops = sorted(op for v in nodes for op in cg.members[v])
        out.append((slot, ops))
    return Split(stages=out)


def resolve_workload(
    graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None
) -> tuple[OperatorGraph, DeviceLimits]:
    """The operator graph and the device limits of a partitioner's input (a workload brings its own)."""
    if isinstance(graph, PartitionWorkload):
        return graph.graph, devices if devices is not None else graph.devices
    if devices is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no device limits given (pass devices=DeviceLimits(...))"
        )
    return graph, devices


def partition_result(
    method: str,
    graph: OperatorGraph,
    devices: DeviceLimits,
    cg: ContractedGraph,
    sol: ContiguousSolution,
    t0: float,
    optimal: bool,
    **stats,
) -> PartitionResult:
    """The :class:`PartitionResult` of a DP solution, its split evaluated on ``graph``."""
    split = split_of_stages(cg, sol.stages)
    cost = evaluate_split(graph, split, devices)
    return PartitionResult(
        method=method,
        split=split,
        max_load=sol.max_load,
        cost=cost,
        optimal=optimal,
        wall_time_s=time.perf_counter() - t0,
        stats={"ideals": sol.num_ideals, "pairs": sol.num_pairs, "supernodes": cg.num_nodes,
               **stats},
    )


class IdealTable:
    """Ideals sorted by accelerator latency, with everything the DP asks of a pair."""

    def __init__(self, cg: ContractedGraph, ideals: Sequence[int], mem_limit: float | None):
        n = cg.num_nodes
        self.n = n
        words = ideals_to_words(ideals, n)
        member = membership_matrix(words, n)
        W = column_sums(member, cg.accel_latency)
        pop = member.sum(axis=1)
        order = np.lexsort((pop, W))
        member = member[order]
        self.N = len(ideals)
        self.W = W[order]
        self.Wc = column_sums(member, cg.cpu_latency)
        self.S = column_sums(member, cg.size)
        unsupported = [v for v in range(n) if not cg.accel_ok[v]]
        self.U = member[:, unsupported].sum(axis=1) if unsupported else np.zeros(self.N, dtype=np.int64)
        self.words = words[order]
        self.single_word = self.words.shape[1] == 1
        if self.single_word:
            self.words1 = self.words[:, 0].copy()
        self.ints = [ideals[i] for i in order]
        self.mem_limit = mem_limit
        H = len(cg.hyperedges)
        self.H = H
        if H:
            inc = np.zeros((n, H), dtype=np.float32)
            self.hcost = np.zeros(H)
            hsize = np.zeros(H, dtype=np.int32)
            for h, (anchors, c) in enumerate(cg.hyperedges):
                inc[list(anchors), h] = 1.0
                self.hcost[h] = c
                hsize[h] = len(anchors)
            # counts are small integers: exact in float32
            self.C = (member.astype(np.float32) @ inc).astype(np.int32)
            cut = (self.C > 0) & (self.C < hsize)
            self.cut = cut
            self.comm = np.where(cut, self.hcost, 0.0).sum(axis=1)
        else:
            self.comm = np.zeros(self.N)

    def candidates(self, p: int, lo: int, hi: int, alive: np.ndarray):
        """Live proper sub-ideals of ideal ``p`` among sorted positions ``[lo, hi)``,
        with the accelerator and CPU cost of each difference."""
        if hi <= lo:
            empty = np.empty(0)
            return np.empty(0, dtype=np.int64), empty, empty
        if self.single_word:
            inside = (self.words1[lo:hi] & ~self.words1[p]) == 0
        else:
            inside = ~np.any(self.words[lo:hi] & ~self.words[p], axis=1)
        inside &= alive[lo:hi]
        cand = np.flatnonzero(inside)
        cand += lo
        fcost = self.W[p] - self.W[cand]
        if self.H:
            comm = self.comm[cand]
            cut = np.flatnonzero(self.cut[p])
            if cut.size:
                counts = self.C[cand][:, cut]
                hc = self.hcost[cut]
                comm = comm + (counts == 0) @ hc - (counts == self.C[p, cut]) @ hc
            fcost += comm
        bad = self.U[cand] != self.U[p]
        if self.mem_limit is not None:
            bad |= (self.S[p] - self.S[cand]) > self.mem_limit
        fcost[bad] = math.inf
        ccost = self.Wc[p] - self.Wc[cand]
        return cand, fcost, ccost

    def difference(self, p: int, q: int) -> tuple[int, ...]:
        diff = self.ints[p] & ~self.ints[q]
        return tuple(v for v in range(self.n) if diff >> v & 1)
