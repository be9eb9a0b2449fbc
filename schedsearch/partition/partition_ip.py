"""Integer programs of Tarnawski et al. (NeurIPS 2020) on the operator graph.

Three models, all on the cost model of :mod:`schedsearch.partition.cost`
(the one the DP optimises), all built as a solver-free
:class:`~schedsearch.bounds.mip.MipModel` and solved by HiGHS, SCIP or CBC:

:func:`noncontiguous_ip` -- max-load, any split
    Units are colocation classes (an operator without a class is a class of
    its own; backward operators carry their forward partner's class, so they
    follow it). Binary ``x[c, d]``: class ``c`` on device ``d`` (``k``
    accelerators, ``l`` CPUs), ``sum_d x[c, d] = 1``; classes holding an
    operator unsupported on accelerators get ``x[c, a] = 0``. For every
    *edge group* ``h`` (an operator ``s`` with output cost ``c_h`` and its
    successors; groups with the same source class and the same successor
    classes are merged and their costs added) and every accelerator ``a``::

        send[h, a] >= x[src(h), a] - x[t, a]      for every class t of h
        recv[h, a] >= x[t, a] - x[src(h), a]      for every class t of h

    (at an integer point ``send + recv`` is 1 exactly when the group is cut
    by ``a``: the reference cost; one variable ``>= |x_u - x_v|`` per edge
    gives a weaker LP). Loads and objective::

        T >= sum_c lat_acc(c) x[c, a] + sum_h c_h (send[h, a] + recv[h, a])
        T >= sum_c lat_cpu(c) x[c, p]                      (CPUs: no communication)
        sum_c size(c) / M x[c, a] <= 1                     (memory, scaled by M)

    Accelerators are interchangeable, and so are CPUs: with
    ``symmetry_breaking`` class ``i`` (in a fixed order) may open device
    ``d`` of a kind only if device ``d - 1`` holds a class ordered before
    it (``x[i, d] <= sum_{j < i} x[j, d - 1]``), which keeps one
    representative of every relabelling.

:func:`contiguous_ip` -- max-load, contiguous (acyclic quotient) splits
    Works on the forward supernodes of
    :func:`~schedsearch.partition.contraction.contract` (the DP's own units,
    with the same contraction), so its optimum is the DP optimum. ``k + l``
    ordered *slots*; a binary ``cpu[s]`` makes slot ``s`` a CPU
    (``sum_s cpu[s] = l``). Binaries ``xa[v, s] <= 1 - cpu[s]`` and
    ``xc[v, s] <= cpu[s]`` place supernode ``v``; the cumulative
    ``y[v, t] = sum_{s <= t} (xa + xc)[v, s]`` is an ideal for every ``t``
    (``y[v, t] <= y[u, t]`` for every precedence ``u -> v``), so stage ``s``
    is the difference of two ideals and the quotient graph is acyclic. The
    communication rows are those above, on ``xa``.

:func:`latency_ip` -- single-sample latency (the paper's latency IP)
    For the latency inputs: every CPU-placed operator runs as soon as its
    inputs are ready (CPUs are unlimited), each accelerator runs up to
    ``subgraphs_per_accel`` *contiguous* subgraphs, each as one call: it
    starts when all of its inputs are ready, lasts its accelerator latency
    plus the cost of every tensor entering or leaving it (communication is
    not overlapped with compute), and its outputs are ready when it ends::

        lat[v] >= lat[u] + lat_cpu(v) x[v, cpu]             (edges u -> v)
        start[g] >= lat[u] - U (1 - recv[u, g])              (inputs of g)
        finish[g] = start[g] + load(g)
        lat[v] >= finish[g] - U (1 - x[v, g])
        L >= lat[v]

    with ``U`` an upper bound on the optimum (the all-CPU latency), which
    keeps the big-M constants as small as valid ones can be. Subgraphs of
    one accelerator run one after the other and share its memory.

:func:`latency_problem` builds, for cross-checking :func:`latency_ip`
against the exact CP-SAT scheduler, the same workload as a one-micro-batch
:class:`~schedsearch.problem.Problem`. The two models describe the same
thing on *chains* (each operator feeding only the next) with integer
costs; see that function for where they differ elsewhere.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from schedsearch.bounds.mip import MipModel, MipOptions, MipResult, solve_mip
from schedsearch.errors import InvalidOperatorGraphError
from schedsearch.partition._common import resolve_workload
from schedsearch.partition._contiguous_model import (
    Units,
    add_memory_row,
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
from schedsearch.partition.result import PartitionResult
from schedsearch.result import Status

__all__ = [
    "PartitionBound",
    "noncontiguous_ip",
    "contiguous_ip",
    "latency_ip",
    "latency_of_split",
    "latency_problem",
    "colocation_classes",
]

_EPS = 1e-9


# ---------------------------------------------------------------- results
@attrs.frozen(kw_only=True)
class PartitionBound:
    """A split found by an integer program, with its proven lower bound.

    Attributes
    ----------
    method:
        ``"ip-noncontiguous"``, ``"ip-contiguous"``, ``"ip-latency"``, ...
    status:
        As in :class:`~schedsearch.result.SearchResult`; OPTIMAL means
        within the MIP's relative gap.
    split:
        The best split (None without one).
    value:
        Its value recomputed from the split (max-load by
        :func:`~schedsearch.partition.cost.evaluate_split`, or latency by
        :func:`latency_of_split`), never read from the solver.
    lower_bound:
        Proven lower bound on the optimum of the model's split family.
    cost:
        The independent evaluation of the split (max-load models).
    mip:
        The raw solver result.

    Examples
    --------
    >>> from schedsearch.partition import PartitionBound
    >>> from schedsearch.result import Status
    >>> print(PartitionBound(method="ip-noncontiguous", status=Status.FEASIBLE, split=None, value=7.5,
    ...                      lower_bound=6.0, wall_time_s=0.0))
    ip-noncontiguous: FEASIBLE, value 7.5, lower bound 6, gap 20%, 0.00 s
    """

    method: str
    status: Status
    split: Split | None
    value: float | None
    lower_bound: float | None
    wall_time_s: float
    mip: MipResult | None = None
    cost: SplitCost | None = None
    stats: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def gap(self) -> float | None:
        """``(value - lower_bound) / value``."""
        if self.value is None or self.lower_bound is None:
            return None
        if self.value <= 0:
            return 0.0
        return max(0.0, (self.value - self.lower_bound) / self.value)

    def to_partition_result(self) -> PartitionResult:
        """The split as a :class:`~schedsearch.partition.result.PartitionResult`."""
        if self.split is None or self.cost is None:
            raise InvalidOperatorGraphError(f"{self.method}: no split to convert (status {self.status.value})")
        return PartitionResult(
            method=self.method,
            split=self.split,
            max_load=self.value if self.value is not None else self.cost.max_load,
            cost=self.cost,
            optimal=self.status is Status.OPTIMAL,
            wall_time_s=self.wall_time_s,
            stats={"lower_bound": self.lower_bound, "gap": self.gap, **dict(self.stats)},
        )

    def __str__(self) -> str:
        parts = [f"{self.method}: {self.status.value}"]
        if self.value is not None:
            parts.append(f"value {self.value:.6g}")
        if self.lower_bound is not None:
            parts.append(f"lower bound {self.lower_bound:.6g}")
        if self.gap is not None:
            parts.append(f"gap {100 * self.gap:.3g}%")
        parts.append(f"{self.wall_time_s:.2f} s")
        if self.mip is not None:
            parts.append(self.mip.solver)
        return ", ".join(parts)


def colocation_classes(graph: OperatorGraph) -> tuple[tuple[int, ...], ...]:
    """Operator ids grouped by colocation class (an operator without a class alone).

    Classes are listed in the order of their first operator in a
    topological order.
    """
    order = graph.topological_order()
    key_index: dict[Any, int] = {}
    groups: list[list[int]] = []
    for op_id in order:
        op = graph.operator(op_id)
        key = ("c", op.color_class) if op.color_class is not None else ("o", op.id)
        if key not in key_index:
            key_index[key] = len(groups)
            groups.append([])
        groups[key_index[key]].append(op_id)
    return tuple(tuple(sorted(g)) for g in groups)


def _cg_units(graph: OperatorGraph, cg: ContractedGraph) -> Units:
    return units_of(graph, cg.members)


# ---------------------------------------------------------------- non-contiguous max-load
@attrs.frozen(kw_only=True)
class _NonContigModel:
    mip: MipModel
    units: Units
    x: tuple[tuple[int, ...], ...]  # x[unit][device]; devices: accels then CPUs
    send: dict
    recv: dict
    t: int
    devices: DeviceLimits
    ranked: tuple[int, ...]


def _device_slots(devices: DeviceLimits) -> list[Slot]:
    return [Slot(kind="accel", index=a) for a in range(devices.num_accelerators)] + [
        Slot(kind="cpu", index=p) for p in range(devices.num_cpus)
    ]


def _build_noncontiguous(
    units: Units, devices: DeviceLimits, symmetry_breaking: bool, name: str, fix_largest: int = 3
) -> _NonContigModel:
    K, L = devices.num_accelerators, devices.num_cpus
    n = len(units.members)
    m = MipModel(name)
    x = []
    for i in range(n):
        row = []
        for d in range(K + L):
            v = m.new_binary(f"x[{i},{d}]")
            if d < K and not units.accel_ok[i]:
                m.fix(v, 0.0)
            row.append(v)
        x.append(tuple(row))
        m.add_eq([(v, 1.0) for v in row], 1.0, f"assign[{i}]")
    t = m.new_continuous(0.0, name="T")
    send: dict[tuple[int, int], int] = {}
    recv: dict[tuple[int, int], int] = {}
    for a in range(K):
        for h, (src, others, cost) in enumerate(units.groups):
            s = m.new_continuous(0.0, 1.0, f"send[{h},{a}]")
            r = m.new_continuous(0.0, 1.0, f"recv[{h},{a}]")
            send[h, a], recv[h, a] = s, r
            for o in others:
                m.add_ge([(s, 1.0), (x[src][a], -1.0), (x[o][a], 1.0)], 0.0)
                m.add_ge([(r, 1.0), (x[o][a], -1.0), (x[src][a], 1.0)], 0.0)
        terms = [(x[i][a], units.accel[i]) for i in range(n) if units.accel[i]]
        terms += [(send[h, a], c) for h, (_, _, c) in enumerate(units.groups)]
        terms += [(recv[h, a], c) for h, (_, _, c) in enumerate(units.groups)]
        m.add_ge([(t, 1.0)] + [(v, -c) for v, c in terms], 0.0, f"load[accel{a}]")
        if devices.max_accel_memory is not None:
            add_memory_row(m, units, [x[i][a] for i in range(n)], devices.max_accel_memory, f"memory[{a}]")
    for p in range(L):
        d = K + p
        m.add_ge([(t, 1.0)] + [(x[i][d], -units.cpu[i]) for i in range(n) if units.cpu[i]], 0.0, f"load[cpu{p}]")
    # a unit's own latency on the device it goes to never exceeds T (valid at
    # integer points; it stops the LP from spreading a large unit over devices)
    for i in range(n):
        terms = [(x[i][d], units.accel[i] if d < K else units.cpu[i]) for d in range(K + L)]
        terms = [(v, c) for v, c in terms if c]
        if terms:
            m.add_ge([(t, 1.0)] + [(v, -c) for v, c in terms], 0.0, f"unit bound[{i}]")
    # interchangeable devices, light form: with units ranked by decreasing
    # latency, the r-th of the first `fix_largest` may only go to devices
    # 0..r of each kind (relabel any split's devices in the order of their
    # largest units to see that this loses nothing); only bounds are fixed
    ranked = sorted(range(n), key=lambda i: (-units.accel[i], -units.cpu[i], i))
    for r, i in enumerate(ranked[:fix_largest]):
        for lo, hi in ((0, K), (K, K + L)):
            for d in range(lo + r + 1, hi):
                m.fix(x[i][d], 0.0)
    if symmetry_breaking:
        # full form, in the same ranking (so both breaks keep the same labelling)
        for lo, hi in ((0, K), (K, K + L)):
            for d in range(lo + 1, hi):
                for r, i in enumerate(ranked):
                    m.add_le([(x[i][d], 1.0)] + [(x[j][d - 1], -1.0) for j in ranked[:r]], 0.0)
    m.minimize([(t, 1.0)])
    return _NonContigModel(mip=m, units=units, x=tuple(x), send=send, recv=recv, t=t, devices=devices,
                           ranked=tuple(ranked))


def _canonical_devices(unit_dev: Sequence[int], K: int, L: int, ranked: Sequence[int]) -> list[int]:
    """Relabel devices of each kind by their highest-ranked unit (the symmetry-broken form)."""
    out = list(unit_dev)
    for lo, hi in ((0, K), (K, K + L)):
        first: dict[int, int] = {}
        for r, i in enumerate(ranked):
            d = unit_dev[i]
            if lo <= d < hi and d not in first:
                first[d] = r
        ranked = sorted(first, key=first.get)
        remap = {d: lo + r for r, d in enumerate(ranked)}
        out = [remap.get(d, d) if lo <= d < hi else d for d in out]
    return out


def _noncontig_hint(model: _NonContigModel, unit_dev: Sequence[int]) -> dict[int, float]:
    units, K, L = model.units, model.devices.num_accelerators, model.devices.num_cpus
    unit_dev = _canonical_devices(unit_dev, K, L, model.ranked)
    hint: dict[int, float] = {}
    for i, row in enumerate(model.x):
        for d, v in enumerate(row):
            hint[v] = 1.0 if unit_dev[i] == d else 0.0
    loads = [0.0] * (K + L)
    for i, d in enumerate(unit_dev):
        loads[d] += units.accel[i] if d < K else units.cpu[i]
    for (h, a), s in model.send.items():
        src, others, cost = units.groups[h]
        xs = 1.0 if unit_dev[src] == a else 0.0
        sv = max([0.0] + [xs - (1.0 if unit_dev[o] == a else 0.0) for o in others])
        rv = max([0.0] + [(1.0 if unit_dev[o] == a else 0.0) - xs for o in others])
        hint[s], hint[model.recv[h, a]] = sv, rv
        loads[a] += cost * (sv + rv)
    hint[model.t] = max(loads) if loads else 0.0
    return hint


def _unit_devices_of_split(units: Units, split: Split, devices: DeviceLimits) -> list[int] | None:
    """Device index (accels then CPUs) of every unit in ``split``; None if it splits a unit."""
    K = devices.num_accelerators
    assignment = split.assignment()
    out = []
    for ms in units.members:
        slots = {assignment.get(op) for op in ms}
        if len(slots) != 1 or None in slots:
            return None
        s = slots.pop()
        if s.kind == "accel" and s.index < K:
            out.append(s.index)
        elif s.kind == "cpu" and s.index < devices.num_cpus:
            out.append(K + s.index)
        else:
            return None
    return out


def _finish_maxload(
    method: str,
    graph: OperatorGraph,
    devices: DeviceLimits,
    res: MipResult,
    split: Split | None,
    t0: float,
    stats: dict,
    *,
    incumbent: Split | None = None,
    lower: float = 0.0,
    relative_gap: float = 0.0,
) -> PartitionBound:
    """Value recomputed from the split; the better of the IP's split and ``incumbent``.

    ``lower`` is a lower bound proven outside the IP (it only raises the
    IP's); the status becomes OPTIMAL when the bound meets the value within
    ``relative_gap``.
    """
    cost = evaluate_split(graph, split, devices) if split is not None else None
    if cost is not None and not cost.feasible:  # pragma: no cover - model bug guard
        raise InvalidOperatorGraphError(f"{method}: the IP returned an infeasible split: {cost.violations}")
    if res.objective is not None and cost is not None:
        stats["objective_vs_evaluated"] = abs(res.objective - cost.max_load)
    if incumbent is not None:
        inc_cost = evaluate_split(graph, incumbent, devices)
        if inc_cost.feasible and (cost is None or inc_cost.max_load < cost.max_load):
            split, cost = incumbent, inc_cost
            stats["answer"] = "incumbent"
    value = cost.max_load if cost is not None else None
    bound = res.best_bound
    if res.status is Status.INFEASIBLE:
        bound = None  # no split at or below the incumbent's cap: nothing proven beyond `lower`
    if lower > 0:
        bound = lower if bound is None else max(bound, lower)
    if bound is not None and value is not None:
        bound = min(bound, value)
    status = res.status
    if value is not None:
        if bound is not None and bound >= value * (1 - relative_gap) - 1e-12:
            status = Status.OPTIMAL
        elif status in (Status.TIMEOUT, Status.UNKNOWN, Status.INFEASIBLE):
            status = Status.FEASIBLE
    return PartitionBound(
        method=method, status=status, split=split, value=value, lower_bound=bound,
        wall_time_s=time.perf_counter() - t0, mip=res, cost=cost, stats=stats,
    )


def noncontiguous_ip(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    incumbent: Split | None = None,
    symmetry_breaking: bool = False,
    fix_largest: int = 3,
    options: MipOptions | None = None,
    **overrides: Any,
) -> PartitionBound:
    """Minimum max-load over all splits (the paper's non-contiguous IP).

    Parameters
    ----------
    graph, devices:
        The operator graph and the devices (a workload carries both).
    incumbent:
        A feasible split to start from (its max-load is an upper bound the
        result never exceeds). By default the linear-order DP split
        (:func:`~schedsearch.partition.dp.partition_dpl`), which is
        contiguous and fast.
    symmetry_breaking:
        Keep one labelling of interchangeable devices with the full
        representative rows (module docstring). Off by default: measured
        here it slows HiGHS down (bert24: 6 s -> 270 s).
    fix_largest:
        The light symmetry break: the ``r``-th largest of this many units
        may only use devices ``0..r`` of each kind (bounds only). 3 by
        default: measured here (HiGHS, one thread, CPU seconds) it takes
        gnmt from unproven after 189 s to 9 s and keeps bert24 at 6 s;
        fixing every unit that way made bert24 take 112 s.
    options, overrides:
        :class:`~schedsearch.bounds.mip.MipOptions` (solver, time limit,
        gap, threads, seed); keyword arguments override its fields.

    Returns
    -------
    PartitionBound
        The best split, its max-load (recomputed), the proven lower bound.

    Examples
    --------
    No split of the chain, contiguous or not, beats the DP's 7 on two
    accelerators:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, noncontiguous_ip
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = noncontiguous_ip(graph, DeviceLimits(num_accelerators=2), time_limit_s=10)
    >>> bound.status.value, bound.value, bound.lower_bound
    ('OPTIMAL', 7.0, 7.0)
    """
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    options = MipOptions.resolve(options, overrides, "noncontiguous_ip")
    units = units_of(graph, colocation_classes(graph))
    model = _build_noncontiguous(units, devices, symmetry_breaking, f"noncontiguous {graph.name}", fix_largest)
    if incumbent is None:
        incumbent = _default_incumbent(graph, devices)
    if incumbent is not None:
        dev = _unit_devices_of_split(units, incumbent, devices)
        if dev is not None and evaluate_split(graph, incumbent, devices).feasible:
            model.mip.set_hint(_noncontig_hint(model, dev))
    res = solve_mip(model.mip, options)
    split = None
    if res.values is not None:
        slots = _device_slots(devices)
        unit_slot = []
        for row in model.x:
            d = max(range(len(row)), key=lambda j: res.values[row[j]])
            unit_slot.append(slots[d])
        split = split_from_units(units, unit_slot, slots)
    stats = {"classes": len(units.members), "groups": len(units.groups), "mip": str(model.mip)}
    return _finish_maxload("ip-noncontiguous", graph, devices, res, split, t0, stats)


def _default_incumbent(graph: OperatorGraph, devices: DeviceLimits) -> Split | None:
    from schedsearch.partition.dp import partition_dpl

    try:
        return partition_dpl(graph, devices).split
    except InvalidOperatorGraphError:
        return None


# ---------------------------------------------------------------- contiguous max-load
def contiguous_ip(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    incumbent: str | Split | None = "dpl",
    merge_trivial: bool = True,
    strengthen: bool = True,
    bound_time_s: float | None = None,
    options: MipOptions | None = None,
    **overrides: Any,
) -> PartitionBound:
    """Minimum max-load over contiguous splits (acyclic quotient graph).

    Parameters
    ----------
    incumbent:
        ``"dpl"`` (default: the linear-order DP split, fast), ``None``, or
        a contiguous split of the same supernodes.
    merge_trivial:
        The DP's contraction option (keep it equal to the DP's to compare
        optima).
    strengthen:
        Add the block bounds (a minimum cut per unit: the least load of
        any accelerator block holding it, see
        :func:`~schedsearch.partition.throughput_ip.block_bound`) to the
        unit rows and to ``T``'s lower bound, cap ``T`` at the incumbent's
        max-load and keep units out of slots their ancestors or
        descendants cannot fit around at that load. Valid for every
        device mix (no symmetry is broken); only splits worse than the
        incumbent are cut off, and the incumbent is kept as an answer.
        False builds the plain model.
    bound_time_s:
        Seconds for the block bounds (default: a tenth of the time limit,
        at most 30 s); units not reached keep their work as bound.

    Other parameters as in :func:`noncontiguous_ip`.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, contiguous_ip
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3, 2])], edges=[(i, i + 1) for i in range(4)])
    >>> bound = contiguous_ip(graph, DeviceLimits(num_accelerators=3), incumbent=None, time_limit_s=10)
    >>> bound.status.value, bound.value == bound.lower_bound
    ('OPTIMAL', True)
    """
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    options = MipOptions.resolve(options, overrides, "contiguous_ip")
    cg = contract(graph, merge_trivial=merge_trivial, memory_limited=devices.max_accel_memory is not None)
    units = _cg_units(graph, cg)
    stages = None
    if incumbent == "dpl":
        from schedsearch.partition.contraction import linearize
        from schedsearch.partition.dp import solve_contracted

        order = _chain_order(cg)
        sol = solve_contracted(linearize(cg, order), devices)
        if sol is not None:
            # linearize numbers supernodes along the chain: position i is order[i]
            stages = [(k, [order[v] for v in vs]) for k, vs in sol.stages]
    elif isinstance(incumbent, Split):
        stages = stages_of_split(units, incumbent)
    elif incumbent is not None:
        raise InvalidOperatorGraphError(
            f"contiguous IP: 'incumbent' must be 'dpl', a Split or None, got {incumbent!r}")
    inc_split, inc_value = _stages_split(units, stages, devices, graph)
    lower, block_bounds, upper = 0.0, None, None
    if strengthen:
        upper = inc_value
        lower, block_bounds = _contiguous_lower(units, devices, options, bound_time_s)
    model = build_contiguous(units, cg.preds, devices, f"contiguous {graph.name}",
                              block_bounds=block_bounds, lower=lower, upper=upper)
    if stages is not None and inc_split is not None:
        hint = contig_hint(model, stages, devices)
        if hint is not None:
            model.mip.set_hint(hint)
    res = solve_mip(model.mip, options)
    split = None
    if res.values is not None:
        vals = res.values
        S = model.num_slots
        stage_units: list[tuple[str, list[int]]] = [("cpu" if vals[model.cpu[s]] > 0.5 else "accel", []) for s in range(S)]
        for i in range(len(units.members)):
            best = max(range(S), key=lambda s: max(vals[model.xa[i][s]], vals[model.xc[i][s]]))
            stage_units[best][1].append(i)
        unit_slot, order, _ = _slots_of(units, stage_units)
        split = split_from_units(units, unit_slot, order)  # type: ignore[arg-type]
    stats = {"supernodes": cg.num_nodes, "groups": len(units.groups), "mip": str(model.mip),
             "strengthened": strengthen, "lower_bound_before_mip": lower}
    return _finish_maxload("ip-contiguous", graph, devices, res, split, t0, stats,
                           incumbent=inc_split, lower=lower, relative_gap=options.relative_gap)


def _slots_of(units: Units, stages) -> tuple[list[Slot | None], list[Slot], dict[str, int]]:
    """Each unit's slot, the slots in order and the slots used per kind, of ordered ``(kind, units)`` stages."""
    counters = {"accel": 0, "cpu": 0}
    order: list[Slot] = []
    unit_slot: list[Slot | None] = [None] * len(units.members)
    for kind, us in stages:
        slot = Slot(kind=kind, index=counters[kind])
        counters[kind] += 1
        order.append(slot)
        for u in us:
            unit_slot[u] = slot
    return unit_slot, order, counters


