"""Hypothesis strategies for compute-only pipeline plans (CSV text).

* :func:`linearised_plans`: every action of a random pipeline (``P`` ranks,
  ``v`` stages per rank on a loop or V map, ``M`` micro-batches, full or
  split backward) put in one random order that respects the pipeline's
  dependencies, then projected onto the ranks: such plans never deadlock.
* :func:`shuffled_plans`: each rank's actions in a random order that only
  keeps F before B/I before W of each (stage, micro-batch): these may or may
  not deadlock.
"""

from __future__ import annotations

from hypothesis import strategies as st


def _placement(draw):
    P = draw(st.integers(1, 4))
    v = draw(st.integers(1, 2))
    style = draw(st.sampled_from(["loop", "v"]))
    S = P * v
    if style == "loop":
        mapping = [s % P for s in range(S)]
    else:
        mapping = [(s % P) if (s // P) % 2 == 0 else P - 1 - (s % P) for s in range(S)]
    M = draw(st.integers(1, 4))
    split = draw(st.booleans())
    return P, S, M, mapping, split


def _actions(S, M, split):
    kinds = ("F", "I", "W") if split else ("F", "B")
    return [(s, k, m) for m in range(M) for s in range(S) for k in kinds]


def _ready(action, done, S):
    s, k, m = action
    if k == "F":
        return s == 0 or (s - 1, "F", m) in done
    if k in ("B", "I"):
        if (s, "F", m) not in done:
            return False
        return s == S - 1 or (s + 1, "B", m) in done or (s + 1, "I", m) in done
    return (s, "I", m) in done


def _csv(rows):
    return "".join(",".join(f"{s}{k}{m}" for s, k, m in row) + "\n" for row in rows)


@st.composite
def linearised_plans(draw):
    P, S, M, mapping, split = _placement(draw)
    rnd = draw(st.randoms(use_true_random=False))
    pending = _actions(S, M, split)
    done: set = set()
    rows = [[] for _ in range(P)]
    while pending:
        ready = [a for a in pending if _ready(a, done, S)]
        a = rnd.choice(ready)
        pending.remove(a)
        done.add(a)
        rows[mapping[a[0]]].append(a)
    return _csv(rows)


@st.composite
def shuffled_plans(draw):
    P, S, M, mapping, split = _placement(draw)
    rnd = draw(st.randoms(use_true_random=False))
    order = {"F": 0, "B": 1, "I": 1, "W": 2}
    rows = []
    for r in range(P):
        mine = [a for a in _actions(S, M, split) if mapping[a[0]] == r]
        rnd.shuffle(mine)
        # restore F < B/I < W within each (stage, micro-batch) on the slots they took
        slots: dict = {}
        for i, (s, k, m) in enumerate(mine):
            slots.setdefault((s, m), []).append(i)
        for (s, m), idx in slots.items():
            group = sorted((mine[i] for i in idx), key=lambda a: order[a[1]])
            for i, a in zip(idx, group):
                mine[i] = a
        rows.append(mine)
    return _csv(rows)
