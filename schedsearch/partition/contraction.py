"""Contraction of an operator graph into forward supernodes.

The contiguous partitioners (:mod:`schedsearch.partition.dp`) work on a DAG
of *forward supernodes*. Every operator is anchored to exactly one of them,
and a device holds an operator iff it holds the operator's anchor. The
contraction follows the rules of Tarnawski et al. (NeurIPS 2020), so that
the number of ideals matches their published counts:

1. **Colocation classes.** Operators sharing a ``color_class`` are one unit;
   an operator without a class is a class of its own. The forward operators
   of a class form its forward supernode, its backward operators follow it
   (backward nodes follow their forward partners).
2. **Orphaned backward classes.** A class with backward operators only gets
   an artificial, zero-latency forward supernode. For every backward edge
   ``u' -> v'`` touching such a class, the forward supernodes get the
   mirrored precedence ``class(v') -> class(u')``, so the orphans still sit
   in pipeline order.
3. **Forward cycles.** Classes can close cycles in the forward class graph;
   every strongly connected component is merged into one class.
4. **Trivial leaves** (optional, on by default). A forward supernode with
   zero latency (both kinds, < 1e-6), zero backward latency, no edge to or
   from a backward supernode and exactly one edge to a forward supernode is
   merged into that neighbour, repeatedly, unless the leaf holds an operator
   unsupported on accelerators and the neighbour does not (the neighbour may
   need an accelerator the leaf cannot use). This restricts the splits (the
   leaf must share its neighbour's device) without losing an optimum where
   memory is unlimited: apart from its neighbour, a leaf with no work only
   adds communication. Under a memory limit a leaf that holds memory may
   have to go elsewhere, so ``memory_limited=True`` keeps those apart (the
   partitioners pass it whenever the devices have a memory limit, except the
   exact DP, which merges them where a bound proves it loses nothing; see
   below). The reference optima use the merge.

   ``count_leaf_memory=False`` merges every trivial leaf but leaves the
   memory of the merged leaves out of their supernode's ``size``: a
   *relaxation* under a memory limit. Moving a trivial leaf onto its
   neighbour's device keeps any contiguous split contiguous (the leaf's only
   edge is to that neighbour, so the ideals of the split stay ideals with the
   leaf taken out or put in) and raises no load (the leaf has no latency and
   every hyperedge through it also holds the neighbour, so no device newly
   pays for one); with the leaf's memory not counted, it also raises no device's
   memory. So every feasible split of the graph maps to a split of the
   relaxed contraction that is no worse, and the relaxed optimum is a lower
   bound (up to the latencies below 1e-6 that the merge treats as none); a
   relaxed optimum whose split fits with the memory counted is the optimum
   (see :func:`schedsearch.partition.dp.partition_dp`).

Communication is kept on the *original* edges: an operator ``s`` with output
cost ``c_s`` defines the hyperedge ``A_s`` = anchors of ``s`` and of its
successors. A device holding the set ``D`` of supernodes pays ``c_s`` iff
``A_s`` is cut by ``D`` (``A_s`` meets ``D`` and is not inside it); equal
hyperedges are merged and single-anchor ones dropped.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import attrs
from networkx.utils import UnionFind

from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition.opgraph import OperatorGraph

__all__ = ["ContractedGraph", "contract", "kahn_dfs_order", "linearize", "strongly_connected_components"]

_EPS = 1e-6


@attrs.frozen(kw_only=True)
class ContractedGraph:
    """Forward supernodes in topological order ``0..n-1``.

    Attributes
    ----------
    members:
        Original operator ids anchored at each supernode (forward and
        backward); empty for an artificial supernode.
    preds:
        Precedence between supernodes (original and artificial edges).
    accel_latency, cpu_latency, size:
        Sums over the members.
    accel_ok:
        False if some member cannot run on an accelerator.
    hyperedges:
        ``(anchors, cost)`` pairs, anchors sorted, at least two of them.
    anchor:
        ``{operator id: supernode}``.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, contract
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> contracted = contract(diamond)
    >>> contracted.preds, contracted.hyperedges[0]  # 0 sends one output to both 1 and 2
    (((), (0,), (0,), (1, 2)), ((0, 1, 2), 1.0))
    """

    members: tuple[tuple[int, ...], ...]
    preds: tuple[tuple[int, ...], ...]
    accel_latency: tuple[float, ...]
    cpu_latency: tuple[float, ...]
    size: tuple[float, ...]
    accel_ok: tuple[bool, ...]
    hyperedges: tuple[tuple[tuple[int, ...], float], ...]
    anchor: dict = attrs.field(eq=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return len(self.members)

    def succs(self) -> tuple[tuple[int, ...], ...]:
        out: list[list[int]] = [[] for _ in self.members]
        for v, ps in enumerate(self.preds):
            for u in ps:
                out[u].append(v)
        return tuple(tuple(s) for s in out)


def contract(graph: OperatorGraph, *, merge_trivial: bool = True, memory_limited: bool = False,
             count_leaf_memory: bool = True) -> ContractedGraph:
    """Contract ``graph`` into forward supernodes (see the module docstring).

    The DPs split supernodes, so a backward operator always goes with its
    forward partner and a colocation class stays whole. ``memory_limited``:
    the devices have a memory limit, so trivial leaves that hold memory stay
    apart (step 4 of the module docstring). ``count_leaf_memory=False``: the
    memory of the merged trivial leaves is left out of ``size`` (the
    relaxation of step 4; only meaningful with ``memory_limited=False``).

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, contract, training_graph_from_forward
    >>> forward = OperatorGraph(operators=[Operator(id=i, accel_latency=1.0) for i in range(3)],
    ...                         edges=[(0, 1), (1, 2)])
    >>> contracted = contract(training_graph_from_forward(forward))
    >>> contracted.members, contracted.accel_latency  # each forward with its backward
    (((0, 3), (1, 4), (2, 5)), (3.0, 3.0, 3.0))
    """
    ops = graph.operators
    if not ops:
        raise InvalidOperatorGraphError(f"operator graph {graph.name!r}: no operators")
    classes = _Classes(graph)  # 1. colocation classes, 2. orphaned backward classes
    classes.merge_cycles()  # 3.
    leaf_ops: set[int] = set()  # operators of merged leaves (their memory is left out if not count_leaf_memory)
    while merge_trivial:  # 4.
        cls = classes.of_operators()
        merges = classes.trivial_leaves(cls, memory_limited)
        if not merges:
            break
        leaves = {c for c, _ in merges}
        leaf_ops.update(oid for oid, c in cls.items() if c in leaves)
        for c, other in merges:
            classes.uf.union(c, other)
    # 5. final supernodes, numbered topologically
    cls = classes.of_operators()
    fwd_keys = classes.forward_keys(cls)
    true, art = classes.forward_edges(cls)
    preds_k: dict = defaultdict(set)
    succ_k: dict = defaultdict(set)
    for u, v in true | art:
        preds_k[v].add(u)
        succ_k[u].add(v)
    number = _number_topologically(graph, cls, fwd_keys, preds_k, succ_k)
    return _supernodes(graph, cls, number, preds_k, leaf_ops, count_leaf_memory)


class _Classes:
    """The operators' classes while :func:`contract` merges them (steps 1 to 4 of the module docstring).

    A class is keyed ``('c', color)`` (a colocation class) or ``('o', op id)`` and named by its root in a
    union-find; ``artificial`` holds the forward precedences ``(class_u, class_v)`` mirrored from the edges
    of orphaned backward classes (those without forward operators), by class key.
    """

    def __init__(self, graph: OperatorGraph) -> None:
        self.graph = graph
        self.key_of = {
            op.id: ("c", op.color_class) if op.color_class is not None else ("o", op.id) for op in graph.operators
        }
        self.uf = UnionFind(set(self.key_of.values()))  # class keys; a class is named by its root, uf[key]
        self.is_bwd = {op.id: op.is_backward for op in graph.operators}
        cls = self.of_operators()
        fwd_classes = {cls[o.id] for o in graph.operators if not o.is_backward}
        orphan = {cls[o.id] for o in graph.operators if o.is_backward} - fwd_classes
        self.artificial: set[tuple] = set()
        for a, b in graph.edges:
            if self.is_bwd[a] and self.is_bwd[b]:
                ca, cb = cls[a], cls[b]
                if ca != cb and (ca in orphan or cb in orphan):
                    self.artificial.add((cb, ca))
        self.all_keys = set(cls.values())

    def of_operators(self) -> dict[int, Any]:
        """Operator id -> its class now."""
        return {oid: self.uf[k] for oid, k in self.key_of.items()}

    def forward_keys(self, cls: Mapping[int, Any]) -> set:
        """The classes with a forward operator or an artificial forward edge."""
        return {cls[o.id] for o in self.graph.operators if not o.is_backward} | {
            self.uf[u] for e in self.artificial for u in e
        }

    def forward_edges(self, cls: Mapping[int, Any]) -> tuple[set, set]:
        """Class-level forward edges: the true ones and the artificial ones."""
        is_bwd = self.is_bwd
        true = {
            (cls[a], cls[b])
            for a, b in self.graph.edges
            if not is_bwd[a] and not is_bwd[b] and cls[a] != cls[b]
        }
        art = {(self.uf[u], self.uf[v]) for u, v in self.artificial}
        art = {(u, v) for u, v in art if u != v}
        return true, art

    def merge_cycles(self) -> None:
        """Merge each strongly connected component of the forward class graph into one class."""
        true, art = self.forward_edges(self.of_operators())
        succ: dict = defaultdict(list)
        for u, v in true | art:
            succ[u].append(v)
        for comp in strongly_connected_components(sorted(self.all_keys, key=repr), succ):
            for k in comp[1:]:
                self.uf.union(k, comp[0])

    def trivial_leaves(self, cls: Mapping[int, Any], memory_limited: bool) -> list[tuple[Any, Any]]:
        """``(leaf, its neighbour)`` for every trivial leaf of the class graph now: a forward class of zero
        latency (forward and backward) with one forward neighbour and no backward one, that holds no memory
        when the devices have a limit, and runs on an accelerator unless its neighbour is CPU-only too."""
        is_bwd, uf = self.is_bwd, self.uf
        fwd_acc: dict = defaultdict(float)
        fwd_cpu: dict = defaultdict(float)
        bwd_lat: dict = defaultdict(float)
        held: dict = defaultdict(float)
        cpu_only: set = set()
        for op in self.graph.operators:
            c = cls[op.id]
            held[c] += op.size
            if not op.supported_on_accel:
                cpu_only.add(c)
            if op.is_backward:
                bwd_lat[c] += op.accel_latency + op.cpu_latency
            else:
                fwd_acc[c] += op.accel_latency
                fwd_cpu[c] += op.cpu_latency
        # contracted edge list between virtual nodes (class, is_backward)
        true_v = {
            ((cls[a], is_bwd[a]), (cls[b], is_bwd[b]))
            for a, b in self.graph.edges
            if (cls[a], is_bwd[a]) != (cls[b], is_bwd[b])
        }
        art_v = {((uf[u], False), (uf[v], False)) for u, v in self.artificial}
        art_v = {e for e in art_v if e[0] != e[1]}
        fwd_nbrs: dict = defaultdict(list)
        has_bwd_nbr: set = set()
        for (x, y) in list(true_v) + list(art_v):
            for me, other in ((x, y), (y, x)):
                if me[1]:
                    continue
                if other[1]:
                    has_bwd_nbr.add(me[0])
                else:
                    fwd_nbrs[me[0]].append(other[0])
        merges = []
        for c in sorted(self.forward_keys(cls), key=repr):
            if (
                fwd_acc[c] < _EPS
                and fwd_cpu[c] < _EPS
                and c not in has_bwd_nbr
                and len(fwd_nbrs[c]) == 1
                and bwd_lat[c] < _EPS
                and not (memory_limited and held[c] > 0)
                and (c not in cpu_only or fwd_nbrs[c][0] in cpu_only)
            ):
                merges.append((c, fwd_nbrs[c][0]))
        return merges


def _number_topologically(graph: OperatorGraph, cls: Mapping[int, Any], fwd_keys: set,
                          preds_k: Mapping[Any, set], succ_k: Mapping[Any, set]) -> dict[Any, int]:
    """The final classes numbered in a topological order (Kahn's; ties broken by the smallest member id,
    for a stable numbering)."""
    first_member: dict = {}
    for op in graph.operators:
        c = cls[op.id]
        first_member[c] = min(first_member.get(c, op.id), op.id)
    indeg = {k: len(preds_k[k]) for k in fwd_keys}
    heap = [(first_member.get(k, float("inf")), repr(k), k) for k, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    number: dict = {}
    while heap:
        _, _, k = heapq.heappop(heap)
        number[k] = len(number)
        for w in succ_k[k]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, (first_member.get(w, float("inf")), repr(w), w))
    if len(number) != len(fwd_keys):  # pragma: no cover - SCCs were merged
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: forward class graph is not acyclic after merging"
        )
    return number


def _supernodes(graph: OperatorGraph, cls: Mapping[int, Any], number: Mapping[Any, int],
                preds_k: Mapping[Any, set], leaf_ops: set[int], count_leaf_memory: bool) -> ContractedGraph:
    """The contracted graph of the numbered classes: members, latencies, sizes (the merged leaves' left out
    unless ``count_leaf_memory``), predecessors and the hyperedges of the operators' outputs."""
    ops = graph.operators
    n = len(number)
    members: list[list[int]] = [[] for _ in range(n)]
    acc = [0.0] * n
    cpu = [0.0] * n
    size = [0.0] * n
    ok = [True] * n
    anchor: dict[int, int] = {}
    for op in ops:
        i = number[cls[op.id]]
        anchor[op.id] = i
        members[i].append(op.id)
        acc[i] += op.accel_latency
        cpu[i] += op.cpu_latency
        if count_leaf_memory or op.id not in leaf_ops:
            size[i] += op.size
        ok[i] = ok[i] and op.supported_on_accel
    preds = [sorted(number[u] for u in preds_k[k]) for k in sorted(number, key=number.get)]
    hyper: Counter = Counter()
    for op in ops:
        succs = graph.successors(op.id)
        if not succs or op.output_cost == 0.0:
            continue
        group = {anchor[op.id]} | {anchor[t] for t in succs}
        if len(group) > 1:
            hyper[tuple(sorted(group))] += op.output_cost
    return ContractedGraph(
        members=tuple(tuple(sorted(m)) for m in members),
        preds=tuple(tuple(p) for p in preds),
        accel_latency=tuple(acc),
        cpu_latency=tuple(cpu),
        size=tuple(size),
        accel_ok=tuple(ok),
        hyperedges=tuple(sorted(hyper.items())),
        anchor=anchor,
    )


