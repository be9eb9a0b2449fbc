"""Baseline partitioners on the max-load cost: MET, Greedy, HEFT, SA, (1+1) EA.

All work on the contracted supernodes (colocation classes and backward
partners stay together) and report the split re-evaluated by
:func:`~schedsearch.partition.cost.evaluate_split`. The devices are the
``k`` accelerators and ``l`` CPUs of :class:`~schedsearch.partition.opgraph.DeviceLimits`.

* **MET** (minimum execution time): every supernode on the device kind where
  it runs fastest, all on the first device of that kind (accelerators are
  identical, so MET cannot spread work).
* **Greedy**: fill the accelerators in a depth-first topological order,
  each up to the average work (total latency / k) or its memory; a
  contiguous, hence acyclic, split.
* **HEFT** (Topcuoglu et al.): supernodes by decreasing upward rank
  (average latency plus the longest path of average latency and
  communication below), each on the device with the earliest finish time
  of a one-sample schedule, device time and communication taken from the
  shared cost model, among the placements that keep the split a feasible
  pipeline (memory, supported operators, acyclic device graph). It
  minimises latency, not max-load; it is the classic list-scheduling
  baseline.
* **SA**: simulated annealing from the Greedy split; a move puts one
  supernode on another device (half the time the device of a neighbour);
  Metropolis acceptance on the max-load, geometric cooling.
* **(1+1) EA, biased**: from the Greedy split; each supernode mutates with
  probability ``1/n`` (at least one does), taking a neighbour's device with
  probability ``neighbour_bias``, else a random one; the child replaces
  the parent if not worse.

SA and the EA keep the device quotient graph acyclic (``acyclic``, on by
default), so their splits are valid pipelines; Greedy and HEFT are acyclic
by construction (HEFT unless an operator can go nowhere else); MET's may not
be when it uses a CPU (the result's ``acyclic`` says). Infeasible splits
(memory, unsupported operators) are ranked after every feasible one by SA
and the EA; every method reports them with ``status == "infeasible"`` and
the reasons in ``problems`` (see
:class:`~schedsearch.partition.result.PartitionResult`), never with an
exception.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence

import numpy as np

from schedsearch.options import check_partition_options
from schedsearch.partition._common import resolve_workload
from schedsearch.partition.contraction import ContractedGraph, contract
from schedsearch.partition.cost import evaluate_split
from schedsearch.partition.opgraph import DeviceLimits, OperatorGraph, PartitionWorkload, Slot, Split
from schedsearch.partition.result import PartitionResult

__all__ = [
    "LoadTracker",
    "partition_met",
    "partition_greedy",
    "partition_heft",
    "partition_annealing",
    "partition_evolutionary",
]

_INF = math.inf


class LoadTracker:
    """Incremental max-load of an assignment of supernodes to devices.

    ``assign[v]`` is a device index (accelerators first, then CPUs) or -1.
    Moving one supernode costs ``O(deg)``; the acyclicity of the device
    quotient graph is checked on the (tiny) device graph.
    """

    def __init__(self, cg: ContractedGraph, devices: DeviceLimits):
        self.cg = cg
        self.k = devices.num_accelerators
        self.num_devices = devices.num_accelerators + devices.num_cpus
        self.mem_limit = devices.max_accel_memory
        n = cg.num_nodes
        self.assign = [-1] * n
        d = self.num_devices
        self.compute = [0.0] * d
        self.comm = [0.0] * d
        self.mem = [0.0] * d
        self.bad = [0] * d  # unsupported supernodes on an accelerator
        self.h_nodes = [list(a) for a, _ in cg.hyperedges]
        self.h_cost = [c for _, c in cg.hyperedges]
        self.h_count = [[0] * d for _ in cg.hyperedges]
        self.h_span = [0] * len(cg.hyperedges)
        self.node_h: list[list[int]] = [[] for _ in range(n)]
        for h, nodes in enumerate(self.h_nodes):
            for v in nodes:
                self.node_h[v].append(h)
        self.succ = cg.succs()
        self.pair = np.zeros((d, d), dtype=np.int64)  # precedence edges between devices

    # -- per-device figures
    def load(self, dev: int) -> float:
        return self.compute[dev] + (self.comm[dev] if dev < self.k else 0.0)

    def max_load(self) -> float:
        return max((self.load(x) for x in range(self.num_devices)), default=0.0)

    def violations(self) -> int:
        out = 0
        for x in range(self.k):
            out += self.bad[x]
            if self.mem_limit is not None and self.mem[x] > self.mem_limit * (1 + 1e-12):
                out += 1
        return out

    def score(self) -> tuple[int, float]:
        return (self.violations(), self.max_load())

    def acyclic(self) -> bool:
        d = self.num_devices
        indeg = [int((self.pair[:, j] > 0).sum()) - int(self.pair[j, j] > 0) for j in range(d)]
        stack = [j for j in range(d) if indeg[j] == 0]
        seen = 0
        while stack:
            i = stack.pop()
            seen += 1
            for j in range(d):
                if j != i and self.pair[i, j] > 0:
                    indeg[j] -= 1
                    if indeg[j] == 0:
                        stack.append(j)
        return seen == d

    # -- moves
    def _h_contrib(self, h: int, sign: float) -> None:
        if self.h_span[h] < 2:
            return
        c = self.h_cost[h] * sign
        for x in range(self.k):
            if self.h_count[h][x]:
                self.comm[x] += c

    def _place(self, v: int, dev: int, sign: int) -> None:
        cg = self.cg
        if dev < self.k:
            self.compute[dev] += sign * cg.accel_latency[v]
            self.mem[dev] += sign * cg.size[v]
            if not cg.accel_ok[v]:
                self.bad[dev] += sign
        else:
            self.compute[dev] += sign * cg.cpu_latency[v]
        for h in self.node_h[v]:
            self._h_contrib(h, -1.0)
            cnt = self.h_count[h]
            before = cnt[dev]
            cnt[dev] += sign
            if before == 0 and cnt[dev] > 0:
                self.h_span[h] += 1
            elif before > 0 and cnt[dev] == 0:
                self.h_span[h] -= 1
            self._h_contrib(h, 1.0)
        for u in cg.preds[v]:
            du = self.assign[u]
            if du >= 0 and du != dev:
                self.pair[du, dev] += sign
        for w in self.succ[v]:
            dw = self.assign[w]
            if dw >= 0 and dw != dev:
                self.pair[dev, dw] += sign

    def set(self, v: int, dev: int) -> None:
        """Move supernode ``v`` to device ``dev`` (-1: unassign)."""
        old = self.assign[v]
        if old == dev:
            return
        if old >= 0:
            self._place(v, old, -1)
        self.assign[v] = -1
        if dev >= 0:
            self._place(v, dev, +1)
        self.assign[v] = dev

    def allowed(self, v: int, dev: int) -> bool:
        return dev >= self.k or self.cg.accel_ok[v] or self.k == 0


def _slots(devices: DeviceLimits) -> list[Slot]:
    return [Slot(kind="accel", index=i) for i in range(devices.num_accelerators)] + [
        Slot(kind="cpu", index=i) for i in range(devices.num_cpus)
    ]


def _result(method: str, graph: OperatorGraph, devices: DeviceLimits, cg: ContractedGraph,
            assign: Sequence[int], t0: float, tracker: LoadTracker | None = None, **stats) -> PartitionResult:
    slots = _slots(devices)
    groups: dict[int, list[int]] = {}
    for v, dev in enumerate(assign):
        groups.setdefault(dev, []).extend(cg.members[v])
    # devices in a pipeline order when the quotient is acyclic
    tr = tracker if tracker is not None else _tracker_for(cg, devices, assign)
    acyclic = tr.acyclic()
    order = _device_order(tr) if acyclic else sorted(groups)
    split = Split(stages=[(slots[dev], sorted(groups[dev])) for dev in order if dev in groups])
    cost = evaluate_split(graph, split, devices)
    return PartitionResult(method=method, split=split, max_load=cost.max_load, cost=cost, optimal=False,
               wall_time_s=time.perf_counter() - t0, acyclic=acyclic,
               stats={"supernodes": cg.num_nodes, **stats})


def _tracker_for(cg: ContractedGraph, devices: DeviceLimits, assign: Sequence[int]) -> LoadTracker:
    tr = LoadTracker(cg, devices)
    for v, dev in enumerate(assign):
        tr.set(v, dev)
    return tr


def _device_order(tr: LoadTracker) -> list[int]:
    d = tr.num_devices
    indeg = [sum(1 for i in range(d) if i != j and tr.pair[i, j] > 0) for j in range(d)]
    ready = sorted(j for j in range(d) if indeg[j] == 0)
    out = []
    while ready:
        i = ready.pop(0)
        out.append(i)
        for j in range(d):
            if j != i and tr.pair[i, j] > 0:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
                    ready.sort()
    return out


def _prepare(graph, devices, merge_trivial):
    graph, devices = resolve_workload(graph, devices)
    return graph, devices, contract(graph, merge_trivial=merge_trivial,
                                    memory_limited=devices.max_accel_memory is not None)


def partition_met(graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None = None,
                  *, merge_trivial: bool = True) -> PartitionResult:
    """Minimum execution time: each supernode where it runs fastest (first device of that kind).

    A baseline that ignores load balance: with identical accelerators
    everything lands on the first one.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_met
    >>> layers = [Operator(id=i, accel_latency=t, cpu_latency=10 * t, output_cost=1.0)
    ...           for i, t in enumerate([4, 2, 3, 3])]
    >>> graph = OperatorGraph(operators=layers, edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_met(graph, DeviceLimits(num_accelerators=2, num_cpus=1))
    >>> result.max_load, [(str(slot), ops) for slot, ops in result.split.stages]
    (12.0, [('accel0', (0, 1, 2, 3))])
    """
    check_partition_options("partition_met", {"merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices, cg = _prepare(graph, devices, merge_trivial)
    k, l = devices.num_accelerators, devices.num_cpus
    assign = []
    for v in range(cg.num_nodes):
        on_accel = k > 0 and (l == 0 or (cg.accel_ok[v] and cg.accel_latency[v] <= cg.cpu_latency[v]))
        # without a CPU an unsupported supernode stays on the accelerator: a reported violation
        assign.append(0 if on_accel else k)
    return _result("met", graph, devices, cg, assign, t0)


def _greedy_assign(cg: ContractedGraph, devices: DeviceLimits, acyclic: bool = True) -> LoadTracker:
    """Fill the devices in a depth-first topological order up to the average work.

    Accelerators are filled in turn, each up to ``total accelerator latency /
    k`` (a supernode goes to the next accelerator when it would exceed that,
    or the memory limit, and the current one is not empty); the last
    accelerator takes the rest. Supernodes an accelerator cannot run, and
    everything when there is no accelerator, go to the first CPU. The split
    is contiguous in the order, hence acyclic.
    """
    from schedsearch.partition.slicegraph import kahn_dfs_order

    tr = LoadTracker(cg, devices)
    k = tr.k
    order = kahn_dfs_order(cg)
    total = sum(cg.accel_latency[v] for v in order if cg.accel_ok[v])
    target = total / k if k else _INF
    cur = 0
    used = 0.0
    mem = 0.0
    for v in order:
        if k == 0 or (not cg.accel_ok[v] and tr.num_devices > k):
            tr.set(v, k if tr.num_devices > k else 0)
            continue
        lat, size = cg.accel_latency[v], cg.size[v]
        over_mem = tr.mem_limit is not None and mem + size > tr.mem_limit
        if cur < k - 1 and used > 0 and (used + lat > target or over_mem):
            cur += 1
            used = mem = 0.0
        tr.set(v, cur)
        used += lat
        mem += size
    return tr


def partition_greedy(graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None = None,
                     *, merge_trivial: bool = True) -> PartitionResult:
    """Fill the accelerators in topological order up to the average work each.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_greedy
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_greedy(graph, DeviceLimits(num_accelerators=3))  # 12 units: about 4 each
    >>> result.max_load, [(str(slot), ops) for slot, ops in result.split.stages]
    (7.0, [('accel0', (0,)), ('accel1', (1,)), ('accel2', (2, 3))])
    """
    check_partition_options("partition_greedy", {"merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices, cg = _prepare(graph, devices, merge_trivial)
    tr = _greedy_assign(cg, devices)
    return _result("greedy", graph, devices, cg, list(tr.assign), t0, tracker=tr)


def _transfer_delays(graph: OperatorGraph, cg: ContractedGraph) -> dict[tuple[int, int], float]:
    """``{(u, v): delay}`` between precedence-linked supernodes: the output
    costs of the operators of ``u`` that feed an operator of ``v`` (each
    source operator once per receiving supernode, as the cost model counts
    it; see :mod:`schedsearch.partition.cost`)."""
    linked = {(u, v) for v in range(cg.num_nodes) for u in cg.preds[v]}
    delays: dict[tuple[int, int], float] = {}
    for op in graph.operators:
        if op.output_cost <= 0:
            continue
        u = cg.anchor.get(op.id)
        receivers = {cg.anchor.get(t) for t in graph.successors(op.id)} - {u, None}
        for v in receivers:
            if (u, v) in linked:
                delays[(u, v)] = delays.get((u, v), 0.0) + op.output_cost
    return delays


def partition_heft(graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None = None,
                   *, merge_trivial: bool = True) -> PartitionResult:
    """HEFT list scheduling of one sample; reports its max-load and its makespan.

    Supernodes go in decreasing upward rank, each to the device where it
    finishes first. Device time follows the shared cost model (the
    :class:`LoadTracker`, i.e. :func:`~schedsearch.partition.cost.evaluate_split`):
    a supernode occupies its device for its latency plus the communication
    that device newly pays, and the accelerators sending to it pay their
    share too; a transfer delays the receiver by the sender's output cost.
    Only placements that keep the split a valid pipeline are considered:
    the accelerator's memory limit holds, the operator runs there, and the
    device graph stays acyclic (so the split is contiguous, like the DP's,
    and its max-load is never below the DP optimum). When no placement
    qualifies (an operator that no device can take), the least bad one is
    used and the result's ``status`` is ``"infeasible"`` with the reason;
    ``stats['forced']`` counts such supernodes. With both accelerators and
    CPUs, a second pass uses the CPUs only where no accelerator may take a
    supernode, and the better split of the two is kept.

    Examples
    --------
    On a chain, one sample finishes first when it never moves: HEFT keeps it
    on one accelerator (makespan 12), a poor max-load:

    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_heft
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3])], edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_heft(graph, DeviceLimits(num_accelerators=3))
    >>> result.max_load, result.stats["makespan"]
    (12.0, 12.0)
    """
    check_partition_options("partition_heft", {"merge_trivial": merge_trivial})
    t0 = time.perf_counter()
    graph, devices, cg = _prepare(graph, devices, merge_trivial)
    k, l = devices.num_accelerators, devices.num_cpus
    n = cg.num_nodes
    delay = _transfer_delays(graph, cg)
    succ = cg.succs()
    avg = []
    for v in range(n):
        times = [t for t in (cg.accel_latency[v] if cg.accel_ok[v] and k else None,
                             cg.cpu_latency[v] if l else None) if t is not None]
        avg.append(sum(times) / len(times) if times else 0.0)
    rank = [0.0] * n
    for v in reversed(range(n)):  # supernodes are numbered in a topological order
        rank[v] = avg[v] + max((delay.get((v, w), 0.0) + rank[w] for w in succ[v]), default=0.0)
    # a predecessor never ranks below its successor; ties go to the smaller (earlier) number
    order = sorted(range(n), key=lambda v: (-rank[v], v))
    # Two passes when there are both kinds: CPUs as any other device, and CPUs
    # only where no accelerator may take a supernode. With a pipeline to keep,
    # one cheap supernode put on an idle (slow) CPU downstream of the
    # accelerators drags every later one there; the second pass avoids that.
    runs = [_heft_assign(cg, devices, order, delay, cpus_last=False)]
    if k and l:
        runs.append(_heft_assign(cg, devices, order, delay, cpus_last=True))
    tr, finish, forced = min(runs, key=lambda run: (run[2] > 0, run[0].violations(), run[0].max_load()))
    return _result("heft", graph, devices, cg, list(tr.assign), t0, tracker=tr,
                   makespan=max(finish, default=0.0), forced=forced)


def _heft_assign(cg: ContractedGraph, devices: DeviceLimits, order: Sequence[int],
                 delay: dict[tuple[int, int], float], *, cpus_last: bool) -> tuple[LoadTracker, list[float], int]:
    """One HEFT pass (see :func:`partition_heft`): the tracker of the
    assignment, the finish times and the number of forced placements."""
    k = devices.num_accelerators
    d = k + devices.num_cpus
    tr = LoadTracker(cg, devices)
    limit = devices.max_accel_memory
    avail = [0.0] * d
    finish = [0.0] * cg.num_nodes
    dev_succ: dict[int, set[int]] = {}  # device graph: edges between devices of linked supernodes
    occupied: set[int] = set()
    forced = 0

    def reaches(src: int, targets: set[int]) -> bool:
        """True when ``src`` reaches a device of ``targets`` in the device graph."""
        if not targets:
            return False
        seen, stack = {src}, [src]
        while stack:
            for nxt in dev_succ.get(stack.pop(), ()):
                if nxt in targets:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    for v in order:
        pred_devs = {tr.assign[u] for u in cg.preds[v]}
        # unused devices of one kind are interchangeable: try the first of each kind
        spare = [next((x for x in range(lo, hi) if x not in occupied), None) for lo, hi in ((0, k), (k, d))]
        candidates = sorted(occupied | {x for x in spare if x is not None})
        best = None
        for x in candidates:
            supported = x >= k or cg.accel_ok[v]
            t = cg.accel_latency[v] if x < k else cg.cpu_latency[v]
            fits = x >= k or limit is None or tr.mem[x] + cg.size[v] <= limit * (1 + 1e-12)
            pipeline = not reaches(x, pred_devs - {x})
            before = tr.comm[:k]
            tr.set(v, x)
            extra = [tr.comm[y] - before[y] for y in range(k)]
            tr.set(v, -1)
            ready = max((finish[u] + (delay.get((u, v), 0.0) if tr.assign[u] != x else 0.0)
                         for u in cg.preds[v]), default=0.0)
            end = max(avail[x], ready) + t + (extra[x] if x < k else 0.0)
            bad = (not supported) + (not fits) + (not pipeline)
            key = (bad, cpus_last and x >= k, end, x)
            if best is None or key < best[0]:
                best = (key, extra)
        (bad, _, end, x), extra = best
        forced += bad > 0
        tr.set(v, x)
        occupied.add(x)
        for y in range(k):
            if y != x:
                avail[y] += extra[y]
        avail[x] = end
        finish[v] = end
        for p in pred_devs:
            if p != x:
                dev_succ.setdefault(p, set()).add(x)
    return tr, finish, forced


def _neighbours(cg: ContractedGraph, succ) -> list[list[int]]:
    return [sorted(set(cg.preds[v]) | set(succ[v])) for v in range(cg.num_nodes)]


def partition_annealing(
    graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None = None, *,
    iterations: int = 20_000, seed: int = 0, start_temperature: float = 0.05,
    end_temperature: float = 1e-4, acyclic: bool = True, merge_trivial: bool = True,
    time_limit_s: float | None = None,
) -> PartitionResult:
    """Simulated annealing from the Greedy split (temperatures relative to its max-load).

    Moves one supernode at a time; with ``acyclic`` only to splits that stay
    a pipeline. Reproducible for a given ``seed``; never worse than Greedy.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_annealing
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3, 2])], edges=[(i, i + 1) for i in range(4)])
    >>> result = partition_annealing(graph, DeviceLimits(num_accelerators=3), iterations=2000, seed=1)
    >>> result.method, result.feasible, result.max_load <= 8.0
    ('annealing', True, True)
    """
    check_partition_options("partition_annealing", {
        "iterations": iterations, "seed": seed, "start_temperature": start_temperature,
        "end_temperature": end_temperature, "acyclic": acyclic, "merge_trivial": merge_trivial,
        "time_limit_s": time_limit_s})
    t0 = time.perf_counter()
    graph, devices, cg = _prepare(graph, devices, merge_trivial)
    rng = random.Random(seed)
    tr = _greedy_assign(cg, devices, acyclic)
    nbrs = _neighbours(cg, tr.succ)
    n, d = cg.num_nodes, tr.num_devices
    cur = tr.score()
    best, best_assign = cur, list(tr.assign)
    scale = max(cur[1], 1e-9)
    accepted = 0
    done = 0
    if n and d > 1:
        for it in range(iterations):
            if time_limit_s is not None and it % 256 == 0 and time.perf_counter() - t0 > time_limit_s:
                break
            done += 1
            temp = scale * start_temperature * (end_temperature / start_temperature) ** (it / max(1, iterations - 1))
            v = rng.randrange(n)
            old = tr.assign[v]
            if nbrs[v] and rng.random() < 0.5:
                new = tr.assign[rng.choice(nbrs[v])]
            else:
                new = rng.randrange(d)
            if new == old or not tr.allowed(v, new):
                continue
            tr.set(v, new)
            if acyclic and not tr.acyclic():
                tr.set(v, old)
                continue
            cand = tr.score()
            if cand[0] < cur[0] or (cand[0] == cur[0] and (
                    cand[1] <= cur[1] or rng.random() < math.exp(-(cand[1] - cur[1]) / temp))):
                cur = cand
                accepted += 1
                if cur < best:
                    best, best_assign = cur, list(tr.assign)
            else:
                tr.set(v, old)
    return _result("annealing", graph, devices, cg, best_assign, t0, iterations=done,
                   accepted=accepted, seed=seed)


def partition_evolutionary(
    graph: OperatorGraph | PartitionWorkload, devices: DeviceLimits | None = None, *,
    generations: int = 5_000, seed: int = 0, neighbour_bias: float = 0.5, acyclic: bool = True,
    merge_trivial: bool = True, time_limit_s: float | None = None,
) -> PartitionResult:
    """Biased (1+1) evolutionary algorithm from the Greedy split.

    Each generation moves supernodes (to a neighbour's device with
    probability ``neighbour_bias``) and keeps the child when it is no worse.
    Reproducible for a given ``seed``; never worse than Greedy.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_evolutionary
    >>> graph = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0)
    ...                                  for i, t in enumerate([4, 2, 3, 3, 2])], edges=[(i, i + 1) for i in range(4)])
    >>> result = partition_evolutionary(graph, DeviceLimits(num_accelerators=3), generations=500, seed=1)
    >>> result.method, result.feasible, result.max_load <= 8.0
    ('evolutionary', True, True)
    """
    check_partition_options("partition_evolutionary", {
        "generations": generations, "seed": seed, "neighbour_bias": neighbour_bias, "acyclic": acyclic,
        "merge_trivial": merge_trivial, "time_limit_s": time_limit_s})
    t0 = time.perf_counter()
    graph, devices, cg = _prepare(graph, devices, merge_trivial)
    rng = random.Random(seed)
    tr = _greedy_assign(cg, devices, acyclic)
    nbrs = _neighbours(cg, tr.succ)
    n, d = cg.num_nodes, tr.num_devices
    cur = tr.score()
    improved = 0
    done = 0
    if n and d > 1:
        for gen in range(generations):
            if time_limit_s is not None and gen % 64 == 0 and time.perf_counter() - t0 > time_limit_s:
                break
            done += 1
            picks = [v for v in range(n) if rng.random() < 1.0 / n] or [rng.randrange(n)]
            undo = []
            for v in picks:
                if nbrs[v] and rng.random() < neighbour_bias:
                    new = tr.assign[rng.choice(nbrs[v])]
                else:
                    new = rng.randrange(d)
                if new != tr.assign[v] and tr.allowed(v, new):
                    undo.append((v, tr.assign[v]))
                    tr.set(v, new)
            ok = not (acyclic and undo and not tr.acyclic())
            cand = tr.score()
            if undo and ok and cand <= cur:
                improved += cand < cur
                cur = cand
            else:
                for v, old in reversed(undo):
                    tr.set(v, old)
    return _result("evolutionary", graph, devices, cg, list(tr.assign), t0, generations=done,
                   improvements=improved, seed=seed)
