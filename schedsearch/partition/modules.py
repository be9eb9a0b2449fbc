"""Module splitting (after DiviML, Ghannane and Abdelfattah): DP across modules.

DNN graphs are long chains of *modules* (residual blocks, inception cells,
encoder layers) joined through narrow points. Splitting the graph there
turns the exponential lattice of ideals into a sum over modules:

1. **Find modules** on the undirected supernode graph (see
   :mod:`schedsearch.partition.contraction`):

   * ``channels=1`` (single-channel): biconnected components. Articulation
     points (and the ends of bridges) become one-node modules; every other
     node belongs to the one biconnected component it lies in. The modules
     and articulation points form the block-cut tree, so the module
     quotient graph is a forest and, oriented by the edges, acyclic.
   * ``channels=c >= 2`` (multi-channel): the ``(c+1)``-edge-connected
     components; two modules are joined by at most ``c`` edges. Modules
     that close a directed cycle in the quotient are merged.

   Modules are then ordered topologically (quotient graph, Kahn, smallest
   supernode first).

2. **DP across modules.** With modules ``M_1, ..., M_t`` in that order, a
   *boundary* is ``M_1 + ... + M_{m-1}`` plus an ideal of ``M_m`` (its
   induced DAG; predecessors outside ``M_m`` are all in earlier modules).
   Stages run from boundary to boundary: a device may hold the end of one
   module, whole modules and the start of another. For the max-load
   objective on identical accelerators the state that matters at a
   boundary is which boundary was reached and how many devices of each
   kind are used (DiviML's input/output device pair reduces to this: the
   output device of one module is the input device of the next), so the
   exact DP of :mod:`schedsearch.partition.dp` runs over the family of
   boundaries: ``1 + sum_m (|ideals(M_m)| - 1)`` instead of all ideals.
   A module whose own lattice exceeds ``module_ideal_limit`` is
   linearised (depth-first Kahn order) first.

The result is optimal among splits whose cuts all lie at module
boundaries; it is exact whenever every ideal of the graph is a boundary
(e.g. a chain of modules joined by single operators with no side inputs).
"""

from __future__ import annotations

import heapq
import math
import time

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.options import check_partition_options
from schedsearch.partition._common import partition_result, resolve_workload
from schedsearch.partition.contraction import ContractedGraph, contract, linearize, strongly_connected_components
from schedsearch.partition.dp import solve_contracted
from schedsearch.partition.ideals import IdealLimitExceeded, enumerate_ideals
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload
from schedsearch.partition.result import PartitionResult
from schedsearch.partition.slicegraph import kahn_dfs_order

__all__ = ["find_modules", "module_boundaries", "partition_modules"]


def _undirected(cg: ContractedGraph):
    import networkx as nx  # imported here: it is slow to import and only this module needs it

    g = nx.Graph()
    g.add_nodes_from(range(cg.num_nodes))
    for v, ps in enumerate(cg.preds):
        for u in ps:
            g.add_edge(u, v)
    return g


