"""Hypothesis strategies for operator graphs and brute-force reference solvers.

Graphs are acyclic by construction: forward edges go from a lower to a higher
index; backward operators mirror them (``b(j) -> b(i)``) and share their
forward partner's colocation class. Numbers are small integers (as floats) so
that exact comparisons are meaningful.
"""

from __future__ import annotations

import itertools
import math

from hypothesis import strategies as st

from schedsearch.partition.cost import evaluate_split
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph, Slot


@st.composite
def operator_graphs(draw, max_forward: int = 5, training: bool | None = None,
                    colocate: bool = True, unsupported: bool = False) -> OperatorGraph:
    n = draw(st.integers(1, max_forward))
    is_training = draw(st.booleans()) if training is None else training
    classes = []
    for i in range(n):
        if colocate and i > 0 and draw(st.integers(0, 5)) == 0:
            classes.append(classes[draw(st.integers(0, i - 1))])
        else:
            classes.append(i)
    edges = [(i, j) for j in range(n) for i in range(j) if draw(st.integers(0, 2)) == 0]
    ops = []
    for i in range(n):
        acc = float(draw(st.integers(0, 6)))
        ops.append(Operator(
            id=i, name=f"f{i}", accel_latency=acc,
            cpu_latency=float(draw(st.integers(0, 12))),
            size=float(draw(st.integers(0, 3))),
            output_cost=float(draw(st.integers(0, 3))),
            color_class=classes[i],
            supported_on_accel=not (unsupported and draw(st.integers(0, 6)) == 0),
        ))
    if is_training:
        for i in range(n):
            ops.append(Operator(
                id=n + i, name=f"b{i}", accel_latency=float(draw(st.integers(0, 6))),
                cpu_latency=float(draw(st.integers(0, 12))), size=0.0,
                output_cost=float(draw(st.integers(0, 3))), color_class=classes[i],
                is_backward=True,
            ))
        edges += [(n + j, n + i) for i, j in edges]
        # some forward operators feed their own backward partner
        edges += [(i, n + i) for i in range(n) if draw(st.booleans())]
    return OperatorGraph(operators=ops, edges=edges, name="random")


@st.composite
def device_limits(draw, max_accel: int = 3, max_cpu: int = 1, memory: bool = True) -> DeviceLimits:
    k = draw(st.integers(0, max_accel))
    l = draw(st.integers(0 if k else 1, max_cpu))
    mem = float(draw(st.integers(2, 8))) if memory and draw(st.booleans()) else None
    return DeviceLimits(num_accelerators=k, num_cpus=l, max_accel_memory=mem)


def _acyclic(assign: dict[int, Slot], edges) -> bool:
    succ: dict[Slot, set[Slot]] = {}
    for a, b in edges:
        sa, sb = assign[a], assign[b]
        if sa != sb:
            succ.setdefault(sa, set()).add(sb)
    state: dict[Slot, int] = {}

    def visit(s) -> bool:
        state[s] = 1
        for t in succ.get(s, ()):
            if state.get(t) == 1 or (t not in state and not visit(t)):
                return False
        state[s] = 2
        return True

    return all(visit(s) for s in list(succ) if s not in state)


def brute_force_contiguous(graph: OperatorGraph, devices: DeviceLimits) -> float:
    """Best max-load over all assignments whose device quotient is acyclic.

    Units of assignment are colocation classes (backward operators share
    their partner's class); the quotient is taken over forward edges only
    (backward operators follow their forward partners). Costs come from
    :func:`evaluate_split`; infeasible assignments are skipped.
    """
    slots = [Slot(kind="accel", index=i) for i in range(devices.num_accelerators)] + [
        Slot(kind="cpu", index=i) for i in range(devices.num_cpus)
    ]
    units: dict = {}
    for op in graph.operators:
        key = op.color_class if op.color_class is not None else ("solo", op.id)
        units.setdefault(key, []).append(op.id)
    keys = list(units)
    forward_edges = [(a, b) for a, b in graph.edges
                     if not graph.operator(a).is_backward and not graph.operator(b).is_backward]
    best = math.inf
    for combo in itertools.product(slots, repeat=len(keys)):
        assign = {op: s for key, s in zip(keys, combo) for op in units[key]}
        if not _acyclic(assign, forward_edges):
            continue
        cost = evaluate_split(graph, assign, devices)
        if cost.feasible:
            best = min(best, cost.max_load)
    return best


@st.composite
def graphs_with_trivial_leaves(draw, max_forward: int = 4, max_leaves: int = 2) -> OperatorGraph:
    """A small operator graph with zero-latency leaves that hold memory.

    Each leaf has no latency of either kind and one edge, to or from an
    operator drawn before it (a forward operator or an earlier leaf, so
    leaves of leaves merge step by step); it has a size, an output cost and
    may be unsupported on accelerators.
    """
    base = draw(operator_graphs(max_forward=max_forward, unsupported=True))
    ops = list(base.operators)
    edges = list(base.edges)
    anchors = [op.id for op in ops if not op.is_backward]
    next_id = max(op.id for op in ops) + 1
    for _ in range(draw(st.integers(1, max_leaves))):
        leaf = next_id
        next_id += 1
        ops.append(Operator(
            id=leaf, name=f"leaf{leaf}", accel_latency=0.0, cpu_latency=0.0,
            size=float(draw(st.integers(0, 4))), output_cost=float(draw(st.integers(0, 3))),
            supported_on_accel=draw(st.integers(0, 5)) > 0,
        ))
        other = draw(st.sampled_from(anchors))
        edges.append((leaf, other) if draw(st.booleans()) else (other, leaf))
        anchors.append(leaf)
    return OperatorGraph(operators=ops, edges=edges, name="leaves")


@st.composite
def memory_limits(draw, graph: OperatorGraph, max_accel: int = 3) -> DeviceLimits:
    """Devices whose memory limit is between the largest operator and all of the graph's memory (a CPU
    where some operator needs one)."""
    sizes = [op.size for op in graph.operators]
    k = draw(st.integers(1, max_accel))
    l = draw(st.integers(0, 1)) if all(op.supported_on_accel for op in graph.operators) else 1
    mem = float(draw(st.integers(int(max(sizes)), int(max(sum(sizes), 1)))))
    return DeviceLimits(num_accelerators=k, num_cpus=l, max_accel_memory=mem)
