"""Optimal contiguous partitioning by dynamic programming over ideals.

Tarnawski et al. (NeurIPS 2020): split an operator graph over ``k``
accelerators and ``l`` CPUs so that the largest load is minimal, every
device holding a *contiguous* set: the difference ``I - J`` of two ideals
``J`` (subset of) ``I`` of the forward supernode DAG (see
:mod:`schedsearch.partition.contract`); backward operators go with their
forward partners. With ``dp[c][f][I]`` the best max-load of covering ``I``
with ``c`` CPUs and ``f`` accelerators (each possibly empty)::

    dp[0][0][{}] = 0
    dp[c][f][I] = min( dp[c-1][f][I], dp[c][f-1][I],
                       min_J max(dp[c][f-1][J], accel_cost(I - J)),
                       min_J max(dp[c-1][f][J], cpu_cost(I - J)) )

where ``accel_cost`` = accelerator latency + communication of the set
(infinite if over the memory limit or holding an operator unsupported on an
accelerator) and ``cpu_cost`` = CPU latency. The answer is
``dp[l][k][all]``.

How it is made fast (the reference C++ code stores every pair ``J`` of
``I`` with its cost; this code does not):

* **Sorted ideals, vector DP.** Ideals are sorted by accelerator latency
  ``W`` (then size), so every subset of ``I`` comes before ``I``; for one
  ``I`` all candidate ``J`` are processed at once with NumPy.
* **Communication by hyperedge counts.** ``C[I, h]`` = number of anchors of
  hyperedge ``h`` inside ``I``. For ``J`` a subset of ``I``, with
  ``comm(J)`` the cut weight of the ideal ``J`` and ``cut(I)`` the
  hyperedges cut by ``I``::

      comm(I - J) = comm(J) + sum_{h in cut(I)} c_h ([C[J,h] = 0] - [C[J,h] = C[I,h]])

  so a pair costs ``O(|cut(I)|)``, the (small) frontier of ``I``.
* **Branch and bound on the max-load.** An upper bound ``U`` (the linear
  order DP, :func:`partition_dpl`, which is fast) prunes: a stage has
  latency at most ``U``, so ``W(J) >= W(I) - max(1, r) U`` where ``r``
  bounds accelerator latency over CPU latency per supernode; a state
  ``(c, f, I)`` of an optimal solution needs ``W(I) <= (f + c r) U`` and
  ``W(all) - W(I) <= (k - f + (l - c) r) U``. States outside these bands
  are never on an optimal path and are not computed; ideals whose every
  state exceeds ``U`` are dropped as candidates.

All pruning uses only bounds valid for every solution of max-load at most
``U``, so the result is exact.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import attrs
import numpy as np

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload, Slot, Split
from schedsearch.partition.contract import ContractedGraph, contract, linearize
from schedsearch.partition.cost import evaluate_split
from schedsearch.partition.ideals import (
    column_sums,
    enumerate_ideals,
    ideals_to_words,
    membership_matrix,
)
from schedsearch.partition.result import PartitionResult

__all__ = ["partition_dp", "partition_dpl", "solve_contracted", "ContiguousSolution",
           "DEFAULT_IDEAL_LIMIT"]

DEFAULT_IDEAL_LIMIT = 2_000_000
_INF = math.inf
_REL = 1e-9  # slack on the pruning bounds against rounding


@attrs.frozen(kw_only=True)
class ContiguousSolution:
    """Result of the DP on a contracted graph.

    ``stages`` lists ``(kind, supernodes)`` in pipeline order; ``kind`` is
    ``"accel"`` or ``"cpu"``; empty devices are omitted.
    """

    max_load: float
    stages: tuple[tuple[str, tuple[int, ...]], ...]
    num_ideals: int
    num_pairs: int
    upper_bound: float


def _ratio(cg: ContractedGraph) -> float:
    """Largest accelerator/CPU latency ratio over supernodes (inf if a CPU is free)."""
    r = 0.0
    for a, c in zip(cg.accel_latency, cg.cpu_latency):
        if a > 0:
            if c <= 0:
                return _INF
            r = max(r, a / c)
    return r


def solve_contracted(
    cg: ContractedGraph,
    devices: DeviceLimits,
    *,
    upper_bound: float = _INF,
    ideal_limit: int | None = DEFAULT_IDEAL_LIMIT,
    ideals: Sequence[int] | None = None,
) -> ContiguousSolution | None:
    """Run the DP on a contracted graph.

    ``upper_bound`` must be at least the optimum (e.g. the max-load of a
    known contiguous split); with ``inf`` nothing is pruned. ``ideals``
    restricts the DP to a family of ideals (bitsets; it must hold the
    empty and the full set); by default all ideals. Returns None if no
    split has max-load at most ``upper_bound`` (or none at all).
    """
    n = cg.num_nodes
    K, L = devices.num_accelerators, devices.num_cpus
    if ideals is None:
        ideals = enumerate_ideals(cg.preds, limit=ideal_limit)
    else:
        ideals = list(ideals)
        full = (1 << n) - 1
        if 0 not in ideals or full not in ideals:
            raise InvalidOperatorGraphError("partition DP: the ideal family must hold the empty and the full set")
    N = len(ideals)
    words = ideals_to_words(ideals, n)
    member = membership_matrix(words, n)
    W = column_sums(member, cg.accel_latency)
    Wc = column_sums(member, cg.cpu_latency)
    S = column_sums(member, cg.size)
    U = member[:, [v for v in range(n) if not cg.accel_ok[v]]].sum(axis=1)
    pop = member.sum(axis=1)
    order = np.lexsort((pop, W))
    words, member, W, Wc, S, U = words[order], member[order], W[order], Wc[order], S[order], U[order]
    ideal_ints = [ideals[i] for i in order]
    del ideals

    H = len(cg.hyperedges)
    inc = np.zeros((n, max(H, 1)), dtype=np.float32)
    hcost = np.zeros(max(H, 1), dtype=np.float64)
    hsize = np.full(max(H, 1), 2, dtype=np.int32)
    for h, (anchors, c) in enumerate(cg.hyperedges):
        inc[list(anchors), h] = 1.0
        hcost[h] = c
        hsize[h] = len(anchors)
    if n:
        C = (member.astype(np.float32) @ inc).astype(np.int32)
    else:
        C = np.zeros((N, max(H, 1)), dtype=np.int32)
    if H == 0:
        C[:] = 0
    cut_all = (C > 0) & (C < hsize)
    comm_ideal = np.where(cut_all, hcost, 0.0).sum(axis=1)
    del member

    mem_limit = devices.max_accel_memory
    r = _ratio(cg)
    w_total = float(W[-1])
    ub = upper_bound * (1 + _REL) + 1e-12 if math.isfinite(upper_bound) else _INF

    dp = np.full((L + 1, K + 1, N), _INF)
    back_sub = np.full((L + 1, K + 1, N), -1, dtype=np.int32)
    back_cpu = np.zeros((L + 1, K + 1, N), dtype=bool)
    dp[:, :, 0] = 0.0  # empty ideal: every layer, all devices empty
    alive = np.zeros(N, dtype=bool)
    alive[0] = True
    if math.isfinite(ub):
        # accelerator latency that one CPU stage of load <= ub can hold
        per_cpu = 0.0 if L == 0 else (_INF if math.isinf(r) else r * ub)
        span = max(ub, per_cpu)

        def capacity(num_accel: np.ndarray, num_cpu: np.ndarray) -> np.ndarray:
            """Largest accelerator latency ``num_accel`` + ``num_cpu`` devices can hold."""
            if math.isinf(per_cpu):
                cpu_part = np.where(num_cpu > 0, _INF, 0.0)
            else:
                cpu_part = num_cpu * per_cpu
            return num_accel * ub + cpu_part

        cs = np.arange(L + 1)[:, None] + np.zeros((1, K + 1), dtype=int)
        fs = np.arange(K + 1)[None, :] + np.zeros((L + 1, 1), dtype=int)
        reach = capacity(fs, cs)  # W(I) must not exceed this
        rest = capacity(K - fs, L - cs)  # W(all) - W(I) must not exceed this
        # sub-ideal bound for accelerator / CPU transitions into (c, f)
        sub_f = np.where(fs >= 1, capacity(np.maximum(fs - 1, 0), cs), -_INF)
        sub_c = np.where(cs >= 1, capacity(fs, np.maximum(cs - 1, 0)), -_INF)
        sub_hi = np.maximum(sub_f, sub_c)
    num_pairs = 0
    for p in range(1, N):
        wp = W[p]
        if math.isfinite(ub):
            relevant = (wp <= reach * (1 + _REL) + 1e-12) & (
                w_total - wp <= rest * (1 + _REL) + 1e-12
            )
            if not relevant.any():
                continue
            lo_w = wp - span
            hi_w = sub_hi[relevant].max() * (1 + _REL) + 1e-12
            lo = int(np.searchsorted(W, lo_w, side="left"))
            hi = min(p, int(np.searchsorted(W, hi_w, side="right")))
        else:
            lo, hi = 0, p
        if hi <= lo:
            cand = np.empty(0, dtype=np.intp)
        else:
            block = words[lo:hi]
            inside = ~np.any(block & ~words[p], axis=1)
            inside &= alive[lo:hi]
            cand = np.flatnonzero(inside) + lo
        m = cand.size
        num_pairs += m
        new = np.full((L + 1, K + 1), _INF)
        nsub = np.full((L + 1, K + 1), -1, dtype=np.int32)
        ncpu = np.zeros((L + 1, K + 1), dtype=bool)
        if m:
            cp = C[p]
            cut = np.flatnonzero((cp > 0) & (cp < hsize))
            comm = comm_ideal[cand]
            if cut.size:
                Cs = C[np.ix_(cand, cut)]
                comm = comm + (Cs == 0) @ hcost[cut] - (Cs == cp[cut]) @ hcost[cut]
            fcost = (wp - W[cand]) + comm
            bad = U[p] != U[cand]
            if mem_limit is not None:
                bad |= (S[p] - S[cand]) > mem_limit
            fcost[bad] = _INF
            if K:
                vals = np.maximum(dp[:, :K, cand], fcost)
                arg = vals.argmin(axis=2)
                best = np.take_along_axis(vals, arg[:, :, None], axis=2)[:, :, 0]
                new[:, 1:] = best
                nsub[:, 1:] = cand[arg]
            if L:
                ccost = Wc[p] - Wc[cand]
                vals = np.maximum(dp[:L, :, cand], ccost)
                arg = vals.argmin(axis=2)
                best = np.take_along_axis(vals, arg[:, :, None], axis=2)[:, :, 0]
                better = best < new[1:, :]
                new[1:, :] = np.where(better, best, new[1:, :])
                nsub[1:, :] = np.where(better, cand[arg], nsub[1:, :])
                ncpu[1:, :] = better
        back_sub[:, :, p] = nsub
        back_cpu[:, :, p] = ncpu
        new = np.minimum.accumulate(np.minimum.accumulate(new, axis=0), axis=1)
        dp[:, :, p] = new
        alive[p] = new.min() <= ub
    best = float(dp[L, K, N - 1])
    if not math.isfinite(best):
        return None
    # backtrack
    stages: list[tuple[str, tuple[int, ...]]] = []
    c, f, p = L, K, N - 1
    while p != 0:
        here = dp[c, f, p]
        if c > 0 and dp[c - 1, f, p] <= here:
            c -= 1
            continue
        if f > 0 and dp[c, f - 1, p] <= here:
            f -= 1
            continue
        q = int(back_sub[c, f, p])
        is_cpu = bool(back_cpu[c, f, p])
        if q < 0:  # pragma: no cover - defensive
            raise RuntimeError("partition DP: broken back-link")
        diff = ideal_ints[p] & ~ideal_ints[q]
        nodes = tuple(v for v in range(n) if diff >> v & 1)
        stages.append(("cpu" if is_cpu else "accel", nodes))
        if is_cpu:
            c -= 1
        else:
            f -= 1
        p = q
    stages.reverse()
    return ContiguousSolution(
        max_load=best,
        stages=tuple(stages),
        num_ideals=N,
        num_pairs=num_pairs,
        upper_bound=upper_bound,
    )


def _to_split(cg: ContractedGraph, stages: Sequence[tuple[str, Sequence[int]]]) -> Split:
    counters = {"accel": 0, "cpu": 0}
    out = []
    for kind, nodes in stages:
        slot = Slot(kind=kind, index=counters[kind])
        counters[kind] += 1
        ops = sorted(op for v in nodes for op in cg.members[v])
        out.append((slot, ops))
    return Split(stages=out)


def _resolve(
    graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None
) -> tuple[OperatorGraph, DeviceLimits]:
    if isinstance(graph, PartitionWorkload):
        return graph.graph, devices if devices is not None else graph.devices
    if devices is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no device limits given (pass devices=DeviceLimits(...))"
        )
    return graph, devices


def _finish(
    method: str,
    graph: OperatorGraph,
    devices: DeviceLimits,
    cg: ContractedGraph,
    sol: ContiguousSolution,
    t0: float,
    optimal: bool,
    **stats,
) -> PartitionResult:
    split = _to_split(cg, sol.stages)
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


def partition_dpl(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    order: Sequence[int] | None = None,
    merge_trivial: bool = True,
) -> PartitionResult:
    """Optimal split among those contiguous in one linear order (DPL).

    The forward supernodes are chained in one topological order (a
    depth-first Kahn order unless ``order``, a permutation of supernode
    numbers, is given); the DP then has ``n + 1`` ideals, the prefixes, and
    runs in polynomial time. Its max-load is an upper bound on the DP's.
    """
    t0 = time.perf_counter()
    graph, devices = _resolve(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial)
    chain = linearize(cg, list(order) if order is not None else None)
    sol = solve_contracted(chain, devices)
    if sol is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no feasible split on {devices.num_accelerators} "
            f"accelerators and {devices.num_cpus} CPUs (memory limit or unsupported operators)"
        )
    return _finish("dpl", graph, devices, chain, sol, t0, optimal=False)


def partition_dp(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    upper_bound: float | None = None,
    merge_trivial: bool = True,
    ideal_limit: int | None = DEFAULT_IDEAL_LIMIT,
) -> PartitionResult:
    """Optimal contiguous split (the DP over ideals of Tarnawski et al.).

    Parameters
    ----------
    graph, devices:
        The operator graph and the devices; a :class:`PartitionWorkload`
        carries both.
    upper_bound:
        A known max-load to prune with; by default the DPL optimum is
        computed first and used. ``math.inf`` disables pruning.
    merge_trivial:
        Merge zero-latency leaves into their neighbour (as the reference
        code does; the ideal counts it reports are with this on).
    ideal_limit:
        Refuse DAGs with more ideals than this (clear error, not a hang).

    Returns
    -------
    PartitionResult
        ``optimal=True``; ``max_load`` from the DP, ``cost`` from the
        independent evaluator (they agree to rounding).
    """
    t0 = time.perf_counter()
    graph, devices = _resolve(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial)
    if upper_bound is None:
        chain = linearize(cg)
        fallback = solve_contracted(chain, devices)
        # no feasible chain split (memory, unsupported operators): search unpruned
        ub = fallback.max_load if fallback is not None else _INF
    else:
        ub = upper_bound
    sol = solve_contracted(cg, devices, upper_bound=ub, ideal_limit=ideal_limit)
    if sol is None and math.isfinite(ub):
        sol = solve_contracted(cg, devices, ideal_limit=ideal_limit)
    if sol is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no feasible split on {devices.num_accelerators} "
            f"accelerators and {devices.num_cpus} CPUs (memory limit or unsupported operators)"
        )
    return _finish("dp", graph, devices, cg, sol, t0, optimal=True, upper_bound=ub)
