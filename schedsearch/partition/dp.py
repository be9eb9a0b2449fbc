"""Optimal contiguous partitioning by dynamic programming over ideals.

Tarnawski et al. (NeurIPS 2020): split an operator graph over ``k``
accelerators and ``l`` CPUs so that the largest load is minimal, every
device holding a *contiguous* set: the difference ``I - J`` of two ideals
``J`` (subset of) ``I`` of the forward supernode DAG (see
:mod:`schedsearch.partition.contraction`); backward operators go with their
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
``I`` with its cost; this code stores no pair):

* **Sorted ideals, vector DP.** Ideals are bitsets sorted by accelerator
  latency ``W`` (then size), so every subset of ``I`` comes before ``I``;
  for one ``I`` all candidate ``J`` (a window of the sorted order, tested
  for inclusion word by word) and all device states are handled by a few
  NumPy operations. Back-links are not stored: the arg-min is recomputed
  along the optimal path only.
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
  state exceeds ``U`` are dropped as candidates. When the DAG has barely
  more ideals than a chain, the bound is not worth computing and is
  skipped.

All pruning uses only bounds valid for every solution of max-load at most
``U``, so the result is exact.

Zero-latency leaves under a memory limit: merging them into their neighbour
(as the reference does) may lose the splits that put their memory elsewhere,
and keeping them apart multiplies the ideals (GNMT: from 17,914 to more than
two million). :func:`partition_dp` merges them and runs the DP twice on the
merged lattice, with their memory left out (a lower bound) and counted (a
split of the graph); it keeps them apart only when neither the lower bound's
split fits nor the two optima meet.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from schedsearch.errors import InvalidOperatorGraphError, SolverError
from schedsearch.options import check_partition_options
from schedsearch.partition._common import (
    ContiguousSolution,
    IdealTable,
    partition_result,
    resolve_workload,
    split_of_stages,
)
from schedsearch.partition.contraction import ContractedGraph, contract, linearize
from schedsearch.partition.cost import evaluate_split
from schedsearch.partition.ideals import IdealLimitExceeded, enumerate_ideals
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload
from schedsearch.partition.result import PartitionResult

__all__ = ["partition_dp", "partition_dpl", "solve_contracted", "ContiguousSolution",
           "DEFAULT_IDEAL_LIMIT"]

DEFAULT_IDEAL_LIMIT = 2_000_000
_INF = math.inf
_REL = 1e-9  # slack on the pruning bounds against rounding
_SMALL_LATTICE = 4  # below this many ideals per chain ideal, skip the DPL bound


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

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, contract, solve_contracted
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> solution = solve_contracted(contract(diamond), DeviceLimits(num_accelerators=2))
    >>> solution.max_load, solution.stages, solution.num_ideals
    (7.0, (('accel', (0, 1)), ('accel', (2, 3))), 6)
    >>> solve_contracted(contract(diamond), DeviceLimits(num_accelerators=2), upper_bound=6.0) is None
    True
    """
    n = cg.num_nodes
    if ideals is None:
        ideals = enumerate_ideals(cg.preds, limit=ideal_limit)
    else:
        ideals = list(ideals)
        full = (1 << n) - 1
        if 0 not in ideals or full not in ideals:
            raise InvalidOperatorGraphError(
                "partition DP: the ideal family must hold the empty and the full set"
            )
    table = IdealTable(cg, ideals, devices.max_accel_memory)
    ub = upper_bound * (1 + _REL) + 1e-12 if math.isfinite(upper_bound) else _INF
    active, lo, hi = _pruning_windows(cg, table, devices, ub)
    dp, alive, num_pairs = _forward_pass(table, devices, active, lo, hi, ub)
    best = float(dp[-1, -1])
    if not math.isfinite(best):
        return None
    return ContiguousSolution(
        max_load=best,
        stages=_backtrack(table, devices, dp, lo, hi, alive),
        num_ideals=table.N,
        num_pairs=num_pairs,
        upper_bound=upper_bound,
    )


