"""The contiguous-split MIP model and the unit helpers the IPs share
(internal to :mod:`schedsearch.partition`).

:mod:`~schedsearch.partition.partition_ip` (max-load, latency) and
:mod:`~schedsearch.partition.throughput_ip` both assign *units* (colocation
classes or supernodes) to slots: :class:`Units` holds their sums and edge
groups, :func:`build_contiguous` the contiguous slot model,
:func:`containing_block_bounds` the cut bounds that strengthen it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import attrs

from schedsearch.bounds.mip import MipModel
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, Slot, Split

__all__ = ["ContigModel", "Units", "add_memory_row", "build_contiguous", "containing_block_bounds", "contig_hint", "split_from_units",
           "stages_of_split", "units_of"]


# ---------------------------------------------------------------- classes and groups
@attrs.frozen(kw_only=True)
class Units:
    """Assignment units (classes or supernodes) with their sums and edge groups."""

    members: tuple[tuple[int, ...], ...]
    accel: tuple[float, ...]
    cpu: tuple[float, ...]
    size: tuple[float, ...]
    accel_ok: tuple[bool, ...]
    # (source unit, other units, cost)
    groups: tuple[tuple[int, tuple[int, ...], float], ...]
    unit_of: Mapping[int, int]


def units_of(graph: OperatorGraph, members: Sequence[Sequence[int]]) -> Units:
    """The units made of ``members`` (operator ids per unit, in topological order), with their sums and groups."""
    unit_of = {op: i for i, ms in enumerate(members) for op in ms}
    n = len(members)
    acc = [0.0] * n
    cpu = [0.0] * n
    size = [0.0] * n
    ok = [True] * n
    for i, ms in enumerate(members):
        ops = [graph.operator(o) for o in ms]
        acc[i] = math.fsum(o.accel_latency for o in ops)
        cpu[i] = math.fsum(o.cpu_latency for o in ops)
        size[i] = math.fsum(o.size for o in ops)
        ok[i] = all(o.supported_on_accel for o in ops)
    merged: dict[tuple[int, tuple[int, ...]], float] = {}
    for op in graph.operators:
        succs = graph.successors(op.id)
        if not succs or op.output_cost <= 0.0:
            continue
        src = unit_of[op.id]
        others = tuple(sorted({unit_of[t] for t in succs} - {src}))
        if others:
            merged[(src, others)] = merged.get((src, others), 0.0) + op.output_cost
    groups = tuple((s, o, c) for (s, o), c in sorted(merged.items()))
    return Units(
        members=tuple(tuple(m) for m in members), accel=tuple(acc), cpu=tuple(cpu), size=tuple(size),
        accel_ok=tuple(ok), groups=groups, unit_of=unit_of,
    )


# ---------------------------------------------------------------- block bounds
_FLOW_MARGIN = 1e-9  # relative margin taken off every flow value against rounding


def _singleton_cost(units: Units) -> list[float]:
    """Accelerator load of every unit alone in its block (work + every group it touches)."""
    out = list(units.accel)
    for src, others, c in units.groups:
        out[src] += c
        for o in others:
            out[o] += c
    return out


def containing_block_bounds(
    units: Units, *, threshold: float = 0.0, only_max: bool = False, time_limit_s: float | None = None,
) -> list[float]:
    """Per unit ``v``: a lower bound on the accelerator load of any block holding ``v``.

    The load of an accelerator block ``B`` is its work plus ``c_h`` for every
    edge group ``h`` it cuts (``h`` meets ``B`` and is not inside it), a
    hypergraph cut. ``min_{B containing v} work(B) + cut(B)``, with ``B``
    any set of units (neither convex nor within the memory limit: a
    relaxation), is a minimum s-t cut: ``s -> v`` uncuttable, ``u -> t`` of
    capacity ``work(u)``, and per group two nodes ``in -> out`` of capacity
    ``c_h`` with uncuttable arcs from every member to ``in`` and from
    ``out`` to every member (a group costs ``c_h`` exactly when its members
    lie on both sides). A feasible flow is a lower bound on that minimum,
    so the value returned (the flow less a relative 1e-9) is sound whatever
    the rounding of the flow algorithm.

    Units whose singleton load (an upper bound on their minimum) is at most
    ``threshold`` keep their work as bound, and so does every unit not
    reached within ``time_limit_s``; with ``only_max``, units are taken in
    decreasing singleton load and the search stops once no further unit can
    raise the maximum. Every value is at least the unit's work.
    """
    import networkx as nx
    from networkx.algorithms.flow import preflow_push

    n = len(units.members)
    bounds = list(units.accel)
    upper = _singleton_cost(units)
    if not units.groups:
        return bounds
    g = nx.DiGraph()
    for i in range(n):
        if units.accel[i] > 0:
            g.add_edge(("u", i), "t", capacity=units.accel[i])
        else:
            g.add_node(("u", i))
    for h, (src, others, c) in enumerate(units.groups):
        g.add_edge(("in", h), ("out", h), capacity=c)
        for m in (src, *others):
            g.add_edge(("u", m), ("in", h))  # no capacity: uncuttable
            g.add_edge(("out", h), ("u", m))
    g.add_node("s")
    g.add_node("t")
    t0 = time.perf_counter()
    best = max(bounds, default=0.0)
    for v in sorted(range(n), key=lambda i: -upper[i]):
        if upper[v] <= threshold or (only_max and upper[v] <= best):
            break
        if not units.accel_ok[v]:
            continue
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            break
        g.add_edge("s", ("u", v))
        value = nx.maximum_flow_value(g, "s", "t", flow_func=preflow_push)
        g.remove_edge("s", ("u", v))
        value = value * (1.0 - _FLOW_MARGIN)
        if value > bounds[v]:
            bounds[v] = min(value, upper[v])
        best = max(best, bounds[v])
    return bounds


def split_from_units(units: Units, unit_slot: Sequence[Slot], order: Sequence[Slot]) -> Split:
    """The split that puts every operator of unit ``i`` on ``unit_slot[i]``, stages in ``order``."""
    assignment = {op: unit_slot[i] for i, ms in enumerate(units.members) for op in ms}
    return Split.from_assignment(assignment, order=order)


def stages_of_split(units: Units, split: Split) -> list[tuple[str, list[int]]] | None:
    """Ordered stages ``(kind, units)`` of ``split``; None if it splits a unit or leaves one out."""
    stages = []
    for slot, ops in split.stages:
        us = sorted({units.unit_of[o] for o in ops if o in units.unit_of})
        stages.append((slot.kind, us))
    seen = [u for _, us in stages for u in us]
    if len(seen) != len(set(seen)) or len(seen) != len(units.members):
        return None
    return stages


def add_memory_row(m: MipModel, units: Units, on_device: Sequence[int], capacity: float, name: str) -> None:
    """The accelerator memory row of one device: the sizes of the units on it (``on_device[i]``
    is unit ``i``'s binary for that device) fit ``capacity``; with no capacity, no unit that has a
    size goes there."""
    n = len(units.members)
    if capacity > 0:
        m.add_le([(on_device[i], units.size[i] / capacity) for i in range(n) if units.size[i]], 1.0, name)
    else:
        for i in range(n):
            if units.size[i] > 0:
                m.fix(on_device[i], 0.0)


@attrs.frozen(kw_only=True)
class ContigModel:
    """The contiguous slot model with its variables (built by :func:`build_contiguous`)."""

    mip: MipModel
    units: Units
    xa: tuple[tuple[int, ...], ...]
    xc: tuple[tuple[int, ...], ...]
    cpu: tuple[int, ...]
    cut: dict
    t: int
    num_slots: int


def _closure_work(preds: Sequence[Sequence[int]], weight: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per unit: the weight of it and all its ancestors, and of it and all its descendants."""
    n = len(preds)
    anc = [0] * n
    for v in range(n):  # units are in topological order
        bits = 1 << v
        for u in preds[v]:
            bits |= anc[u]
        anc[v] = bits
    succs: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for u in ps:
            succs[u].append(v)
    desc = [0] * n
    for v in range(n - 1, -1, -1):
        bits = 1 << v
        for w in succs[v]:
            bits |= desc[w]
        desc[v] = bits

    def total(bits: int) -> float:
        out = []
        while bits:
            low = bits & -bits
            out.append(weight[low.bit_length() - 1])
            bits ^= low
        return math.fsum(out)

    return [total(b) for b in anc], [total(b) for b in desc]


def build_contiguous(
    units: Units, preds: Sequence[Sequence[int]], devices: DeviceLimits, name: str,
    *, block_bounds: Sequence[float] | None = None, lower: float = 0.0, upper: float | None = None,
) -> ContigModel:
    """The contiguous slot model.

    ``block_bounds`` (per unit, from :func:`containing_block_bounds`)
    replace the unit's work in its ``unit bound`` row: the accelerator slot
    holding unit ``v`` has load at least ``block_bounds[v]`` in every
    split. ``lower`` is a proven lower bound on ``T``. ``upper`` is the
    max-load of a known split: ``T`` is capped by it and unit ``v`` is kept
    out of slot ``s`` when its ancestors (itself included) weigh more than
    ``s + 1`` slots can hold at load ``upper``, or its descendants more than
    ``S - s`` slots (weights are the lesser of accelerator and CPU latency,
    so this holds whatever the slot kinds). Only splits with max-load above
    ``upper`` are removed, so with the known split kept beside the model's
    answer the optimum is unchanged.
    """
    K, L = devices.num_accelerators, devices.num_cpus
    S = K + L
    n = len(units.members)
    m = MipModel(name)
    cpu = []
    for s in range(S):
        v = m.new_binary(f"cpu[{s}]")
        if K == 0:
            m.fix(v, 1.0)
        elif L == 0:
            m.fix(v, 0.0)
        cpu.append(v)
    m.add_eq([(v, 1.0) for v in cpu], float(L), "cpu slots")
    xa, xc = [], []
    for i in range(n):
        ra, rc = [], []
        for s in range(S):
            a = m.new_binary(f"xa[{i},{s}]")
            c = m.new_binary(f"xc[{i},{s}]")
            if not units.accel_ok[i] or K == 0:
                m.fix(a, 0.0)
            if L == 0:
                m.fix(c, 0.0)
            m.add_le([(a, 1.0), (cpu[s], 1.0)], 1.0)
            m.add_le([(c, 1.0), (cpu[s], -1.0)], 0.0)
            ra.append(a)
            rc.append(c)
        xa.append(tuple(ra))
        xc.append(tuple(rc))
        m.add_eq([(v, 1.0) for v in ra + rc], 1.0, f"assign[{i}]")
    # cumulative ideals y[v, t] (t < S - 1; y[v, S-1] = 1)
    y = []
    for i in range(n):
        row = []
        for tt in range(S - 1):
            v = m.new_continuous(0.0, 1.0, f"y[{i},{tt}]")
            terms = [(v, 1.0)] + [(xa[i][s], -1.0) for s in range(tt + 1)] + [(xc[i][s], -1.0) for s in range(tt + 1)]
            m.add_eq(terms, 0.0)
            row.append(v)
        y.append(row)
    for v_ in range(n):
        for u in preds[v_]:
            for tt in range(S - 1):
                m.add_le([(y[v_][tt], 1.0), (y[u][tt], -1.0)], 0.0)
    cap_t = upper * (1 + 1e-9) + 1e-12 if upper is not None and math.isfinite(upper) else math.inf
    t = m.new_continuous(0.0, cap_t, name="T")
    if lower > 0:
        m.lb[t] = min(float(lower), cap_t)
    if math.isfinite(cap_t):
        weight = [min(units.accel[i] if units.accel_ok[i] and K else math.inf, units.cpu[i] if L else math.inf)
                  for i in range(n)]
        weight = [0.0 if math.isinf(w) else w for w in weight]
        head, tail = _closure_work(preds, weight)
        for i in range(n):
            for s_ in range(S):
                if head[i] > (s_ + 1) * cap_t or tail[i] > (S - s_) * cap_t:
                    m.fix(xa[i][s_], 0.0)
                    m.fix(xc[i][s_], 0.0)
    cut: dict[tuple[int, int], tuple[int, int]] = {}
    for s in range(S):
        if K == 0:
            break
        for h, (src, others, cost) in enumerate(units.groups):
            snd = m.new_continuous(0.0, 1.0, f"send[{h},{s}]")
            rcv = m.new_continuous(0.0, 1.0, f"recv[{h},{s}]")
            cut[h, s] = (snd, rcv)
            for o in others:
                m.add_ge([(snd, 1.0), (xa[src][s], -1.0), (xa[o][s], 1.0), (xc[o][s], 1.0)], 0.0)
                m.add_ge([(rcv, 1.0), (xa[o][s], -1.0), (xa[src][s], 1.0), (xc[src][s], 1.0)], 0.0)
        terms = [(xa[i][s], units.accel[i]) for i in range(n) if units.accel[i]]
        terms += [(xc[i][s], units.cpu[i]) for i in range(n) if units.cpu[i]]
        for h, (_, _, c) in enumerate(units.groups):
            terms += [(cut[h, s][0], c), (cut[h, s][1], c)]
        m.add_ge([(t, 1.0)] + [(v, -c) for v, c in terms], 0.0, f"load[{s}]")
        if devices.max_accel_memory is not None:
            add_memory_row(m, units, [xa[i][s] for i in range(n)], devices.max_accel_memory, f"memory[{s}]")
    if K == 0:
        for s in range(S):
            m.add_ge([(t, 1.0)] + [(xc[i][s], -units.cpu[i]) for i in range(n) if units.cpu[i]], 0.0)
    # a unit's own latency on its slot never exceeds T (see the non-contiguous IP);
    # with block bounds, the load of any accelerator block holding it
    for i in range(n):
        acc = max(units.accel[i], block_bounds[i]) if block_bounds is not None else units.accel[i]
        terms = [(xa[i][s], acc) for s in range(S) if acc]
        terms += [(xc[i][s], units.cpu[i]) for s in range(S) if units.cpu[i]]
        if terms:
            m.add_ge([(t, 1.0)] + [(v, -c) for v, c in terms], 0.0, f"unit bound[{i}]")
    m.minimize([(t, 1.0)])
    return ContigModel(mip=m, units=units, xa=tuple(xa), xc=tuple(xc), cpu=tuple(cpu), cut=cut, t=t, num_slots=S)


def contig_hint(model: ContigModel, stages: Sequence[tuple[str, Sequence[int]]], devices: DeviceLimits) -> dict[int, float] | None:
    """Hint from ordered stages ``(kind, units)``; None if they do not fit the slots."""
    K, L = devices.num_accelerators, devices.num_cpus
    kinds = [k for k, _ in stages]
    if kinds.count("accel") > K or kinds.count("cpu") > L:
        return None
    # pad with empty slots of the missing kinds at the end
    padded = list(stages) + [("accel", ())] * (K - kinds.count("accel")) + [("cpu", ())] * (L - kinds.count("cpu"))
    units = model.units
    n = len(units.members)
    slot_of = [-1] * n
    hint: dict[int, float] = {}
    for s, (kind, us) in enumerate(padded):
        hint[model.cpu[s]] = 1.0 if kind == "cpu" else 0.0
        for u in us:
            slot_of[u] = s
    if min(slot_of, default=0) < 0:
        return None
    S = model.num_slots
    loads = [0.0] * S
    for i in range(n):
        s = slot_of[i]
        is_cpu = padded[s][0] == "cpu"
        for s2 in range(S):
            hint[model.xa[i][s2]] = 1.0 if (s2 == s and not is_cpu) else 0.0
            hint[model.xc[i][s2]] = 1.0 if (s2 == s and is_cpu) else 0.0
        loads[s] += units.cpu[i] if is_cpu else units.accel[i]
    for (h, s), (snd, rcv) in model.cut.items():
        src, others, cost = units.groups[h]
        on = lambda u: 1.0 if slot_of[u] == s else 0.0  # noqa: E731
        acc = padded[s][0] == "accel"
        xs_a = on(src) if acc else 0.0
        sv = max([0.0] + [xs_a - on(o) for o in others])
        rv = max([0.0] + [(on(o) if acc else 0.0) - on(src) for o in others])
        hint[snd], hint[rcv] = sv, rv
        loads[s] += cost * (sv + rv)
    # cumulative variables: computed by the model's equalities; fill them
    for var_index, name in enumerate(model.mip.var_names):
        if name.startswith("y["):
            i, tt = map(int, name[2:-1].split(","))
            hint[var_index] = 1.0 if slot_of[i] <= tt else 0.0
    hint[model.t] = max(loads) if loads else 0.0
    return hint
