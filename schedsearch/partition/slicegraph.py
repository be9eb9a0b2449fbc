"""SliceGraph (Archer et al., ICML 2024): segment a topological order optimally.

Max-throughput partitioning asks for an *acyclic* partition of the graph into
at most ``k`` blocks (the quotient graph is a DAG, so the blocks can run as
pipeline stages) minimising the largest block cost, where a block's cost is
its work plus its communication, each tensor counted once per cut: the block
pays the output of every operator whose edge group (the operator and its
consumers) it cuts, as sender or as receiver. This is exactly the
accelerator load of :mod:`schedsearch.partition.cost`, so SliceGraph runs on
the same contracted supernodes as the DP (CPUs, memory limit and
unsupported operators are handled the same way).

Every acyclic partition is a segmentation of some topological order into
contiguous segments, so the problem splits into

1. choosing a topological order ``pi`` (:func:`priority_order`: Kahn's
   algorithm taking the free node of highest priority; random priorities
   for restarts, or evolved by a biased random-key genetic algorithm,
   :func:`brkga`), and
2. segmenting ``pi`` optimally (:func:`slice_order`): a DP over prefixes,
   ``O(n^2 k)`` once every segment cost is known in ``O(1)``.

Segment-cost structure (:class:`SegmentCosts`). With positions in ``pi``,
segment ``[i, j)`` holds positions ``i..j-1``; its work is a prefix-sum
difference. A hyperedge with anchor positions ``a_1 < ... < a_t`` is cut by
``[i, j)`` iff the segment meets it and does not contain it:

* it meets it iff, for the ``r`` with ``a_{r-1} < i <= a_r``, ``j > a_r``:
  ``t`` rectangles ``(i, j) in (a_{r-1}, a_r] x (a_r, n]``;
* it contains it iff ``i <= a_1`` and ``j > a_t``: one rectangle.

Adding ``+c`` on the first rectangles and ``-c`` on the last into a 2-D
difference array and taking prefix sums gives the communication of all
``O(n^2)`` segments in ``O(n^2 + sum_h |A_h|)``.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.options import check_partition_options
from schedsearch.partition._common import ContiguousSolution, partition_result, resolve_workload
from schedsearch.partition.contraction import ContractedGraph, contract, kahn_dfs_order
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload
from schedsearch.partition.result import PartitionResult

__all__ = [
    "SegmentCosts",
    "slice_order",
    "priority_order",
    "kahn_dfs_order",
    "brkga",
    "partition_slicegraph",
]

_INF = math.inf


class SegmentCosts:
    """Cost of every segment ``[i, j)`` of a topological order of supernodes.

    Attributes
    ----------
    accel, cpu:
        ``(n+1, n+1)`` arrays; ``accel[i, j]`` is the accelerator load of
        positions ``i..j-1`` (latency + communication; ``inf`` if over the
        memory limit or holding an operator unsupported there), ``cpu[i, j]``
        its CPU load; 0 for ``i == j``, ``inf`` for ``i > j``.
    """

    def __init__(self, cg: ContractedGraph, order: Sequence[int], max_accel_memory: float | None):
        n = cg.num_nodes
        order = list(order)
        if sorted(order) != list(range(n)):
            raise InvalidOperatorGraphError("slicegraph: order must list every supernode once")
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        for v, ps in enumerate(cg.preds):
            for u in ps:
                if pos[u] > pos[v]:
                    raise InvalidOperatorGraphError(
                        f"slicegraph: order puts supernode {v} before its predecessor {u}"
                    )
        self.n = n
        self.order = tuple(order)

        def prefix(values):
            out = np.zeros(n + 1)
            np.cumsum(np.asarray(values, dtype=float)[order], out=out[1:])
            return out

        acc_p = prefix(cg.accel_latency)
        cpu_p = prefix(cg.cpu_latency)
        size_p = prefix(cg.size)
        bad_p = prefix([0.0 if ok else 1.0 for ok in cg.accel_ok])
        # 2-D difference array of the communication
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []

        def rect(i0: int, i1: int, j0: int, j1: int, c: float) -> None:
            rows.extend((i0, i1 + 1, i0, i1 + 1))
            cols.extend((j0, j0, j1 + 1, j1 + 1))
            vals.extend((c, -c, -c, c))

        for anchors, c in cg.hyperedges:
            a = sorted(int(pos[x]) for x in anchors)
            prev = -1
            for ar in a:
                rect(prev + 1, ar, ar + 1, n, c)
                prev = ar
            rect(0, a[0], a[-1] + 1, n, -c)
        diff = np.zeros((n + 2, n + 2))
        if vals:
            np.add.at(diff, (np.array(rows), np.array(cols)), np.array(vals))
        comm = diff.cumsum(axis=0).cumsum(axis=1)[: n + 1, : n + 1]
        ii = np.arange(n + 1)[:, None]
        jj = np.arange(n + 1)[None, :]
        lower = ii > jj
        work = acc_p[None, :] - acc_p[:, None]
        accel = work + np.maximum(comm, 0.0)
        bad = (bad_p[None, :] - bad_p[:, None]) > 0.5
        if max_accel_memory is not None:
            bad |= (size_p[None, :] - size_p[:, None]) > max_accel_memory
        accel[bad] = _INF
        accel[ii == jj] = 0.0
        accel[lower] = _INF
        cpu = cpu_p[None, :] - cpu_p[:, None]
        cpu[lower] = _INF
        cpu[ii == jj] = 0.0
        self.accel = accel
        self.cpu = cpu


def slice_order(
    cg: ContractedGraph,
    order: Sequence[int],
    devices: DeviceLimits,
    *,
    costs: SegmentCosts | None = None,
) -> ContiguousSolution | None:
    """Optimal segmentation of ``order`` over the devices (Algorithm 1).

    ``dp[c][f][j]`` = best max-load of the first ``j`` positions on ``c``
    CPUs and ``f`` accelerators; one NumPy pass of ``O(n^2)`` per
    ``(c, f)``. Returns None if no segmentation is feasible.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, contract, slice_order
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> solution = slice_order(contract(diamond), [0, 2, 1, 3], DeviceLimits(num_accelerators=2))
    >>> solution.max_load, solution.stages
    (7.0, (('accel', (0, 2)), ('accel', (1, 3))))
    """
    costs = costs if costs is not None else SegmentCosts(cg, order, devices.max_accel_memory)
    n = costs.n
    K, L = devices.num_accelerators, devices.num_cpus
    dp = np.full((L + 1, K + 1, n + 1), _INF)
    arg = np.full((L + 1, K + 1, n + 1), -1, dtype=np.int64)
    kind = np.zeros((L + 1, K + 1, n + 1), dtype=np.int8)  # 1 accel, 2 cpu
    dp[0, 0, 0] = 0.0
    for c in range(L + 1):
        for f in range(K + 1):
            if c == 0 and f == 0:
                continue
            best = np.full(n + 1, _INF)
            if f > 0:
                vals = np.maximum(dp[c, f - 1][:, None], costs.accel)
                a = vals.argmin(axis=0)
                v = vals[a, np.arange(n + 1)]
                take = v < best
                best = np.where(take, v, best)
                arg[c, f] = np.where(take, a, arg[c, f])
                kind[c, f] = np.where(take, 1, kind[c, f])
            if c > 0:
                vals = np.maximum(dp[c - 1, f][:, None], costs.cpu)
                a = vals.argmin(axis=0)
                v = vals[a, np.arange(n + 1)]
                take = v < best
                best = np.where(take, v, best)
                arg[c, f] = np.where(take, a, arg[c, f])
                kind[c, f] = np.where(take, 2, kind[c, f])
            dp[c, f] = best
    value = float(dp[L, K, n])
    if not math.isfinite(value):
        return None
    stages = []
    c, f, j = L, K, n
    while j > 0:
        i = int(arg[c, f, j])
        is_cpu = kind[c, f, j] == 2
        if i < j:
            stages.append(("cpu" if is_cpu else "accel", tuple(costs.order[i:j])))
        if is_cpu:
            c -= 1
        else:
            f -= 1
        j = i
    stages.reverse()
    return ContiguousSolution(
        max_load=value, stages=tuple(stages), num_ideals=n + 1, num_pairs=(n + 1) * n // 2,
        upper_bound=_INF,
    )


def priority_order(cg: ContractedGraph, keys: Sequence[float]) -> list[int]:
    """Kahn's algorithm taking, among free supernodes, the one of highest key."""
    return kahn_order(cg, lambda v: -keys[v])


