"""The best lower bound known on a scheduling problem's optimal makespan.

:func:`lower_bound` is the maximum of

* the analytic bounds of :mod:`schedsearch.bounds.analytic`: critical path
  (releases and unavoidable transfers included), per-device mandatory work
  between the least head and the least tail, average load;
* the **memory bound** (:func:`memory_bounds`): on a device of capacity
  ``M`` (less its initial memory) where each micro-batch holds at least
  ``a`` units between the start of a block ``P`` and the start of a later
  block ``Q`` (both always on that device), at most ``K = floor(M / a)``
  micro-batches can be between ``P`` and ``Q`` at once. Each stays there at
  least ``r`` = the shortest time from the start of ``P`` to the start of
  ``Q``. Windows of length ``>= r`` with at most ``K`` overlapping can be
  split into ``K`` sequences of disjoint windows, one of which holds
  ``ceil(N / K)`` of them, so::

      makespan >= min head(P) + ceil(N / K) r + min (duration(Q) + tail(Q))

  ``a`` counts the deltas of ``P``, of its ancestors and, pessimistically,
  every *negative* delta that may have happened in between; the bound is
  only used where no micro-batch can ever hold a negative amount on the
  device (checked as a minimum-weight ideal, by a minimum cut), so other
  micro-batches only take room;
* the **memory-area bound** (:func:`memory_area_bounds`): on a device of
  capacity ``M`` (less its initial memory), the micro-batches' memory
  levels summed never exceed ``M``, so over the time from the device's first
  possible allocation ``s`` to the start ``y`` of its last free their
  integral is at most ``M (y - s)``. Each micro-batch holds each amount it
  allocates there until the free that releases it starts, at least the
  longest path between the two; matching every free to allocations of its
  ancestors on the device (a transport of amounts, the most
  amount x path of any matching, by a min-cost flow) gives the least
  integral ``A`` of one micro-batch, so::

      makespan >= s + ceil(N A / M) + min (duration(f) + tail(f)) over the frees f

  claimed only where every free is matched (no micro-batch can hold a
  negative amount there);
* the **assignment LP** (:func:`assignment_lp_bound`), for problems where
  blocks choose among options: fractional option choices ``x[t, o]``,
  ``T >= sum of durations on each device`` and
  ``T >= head(t) + duration(t) + tail(t)`` for every task; solved with
  HiGHS through :mod:`schedsearch.bounds.mip` (imported only when the LP
  runs).

Overlapped groups (``Problem.overlaps``): a group lasts at least its
longest member, so the per-task rows stay valid; along an edge inside a
declared overlap the lag is 0 (the group may run both ends together); and
where a group lasts less than its members in sequence the per-device work
rows are left out of the LP (as the analytic bounds leave out theirs).

The DiviML MILP's dual bound joins these parts in
:func:`schedsearch.search.diviml.diviml_lower_bound` (DiviML is a
scheduler: it lives with the search strategies).

Every part is valid for every feasible schedule, so their maximum is too.
Results are integers (makespans are), fractional bounds rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from schedsearch.bounds.analytic import analytic_lower_bound, heads_and_tails
from schedsearch.problem import Problem

__all__ = ["ScheduleBound", "lower_bound", "memory_bounds", "memory_area_bounds", "assignment_lp_bound"]


@attrs.frozen(kw_only=True)
class ScheduleBound:
    """A lower bound and the parts it is the maximum of.

    ``parts`` names each bound that was computed (``"critical_path"``,
    ``"device d0"``, ``"memory d0"``, ``"assignment_lp"``, ...), so a report
    can say which one is tight.

    Examples
    --------
    >>> from schedsearch.bounds import ScheduleBound
    >>> print(ScheduleBound(value=42, parts={"device d0": 32, "memory d0": 42}))
    lower bound 42 (memory d0)
    """

    value: int
    parts: Mapping[str, int]

    @property
    def tight_part(self) -> str:
        """Name of the part that gives the bound (the first of equal ones)."""
        return max(self.parts, key=lambda k: self.parts[k])

    def __str__(self) -> str:
        return f"lower bound {self.value} ({self.tight_part})"


def _min_duration(problem: Problem, block: str, mb: int) -> int:
    return min(problem.durations(block, mb))


def _transfer_delay(problem: Problem, src: str, dst: str, size: int) -> int:
    from schedsearch.bounds.analytic import _unavoidable_transfer

    return _unavoidable_transfer(problem, src, dst, size)


def _closure(start: str, nxt: Mapping[str, list[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        v = stack.pop()
        for w in nxt[v]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


def _min_ideal_weight(blocks: list[str], preds: Mapping[str, list[str]], weight: Mapping[str, int]) -> int:
    """Least total weight of a set closed under predecessors (minimum cut)."""
    if all(weight[b] >= 0 for b in blocks):
        return 0
    from schedsearch.bounds._flows import max_flow_value

    # maximise sum of c = -weight over predecessor-closed sets: a minimum cut (the closure problem)
    arcs: list[tuple[object, object, int | None]] = []
    positive = 0
    for b in blocks:
        c = -weight[b]
        if c > 0:
            arcs.append(("s", ("b", b), c))
            positive += c
        elif c < 0:
            arcs.append((("b", b), "t", -c))
        for p in preds[b]:
            arcs.append((("b", b), ("b", p), None))  # unbounded: taking b forces taking p
    return -(positive - max_flow_value(arcs, "s", "t"))


def memory_bounds(problem: Problem) -> dict[str, int]:
    """The memory bound of every device where it applies (module docstring).

    Examples
    --------
    With room for two activations, the first device of a 1F1B placement
    holds each micro-batch from its forward to its backward, at least 10
    units (``F0 .. F3, B3 .. B1``), so 8 micro-batches need 4 rounds:

    >>> from schedsearch.bounds import memory_bounds
    >>> from schedsearch.placements import vshape
    >>> memory_bounds(vshape(4, 8, memory=2))
    {'d0': 42, 'd1': 33, 'd2': 24, 'd3': 15}
    """
    heads, tails = heads_and_tails(problem)
    graph = problem.graph
    names = [b.name for b in graph.blocks]
    preds = {b: [e.src for e in es] for b, es in graph.predecessors().items()}
    succs = {b: [e.dst for e in es] for b, es in graph.successors().items()}
    edges_in = graph.predecessors()
    anc = {b: _closure(b, preds) for b in names}
    desc = {b: _closure(b, succs) for b in names}
    order = graph.topological_order()
    n_mb = problem.num_microbatches
    # an edge inside a declared overlap may be run as one group: no lag along it
    grouped = {
        (e.src, e.dst)
        for e in graph.edges
        if any(e.src in ov.blocks and e.dst in ov.blocks for ov in getattr(problem, "overlaps", ()))
    }
    out: dict[str, int] = {}
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        room = dev.memory - problem.initial_memory_of(dev.name)
        sure = {b.name: all(dev.name in o.devices for o in b.options) for b in graph.blocks}
        maybe = {b.name: dev.name in b.devices for b in graph.blocks}
        w = {
            b.name: (b.memory if sure[b.name] else (min(b.memory, 0) if maybe[b.name] else 0))
            for b in graph.blocks
        }
        if _min_ideal_weight(names, preds, w) < 0:
            continue  # a micro-batch may hold a negative amount: others need not only take room
        best = 0
        mbs = range(n_mb) if problem.duration_overrides else range(1)
        for p in names:
            if not sure[p]:
                continue
            base = sum(w[u] for u in anc[p])
            # shortest time from the start of p to the start of each later block
            reach: dict[str, int] = {}
            for m in mbs:
                dist: dict[str, int] = {p: 0}
                for b in order:
                    if b == p or b not in desc[p]:
                        continue
                    dist[b] = max(
                        dist[e.src]
                        + (0 if (e.src, b) in grouped
                           else _min_duration(problem, e.src, m) + _transfer_delay(problem, e.src, b, e.size))
                        for e in edges_in[b]
                        if e.src in dist
                    )
                for b, v in dist.items():
                    reach[b] = v if b not in reach else min(reach[b], v)
            head = min(heads[(p, m)] for m in range(n_mb))
            for q in desc[p]:
                if q == p or not sure[q]:
                    continue
                held = base + sum(min(w[u], 0) for u in names if u not in anc[p] and u not in desc[q])
                if held <= 0:
                    continue
                k = room // held
                if k <= 0:
                    continue  # not even one micro-batch fits: infeasible, no bound claimed
                after = min(_min_duration(problem, q, m) + tails[(q, m)] for m in range(n_mb))
                best = max(best, head + math.ceil(n_mb / k) * reach[q] + after)
        if best:
            out[dev.name] = best
    return out


def memory_area_bounds(problem: Problem) -> dict[str, int]:
    """The memory-area bound of every device where it applies (module docstring).

    It applies on a device with a capacity whose blocks are all fixed on it
    and in no declared overlap, where the frees of one micro-batch can be
    matched to the allocations of their ancestors there (every free
    releases what an earlier block of its micro-batch allocated). Path
    lengths take each block's least duration over its options and
    micro-batches (:func:`~schedsearch.bounds.analytic._longest_paths`:
    start to start, unavoidable transfers included).

    Examples
    --------
    With room for two activations, device ``d0`` of a 1F1B placement holds
    each micro-batch at least 10 units (``F0 .. F3, B3 .. B1``): 8
    micro-batches need 40 units of its two slots, from 0 to the start of
    its last backward (2 more):

    >>> from schedsearch.bounds import memory_area_bounds
    >>> from schedsearch.placements import vshape
    >>> memory_area_bounds(vshape(4, 8, memory=2))
    {'d0': 42, 'd1': 33, 'd2': 24, 'd3': 15}
    """
    from schedsearch.bounds.analytic import _capped_devices, _least_durations, _longest_paths

    capped = _capped_devices(problem)
    if not capped:
        return {}
    from schedsearch.bounds._flows import least_cost_transport

    heads, tails = heads_and_tails(problem)
    n = problem.num_microbatches
    allocating = [b.name for _, _, on in capped for b in on if b.memory > 0]
    longest = _longest_paths(problem, _least_durations(problem), allocating)
    out: dict[str, int] = {}
    for d, cap, on in capped:
        room = cap - problem.initial_memory_of(d)
        frees = [b for b in on if b.memory < 0]
        allocs = [b for b in on if b.memory > 0]
        if room <= 0 or not frees:
            continue
        # each free's amount from its ancestors' allocations, each held from the ancestor's start to the
        # free's start at least: the most held area, as the least cost of a transport at minus the path
        cost = least_cost_transport(
            {a.name: a.memory for a in allocs}, {f.name: -f.memory for f in frees},
            [(a.name, f.name, -longest[a.name][f.name]) for a in allocs for f in frees if f.name in longest[a.name]])
        if cost is None:
            continue  # some free is not covered by its ancestors' allocations: no bound claimed
        area = -cost * n
        if area <= 0:
            continue
        start = min(heads[(a.name, m)] for a in allocs for m in range(n))
        after = min(min(problem.durations(f.name, m)) + tails[(f.name, m)] for f in frees for m in range(n))
        out[d] = start + -(-area // room) + after
    return out


def assignment_lp_bound(problem: Problem, *, solver: str = "highs", time_limit_s: float = 30.0) -> int | None:
    """The assignment LP (module docstring), rounded up; None if not solved.

    It counts for problems whose blocks choose among devices, where the
    per-device work bounds have no fixed work to add up.

    Examples
    --------
    Three micro-batches of two blocks (4 and 2 units), each free to run on
    either of two devices: 18 units of work on 2 devices need at least 9.

    >>> from schedsearch import Block, Cluster, Device, Graph, Problem
    >>> from schedsearch.bounds import assignment_lp_bound
    >>> problem = Problem(
    ...     graph=Graph(blocks=[Block(name="A", options=[("d0", 4), ("d1", 4)]),
    ...                         Block(name="B", options=[("d0", 2), ("d1", 2)])]),
    ...     num_microbatches=3,
    ...     cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")]),
    ... )
    >>> assignment_lp_bound(problem, time_limit_s=10)
    9
    """
    from schedsearch.bounds.mip import MipModel, solve_mip

    heads, tails = heads_and_tails(problem)
    m = MipModel(f"assignment LP {problem.name}")
    t = m.new_continuous(0.0, name="T")
    load: dict[str, list[tuple[int, float]]] = {d: [] for d in problem.cluster.device_names}
    for b, mb in problem.tasks:
        block = problem.graph.block(b)
        durs = problem.durations(b, mb)
        xs = [m.new_continuous(0.0, 1.0, f"x[{b},{mb},{i}]") for i in range(len(durs))]
        m.add_eq([(x, 1.0) for x in xs], 1.0)
        for x, o, d in zip(xs, block.options, durs):
            for dev in o.devices:
                load[dev].append((x, float(d)))
        m.add_ge([(t, 1.0)] + [(x, -float(d)) for x, d in zip(xs, durs)], float(heads[(b, mb)] + tails[(b, mb)]))
    if not _shortening_overlaps(problem):
        # per-device work; not valid when overlapped groups run faster than their members
        for dev, terms in load.items():
            if terms:
                m.add_ge([(t, 1.0)] + [(x, -d) for x, d in terms], 0.0)
    m.minimize([(t, 1.0)])
    res = solve_mip(m, solver=solver, time_limit_s=time_limit_s, relative_gap=0.0)
    if res.best_bound is None:
        return None
    return max(0, math.ceil(res.best_bound - 1e-6 * max(1.0, res.best_bound)))


def _shortening_overlaps(problem: Problem) -> bool:
    """True if some overlapped group may last less than its members one after the other.

    Members may come from any micro-batches, so the test takes each member
    block at its longest duration over the micro-batches.
    """
    n = problem.num_microbatches
    for ov in getattr(problem, "overlaps", ()):
        longest = sum(max(max(problem.durations(b, m)) for m in range(n)) for b in ov.blocks)
        if ov.duration < longest:
            return True
    return False


def lower_bound(
    problem: Problem,
    *,
    lp: bool | None = None,
    solver: str = "highs",
) -> ScheduleBound:
    """The best lower bound known on the optimal makespan (module docstring).

    Parameters
    ----------
    lp:
        Solve the assignment LP; by default only when some block has more
        than one option (otherwise it adds nothing to the per-device work).
    solver:
        MIP solver of the LP.

    Examples
    --------
    >>> from schedsearch.bounds import lower_bound
    >>> from schedsearch.placements import vshape
    >>> lower_bound(vshape(4, 16, memory=4)).value  # (N + D - 1)(F + B)
    57
    """
    analytic = analytic_lower_bound(problem)
    parts: dict[str, int] = dict(analytic.parts)
    for dev, value in memory_bounds(problem).items():
        parts[f"memory {dev}"] = value
    flexible = any(len(b.options) > 1 for b in problem.graph.blocks)
    if lp if lp is not None else flexible:
        value = assignment_lp_bound(problem, solver=solver)
        if value is not None:
            parts["assignment LP"] = value
    return ScheduleBound(value=max(parts.values()), parts=parts)
