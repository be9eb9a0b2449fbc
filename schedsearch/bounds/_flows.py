"""Two small network-flow routines the schedule bounds need, in integers and without a graph library.

The graphs they see are small (a device's blocks, a problem's blocks), and a
bound is asked before a search, inside a call's time limit: importing a graph
library costs more than solving them here.

* :func:`max_flow_value`: the value of a maximum ``s``-``t`` flow (= the
  capacity of a minimum cut), Edmonds-Karp: shortest augmenting paths by
  breadth-first search; an arc without a capacity is unbounded.
* :func:`least_cost_transport`: the least cost of shipping every sink's
  demand from sources of limited supply along priced arcs (a transportation
  problem), by successive shortest paths (Bellman-Ford on the residual
  network, as costs may be negative); None when the demand cannot be met.

Both count their work with :func:`~schedsearch.deadline.checkpoint`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping

from schedsearch.deadline import checkpoint
from schedsearch.errors import SolverError

__all__ = ["least_cost_transport", "max_flow_value"]


class _Residual:
    """A residual network: ``head``, ``cap`` and ``cost`` per arc, arc ``k ^ 1`` the reverse of ``k``."""

    def __init__(self) -> None:
        self.index: dict[Hashable, int] = {}
        self.out: list[list[int]] = []
        self.head: list[int] = []
        self.cap: list[int | None] = []  # None: unbounded
        self.cost: list[int] = []

    def node(self, name: Hashable) -> int:
        if name not in self.index:
            self.index[name] = len(self.out)
            self.out.append([])
        return self.index[name]

    def arc(self, a: Hashable, b: Hashable, cap: int | None, cost: int = 0) -> None:
        u, v = self.node(a), self.node(b)
        self.out[u].append(len(self.head))
        self.head.append(v)
        self.cap.append(cap)
        self.cost.append(cost)
        self.out[v].append(len(self.head))
        self.head.append(u)
        self.cap.append(0)
        self.cost.append(-cost)

    def room(self, k: int) -> int | None:
        return self.cap[k]

    def push(self, k: int, amount: int) -> None:
        if self.cap[k] is not None:
            self.cap[k] -= amount
        if self.cap[k ^ 1] is not None:
            self.cap[k ^ 1] += amount


def max_flow_value(arcs: Iterable[tuple[Hashable, Hashable, int | None]], source: Hashable, sink: Hashable) -> int:
    """The value of a maximum flow from ``source`` to ``sink`` over ``arcs`` ``(tail, head, capacity)``
    (capacity None: unbounded). Raises :class:`~schedsearch.errors.SolverError` when the value is unbounded
    (a path of unbounded arcs: the bounds never build one).

    >>> max_flow_value([("s", "a", 3), ("s", "b", 2), ("a", "b", 1), ("a", "t", 2), ("b", "t", 3)], "s", "t")
    5
    """
    g = _Residual()
    s, t = g.node(source), g.node(sink)
    for a, b, cap in arcs:
        g.arc(a, b, cap)
    total = 0
    while True:
        parent = [-1] * len(g.out)
        parent[s] = -2
        queue = deque([s])
        while queue and parent[t] == -1:
            u = queue.popleft()
            checkpoint(len(g.out[u]))
            for k in g.out[u]:
                v = g.head[k]
                if parent[v] == -1 and g.room(k) != 0:
                    parent[v] = k
                    queue.append(v)
        if parent[t] == -1:
            return total
        amount: int | None = None
        v = t
        while v != s:
            k = parent[v]
            if g.room(k) is not None and (amount is None or g.room(k) < amount):
                amount = g.room(k)
            v = g.head[k ^ 1]
        if amount is None:
            raise SolverError("max_flow_value: a path of unbounded arcs joins the source to the sink")
        v = t
        while v != s:
            k = parent[v]
            g.push(k, amount)
            v = g.head[k ^ 1]
        total += amount


def least_cost_transport(supply: Mapping[Hashable, int], demand: Mapping[Hashable, int],
                         arcs: Iterable[tuple[Hashable, Hashable, int]]) -> int | None:
    """The least total cost of meeting every ``demand`` (node -> amount > 0) from ``supply`` (node -> most it
    gives, >= 0) along ``arcs`` ``(supplier, consumer, cost per unit)``, unbounded; None when no shipment
    meets every demand. Supply and demand nodes are distinct; costs may be negative.

    >>> least_cost_transport({"a": 2, "b": 2}, {"x": 1, "y": 2}, [("a", "x", -5), ("a", "y", -1), ("b", "y", -2)])
    -9
    >>> least_cost_transport({"a": 1}, {"x": 2}, [("a", "x", 0)]) is None
    True
    """
    g = _Residual()
    s, t = g.node(("source",)), g.node(("sink",))
    for a, amount in supply.items():
        g.arc(("source",), ("supply", a), amount)
    need = 0
    for b, amount in demand.items():
        g.arc(("demand", b), ("sink",), amount)
        need += amount
    for a, b, cost in arcs:
        g.arc(("supply", a), ("demand", b), None, cost)
    total = 0
    n = len(g.out)
    while need > 0:
        # the cheapest augmenting path in the residual network (no negative cycle: successive shortest paths
        # keep the flow of least cost among those of its value)
        dist: list[int | None] = [None] * n
        parent = [-1] * n
        dist[s] = 0
        for _ in range(n):
            changed = False
            for u in range(n):
                if dist[u] is None:
                    continue
                checkpoint(len(g.out[u]))
                for k in g.out[u]:
                    if g.room(k) == 0:
                        continue
                    v = g.head[k]
                    d = dist[u] + g.cost[k]
                    if dist[v] is None or d < dist[v]:
                        dist[v], parent[v], changed = d, k, True
            if not changed:
                break
        if dist[t] is None:
            return None
        amount = need
        v = t
        while v != s:
            k = parent[v]
            if g.room(k) is not None:
                amount = min(amount, g.room(k))
            v = g.head[k ^ 1]
        v = t
        while v != s:
            k = parent[v]
            g.push(k, amount)
            v = g.head[k ^ 1]
        total += amount * dist[t]
        need -= amount
    return total
