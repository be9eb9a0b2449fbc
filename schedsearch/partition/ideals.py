"""Ideals (downward-closed sets) of a DAG, as bitsets.

The nodes are numbered ``0..n-1`` in a topological order (every predecessor
has a smaller number). An ideal ``I`` is a set of nodes closed under
predecessors; it is represented as a Python int with bit ``v`` set for
``v`` in ``I``. Every non-empty ideal has a unique largest node ``m(I)``,
which is maximal in ``I``, and ``I - {m(I)}`` is again an ideal: so the
ideals form a tree rooted at the empty set in which the children of ``I``
are ``I + {v}`` for the addable nodes ``v > m(I)``. Walking that tree
enumerates every ideal exactly once, in time proportional to their number
(times the cost of a few big-int operations).

:class:`IdealTable` turns the list into NumPy arrays for the DP: one row per
ideal, packed 64-bit words for subset tests, and per-ideal sums of node
weights computed column by column (so that for ``J`` a subset of ``I``
the float sum over ``J`` never exceeds the one over ``I``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from schedsearch.errors import InvalidOperatorGraphError

__all__ = ["enumerate_ideals", "IdealLimitExceeded", "ideals_to_words", "membership_matrix",
           "column_sums"]


class IdealLimitExceeded(InvalidOperatorGraphError):
    """The DAG has more ideals than the caller allowed."""


def enumerate_ideals(preds: Sequence[Sequence[int]], *, limit: int | None = None) -> list[int]:
    """All ideals of the DAG given by ``preds`` (topologically numbered).

    Parameters
    ----------
    preds:
        ``preds[v]`` lists the predecessors of node ``v``; each must be < v.
    limit:
        Raise :class:`IdealLimitExceeded` once more than ``limit`` ideals
        have been found.

    Returns
    -------
    list of int
        Bitsets, the empty ideal first, then in depth-first order.

    Examples
    --------
    The ideals (predecessor-closed node sets) of ``0 -> 1, 0 -> 2`` are
    {}, {0}, {0, 1}, {0, 2} and {0, 1, 2}:

    >>> from schedsearch.partition import enumerate_ideals
    >>> [bin(ideal) for ideal in enumerate_ideals([[], [0], [0]])]
    ['0b0', '0b1', '0b11', '0b101', '0b111']
    """
    n = len(preds)
    pred_mask = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for u in ps:
            if not 0 <= u < v:
                raise InvalidOperatorGraphError(
                    f"ideals: node {v}: predecessor {u} is not numbered before it"
                )
            pred_mask[v] |= 1 << u
            succ[u].append(v)
    start_addable = 0
    for v in range(n):
        if pred_mask[v] == 0:
            start_addable |= 1 << v
    out = [0]
    # stack of (ideal, addable bitset, largest node or -1)
    stack = [(0, start_addable, -1)]
    while stack:
        ideal, addable, top = stack.pop()
        cand = addable >> (top + 1)
        v = top + 1
        children = []
        while cand:
            if cand & 1:
                child = ideal | (1 << v)
                new_addable = addable & ~(1 << v)
                for w in succ[v]:
                    if pred_mask[w] & ~child == 0:
                        new_addable |= 1 << w
                children.append((child, new_addable, v))
            cand >>= 1
            v += 1
        for item in children:
            out.append(item[0])
            if limit is not None and len(out) > limit:
                raise IdealLimitExceeded(
                    f"ideals: more than {limit} ideals; the DAG is too wide for the exact DP"
                )
        stack.extend(reversed(children))
    return out


def ideals_to_words(ideals: Sequence[int], n: int) -> np.ndarray:
    """Pack bitsets into an ``(len(ideals), ceil(n/64))`` uint64 array."""
    words = max(1, (n + 63) // 64)
    nbytes = words * 8
    buf = b"".join(i.to_bytes(nbytes, "little") for i in ideals)
    return np.frombuffer(buf, dtype="<u8").reshape(len(ideals), words).copy()


def membership_matrix(words: np.ndarray, n: int) -> np.ndarray:
    """Boolean ``(num_ideals, n)`` matrix: entry ``[i, v]`` says ``v`` is in ideal ``i``."""
    as_bytes = words.view(np.uint8).reshape(words.shape[0], -1)
    bits = np.unpackbits(as_bytes, axis=1, bitorder="little")
    return bits[:, :n].astype(bool)


def column_sums(member: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Per-ideal sums of node weights, added node by node in a fixed order.

    The same order for every row makes the sum monotone under inclusion
    (rounding of a sum of non-negative numbers is monotone in each term).
    """
    total = np.zeros(member.shape[0], dtype=np.float64)
    for v, w in enumerate(weights):
        if w:
            np.add(total, float(w), out=total, where=member[:, v])
    return total