def _stages_split(units: Units, stages, devices: DeviceLimits, graph: OperatorGraph):
    """The split of ordered ``(kind, units)`` stages and its max-load (None, None if unusable)."""
    if stages is None:
        return None, None
    unit_slot, order, counters = _slots_of(units, stages)
    if any(s is None for s in unit_slot) or counters["accel"] > devices.num_accelerators \
            or counters["cpu"] > devices.num_cpus:
        return None, None
    split = split_from_units(units, unit_slot, order)  # type: ignore[arg-type]
    cost = evaluate_split(graph, split, devices)
    return (split, cost.max_load) if cost.feasible else (None, None)


def _contiguous_lower(units: Units, devices: DeviceLimits, options: MipOptions,
                      bound_time_s: float | None) -> tuple[float, list[float]]:
    """A lower bound on the contiguous optimum and the per-unit block bounds."""
    K, L = devices.num_accelerators, devices.num_cpus
    n = len(units.members)
    # every unit costs at least the lesser of its latencies on the kinds it may use
    own = []
    for i in range(n):
        c = []
        if K and units.accel_ok[i]:
            c.append(units.accel[i])
        if L:
            c.append(units.cpu[i])
        own.append(min(c) if c else math.inf)
    lower = max(math.fsum(own) / max(1, K + L), max(own, default=0.0)) if all(map(math.isfinite, own)) else 0.0
    if bound_time_s is None:
        limit = options.time_limit_s
        bound_time_s = 30.0 if limit is None else min(30.0, 0.1 * limit)
    bounds = containing_block_bounds(units, threshold=lower, time_limit_s=bound_time_s) if K else list(units.accel)
    # the unit's own slot: an accelerator block (block bound) or a CPU (its CPU latency)
    per_unit = []
    for i in range(n):
        c = []
        if K and units.accel_ok[i]:
            c.append(bounds[i])
        if L:
            c.append(units.cpu[i])
        per_unit.append(min(c) if c else 0.0)
    return max(lower, max(per_unit, default=0.0)), bounds