def strongly_connected_components(nodes: list, succ: dict) -> list[list]:
    """Strongly connected components (iterative Tarjan)."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    comps: list[list] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
    return comps


def kahn_dfs_order(cg: ContractedGraph) -> list[int]:
    """Depth-first Kahn order (the last freed supernode first), as DPL uses."""
    succ = cg.succs()
    indeg = [len(p) for p in cg.preds]
    stack = [v for v in range(cg.num_nodes) if indeg[v] == 0][::-1]
    order = []
    while stack:
        v = stack.pop()
        order.append(v)
        for w in sorted(succ[v]):
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    return order


def linearize(cg: ContractedGraph, order: list[int] | None = None) -> ContractedGraph:
    """Chain the supernodes of ``cg`` in one topological order.

    Adds precedence ``order[i] -> order[i+1]``, so the only ideals are the
    prefixes of ``order`` (the DPL variant). Without ``order``, uses a
    depth-first Kahn order: the most recently freed supernode is taken
    next, successors freed in increasing index order, sources initially in
    increasing index order.

    Examples
    --------
    >>> from schedsearch.partition import Operator, OperatorGraph, contract, enumerate_ideals, linearize
    >>> diamond = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                    for i, t in enumerate([2, 3, 3, 2])], edges=[(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> contracted = contract(diamond)
    >>> linearize(contracted).preds  # 0 -> 1 -> 2 -> 3 added
    ((), (0,), (0, 1), (1, 2))
    >>> len(enumerate_ideals(contracted.preds)), len(enumerate_ideals(linearize(contracted).preds))
    (6, 5)
    """
    n = cg.num_nodes
    if order is None:
        order = kahn_dfs_order(cg)
    if sorted(order) != list(range(n)):
        raise InvalidOperatorGraphError("linearize: order must list every supernode once")
    pos = {v: i for i, v in enumerate(order)}
    for v in range(n):
        for u in cg.preds[v]:
            if pos[u] > pos[v]:
                raise InvalidOperatorGraphError(
                    f"linearize: order puts supernode {v} before its predecessor {u}"
                )
    # renumber along the chain so that node i's only needed predecessor is i-1
    inv = order
    new_of = pos
    remap = lambda seq: tuple(seq[inv[i]] for i in range(n))  # noqa: E731
    preds = []
    for i in range(n):
        ps = {new_of[u] for u in cg.preds[inv[i]]}
        if i > 0:
            ps.add(i - 1)
        preds.append(tuple(sorted(ps)))
    return ContractedGraph(
        members=remap(cg.members),
        preds=tuple(preds),
        accel_latency=remap(cg.accel_latency),
        cpu_latency=remap(cg.cpu_latency),
        size=remap(cg.size),
        accel_ok=remap(cg.accel_ok),
        hyperedges=tuple(
            sorted((tuple(sorted(new_of[a] for a in anchors)), c) for anchors, c in cg.hyperedges)
        ),
        anchor={op: new_of[a] for op, a in cg.anchor.items()},
    )