def kahn_order(cg: ContractedGraph, key: Callable[[int], Any]) -> list[int]:
    """Kahn's algorithm taking, among free supernodes, the one of least ``key`` (called once per
    supernode, when it becomes free; ties by index)."""
    succ = cg.succs()
    indeg = [len(p) for p in cg.preds]
    heap = [(key(v), v) for v in range(cg.num_nodes) if indeg[v] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, v = heapq.heappop(heap)
        order.append(v)
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, (key(w), w))
    return order


@attrs.frozen(kw_only=True)
class _Evaluated:
    value: float
    solution: ContiguousSolution | None
    order: tuple[int, ...]


def _evaluate(cg: ContractedGraph, order: list[int], devices: DeviceLimits) -> _Evaluated:
    sol = slice_order(cg, order, devices)
    return _Evaluated(value=sol.max_load if sol else _INF, solution=sol, order=tuple(order))


def brkga(
    cg: ContractedGraph,
    devices: DeviceLimits,
    *,
    population: int = 20,
    generations: int = 20,
    elite_fraction: float = 0.2,
    mutant_fraction: float = 0.15,
    elite_bias: float = 0.7,
    rng: random.Random,
    seed_orders: Sequence[Sequence[int]] = (),
    time_limit_s: float | None = None,
) -> tuple[_Evaluated, int]:
    """Biased random-key genetic algorithm over topological orders.

    A chromosome is one key per supernode, decoded by :func:`priority_order`
    and scored by :func:`slice_order`. Each generation keeps the elite,
    adds random mutants, and fills the rest with children of one elite and
    one non-elite parent, each key taken from the elite parent with
    probability ``elite_bias``. Returns the best and the number of orders
    evaluated.
    """
    n = cg.num_nodes
    t0 = time.perf_counter()
    n_elite = max(1, int(round(elite_fraction * population)))
    n_mut = max(0, int(round(mutant_fraction * population)))
    pop: list[tuple[list[float], _Evaluated]] = []
    for order in seed_orders:
        keys = [0.0] * n
        for rank, v in enumerate(order):
            keys[v] = 1.0 - rank / max(1, n)
        pop.append((keys, _evaluate(cg, list(order), devices)))
    while len(pop) < population:
        keys = [rng.random() for _ in range(n)]
        pop.append((keys, _evaluate(cg, priority_order(cg, keys), devices)))
    evaluations = len(pop)
    for _ in range(generations):
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            break
        pop.sort(key=lambda kv: kv[1].value)
        elite = pop[:n_elite]
        rest = pop[n_elite:] or elite
        nxt = list(elite)
        for _ in range(n_mut):
            keys = [rng.random() for _ in range(n)]
            nxt.append((keys, _evaluate(cg, priority_order(cg, keys), devices)))
        while len(nxt) < population:
            a = rng.choice(elite)[0]
            b = rng.choice(rest)[0]
            keys = [a[v] if rng.random() < elite_bias else b[v] for v in range(n)]
            nxt.append((keys, _evaluate(cg, priority_order(cg, keys), devices)))
        evaluations += len(nxt) - len(elite)
        pop = nxt
    pop.sort(key=lambda kv: kv[1].value)
    return pop[0][1], evaluations