def _chain_order(cg: ContractedGraph) -> list[int]:
    from schedsearch.partition.slicegraph import kahn_dfs_order

    return kahn_dfs_order(cg)


# ---------------------------------------------------------------- latency
def _check_latency_graph(graph: OperatorGraph) -> None:
    if graph.is_training:
        raise InvalidOperatorGraphError(
            f"operator graph {graph.name!r}: the latency model is for inference graphs; it has backward operators"
        )


def latency_of_split(
    graph: OperatorGraph | PartitionWorkload,
    split: Split,
    devices: DeviceLimits | None = None,
    *,
    subgraphs_per_accel: int = 1,
) -> float:
    """Single-sample latency of ``split`` under the latency model (module docstring).

    Accelerator slot ``i`` of the split is subgraph ``i % subgraphs_per_accel``
    of accelerator ``i // subgraphs_per_accel`` (subgraphs of one accelerator
    run in that order); every CPU slot stands for the unlimited CPU pool.
    Returns ``math.inf`` if the split is infeasible (an operator unassigned
    or unsupported, a colocation class split, memory over the limit, more
    subgraphs than allowed, or subgraphs that depend on each other in a
    cycle).

    Examples
    --------
    One sample through the chain: on one accelerator 4 + 2 + 3 + 3 = 12;
    split in two, the tensor crossing costs 1 on each side, 14:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, Slot, Split
    >>> from schedsearch.partition import latency_of_split, one_device_split
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> devices = DeviceLimits(num_accelerators=2)
    >>> halves = Split(stages=[(Slot(kind="accel", index=0), (0, 1)), (Slot(kind="accel", index=1), (2, 3))])
    >>> latency_of_split(graph, one_device_split(graph), devices), latency_of_split(graph, halves, devices)
    (12.0, 14.0)
    """
    graph, devices = resolve_workload(graph, devices)
    _check_latency_graph(graph)
    assignment = split.assignment()
    if any(op.id not in assignment for op in graph.operators):
        return math.inf
    group_of: dict[int, int | None] = {}
    for op in graph.operators:
        slot = assignment[op.id]
        if slot.kind == "cpu":
            group_of[op.id] = None
        else:
            if not op.supported_on_accel or slot.index >= devices.num_accelerators * subgraphs_per_accel:
                return math.inf
            group_of[op.id] = slot.index
    by_class: dict[int, set] = {}
    for op in graph.operators:
        if op.color_class is not None:
            g = group_of[op.id]
            by_class.setdefault(op.color_class, set()).add(
                None if g is None else g // subgraphs_per_accel
            )
    if any(len(v) > 1 for v in by_class.values()):
        return math.inf
    if devices.max_accel_memory is not None:
        mem: dict[int, float] = {}
        for op in graph.operators:
            g = group_of[op.id]
            if g is not None:
                mem[g // subgraphs_per_accel] = mem.get(g // subgraphs_per_accel, 0.0) + op.size
        if any(v > devices.max_accel_memory * (1 + 1e-12) for v in mem.values()):
            return math.inf
    # units: ('o', op) for CPU operators, ('g', group) for accelerator subgraphs
    unit = {op.id: ("o", op.id) if group_of[op.id] is None else ("g", group_of[op.id]) for op in graph.operators}
    load: dict[tuple, float] = {}
    for op in graph.operators:
        u = unit[op.id]
        if u[0] == "g":
            load[u] = load.get(u, 0.0) + op.accel_latency
    for op in graph.operators:
        succ_units = {unit[t] for t in graph.successors(op.id)}
        mine = unit[op.id]
        if mine[0] == "g" and any(s != mine for s in succ_units):
            load[mine] += op.output_cost  # sends out of its subgraph
        for s in succ_units:
            if s[0] == "g" and s != mine:
                load[s] += op.output_cost  # received once per subgraph
    preds: dict[tuple, set] = {u: set() for u in set(unit.values())}
    for a, b in graph.edges:
        if unit[a] != unit[b]:
            preds[unit[b]].add(unit[a])
    groups = sorted(u[1] for u in preds if u[0] == "g")
    for g in groups:
        prev = g - 1
        if g % subgraphs_per_accel and ("g", prev) in preds:
            preds[("g", g)].add(("g", prev))
    # longest path over the unit DAG (Kahn)
    succs: dict[tuple, list] = {u: [] for u in preds}
    indeg = {u: len(p) for u, p in preds.items()}
    for u, ps in preds.items():
        for p in ps:
            succs[p].append(u)
    ready = [u for u, d in indeg.items() if d == 0]
    done: dict[tuple, float] = {}
    while ready:
        u = ready.pop()
        start = max((done[p] for p in preds[u]), default=0.0)
        done[u] = start + (load[u] if u[0] == "g" else graph.operator(u[1]).cpu_latency)
        for w in succs[u]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if len(done) != len(preds):
        return math.inf  # subgraphs depend on each other in a cycle
    return max(done.values(), default=0.0)


def _cpu_latency_bound(graph: OperatorGraph) -> float:
    """Latency with every operator on the (unlimited) CPUs: a feasible value."""
    lat: dict[int, float] = {}
    for v in graph.topological_order():
        lat[v] = max((lat[u] for u in graph.predecessors(v)), default=0.0) + graph.operator(v).cpu_latency
    return max(lat.values(), default=0.0)


def _latency_incumbent(graph: OperatorGraph, devices: DeviceLimits, subgraphs_per_accel: int) -> Split | None:
    """The linear-order DP's max-load split (contiguous stages) read as a latency split."""
    from schedsearch.partition.dp import partition_dpl

    try:
        res = partition_dpl(graph, DeviceLimits(num_accelerators=devices.num_accelerators, num_cpus=1,
                                                max_accel_memory=devices.max_accel_memory))
    except InvalidOperatorGraphError:
        return None
    stages = []
    for slot, ops in res.split.stages:
        if slot.kind == "accel":
            slot = Slot(kind="accel", index=slot.index * subgraphs_per_accel)
        stages.append((slot, ops))
    split = Split(stages=stages)
    value = latency_of_split(graph, split, devices, subgraphs_per_accel=subgraphs_per_accel)
    return split if math.isfinite(value) else None


def latency_ip(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    subgraphs_per_accel: int = 1,
    incumbent: str | Split | None = "dpl",
    options: MipOptions | None = None,
    **overrides: Any,
) -> PartitionBound:
    """Minimum single-sample latency (the paper's latency IP, module docstring).

    ``devices.num_cpus`` is ignored: CPUs are unlimited, as in the paper.
    Colocation classes are kept together in one subgraph (with more than
    one subgraph per accelerator the paper only asks for one accelerator).
    The returned split lists subgraph ``j`` of accelerator ``a`` as
    accelerator slot ``a * subgraphs_per_accel + j`` and every CPU operator
    on ``cpu0``; its value is recomputed by :func:`latency_of_split`.
    ``incumbent``: ``"dpl"`` (default: the linear-order DP's max-load split
    where it is a valid latency split), a split, or None; the all-CPU
    latency bounds the big-M constants when nothing better is known.

    Examples
    --------
    For one sample, splitting the chain only adds transfers: the optimum
    keeps it on one accelerator.

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, latency_ip
    >>> layers = [Operator(id=i, accel_latency=t, cpu_latency=10 * t, output_cost=1.0)
    ...           for i, t in enumerate([4, 2, 3, 3])]
    >>> graph = OperatorGraph(operators=layers, edges=[(0, 1), (1, 2), (2, 3)])
    >>> bound = latency_ip(graph, DeviceLimits(num_accelerators=2), time_limit_s=10)
    >>> bound.status.value, bound.value, bound.lower_bound
    ('OPTIMAL', 12.0, 12.0)
    >>> [len(ops) for slot, ops in bound.split.stages if slot.kind == "accel"].count(4)
    1
    """
    t0 = time.perf_counter()
    graph, devices = resolve_workload(graph, devices)
    _check_latency_graph(graph)
    if isinstance(subgraphs_per_accel, bool) or not isinstance(subgraphs_per_accel, int) or subgraphs_per_accel < 1:
        raise InvalidOperatorGraphError(f"latency IP: 'subgraphs_per_accel' must be an int >= 1, got {subgraphs_per_accel!r}")
    options = MipOptions.resolve(options, overrides, "latency_ip")
    units = units_of(graph, colocation_classes(graph))
    K = devices.num_accelerators
    G = K * subgraphs_per_accel
    ub = _cpu_latency_bound(graph)
    if isinstance(incumbent, str):
        if incumbent != "dpl":
            raise InvalidOperatorGraphError(f"latency IP: 'incumbent' must be 'dpl', a Split or None, got {incumbent!r}")
        incumbent = _latency_incumbent(graph, devices, subgraphs_per_accel)
    inc_value = math.inf
    if incumbent is not None:
        inc_value = latency_of_split(graph, incumbent, devices, subgraphs_per_accel=subgraphs_per_accel)
    big_u = min(ub, inc_value) if math.isfinite(inc_value) else ub
    big_u = max(big_u, 1e-9)
    # times are divided by big_u, so every time variable lies in [0, 1] and the
    # big-M constants are 1 (HiGHS rejects its own answers on the raw scale)
    sc = 1.0 / big_u
    m = MipModel(f"latency {graph.name}")
    cpu, x = _latency_assignment(m, units, G)
    _latency_contiguity(m, graph, units, x, G)
    comm_in, load_terms = _latency_communication(m, graph, units, x, G, sc)
    total = _latency_times(m, graph, units, cpu, x, comm_in, load_terms, K=K, subgraphs_per_accel=subgraphs_per_accel,
                           sc=sc)
    _latency_memory(m, units, x, devices, subgraphs_per_accel)
    m.minimize([(total, 1.0)])
    res = solve_mip(m, options)
    split = None
    value = None
    if res.values is not None:
        split = _latency_split(units, res.values, cpu, x, G)
        value = latency_of_split(graph, split, devices, subgraphs_per_accel=subgraphs_per_accel)
    if incumbent is not None and math.isfinite(inc_value) and (value is None or inc_value < value):
        split, value = incumbent, inc_value
    status = res.status
    if value is not None and status in (Status.TIMEOUT, Status.UNKNOWN):
        status = Status.FEASIBLE
    bound = res.best_bound * big_u if res.best_bound is not None else None
    if bound is not None and value is not None:
        bound = min(bound, value)
    stats = {"classes": len(units.members), "subgraphs": G, "time_unit": big_u, "mip": str(m)}
    if res.objective is not None and value is not None:
        stats["objective_vs_evaluated"] = abs(res.objective * big_u - value)
    return PartitionBound(
        method="ip-latency", status=status, split=split, value=value, lower_bound=bound,
        wall_time_s=time.perf_counter() - t0, mip=res, stats=stats,
    )


def _latency_assignment(m: MipModel, units: Units, G: int) -> tuple[list[int], list[list[int]]]:
    """Each unit (a colocation class) on the CPU (``cpu[i]``) or in exactly one accelerator subgraph
    (``x[i][g]``); a unit an accelerator cannot run is fixed off every subgraph."""
    cpu = []
    x = []
    for i in range(len(units.members)):
        c = m.new_binary(f"cpu[{i}]")
        row = []
        for g in range(G):
            v = m.new_binary(f"x[{i},{g}]")
            if not units.accel_ok[i]:
                m.fix(v, 0.0)
            row.append(v)
        cpu.append(c)
        x.append(row)
        m.add_eq([(c, 1.0)] + [(v, 1.0) for v in row], 1.0)
    return cpu, x


def _latency_contiguity(m: MipModel, graph: OperatorGraph, units: Units, x: list[list[int]], G: int) -> None:
    """Every subgraph is convex (contiguous), on the operator edges: ``z[op, g]`` is at least ``x`` of the
    operator's unit and grows along the edges, and an operator after one that left ``g`` is not in ``g``."""
    uo = units.unit_of
    ops = list(graph.operators)
    for g in range(G):
        z = {op.id: m.new_continuous(0.0, name=f"z[{op.id},{g}]") for op in ops}
        for op in ops:
            m.add_ge([(z[op.id], 1.0), (x[uo[op.id]][g], -1.0)], 0.0)
        for a, b in graph.edges:
            m.add_le([(z[b], 1.0), (z[a], -1.0)], 0.0)
            if uo[a] != uo[b]:
                m.add_le([(z[b], 1.0), (x[uo[b]][g], -1.0), (x[uo[a]][g], 1.0)], 1.0)


def _latency_communication(m: MipModel, graph: OperatorGraph, units: Units, x: list[list[int]], G: int,
                           sc: float) -> tuple[dict[tuple[int, int], int], list[list[tuple[int, float]]]]:
    """The communication into and out of each subgraph, per source operator (``in[op, g]``,
    ``out[op, g]``), and each subgraph's load terms: its units' accelerator latencies and the transfers
    it receives and sends (times scaled by ``sc``)."""
    uo = units.unit_of
    comm_in: dict[tuple[int, int], int] = {}
    load_terms: list[list[tuple[int, float]]] = [[] for _ in range(G)]
    for g in range(G):
        for i in range(len(units.members)):
            if units.accel[i]:
                load_terms[g].append((x[i][g], units.accel[i] * sc))
        for op in graph.operators:
            succs = graph.successors(op.id)
            if not succs:
                continue
            others = {uo[t] for t in succs} - {uo[op.id]}
            if not others:
                continue
            r = m.new_continuous(0.0, 1.0, f"in[{op.id},{g}]")
            s = m.new_continuous(0.0, 1.0, f"out[{op.id},{g}]")
            comm_in[op.id, g] = r
            for o in others:
                m.add_ge([(r, 1.0), (x[o][g], -1.0), (x[uo[op.id]][g], 1.0)], 0.0)
                m.add_ge([(s, 1.0), (x[uo[op.id]][g], -1.0), (x[o][g], 1.0)], 0.0)
            if op.output_cost:
                load_terms[g] += [(r, op.output_cost * sc), (s, op.output_cost * sc)]
    return comm_in, load_terms


def _latency_times(m: MipModel, graph: OperatorGraph, units: Units, cpu: list[int], x: list[list[int]],
                   comm_in: dict[tuple[int, int], int], load_terms: list[list[tuple[int, float]]], *, K: int,
                   subgraphs_per_accel: int, sc: float) -> int:
    """The times: each subgraph runs as one call from ``start[g]`` to ``finish[g]`` (its load), after the
    latencies of the operators it receives from, and the subgraphs of one accelerator run in turn; an
    operator's latency ``lat[op]`` follows its call, its CPU time and its predecessors; the latency ``L``
    (the variable returned) is the largest."""
    uo = units.unit_of
    ops = list(graph.operators)
    G = len(load_terms)
    # an operator's latency is at least the longest path into it of least
    # latencies (inside one call the whole call's work lies between its start
    # and its end), so these lower bounds are valid and give the LP the
    # critical path
    head: dict[int, float] = {}
    for v in graph.topological_order():
        o = graph.operator(v)
        own = min(o.cpu_latency, o.accel_latency) if o.supported_on_accel and K else o.cpu_latency
        head[v] = max((head[u] for u in graph.predecessors(v)), default=0.0) + own
    lat = {op.id: m.new_continuous(min(head[op.id] * sc, 1.0), name=f"lat[{op.id}]") for op in ops}
    start = [m.new_continuous(0.0, name=f"start[{g}]") for g in range(G)]
    finish = [m.new_continuous(0.0, name=f"finish[{g}]") for g in range(G)]
    total = m.new_continuous(min(max(head.values(), default=0.0) * sc, 1.0), 1.0 + 1e-9, name="L")
    for g in range(G):
        m.add_eq([(finish[g], 1.0), (start[g], -1.0)] + [(v, -c) for v, c in load_terms[g]], 0.0)
        for (u, gg), r in comm_in.items():
            if gg == g:
                m.add_ge([(start[g], 1.0), (lat[u], -1.0), (r, -1.0)], -1.0)
        for op in ops:
            m.add_ge([(lat[op.id], 1.0), (finish[g], -1.0), (x[uo[op.id]][g], -1.0)], -1.0)
        if g % subgraphs_per_accel:
            m.add_ge([(start[g], 1.0), (finish[g - 1], -1.0)], 0.0)
    for op in ops:
        if op.cpu_latency:
            m.add_ge([(lat[op.id], 1.0), (cpu[uo[op.id]], -op.cpu_latency * sc)], 0.0)
        m.add_ge([(total, 1.0), (lat[op.id], -1.0)], 0.0)
    for a, b in graph.edges:
        terms = [(lat[b], 1.0), (lat[a], -1.0)]
        if graph.operator(b).cpu_latency:
            terms.append((cpu[uo[b]], -graph.operator(b).cpu_latency * sc))
        m.add_ge(terms, 0.0)
    return total


def _latency_memory(m: MipModel, units: Units, x: list[list[int]], devices: DeviceLimits,
                    subgraphs_per_accel: int) -> None:
    """Each accelerator holds the units of its subgraphs within its memory (when it has a limit)."""
    if devices.max_accel_memory is None:
        return
    cap = devices.max_accel_memory
    n = len(units.members)
    for a in range(devices.num_accelerators):
        terms = [(x[i][g], units.size[i] / cap if cap > 0 else 1.0) for i in range(n) if units.size[i]
                 for g in range(a * subgraphs_per_accel, (a + 1) * subgraphs_per_accel)]
        if terms:
            m.add_le(terms, 1.0 if cap > 0 else 0.0, f"memory[{a}]")


def _latency_split(units: Units, vals: Sequence[float], cpu: list[int], x: list[list[int]], G: int) -> Split:
    """The split of a solution: each unit in its largest subgraph, or on ``cpu0`` where its CPU value is
    larger (accelerator slot ``g`` for subgraph ``g``)."""
    assignment: dict[int, Slot] = {}
    for i, ms in enumerate(units.members):
        g = max(range(G), key=lambda g_: vals[x[i][g_]], default=None)
        on_cpu = g is None or vals[cpu[i]] > vals[x[i][g]]
        slot = Slot(kind="cpu", index=0) if on_cpu else Slot(kind="accel", index=g)
        for op in ms:
            assignment[op] = slot
    order = [Slot(kind="accel", index=g) for g in range(G)] + [Slot(kind="cpu", index=0)]
    return Split.from_assignment(assignment, order=order)


def latency_problem(
    graph: OperatorGraph | PartitionWorkload,
    devices: DeviceLimits | None = None,
    *,
    num_cpus: int | None = None,
    time_scale: float = 1.0,
    memory_scale: float = 1.0,
    name: str = "",
):
    """The latency workload as a one-micro-batch scheduling Problem.

    Operator ``v`` becomes block ``op{v}`` with one option per CPU
    (duration ``time_scale * cpu latency``) and, if supported, one per
    accelerator (``time_scale * accelerator latency``) and memory delta
    ``memory_scale * size`` (never freed, so an accelerator's total is
    capped by its capacity exactly as in the IP; CPUs are unbounded). Edge
    ``u -> v`` carries ``time_scale * output cost of u``; channels: CPU-
    accelerator one unit per unit of size, accelerator-accelerator two (the
    IP charges the tensor on both accelerators), CPU-CPU free.
    ``num_cpus`` defaults to the number of operators (unlimited).

    Where the two models differ (both are exact for what they describe):

    * the IP runs each accelerator subgraph as one *call*: it starts when
      all its inputs are ready and releases its outputs when it ends; the
      Problem schedules every operator on its own, so an output may leave
      before the rest of its subgraph finishes (the Problem's optimum can
      be lower);
    * the IP counts communication on the accelerator's busy time; the
      Problem puts it on a channel, concurrent with compute (lower again),
      and one transfer at a time per channel (higher where transfers
      compete);
    * the IP asks each accelerator subgraph to be contiguous (at most
      ``subgraphs_per_accel`` of them); the Problem lets any operator run
      anywhere;
    * the Problem has no colocation classes (refused here).

    On a chain (every operator feeding only the next one) none of this
    matters: execution is sequential, a contiguous run of operators on one
    accelerator is one call, and a transfer sits between two operators that
    could not overlap it anyway. With enough subgraphs per accelerator
    (half the operators, rounded up) the optima then coincide.

    Raises
    ------
    InvalidOperatorGraphError
        A latency, size or cost that is not an integer after scaling, or a
        zero duration (blocks last at least one unit).
    UnsupportedFeatureError
        Colocation classes with more than one operator.

    Examples
    --------
    The same optimum as :func:`latency_ip`, found by the exact scheduler:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, latency_problem
    >>> layers = [Operator(id=i, accel_latency=t, cpu_latency=10 * t, output_cost=1.0)
    ...           for i, t in enumerate([4, 2, 3, 3])]
    >>> graph = OperatorGraph(operators=layers, edges=[(0, 1), (1, 2), (2, 3)])
    >>> from schedsearch.search import optimal
    >>> problem = latency_problem(graph, DeviceLimits(num_accelerators=2), num_cpus=1)
    >>> problem.cluster.device_names
    ('acc0', 'acc1', 'cpu0')
    >>> result = optimal(problem, time_limit_s=10, workers=1)
    >>> result.status.value, result.objective
    ('OPTIMAL', 12)
    """
    from schedsearch.errors import UnsupportedFeatureError
    from schedsearch.problem import Block, Edge, Graph, Option, Problem

    graph, devices = resolve_workload(graph, devices)
    _check_latency_graph(graph)
    for cls in colocation_classes(graph):
        if len(cls) > 1:
            raise UnsupportedFeatureError(
                f"operator graph {graph.name!r}: colocation class of operators {list(cls)} cannot be expressed "
                "in a scheduling Problem; use latency_ip"
            )

    def as_int(entity: str, field: str, value: float, minimum: int) -> int:
        return _scaled_int(entity, field, value * (time_scale if field != "size" else memory_scale), minimum)

    n_cpu = num_cpus if num_cpus is not None else graph.num_operators
    cpus = [f"cpu{i}" for i in range(n_cpu)]
    accels = [f"acc{a}" for a in range(devices.num_accelerators)]
    blocks = []
    for op in graph.operators:
        ent = f"operator {op.id}"
        opts = [Option(devices=(c,), duration=as_int(ent, "cpu_latency", op.cpu_latency, 1)) for c in cpus]
        if op.supported_on_accel:
            d = as_int(ent, "accel_latency", op.accel_latency, 1)
            opts += [Option(devices=(a,), duration=d) for a in accels]
        blocks.append(Block(name=f"op{op.id}", kind="F", options=opts, memory=as_int(ent, "size", op.size, 0)))
    edges = [
        Edge(src=f"op{a}", dst=f"op{b}", size=as_int(f"operator {a}", "output_cost", graph.operator(a).output_cost, 0))
        for a, b in graph.edges
    ]
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=1,
        cluster=_latency_cluster(accels, cpus, devices, memory_scale),
        name=name or f"latency {graph.name}",
    )


