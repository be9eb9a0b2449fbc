"""Test-local builders of Tessel's five shapes (V, X, M, NN, K).

Tessel's conventions: forward blocks last 1 and allocate 1, backward blocks
last 3 and free 1, full-shard blocks occupy every device for 1 unit with
memory 0 (K's shared full-shard pair allocates 1 and frees 1). These are a
fixture for the repetend tests only; the library's placements are the
reference builders.
"""

from __future__ import annotations

from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Problem

F, B = 1, 3


def _problem(name, chains, num_devices, num_microbatches, memory, train=True):
    devices = [f"d{i}" for i in range(num_devices)]
    blocks: dict[str, Block] = {}
    edges: list[Edge] = []
    for chain in chains:
        prev = None
        for bname, kind, devs, dur, mem in chain:
            if not train and kind == "B":
                continue
            if bname not in blocks:
                blocks[bname] = Block(
                    name=bname, kind=kind, options=[([devices[d] for d in devs], dur)],
                    memory=mem if train else 0,
                )
            if prev is not None and not any(e.src == prev and e.dst == bname for e in edges):
                edges.append(Edge(src=prev, dst=bname))
            prev = bname
    return Problem(
        graph=Graph(blocks=list(blocks.values()), edges=edges),
        num_microbatches=num_microbatches,
        cluster=Cluster(devices=[Device(name=d, memory=memory) for d in devices]),
        name=f"{name}-{num_devices}",
    )


def _v(D, sfx="", order=None):
    order = list(range(D)) if order is None else order
    fw = [(f"F{i}{sfx}", "F", [d], F, 1) for i, d in enumerate(order)]
    bw = [(f"B{i}{sfx}", "B", [d], B, -1) for i, d in reversed(list(enumerate(order)))]
    return fw, bw


def vshape(D, n, memory=None, train=True):
    fw, bw = _v(D)
    return _problem("V", [fw + bw], D, n, memory, train)


def xshape(D, n, memory=None, train=True):
    f1, b1 = _v(D, ".down")
    f2, b2 = _v(D, ".up", list(range(D - 1, -1, -1)))
    return _problem("X", [f1 + b1, f2 + b2], D, n, memory, train)


def mshape(D, n, memory=None, train=True):
    fw, bw = _v(D)
    allv = list(range(D))
    return _problem("M", [[("FS", "F", allv, 1, 0)] + fw + bw + [("BS", "B", allv, 1, 0)]], D, n, memory, train)


def nnshape(D, n, memory=None, train=True):
    fw, bw = _v(D)
    allv = list(range(D))
    fw.insert(D // 2, ("FS2", "F", allv, 1, 0))
    bw.insert(D // 2, ("BS2", "B", allv, 1, 0))
    return _problem("NN", [[("FS1", "F", allv, 1, 0)] + fw + bw + [("BS1", "B", allv, 1, 0)]], D, n, memory, train)


def kshape(D, n, memory=None, train=True):
    half = D // 2
    allv = list(range(D))
    mm = [("FM", "F", allv, 1, 1), ("BM", "B", allv, 1, -1)]
    chains = []
    for br, devs in enumerate((list(range(half)), list(range(half, D)))):
        fw = [(f"F{d}", "F", [d], F, 1) for d in devs]
        bw = [(f"B{d}", "B", [d], B, -1) for d in reversed(devs)]
        chains.append(fw + mm + bw)
    return _problem("K", chains, D, n, memory, train)


SHAPES = {"V": vshape, "X": xshape, "M": mshape, "NN": nnshape, "K": kshape}