def partition_slicegraph(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    search: str = "brkga",
    restarts: int = 50,
    population: int = 20,
    generations: int = 20,
    seed: int = 0,
    time_limit_s: float | None = None,
    merge_trivial: bool = True,
) -> PartitionResult:
    """SliceGraph: best segmentation over searched topological orders.

    Parameters
    ----------
    search:
        ``"brkga"`` (default), ``"random"`` (``restarts`` random-priority
        orders) or ``"dfs"`` (only the depth-first Kahn order). The
        depth-first order is always evaluated too, so the result is never
        worse than :func:`~schedsearch.partition.dp.partition_dpl`.
    seed:
        Seed of the random generator (results are reproducible).

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_slicegraph
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_slicegraph(graph, DeviceLimits(num_accelerators=2), search="random", restarts=5)
    >>> result.max_load, [(str(slot), ops) for slot, ops in result.split.stages]
    (7.0, [('accel0', (0, 1)), ('accel1', (2, 3))])
    """
    check_partition_options("partition_slicegraph", {
        "search": search, "restarts": restarts, "population": population, "generations": generations, "seed": seed,
        "time_limit_s": time_limit_s, "merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial, memory_limited=devices.max_accel_memory is not None)
    rng = random.Random(seed)
    base = _evaluate(cg, kahn_dfs_order(cg), devices)
    best = base
    evaluations = 1
    if search == "random":
        for _ in range(restarts):
            if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
                break
            keys = [rng.random() for _ in range(cg.num_nodes)]
            cand = _evaluate(cg, priority_order(cg, keys), devices)
            evaluations += 1
            if cand.value < best.value:
                best = cand
    elif search == "brkga":
        cand, ev = brkga(
            cg, devices, population=population, generations=generations, rng=rng,
            seed_orders=[base.order], time_limit_s=time_limit_s,
        )
        evaluations += ev
        if cand.value < best.value:
            best = cand
    if best.solution is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no feasible split found on "
            f"{devices.num_accelerators} accelerators and {devices.num_cpus} CPUs"
        )
    return partition_result(
        "slicegraph", graph, devices, cg, best.solution, t0, optimal=False,
        orders_evaluated=evaluations, search=search,
    )
