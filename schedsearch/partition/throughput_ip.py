"""Lower bounds for max-throughput partitioning (Archer et al., ICML 2024).

The problem (MTPP): split an operator graph into at most ``k`` blocks on
``k`` identical accelerators so that the quotient graph is acyclic (the
blocks run as pipeline stages) and the largest block cost is minimal; a
block costs its work plus every tensor it sends or receives (the
accelerator load of :mod:`schedsearch.partition.cost`, memory limit and
unsupported operators included). SliceGraph / BRKGA
(:func:`~schedsearch.partition.slicegraph.partition_slicegraph`) finds good
partitions; the functions here prove how good, each returning a
:class:`ThroughputBound` with the lower bound and the best partition known.

Units are the forward supernodes of
:func:`~schedsearch.partition.contraction.contract` *without* the trivial-leaf
merge (colocation classes and forward cycles must share a block in any
acyclic split, so those merges lose nothing; the leaf merge could, so it is
off and the bounds hold for the original graph).

:func:`simple_bound`
    ``max(total work / k, largest unit work)``: no solver.
:func:`exact_mip`
    The exact MIP: ``k`` ordered blocks, cumulative ideal variables, the
    send/receive rows of the IPs in :mod:`schedsearch.partition.partition_ip`
    (it *is* :func:`~schedsearch.partition.partition_ip.contiguous_ip` with no
    CPUs). Its dual bound is a lower bound, its solution a partition.
:func:`three_superblock_mip`
    A relaxation with ``3n`` binaries instead of ``kn``: every unit goes to
    the prefix ``P``, the middle block ``B`` or the suffix ``S``, with ``P``
    and ``P + B`` ideals; an integer ``a`` (one binary ``z_j`` per value)
    is the number of blocks in ``P``::

        cost(B) <= T
        cost(P) <= a T,   cost(S) <= (k - 1 - a) T        (one row per j, big-M)
        size(P) <= a M,   size(B) <= M,   size(S) <= (k - 1 - a) M

    where ``cost(X)`` = work of ``X`` + cost of every edge group ``X`` cuts.
    Valid because any acyclic ``k``-split, cut after its ``a``-th and
    ``(a+1)``-th blocks, gives such a triple: every group the union ``P``
    cuts is cut by at least one of ``P``'s blocks, which pays it, and the
    loads of ``P``'s blocks sum to at most ``a T``.
:func:`bottleneck_guess_mip`
    The same triple with ``a`` fixed, solved for every ``a = 0..k-1``.
    Every block position of an optimal split gives a feasible triple, so
    *each* of these MIPs is a lower bound and so is their **maximum**
    (guessing the position of the bottleneck block and keeping the worst
    guess); each is smaller than the free-``a`` model, hence faster.

Every MIP runs with a time limit; a MIP that does not finish still gives
its dual bound, which is what is reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from schedsearch.bounds.mip import MipModel, MipOptions, MipResult, solve_mip
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition._contiguous_model import (
    Units,
    build_contiguous,
    containing_block_bounds,
    contig_hint,
    split_from_units,
    stages_of_split,
    units_of,
)
from schedsearch.partition.contraction import ContractedGraph, contract
from schedsearch.partition.cost import SplitCost, evaluate_split
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload, Slot, Split
from schedsearch.result import Status

__all__ = [
    "ThroughputBound",
    "simple_bound",
    "exact_mip",
    "three_superblock_mip",
    "bottleneck_guess_mip",
    "slicegraph_incumbent",
    "block_bound",
    "family_dp_incumbent",
    "certified_bound",
    "subposet_bound",
]


@attrs.frozen(kw_only=True)
class ThroughputBound:
    """A lower bound on the MTPP optimum and the best partition known.

    ``ratio`` = lower bound / best value (1 = proven optimal), the figure
    Archer et al. report.

    Examples
    --------
    A bound of 6 on a best partition of 7.5 leaves at most 20% to gain:

    >>> from schedsearch.partition import ThroughputBound
    >>> from schedsearch.result import Status
    >>> bound = ThroughputBound(method="exact", k=2, lower_bound=6.0, best_split=None, best_value=7.5,
    ...                         status=Status.FEASIBLE, wall_time_s=0.0)
    >>> bound.ratio
    0.8
    """

    method: str
    k: int
    lower_bound: float
    best_split: Split | None
    best_value: float | None
    status: Status
    wall_time_s: float
    cost: SplitCost | None = None
    mips: tuple[MipResult, ...] = ()
    stats: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.best_value is None or self.best_value <= 0:
            return None
        return min(1.0, self.lower_bound / self.best_value)

    @property
    def gap(self) -> float | None:
        r = self.ratio
        return None if r is None else 1.0 - r

    def __str__(self) -> str:
        parts = [f"{self.method} (k={self.k}): lower bound {self.lower_bound:.6g}"]
        if self.best_value is not None:
            parts.append(f"best {self.best_value:.6g}")
        if self.ratio is not None:
            parts.append(f"ratio {self.ratio:.4f}")
        parts.append(f"{self.status.value}, {self.wall_time_s:.2f} s")
        return ", ".join(parts)


def _setup(graph: OperatorGraph | PartitionWorkload, k: int, max_accel_memory: float | None):
    if isinstance(graph, PartitionWorkload):
        if max_accel_memory is None:
            max_accel_memory = graph.devices.max_accel_memory
        graph = graph.graph
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidOperatorGraphError(f"max-throughput bounds: 'k' must be an int >= 1, got {k!r}")
    devices = DeviceLimits(num_accelerators=k, num_cpus=0, max_accel_memory=max_accel_memory)
    cg = contract(graph, merge_trivial=False)
    units = units_of(graph, cg.members)
    return graph, devices, cg, units


def simple_bound(graph: OperatorGraph | PartitionWorkload, k: int) -> float:
    """``max(total accelerator work / k, largest unit's work)`` (no communication).

    A bound with no solver, the baseline the MIP bounds are compared with.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, simple_bound
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t) for i, t in enumerate([4, 2, 3, 3])],
    ...                       edges=[(0, 1), (1, 2), (2, 3)])
    >>> simple_bound(graph, 2), simple_bound(graph, 4)  # 12 / 2; the largest layer
    (6.0, 4.0)
    """
    graph, _, _, units = _setup(graph, k, None)
    total = math.fsum(units.accel)
    return max(total / k, max(units.accel, default=0.0))


def slicegraph_incumbent(
    graph: OperatorGraph | PartitionWorkload, k: int, *, max_accel_memory: float | None = None,
    seed: int = 0, **slicegraph_options: Any,
) -> Split | None:
    """The SliceGraph / BRKGA partition on ``k`` accelerators (None if none is feasible)."""
    from schedsearch.partition.slicegraph import partition_slicegraph

    g, devices, _, _ = _setup(graph, k, max_accel_memory)
    try:
        return partition_slicegraph(g, devices, seed=seed, **slicegraph_options).split
    except InvalidOperatorGraphError:
        return None


def _best(graph: OperatorGraph, devices: DeviceLimits, splits: Sequence[Split | None]) -> tuple[Split | None, float | None, SplitCost | None]:
    best = (None, None, None)
    for sp in splits:
        if sp is None:
            continue
        cost = evaluate_split(graph, sp, devices)
        if not cost.feasible:
            continue
        if best[1] is None or cost.max_load < best[1]:
            best = (sp, cost.max_load, cost)
    return best


def _resolve_incumbent(graph, k, max_mem, incumbent, seed):
    if incumbent == "slicegraph":
        return slicegraph_incumbent(graph, k, max_accel_memory=max_mem, seed=seed)
    return incumbent


def exact_mip(
    graph: OperatorGraph | PartitionWorkload,
    k: int,
    *,
    incumbent: str | Split | None = "slicegraph",
    max_accel_memory: float | None = None,
    strengthen: bool = False,
    lower_bound: float = 0.0,
    options: MipOptions | None = None,
    **overrides: Any,
) -> ThroughputBound:
    """The exact MTPP MIP on ``k`` accelerators, warm-started from ``incumbent``.

    ``incumbent``: ``"slicegraph"`` (default: BRKGA with its default
    budget), a split, or None.

    ``strengthen``: add the block bounds of :func:`block_bound` (per unit:
    every block holding it has at least that load) to the unit rows and to
    ``T``'s lower bound, cap ``T`` at the incumbent's max-load and keep
    every unit out of the slots its ancestors or descendants cannot fit
    around at that load (only splits worse than the incumbent are cut off;
    the incumbent stays an answer). Valid for any graph and memory limit.
    Off by default: the plain model of Archer et al.

    ``lower_bound``: a lower bound proven elsewhere (e.g. by
    :func:`subposet_bound`), given to ``T`` as its least value.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, exact_mip
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = exact_mip(graph, 3, time_limit_s=10)
    >>> bound.status.value, bound.lower_bound, bound.best_value
    ('OPTIMAL', 7.0, 7.0)
    """
    t0 = time.perf_counter()
    options = MipOptions.resolve(options, overrides, "exact_mip")
    mem = max_accel_memory
    g, devices, cg, units = _setup(graph, k, mem)
    inc = _resolve_incumbent(graph, k, devices.max_accel_memory, incumbent, options.seed)
    lower, bounds, upper = 0.0, None, None
    if strengthen:
        _, upper, _ = _best(g, devices, [inc])
        bounds = containing_block_bounds(units, threshold=simple_bound(g, k),
                                          time_limit_s=_bound_seconds(options))
        lower = max(max(bounds, default=0.0), simple_bound(g, k))
    lower = max(lower, float(lower_bound))
    model = build_contiguous(units, cg.preds, devices, f"MTPP exact {g.name} k={k}",
                              block_bounds=bounds, lower=lower, upper=upper)
    if inc is not None:
        stages = stages_of_split(units, inc)
        if stages is not None:
            hint = contig_hint(model, stages, devices)
            if hint is not None:
                model.mip.set_hint(hint)
    res = solve_mip(model.mip, options)
    found = None
    if res.values is not None:
        vals = res.values
        order = [Slot(kind="accel", index=s) for s in range(model.num_slots)]
        unit_slot = []
        for i in range(len(units.members)):
            s = max(range(model.num_slots), key=lambda s_: vals[model.xa[i][s_]])
            unit_slot.append(order[s])
        found = split_from_units(units, unit_slot, order)
    split, value, cost = _best(g, devices, [found, inc])
    bound = res.best_bound if res.best_bound is not None and res.status is not Status.INFEASIBLE else 0.0
    bound = max(bound, simple_bound(g, k), lower)
    if value is not None:
        bound = min(bound, value)
    status = res.status
    if value is not None:
        if bound >= value * (1 - options.relative_gap) - 1e-12:
            status = Status.OPTIMAL
        elif status in (Status.TIMEOUT, Status.UNKNOWN, Status.INFEASIBLE):
            status = Status.FEASIBLE
    return ThroughputBound(
        method="exact", k=k, lower_bound=bound, best_split=split, best_value=value, status=status,
        wall_time_s=time.perf_counter() - t0, cost=cost, mips=(res,),
        stats={"units": len(units.members), "mip": str(model.mip), "strengthened": strengthen,
               "lower_bound_before_mip": lower},
    )


def _bound_seconds(options: MipOptions) -> float:
    limit = options.time_limit_s
    return 30.0 if limit is None else min(30.0, 0.1 * limit)


def block_bound(graph: OperatorGraph | PartitionWorkload, k: int, *, time_limit_s: float | None = None) -> float:
    """:func:`simple_bound` raised by the least load of any block holding each unit.

    For every unit ``v``, ``min`` over sets ``B`` holding ``v`` of work +
    communication cut by ``B`` is a minimum cut (contiguity and the memory
    limit are dropped, so it is a relaxation); the block of the optimal
    partition that holds ``v`` costs at least that much. Units are taken in
    decreasing singleton load until none can raise the maximum (or after
    ``time_limit_s``, when the maximum so far is still a bound).

    Examples
    --------
    A heavy layer sending 3 to each of two consumers: whatever holds it
    either holds them too or pays the transfer.

    >>> from schedsearch.partition import Operator, OperatorGraph, block_bound, simple_bound
    >>> graph = OperatorGraph(operators=[Operator(id=0, accel_latency=6, output_cost=3.0),
    ...                                  Operator(id=1, accel_latency=4), Operator(id=2, accel_latency=4)],
    ...                       edges=[(0, 1), (0, 2)])
    >>> simple_bound(graph, 3), round(block_bound(graph, 3), 6)  # 6 alone + 3 sent
    (6.0, 9.0)
    """
    g, _, _, units = _setup(graph, k, None)
    simple = simple_bound(g, k)
    bounds = containing_block_bounds(units, threshold=simple, only_max=True, time_limit_s=time_limit_s)
    return max(simple, max(bounds, default=0.0))


def _random_order(cg: ContractedGraph, rng, block_of: Sequence[int] | None = None) -> list[int]:
    """A random topological order (blocks of ``block_of`` in their order, if given)."""
    from schedsearch.partition.slicegraph import kahn_order

    return kahn_order(cg, (lambda v: (block_of[v], rng.random())) if block_of is not None
                      else (lambda v: (0, rng.random())))


def family_dp_incumbent(
    graph: OperatorGraph | PartitionWorkload, k: int, *, max_accel_memory: float | None = None,
    orders: int = 24, rounds: int = 8, time_limit_s: float | None = 20.0, seed: int = 0,
) -> Split | None:
    """A contiguous split from the exact DP over a sampled family of ideals.

    Each round draws ``orders`` random topological orders of the units and
    runs the DP of :mod:`schedsearch.partition.dp` on the union of their
    prefixes (every ideal of the family is an ideal, so the answer is a
    valid acyclic split). From the second round on, half the orders keep
    the blocks of the best split so far in their order (so the family holds
    its chain and the answer never gets worse) and shuffle inside them.
    Stops after ``rounds`` rounds or ``time_limit_s`` seconds; None if no
    split was feasible.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, family_dp_incumbent
    >>> from schedsearch.partition.cost import evaluate_split
    >>> from schedsearch.partition.opgraph import DeviceLimits
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> split = family_dp_incumbent(graph, 2)
    >>> evaluate_split(graph, split, DeviceLimits(num_accelerators=2, num_cpus=0)).max_load
    7.0
    """
    import random

    from schedsearch.partition._common import split_of_stages
    from schedsearch.partition.dp import solve_contracted

    t0 = time.perf_counter()
    g, devices, cg, _ = _setup(graph, k, max_accel_memory)
    rng = random.Random(seed)
    n = cg.num_nodes
    best = None
    block_of = None
    for r in range(rounds):
        if time_limit_s is not None and r and time.perf_counter() - t0 > time_limit_s:
            break
        family = {0, (1 << n) - 1}
        for j in range(orders):
            order = _random_order(cg, rng, block_of if (block_of is not None and j % 2 == 0) else None)
            bits = 0
            for v in order:
                bits |= 1 << v
                family.add(bits)
        if best is not None:
            bits = 0
            for _, vs in best.stages:
                for v in vs:
                    bits |= 1 << v
                family.add(bits)
        ub = best.max_load if best is not None else math.inf
        sol = solve_contracted(cg, devices, upper_bound=ub, ideals=sorted(family))
        if sol is not None and (best is None or sol.max_load < best.max_load):
            best = sol
            block_of = [0] * n
            for b, (_, vs) in enumerate(best.stages):
                for v in vs:
                    block_of[v] = b
    return None if best is None else split_of_stages(cg, best.stages)


def _sub_poset(cg: ContractedGraph, keep: Sequence[int]) -> ContractedGraph:
    """The units ``keep`` under the order they inherit (paths through dropped units kept).

    Hyperedges keep their anchors in ``keep`` (dropped if fewer than two
    remain); the memory sizes are kept but unused by the bound.
    """
    keep = sorted(keep)
    idx = {v: i for i, v in enumerate(keep)}
    anc = [0] * cg.num_nodes
    for v in range(cg.num_nodes):
        bits = 0
        for u in cg.preds[v]:
            bits |= anc[u] | (1 << u)
        anc[v] = bits
    preds = []
    for v in keep:
        below = [u for u in keep if u < v and anc[v] >> u & 1]
        # covering relations only (the order is the same, the lattice walk cheaper)
        preds.append(tuple(idx[u] for u in below if not any(w != u and anc[w] >> u & 1 for w in below)))
    hyper = []
    for anchors, c in cg.hyperedges:
        a = tuple(idx[x] for x in anchors if x in idx)
        if len(a) >= 2:
            hyper.append((a, c))
    return ContractedGraph(
        members=tuple((v,) for v in keep), preds=tuple(preds),
        accel_latency=tuple(cg.accel_latency[v] for v in keep), cpu_latency=tuple(cg.cpu_latency[v] for v in keep),
        size=tuple(cg.size[v] for v in keep), accel_ok=tuple(cg.accel_ok[v] for v in keep),
        hyperedges=tuple(hyper), anchor={},
    )


def _chain_ranking(cg: ContractedGraph, weight: Sequence[float], max_chains: int = 32) -> list[int]:
    """Units ranked chain by chain: the heaviest chain of the order, then the heaviest of the rest, ...

    A set made of ``w`` chains has at most ``prod (len + 1)`` ideals, so
    prefixes of this ranking keep much more weight within an ideal limit
    than a ranking by weight alone. After ``max_chains`` chains the rest
    follow by decreasing weight.
    """
    n = cg.num_nodes
    anc = [0] * n
    for v in range(n):
        bits = 0
        for u in cg.preds[v]:
            bits |= anc[u] | (1 << u)
        anc[v] = bits
    left = (1 << n) - 1
    order: list[int] = []
    for _ in range(max_chains):
        if not left:
            break
        best = [-math.inf] * n
        prev = [-1] * n
        for v in range(n):
            if not left >> v & 1:
                continue
            below = anc[v] & left
            b, arg = 0.0, -1
            while below:
                low = below & -below
                u = low.bit_length() - 1
                if best[u] > b:
                    b, arg = best[u], u
                below ^= low
            best[v], prev[v] = weight[v] + b, arg
        v = max(range(n), key=lambda x: best[x])
        chain = []
        while v >= 0:
            chain.append(v)
            v = prev[v]
        for v in reversed(chain):
            order.append(v)
            left &= ~(1 << v)
    rest = [v for v in range(n) if left >> v & 1]
    return order + sorted(rest, key=lambda v: (-weight[v], v))


def subposet_bound(
    graph: OperatorGraph | PartitionWorkload,
    k: int,
    *,
    upper: float | None = None,
    lower: float | None = None,
    ideal_limit: int = 6000,
    time_limit_s: float | None = 20.0,
) -> float:
    """A lower bound from the exact DP on the heaviest units, the rest as fluid work.

    Keep a set ``V'`` of units (chain by chain, the heaviest chain of work
    plus incident communication first, as many as keep at most
    ``ideal_limit`` ideals) under the order they inherit, with each hyperedge cut down to its anchors in
    ``V'``. Any acyclic ``k``-split of the graph, restricted to ``V'``, is
    a chain of ideals of ``V'`` whose blocks cost no more than the
    original blocks less the work of their dropped units (a cut of the
    restricted hyperedge is a cut of the original). So if the optimum is
    ``T*``, some chain of at most ``k`` blocks on ``V'`` has every block
    cost at most ``T*`` and total cost plus the dropped work at most
    ``k T*``. For a trial ``T`` a DP over the ideals of ``V'`` finds the
    least total cost of chains with blocks at most ``T``; when that plus
    the dropped work exceeds ``k T`` (or no chain exists), ``T*`` exceeds
    ``T``: each failed trial is a proof on its own. ``T`` is bisected
    between ``lower`` (default :func:`simple_bound`) and ``upper`` (default:
    the linear-order DP's max-load, which is a feasible split's) until
    they meet within 0.1% or ``time_limit_s``; the largest failed trial is
    returned (``lower`` if none failed). Trials are judged feasible
    generously (a relative 1e-9), so rounding never makes one fail wrongly.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, simple_bound, subposet_bound
    >>> ops = [Operator(id=i, accel_latency=1.0, output_cost=1.0) for i in range(8)]
    >>> chain = OperatorGraph(operators=ops, edges=[(i, i + 1) for i in range(7)])
    >>> simple_bound(chain, 4), subposet_bound(chain, 4, upper=4.0) > 3.9  # the optimum is 4
    (2.0, True)
    """
    return _subposet(graph, k, upper=upper, lower=lower, ideal_limit=ideal_limit, time_limit_s=time_limit_s)[0]


def _subposet(graph, k, *, upper, lower, ideal_limit, time_limit_s) -> tuple[float, float]:
    """:func:`subposet_bound` and the share of the work it dropped to fluid (1 if it ran none)."""
    import numpy as np

    from schedsearch.partition.contraction import linearize
    from schedsearch.partition._common import IdealTable
    from schedsearch.partition.dp import solve_contracted
    from schedsearch.partition.ideals import IdealLimitExceeded, enumerate_ideals

    t0 = time.perf_counter()
    g, devices, cg, _ = _setup(graph, k, None)
    lo = simple_bound(g, k) if lower is None else float(lower)
    if upper is None:
        chain = solve_contracted(linearize(cg), devices)
        if chain is None:
            return lo, 1.0
        upper = chain.max_load
    hi = float(upper)
    if not all(cg.accel_ok) or hi <= lo:
        return lo, 1.0
    n = cg.num_nodes
    touch = [0.0] * n
    for anchors, c in cg.hyperedges:
        for a in anchors:
            touch[a] += c
    ranked = _chain_ranking(cg, [cg.accel_latency[v] + touch[v] for v in range(n)])
    # the largest prefix of the ranking within the ideal limit (bisection on its length)
    best_sub, best_ideals = None, None
    a, b = 1, n
    while a <= b:
        m = (a + b) // 2
        sub = _sub_poset(cg, ranked[:m])
        try:
            ideals = enumerate_ideals(sub.preds, limit=ideal_limit)
        except IdealLimitExceeded:
            b = m - 1
            continue
        best_sub, best_ideals, a = sub, ideals, m + 1
    if best_sub is None:
        return lo, 1.0
    sub = best_sub
    dropped = math.fsum(cg.accel_latency) - math.fsum(sub.accel_latency)
    share = dropped / max(math.fsum(cg.accel_latency), 1e-300)
    table = IdealTable(sub, best_ideals, None)
    N, W = table.N, table.W
    alive = np.ones(N, dtype=bool)
    cap = hi * (1 + 1e-9) + 1e-12
    pairs = []
    for p in range(N):
        if p == 0:
            pairs.append(None)
            continue
        first = int(np.searchsorted(W, W[p] - cap, side="left"))
        cand, fcost, _ = table.candidates(p, first, p, alive)
        keep = fcost <= cap
        pairs.append((cand[keep], fcost[keep]))
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            return lo, share

    def feasible(T: float) -> bool:
        tol = T * (1 + 1e-9) + 1e-12
        dp = np.full((N, k + 1), math.inf)
        dp[0, :] = 0.0
        for p in range(1, N):
            cand, fcost = pairs[p]
            ok = fcost <= tol
            if not ok.any():
                continue
            c, f = cand[ok], fcost[ok]
            new = np.empty(k + 1)
            new[0] = math.inf
            new[1:] = (dp[c, :k] + f[:, None]).min(axis=0)
            np.minimum.accumulate(new, out=new)
            dp[p] = new
        total = dp[N - 1, k]
        return bool(total + dropped <= k * tol)

    while hi - lo > 1e-3 * hi:
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            break
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return lo, share


def certified_bound(
    graph: OperatorGraph | PartitionWorkload,
    k: int,
    *,
    time_limit_s: float = 60.0,
    max_accel_memory: float | None = None,
    ideal_limit: int = 20_000,
    seed: int = 0,
    options: MipOptions | None = None,
    **overrides: Any,
) -> ThroughputBound:
    """Every bound and heuristic here within one time budget; the best of each.

    In order: :func:`simple_bound` and :func:`block_bound`; the exact DP of
    :func:`~schedsearch.partition.dp.partition_dp` (same units, no leaf
    merge) where the DAG has at most ``ideal_limit`` ideals, which proves
    the optimum outright; otherwise SliceGraph and
    :func:`family_dp_incumbent` for the best partition, :func:`subposet_bound`
    on 4,000, 16,000 then 64,000 ideals while more than a quarter of the
    time is left and the last run dropped at most a quarter of the work,
    then, unless the bound already meets the best partition, the
    strengthened :func:`exact_mip` for the time left (at least 5 s). The
    lower bound is the largest proven, the partition the best found; its
    value is recomputed from the partition. ``stats["sources"]`` says
    which method gave each. When the exact DP runs and finds no split within
    ``max_accel_memory``, no partition exists: the status is ``INFEASIBLE``
    at once (lower bound ``inf``, no partition).

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, certified_bound
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = certified_bound(graph, 3, time_limit_s=10)
    >>> bound.status.value, bound.lower_bound, bound.best_value, bound.stats["sources"]["lower"]
    ('OPTIMAL', 7.0, 7.0, 'dp')
    """
    from schedsearch.partition._common import split_of_stages
    from schedsearch.partition.dp import solve_contracted
    from schedsearch.partition.ideals import IdealLimitExceeded, enumerate_ideals

    t0 = time.perf_counter()
    options = MipOptions.resolve(options, overrides, "certified_bound")
    g, devices, cg, units = _setup(graph, k, max_accel_memory)
    lower = simple_bound(g, k)
    sources = {"lower": "simple", "best": None}
    blk = block_bound(g, k, time_limit_s=min(10.0, 0.15 * time_limit_s))
    if blk > lower:
        lower, sources["lower"] = blk, "block"
    candidates: list[tuple[str, Split | None]] = []
    try:
        ideals = enumerate_ideals(cg.preds, limit=ideal_limit)
    except IdealLimitExceeded:
        ideals = None
    mips: tuple[MipResult, ...] = ()
    if ideals is not None:
        sol = solve_contracted(cg, devices, ideals=ideals)
        if sol is None:
            # the exact DP over every ideal found no split within the memory: no partition exists
            return ThroughputBound(
                method="certified", k=k, lower_bound=math.inf, best_split=None, best_value=None,
                status=Status.INFEASIBLE, wall_time_s=time.perf_counter() - t0,
                stats={"units": len(units.members), "sources": {"lower": "dp", "best": None},
                       "ideals": len(ideals), "candidates": {}},
            )
        candidates.append(("dp", split_of_stages(cg, sol.stages)))
        exact = _best(g, devices, [candidates[-1][1]])[1]
        if exact is not None and exact > lower:
            # the DP is exact: its optimum is a lower bound (recomputed from its split)
            lower, sources["lower"] = min(exact, sol.max_load * (1 + 1e-12)), "dp"
    if not candidates:
        remaining = lambda: time_limit_s - (time.perf_counter() - t0)  # noqa: E731
        met = lambda value: value is not None and lower >= value * (1 - options.relative_gap)  # noqa: E731
        candidates.append(("slicegraph", slicegraph_incumbent(g, k, max_accel_memory=devices.max_accel_memory,
                                                              seed=seed)))
        if not met(_best(g, devices, [candidates[-1][1]])[1]):
            candidates.append(("family-dp", family_dp_incumbent(g, k, max_accel_memory=devices.max_accel_memory,
                                                                time_limit_s=max(1.0, 0.25 * remaining()),
                                                                seed=seed)))
        inc, inc_value, _ = _best(g, devices, [c for _, c in candidates])
        # the sub-poset DP on growing unit sets while a quarter of the time is left (each a bound on its
        # own); a larger set only while the last one dropped at most a quarter of the work to fluid
        # (beyond that the MIP makes better use of the time)
        for limit in (4_000, 16_000, 64_000):
            if inc_value is None or remaining() < 0.25 * time_limit_s or met(inc_value):
                break
            sub, share = _subposet(g, k, upper=inc_value, lower=lower, ideal_limit=limit,
                                   time_limit_s=max(1.0, remaining() - 0.25 * time_limit_s))
            if sub > lower:
                lower, sources["lower"] = sub, f"subposet-{limit}"
            if share > 0.25:
                break
        if not met(inc_value):
            ex = exact_mip(g, k, incumbent=inc, max_accel_memory=devices.max_accel_memory, strengthen=True,
                           lower_bound=lower, options=attrs.evolve(options, time_limit_s=max(5.0, remaining())))
            mips = ex.mips
            candidates.append(("exact-mip", ex.best_split))
            if ex.lower_bound > lower:
                lower, sources["lower"] = ex.lower_bound, "exact-mip"
    split, value, cost = _best(g, devices, [c for _, c in candidates])
    for name, c in candidates:
        if c is split:
            sources["best"] = name
            break
    if value is not None:
        lower = min(lower, value)
    proven = value is not None and lower >= value * (1 - options.relative_gap) - 1e-12
    status = Status.OPTIMAL if proven else (Status.FEASIBLE if value is not None else Status.TIMEOUT)
    return ThroughputBound(
        method="certified", k=k, lower_bound=lower, best_split=split, best_value=value, status=status,
        wall_time_s=time.perf_counter() - t0, cost=cost, mips=mips,
        stats={"units": len(units.members), "sources": sources,
               "ideals": None if ideals is None else len(ideals),
               "candidates": {name: _best(g, devices, [c])[1] for name, c in candidates}},
    )


# ---------------------------------------------------------------- superblocks
def _build_superblocks(units: Units, cg: ContractedGraph, devices: DeviceLimits, k: int, a_fixed: int | None,
                       upper: float | None, name: str) -> tuple[MipModel, int]:
    n = len(units.members)
    m = MipModel(name)
    p = [m.new_binary(f"P[{i}]") for i in range(n)]
    b = [m.new_binary(f"B[{i}]") for i in range(n)]
    s = [m.new_binary(f"S[{i}]") for i in range(n)]
    for i in range(n):
        m.add_eq([(p[i], 1.0), (b[i], 1.0), (s[i], 1.0)], 1.0)
        if not units.accel_ok[i]:
            for v in (p[i], b[i], s[i]):
                m.fix(v, 0.0)
    for v, ps in enumerate(cg.preds):
        for u in ps:
            m.add_le([(p[v], 1.0), (p[u], -1.0)], 0.0)  # P is an ideal
            m.add_le([(s[u], 1.0), (s[v], -1.0)], 0.0)  # P + B is an ideal: u in S => v in S
    total_work = math.fsum(units.accel)
    total_comm = math.fsum(c for _, _, c in units.groups)
    big = total_work + 2 * total_comm
    hi = upper * (1 + 1e-6) + 1e-9 if upper is not None and math.isfinite(upper) else big
    t = m.new_continuous(0.0, hi, "T")

    def cost_terms(x: list[int], label: str) -> list[tuple[int, float]]:
        terms = [(x[i], units.accel[i]) for i in range(n) if units.accel[i]]
        for h, (src, others, c) in enumerate(units.groups):
            snd = m.new_continuous(0.0, 1.0, f"send{label}[{h}]")
            rcv = m.new_continuous(0.0, 1.0, f"recv{label}[{h}]")
            for o in others:
                m.add_ge([(snd, 1.0), (x[src], -1.0), (x[o], 1.0)], 0.0)
                m.add_ge([(rcv, 1.0), (x[o], -1.0), (x[src], 1.0)], 0.0)
            terms += [(snd, c), (rcv, c)]
        return terms

    cb, cp, cs = cost_terms(b, "B"), cost_terms(p, "P"), cost_terms(s, "S")
    m.add_ge([(t, 1.0)] + [(v, -c) for v, c in cb], 0.0, "cost(B) <= T")
    t_floor = max(units.accel, default=0.0)
    m.lb[t] = max(m.lb[t], t_floor)
    cap = devices.max_accel_memory
    if a_fixed is not None:
        a_vals = [a_fixed]
    else:
        a_vals = list(range(k))
    z = {}
    if a_fixed is None:
        for j in a_vals:
            z[j] = m.new_binary(f"a={j}")
        m.add_eq([(v, 1.0) for v in z.values()], 1.0)
    for j in a_vals:
        before, after = j, k - 1 - j
        # cost(P) <= j T  and cost(S) <= (k-1-j) T, enforced when a = j
        for terms, blocks, label in ((cp, before, "P"), (cs, after, "S")):
            row = [(t, float(blocks))] + [(v, -c) for v, c in terms]
            if a_fixed is None:
                m.add_ge(row + [(z[j], -big)], -big, f"cost({label}) <= {blocks} T")
            else:
                m.add_ge(row, 0.0, f"cost({label}) <= {blocks} T")
    if cap is not None:
        sizes = units.size
        scale = cap if cap > 0 else 1.0
        m.add_le([(b[i], sizes[i] / scale) for i in range(n) if sizes[i]], 1.0 if cap > 0 else 0.0)
        for x, side in ((p, "P"), (s, "S")):
            terms = [(x[i], sizes[i] / scale) for i in range(n) if sizes[i]]
            if not terms:
                continue
            if a_fixed is None:
                count = [(z[j], -(float(j) if side == "P" else float(k - 1 - j))) for j in a_vals]
                m.add_le(terms + count, 0.0)
            else:
                blocks = a_fixed if side == "P" else k - 1 - a_fixed
                m.add_le(terms, float(blocks))
    m.minimize([(t, 1.0)])
    return m, t


def three_superblock_mip(
    graph: OperatorGraph | PartitionWorkload,
    k: int,
    *,
    incumbent: str | Split | None = "slicegraph",
    max_accel_memory: float | None = None,
    options: MipOptions | None = None,
    **overrides: Any,
) -> ThroughputBound:
    """The three-superblock relaxation with the number of prefix blocks free.

    Smaller than the exact MIP, so it answers on larger graphs; its bound
    may be weaker.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, three_superblock_mip
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = three_superblock_mip(graph, 3, time_limit_s=10)
    >>> bound.lower_bound <= bound.best_value == 7.0
    True
    """
    t0 = time.perf_counter()
    options = MipOptions.resolve(options, overrides, "three_superblock_mip")
    g, devices, cg, units = _setup(graph, k, max_accel_memory)
    inc = _resolve_incumbent(graph, k, devices.max_accel_memory, incumbent, options.seed)
    split, value, cost = _best(g, devices, [inc])
    model, _ = _build_superblocks(units, cg, devices, k, None, value, f"MTPP three-superblock {g.name} k={k}")
    res = solve_mip(model, options)
    return _relaxation_result("three-superblock", g, k, [res], split, value, cost, t0, str(model))


def bottleneck_guess_mip(
    graph: OperatorGraph | PartitionWorkload,
    k: int,
    *,
    incumbent: str | Split | None = "slicegraph",
    max_accel_memory: float | None = None,
    positions: Sequence[int] | None = None,
    options: MipOptions | None = None,
    **overrides: Any,
) -> ThroughputBound:
    """The three-superblock MIP for every position of the middle block; the maximum.

    ``positions`` restricts the positions solved (default ``0..k-1``); the
    time limit applies to each MIP.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, bottleneck_guess_mip
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = bottleneck_guess_mip(graph, 3, time_limit_s=10)
    >>> bound.method, bound.lower_bound, bound.best_value
    ('bottleneck-guess', 7.0, 7.0)
    """
    t0 = time.perf_counter()
    options = MipOptions.resolve(options, overrides, "bottleneck_guess_mip")
    g, devices, cg, units = _setup(graph, k, max_accel_memory)
    inc = _resolve_incumbent(graph, k, devices.max_accel_memory, incumbent, options.seed)
    split, value, cost = _best(g, devices, [inc])
    results = []
    for a in positions if positions is not None else range(k):
        if not 0 <= a < k:
            raise InvalidOperatorGraphError(f"bottleneck guess: position {a} is not in 0..{k - 1}")
        model, _ = _build_superblocks(units, cg, devices, k, a, value, f"MTPP guess {g.name} k={k} a={a}")
        res = solve_mip(model, options)
        results.append(res)
        bound_so_far = max((r.best_bound for r in results if r.best_bound is not None), default=None)
        if value is not None and bound_so_far is not None and bound_so_far >= value * (1 - options.relative_gap):
            break  # the incumbent is proven optimal
    return _relaxation_result("bottleneck-guess", g, k, results, split, value, cost, t0, f"{len(results)} MIPs",
                              combine=max)


def _relaxation_result(method, g, k, results, split, value, cost, t0, mip_text, combine=min) -> ThroughputBound:
    bounds = [r.best_bound for r in results]
    simple = simple_bound(g, k)
    if combine is min:
        # a single relaxation: its dual bound (or nothing proven)
        lb = bounds[0] if bounds and bounds[0] is not None else simple
    else:
        known = [b for b in bounds if b is not None]
        lb = max(known) if known else simple
    lb = max(lb, simple)
    if value is not None:
        lb = min(lb, value)
    proven = value is not None and lb >= value * (1 - 1e-4)
    status = Status.OPTIMAL if proven else (Status.FEASIBLE if value is not None else Status.TIMEOUT)
    return ThroughputBound(
        method=method, k=k, lower_bound=lb, best_split=split, best_value=value, status=status,
        wall_time_s=time.perf_counter() - t0, cost=cost, mips=tuple(results),
        stats={"units": len(g.operators), "mip": mip_text,
               "mip_statuses": [r.status.value for r in results]},
    )