def _scaled_int(entity: str, field: str, scaled: float, minimum: int) -> int:
    """A scaled latency, size or cost as the integer it must be (at least ``minimum``)."""
    r = round(scaled)
    if abs(scaled - r) > 1e-6 * max(1.0, abs(scaled)) or r < minimum:
        raise InvalidOperatorGraphError(
            f"{entity}: {field!r} scaled to {scaled!r} is not an integer >= {minimum}; choose another scale"
        )
    return int(r)


def _latency_cluster(accels: Sequence[str], cpus: Sequence[str], devices: DeviceLimits, memory_scale: float):
    """The cluster of :func:`latency_problem`: accelerators with the scaled memory limit, unbounded CPUs;
    channels CPU-accelerator one unit per unit of size, accelerator-accelerator two, CPU-CPU free."""
    from schedsearch.problem import Channel, Cluster, Device

    cap = None
    if devices.max_accel_memory is not None:
        cap = int(math.floor(devices.max_accel_memory * memory_scale + 1e-9))
    dev_list = [Device(name=a, memory=cap) for a in accels] + [Device(name=c) for c in cpus]
    channels = []
    for a in accels:
        for c in cpus:
            channels.append(Channel(name=f"{a}-{c}", endpoints=(a, c), time_per_unit=1))
    for i, a in enumerate(accels):
        for b in accels[i + 1:]:
            channels.append(Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=2))
    for i, a in enumerate(cpus):
        for b in cpus[i + 1:]:
            channels.append(Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=0))
    return Cluster(devices=dev_list, channels=channels)