def _order_modules(cg: ContractedGraph, groups: list[set[int]]) -> list[tuple[int, ...]]:
    """Merge groups on directed cycles of the quotient, then order topologically."""
    of = {}
    for gi, grp in enumerate(groups):
        for v in grp:
            of[v] = gi
    succ: dict[int, set[int]] = {i: set() for i in range(len(groups))}
    for v, ps in enumerate(cg.preds):
        for u in ps:
            if of[u] != of[v]:
                succ[of[u]].add(of[v])
    merged: list[set[int]] = []
    comp_of = {}
    for comp in strongly_connected_components(sorted(succ), {k: sorted(v) for k, v in succ.items()}):
        merged.append(set().union(*(groups[g] for g in comp)))
        for g in comp:
            comp_of[g] = len(merged) - 1
    msucc: dict[int, set[int]] = {i: set() for i in range(len(merged))}
    for a, bs in succ.items():
        for b in bs:
            if comp_of[a] != comp_of[b]:
                msucc[comp_of[a]].add(comp_of[b])
    indeg = {i: 0 for i in msucc}
    for bs in msucc.values():
        for b in bs:
            indeg[b] += 1
    heap = [(min(merged[i]), i) for i, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(tuple(sorted(merged[i])))
        for j in msucc[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (min(merged[j]), j))
    return out


def find_modules(cg: ContractedGraph, *, channels: int = 1) -> list[tuple[int, ...]]:
    """Modules of a contracted graph, in a topological order of their quotient.

    ``channels=1``: biconnected components with articulation points as
    one-node modules; ``channels=c``: ``(c+1)``-edge-connected components.

    Examples
    --------
    A diamond is one module; a chain has one per supernode:

    >>> from schedsearch.partition import Operator, OperatorGraph, contract, find_modules
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> find_modules(contract(diamond))
    [(0, 1, 2, 3)]
    """
    if channels < 1:
        raise InvalidOperatorGraphError(f"modules: 'channels' must be >= 1, got {channels!r}")
    import networkx as nx

    g = _undirected(cg)
    if cg.num_nodes == 0:
        return []
    if channels == 1:
        cut = set(nx.articulation_points(g))
        groups: list[set[int]] = [{v} for v in sorted(cut)]
        seen = set(cut)
        for comp in nx.biconnected_components(g):
            rest = set(comp) - cut
            if rest:
                groups.append(rest)
                seen |= rest
        groups.extend({v} for v in range(cg.num_nodes) if v not in seen)  # isolated nodes
    else:
        groups = [set(c) for c in nx.k_edge_components(g, k=channels + 1)]
        covered = set().union(*groups) if groups else set()
        groups.extend({v} for v in range(cg.num_nodes) if v not in covered)
    return _order_modules(cg, groups)


def module_boundaries(
    cg: ContractedGraph, modules: list[tuple[int, ...]], *, module_ideal_limit: int = 20_000
) -> tuple[list[int], int]:
    """Boundary ideals (bitsets) of a module order; also the number of linearised modules."""
    boundaries = [0]
    prefix = 0
    linearised = 0
    for mod in modules:
        local = {v: i for i, v in enumerate(mod)}
        preds = [[local[u] for u in cg.preds[v] if u in local] for v in mod]
        # the induced DAG must be numbered topologically: supernode numbers already are
        try:
            ideals = enumerate_ideals(preds, limit=module_ideal_limit)
        except IdealLimitExceeded:
            linearised += 1
            chain = [list(range(i)) and [i - 1] for i in range(len(mod))]
            ideals = enumerate_ideals(chain)
        for ideal in ideals[1:]:
            bits = 0
            for i, v in enumerate(mod):
                if ideal >> i & 1:
                    bits |= 1 << v
            boundaries.append(prefix | bits)
        for v in mod:
            prefix |= 1 << v
    return boundaries, linearised


def partition_modules(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    channels: int = 1,
    module_ideal_limit: int = 20_000,
    merge_trivial: bool = True,
) -> PartitionResult:
    """Best split with cuts at module boundaries (see the module docstring).

    Fewer cut points than the DP over all ideals, so it scales to wide
    graphs; optimal when every optimal cut falls between modules.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_modules
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_modules(graph, DeviceLimits(num_accelerators=2))
    >>> result.max_load, [(str(slot), ops) for slot, ops in result.split.stages]
    (7.0, [('accel0', (0, 1)), ('accel1', (2, 3))])
    """
    check_partition_options("partition_modules", {"channels": channels, "module_ideal_limit": module_ideal_limit,
                                                  "merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    cg = contract(graph, merge_trivial=merge_trivial, memory_limited=devices.max_accel_memory is not None)
    modules = find_modules(cg, channels=channels)
    boundaries, linearised = module_boundaries(cg, modules, module_ideal_limit=module_ideal_limit)
    # upper bound for pruning: one chain of boundaries (modules in order, each in
    # depth-first Kahn order), whose prefixes all belong to the family
    chain_order = []
    for mod in modules:
        local = {v: i for i, v in enumerate(mod)}
        sub = ContractedGraph(
            members=tuple(() for _ in mod), preds=tuple(tuple(local[u] for u in cg.preds[v] if u in local) for v in mod),
            accel_latency=(0.0,) * len(mod), cpu_latency=(0.0,) * len(mod), size=(0.0,) * len(mod),
            accel_ok=(True,) * len(mod), hyperedges=(), anchor={},
        )
        chain_order.extend(mod[i] for i in kahn_dfs_order(sub))
    chain = solve_contracted(linearize(cg, chain_order), devices)
    upper = chain.max_load if chain is not None else math.inf
    sol = solve_contracted(cg, devices, ideals=boundaries, upper_bound=upper)
    if sol is None and math.isfinite(upper):  # pragma: no cover - the chain is in the family
        sol = solve_contracted(cg, devices, ideals=boundaries)
    if sol is None:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: no feasible split at module boundaries on "
            f"{devices.num_accelerators} accelerators and {devices.num_cpus} CPUs"
        )
    return partition_result(
        "modules", graph, devices, cg, sol, t0, optimal=False,
        modules=len(modules), largest_module=max((len(m) for m in modules), default=0),
        linearised_modules=linearised, channels=channels,
    )
