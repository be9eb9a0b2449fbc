"""A union-find (disjoint sets) over hashable items: what a few modules need, without importing networkx.

networkx takes about half a second to import; the encoders and the list
schedulers only need disjoint sets.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["UnionFind"]


class UnionFind:
    """Disjoint sets with union by size and path halving.

    ``uf[x]`` is the root of ``x``'s set (``x`` joins as a set of its own
    when new); ``uf.union(a, b, ...)`` merges the sets of its arguments.

    Examples
    --------
    >>> from schedsearch._union_find import UnionFind
    >>> uf = UnionFind(["a", "b", "c"])
    >>> uf.union("a", "b")
    >>> uf["a"] == uf["b"], uf["a"] == uf["c"]
    (True, False)
    >>> uf.union("c", "d", "a")
    >>> len({uf[x] for x in "abcd"})
    1
    """

    def __init__(self, items: Iterable[Hashable] = ()) -> None:
        self._parent: dict[Hashable, Hashable] = {}
        self._size: dict[Hashable, int] = {}
        for x in items:
            self[x]

    def __getitem__(self, x: Hashable) -> Hashable:
        parent = self._parent
        if x not in parent:
            parent[x] = x
            self._size[x] = 1
            return x
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, *items: Hashable) -> None:
        roots = list(dict.fromkeys(self[x] for x in items))
        if not roots:
            return
        root = max(roots, key=lambda r: self._size[r])
        for r in roots:
            if r != root:
                self._parent[r] = root
                self._size[root] += self._size.pop(r)