def _pruning_windows(cg: ContractedGraph, table: IdealTable, devices: DeviceLimits,
                     ub: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pruning windows of every ideal at once: whether ideal ``p`` can lie on a split of max-load at
    most ``ub`` (``active``), and the range ``lo[p] .. hi[p]`` of the ideals (by weight) it may extend."""
    K, L = devices.num_accelerators, devices.num_cpus
    N, W = table.N, table.W
    pos = np.arange(N)
    if not math.isfinite(ub):
        return np.ones(N, dtype=bool), np.zeros(N, dtype=np.int64), pos
    r = _ratio(cg)
    per_cpu = 0.0 if L == 0 else (_INF if math.isinf(r) else r * ub)
    span = max(ub, per_cpu)

    def capacity(num_accel: np.ndarray, num_cpu: np.ndarray) -> np.ndarray:
        """Largest accelerator latency ``num_accel`` + ``num_cpu`` devices can hold."""
        if math.isinf(per_cpu):
            cpu_part = np.where(num_cpu > 0, _INF, 0.0)
        else:
            cpu_part = num_cpu * per_cpu
        return num_accel * ub + cpu_part

    cs = np.repeat(np.arange(L + 1), K + 1)
    fs = np.tile(np.arange(K + 1), L + 1)
    reach = capacity(fs, cs)  # W(I) must not exceed this in state (c, f)
    rest = capacity(K - fs, L - cs)  # W(all) - W(I) must not exceed this
    sub_hi = np.maximum(
        np.where(fs >= 1, capacity(np.maximum(fs - 1, 0), cs), -_INF),
        np.where(cs >= 1, capacity(fs, np.maximum(cs - 1, 0)), -_INF),
    )
    tol = lambda x: x * (1 + _REL) + 1e-12  # noqa: E731
    relevant = (W[:, None] <= tol(reach)[None, :]) & (
        (W[-1] - W)[:, None] <= tol(rest)[None, :]
    )
    active = relevant.any(axis=1)
    hi_w = np.where(relevant, sub_hi[None, :], -_INF).max(axis=1)
    lo = np.searchsorted(W, W - span, side="left")
    hi = np.minimum(pos, np.searchsorted(W, tol(hi_w), side="right"))
    return active, lo, hi


def _forward_pass(table: IdealTable, devices: DeviceLimits, active: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  ub: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The DP over the ideals in weight order: ``dp[p, s]`` is the least max-load of ideal ``p`` on the
    devices of state ``s = c * (K + 1) + f`` (``c`` CPUs, ``f`` accelerators); ``alive[p]``: its full
    state is within ``ub``; and the number of (ideal, predecessor) pairs looked at."""
    K, L = devices.num_accelerators, devices.num_cpus
    N = table.N
    S = (L + 1) * (K + 1)  # DP states, s = c * (K + 1) + f
    # transitions between flattened states
    f_src = np.array([s for s in range(S) if s % (K + 1) < K], dtype=np.int64)  # accel: s -> s+1
    c_src = np.arange(S - (K + 1), dtype=np.int64) if L else np.empty(0, dtype=np.int64)  # cpu: s -> s+K+1
    dp = np.full((N, S), _INF)
    dp[0] = 0.0  # empty ideal: every state, all devices empty
    alive = np.zeros(N, dtype=bool)
    alive[0] = True
    num_pairs = 0
    for p in range(1, N):
        if not active[p]:
            continue
        cand, fcost, ccost = table.candidates(p, int(lo[p]), int(hi[p]), alive)
        num_pairs += cand.size
        new = np.full(S, _INF)
        if cand.size:
            prev = dp[cand]
            if f_src.size:
                new[f_src + 1] = np.maximum(prev[:, f_src], fcost[:, None]).min(axis=0)
            if c_src.size:
                via_cpu = np.maximum(prev[:, c_src], ccost[:, None]).min(axis=0)
                np.minimum(new[c_src + K + 1], via_cpu, out=via_cpu)
                new[c_src + K + 1] = via_cpu
        grid = new.reshape(L + 1, K + 1)
        np.minimum.accumulate(grid, axis=0, out=grid)
        np.minimum.accumulate(grid, axis=1, out=grid)
        dp[p] = new
        alive[p] = new[-1] <= ub
    return dp, alive, num_pairs


def _backtrack(table: IdealTable, devices: DeviceLimits, dp: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               alive: np.ndarray) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The stages of an optimal split, in pipeline order: back from the full ideal, recomputing the
    arg-min along the optimal path only."""
    K, L = devices.num_accelerators, devices.num_cpus
    stages: list[tuple[str, tuple[int, ...]]] = []
    c, f, p = L, K, table.N - 1
    while p != 0:
        s = c * (K + 1) + f
        here = dp[p, s]
        if c > 0 and dp[p, s - (K + 1)] <= here:
            c -= 1
            continue
        if f > 0 and dp[p, s - 1] <= here:
            f -= 1
            continue
        cand, fcost, ccost = table.candidates(p, int(lo[p]), int(hi[p]), alive)
        q = -1
        if f > 0:
            hit = np.flatnonzero(np.maximum(dp[cand, s - 1], fcost) == here)
            if hit.size:
                q, is_cpu = int(cand[hit[0]]), False
        if q < 0 and c > 0:
            hit = np.flatnonzero(np.maximum(dp[cand, s - (K + 1)], ccost) == here)
            if hit.size:
                q, is_cpu = int(cand[hit[0]]), True
        if q < 0:  # pragma: no cover - the forward pass found this value
            raise SolverError(f"partition DP: stage {s} of prefix {p}: no predecessor reaches the optimal value {here}")
        stages.append(("cpu" if is_cpu else "accel", table.difference(p, q)))
        if is_cpu:
            c -= 1
        else:
            f -= 1
        p = q
    stages.reverse()
    return tuple(stages)


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

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_dpl
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_dpl(graph, DeviceLimits(num_accelerators=3))
    >>> result.max_load, result.stats["ideals"]  # the 5 prefixes of 4 supernodes
    (7.0, 5)
    """
    check_partition_options("partition_dpl", {"order": order, "merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial, memory_limited=devices.max_accel_memory is not None)
    chain = linearize(cg, list(order) if order is not None else None)
    sol = solve_contracted(chain, devices)
    if sol is None:
        raise _no_split(graph, devices)
    return partition_result("dpl", graph, devices, chain, sol, t0, optimal=False)


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
        computed first and used (unless the DAG has fewer than four times
        as many ideals as a chain, where pruning cannot pay for it).
        ``math.inf`` disables pruning.
    merge_trivial:
        Merge zero-latency leaves into their neighbour (as the reference
        code does; the ideal counts it reports are with this on). Under a
        memory limit, leaves that hold memory are merged only where that
        provably loses no split: the DP runs on the merged graph with their
        memory left out (a lower bound) and, if that optimum does not fit
        with it counted, with it counted (an upper bound); only when the two
        differ do those leaves stay apart and the DP run on the larger
        lattice (see ``_leaves_under_a_memory_limit``).
    ideal_limit:
        Refuse DAGs with more ideals than this (clear error, not a hang).

    Returns
    -------
    PartitionResult
        ``optimal=True``; ``max_load`` from the DP, ``cost`` from the
        independent evaluator (they agree to rounding). Where merged leaves
        hold memory under a limit, ``stats["leaf_memory"]`` says how the
        optimum was proven.

    Examples
    --------
    Layers of 4, 2, 3 and 3 units, each output costing 1 to send: two
    accelerators take two layers each, loads 6 + 1 communication:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_dp
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_dp(graph, DeviceLimits(num_accelerators=2))
    >>> result.max_load, result.optimal, [(str(slot), ops) for slot, ops in result.split.stages]
    (7.0, True, [('accel0', (0, 1)), ('accel1', (2, 3))])
    """
    check_partition_options("partition_dp", {"upper_bound": upper_bound, "merge_trivial": merge_trivial,
                                             "ideal_limit": ideal_limit})
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial)
    if merge_trivial and devices.max_accel_memory is not None:
        relaxed = contract(graph, count_leaf_memory=False)
        if relaxed.size != cg.size:  # some merged leaf holds memory
            return _leaves_under_a_memory_limit(graph, devices, cg, relaxed, upper_bound, ideal_limit, t0)
    ideals = enumerate_ideals(cg.preds, limit=ideal_limit)
    ub = _default_bound(cg, devices, ideals) if upper_bound is None else upper_bound
    sol = _solve_or_retry(cg, devices, ub, ideals)
    if sol is None:
        raise _no_split(graph, devices)
    return partition_result("dp", graph, devices, cg, sol, t0, optimal=True, upper_bound=ub)


def _no_split(graph: OperatorGraph, devices: DeviceLimits) -> InvalidOperatorGraphError:
    return InvalidOperatorGraphError(
        f"operator graph {graph.name!r}: no feasible split on {devices.num_accelerators} "
        f"accelerators and {devices.num_cpus} CPUs (memory limit or unsupported operators)"
    )


def _default_bound(cg: ContractedGraph, devices: DeviceLimits, ideals: Sequence[int]) -> float:
    """The DPL optimum, the pruning bound of :func:`partition_dp` (inf where it does not pay)."""
    if len(ideals) <= _SMALL_LATTICE * (cg.num_nodes + 1):
        # barely more ideals than a chain: the bound would cost what it saves
        return _INF
    # no feasible chain split (memory, unsupported operators): search unpruned
    chain = solve_contracted(linearize(cg), devices)
    return chain.max_load if chain is not None else _INF


def _solve_or_retry(cg: ContractedGraph, devices: DeviceLimits, ub: float,
                    ideals: Sequence[int]) -> ContiguousSolution | None:
    """The DP pruned by ``ub``, again unpruned if nothing is within ``ub`` (a bound below the optimum)."""
    sol = solve_contracted(cg, devices, upper_bound=ub, ideals=ideals)
    if sol is None and math.isfinite(ub):
        sol = solve_contracted(cg, devices, ideals=ideals)
    return sol


def _leaves_under_a_memory_limit(
    graph: OperatorGraph,
    devices: DeviceLimits,
    merged: ContractedGraph,
    relaxed: ContractedGraph,
    upper_bound: float | None,
    ideal_limit: int | None,
    t0: float,
) -> PartitionResult:
    """The exact DP when merged trivial leaves hold memory under a memory limit.

    ``merged`` is the contraction with every trivial leaf merged into its
    neighbour and its memory counted there (a *restriction*: each of its
    splits is a split of the graph), ``relaxed`` the same with the leaves'
    memory left out (a *relaxation*: its optimum is a lower bound, see step 4
    of :mod:`schedsearch.partition.contraction`). They share their supernodes
    and ideals, so the two DPs cost what the merged DP costs. The optimum is
    proven when

    1. the relaxed optimum's split fits the memory limit with the leaves'
       memory counted (checked by the independent evaluator): it is a split
       of the graph at the lower bound; or else
    2. the restricted optimum equals the relaxed one.

    Otherwise the leaves that hold memory stay apart
    (``contract(memory_limited=True)``) and the DP runs on that larger
    lattice, pruned by the restricted optimum; if it has more than
    ``ideal_limit`` ideals, the error names the two bounds.
    """
    ideals = enumerate_ideals(merged.preds, limit=ideal_limit)
    # the DPL on the restriction is a split of the graph: a bound for both DPs
    ub = _default_bound(merged, devices, ideals) if upper_bound is None else upper_bound
    low = _solve_or_retry(relaxed, devices, ub, ideals)
    if low is None:  # not even the relaxation has a split
        raise _no_split(graph, devices)
    if evaluate_split(graph, split_of_stages(merged, low.stages), devices).feasible:
        return partition_result("dp", graph, devices, merged, low, t0, optimal=True, upper_bound=ub,
                       leaf_memory="relaxed optimum fits")
    high = _solve_or_retry(merged, devices, ub, ideals)
    if high is not None and high.max_load <= low.max_load:
        return partition_result("dp", graph, devices, merged, high, t0, optimal=True, upper_bound=ub,
                       leaf_memory="restricted optimum = relaxed optimum")
    apart = contract(graph, memory_limited=True)
    try:
        ideals = enumerate_ideals(apart.preds, limit=ideal_limit)
    except IdealLimitExceeded as exc:
        above = "no split fits" if high is None else f"the optimum is at most {high.max_load:.6g}"
        raise IdealLimitExceeded(
            f"operator graph {graph.name!r}: {exc} (zero-latency leaves that hold memory kept apart); with them "
            f"merged, the optimum is at least {low.max_load:.6g} (their memory not counted) and, their memory "
            f"counted, {above}"
        ) from None
    ub = high.max_load if high is not None else _default_bound(apart, devices, ideals)
    sol = _solve_or_retry(apart, devices, ub, ideals)
    if sol is None:
        raise _no_split(graph, devices)
    return partition_result("dp", graph, devices, apart, sol, t0, optimal=True, upper_bound=ub,
                   leaf_memory="leaves apart")
