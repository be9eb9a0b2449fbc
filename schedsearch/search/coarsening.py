"""Graph coarsening (She et al.'s merge heuristic) and expansion back.

A large operator graph is merged into fewer, larger blocks so that an exact
model of it stays small; a schedule of the coarse problem is then expanded
into a schedule of the original one.

Merging
-------
A *group* is a set of original blocks that run back to back on one device
option. Its block has

* the options common to all its members (same device tuple) on whose
  devices its memory rise (below) fits, each lasting the **sum** of the
  members' durations there;
* memory delta ``D = sum of the members' deltas``; members run in a fixed
  order ``c1 .. ck``, and the level inside the group rises above its base by
  at most ``P = max_i (delta_1 + ... + delta_i + workspace_i)``, so the
  group's workspace is ``max(0, P - D)``: the coarse memory level is never
  below the expanded one, and equal to it after the group ends;
* the edges of its members to other groups, merged per pair of groups with
  their sizes **added** (plus ``ceil((k - 1) * latency / time_per_unit)``
  for ``k`` merged transferring edges when channels have a latency, so one
  coarse transfer lasts as long as the ``k`` transfers it stands for).

The steps:

1. **transitive reduction**: an edge ``u -> v`` is redundant when another
   path leads from ``u`` to ``v``. Redundant edges stay in the coarse graph
   (they carry data), but merge decisions look at the reduced graph only.
2. **safe merges**: repeatedly merge along a reduced edge ``u -> v`` whose
   head ``v`` has one reduced input and whose tail ``u`` has one reduced
   output, smallest merged duration first, while the merged duration is at
   most ``max_duration`` and the merged memory rise ``D + workspace`` at most
   ``max_memory``. Merging along a reduced edge never creates a cycle (no
   other path joins the two), and a safe merge never lengthens the critical
   path on identical devices: every path through ``v`` passes ``u`` and
   every path from ``u`` passes ``v``.
3. **other merges** (only while the graph still has more than ``target``
   blocks): under the stricter thresholds ``strict_factor * max_duration``
   and ``strict_factor * max_memory``, merge the pair that lengthens the
   longest path through it least, then the one with the smaller merged
   duration. Candidates are *non-adjacent* pairs of incomparable groups (no
   path between them, so no cycle can form) and the remaining edges of the
   reduced graph (a head with several inputs or a tail with several
   outputs: no other path joins the two, so no cycle either). The longest
   path through a merged group is ``head + duration + tail``, where the
   group starts once every input of both members has arrived and releases
   its outputs at its end (in largest durations, transfers left out).
   Without the edge candidates a random DAG cannot be brought down to a
   fifth of its size without serialising most of it; with them the greedy
   keeps the coarse critical path well below the average load on two
   machines (see the job-shop benchmark).

Blocks with a release or in a fixed order are never merged. Defaults:
``max_duration = ceil(3 * total work / target)`` (total work: each block's
largest duration), ``max_memory`` unbounded, ``strict_factor = 0.75``.

Expansion
---------
A coarse schedule fixes each group's device option and the order of work on
every device and channel. :meth:`Coarsening.expand` replays the original
blocks in that order: members in group order on the group's devices, each
merged transfer's original transfers one after the other on its channel,
every item as early as its device or channel, its predecessors, its data and
its release allow. The replay keeps every device's sequence, so the memory
argument above holds, and it is never later than the coarse timing when
every channel with a latency has a ``time_per_unit`` > 0 (the coarse timing,
with each merged transfer's parts back to back in its slot, is then one
feasible replay). The expanded
schedule is validated against the original problem.

This module imports no solver.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Block, Edge, Graph, Option, Problem
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import assert_valid

__all__ = ["Coarsening", "coarsen", "transitive_reduction", "redundant_edges"]


# --------------------------------------------------------------------------
# Transitive reduction
# --------------------------------------------------------------------------


def _topological(nodes: list[int], succ: Mapping[int, Any]) -> list[int]:
    """The nodes of a DAG (node ids and successor maps) in a topological order."""
    indeg = {n: 0 for n in nodes}
    for n in nodes:
        for s in succ[n]:
            indeg[s] += 1
    stack = [n for n in nodes if indeg[n] == 0]
    order = []
    while stack:
        n = stack.pop()
        order.append(n)
        for s in succ[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                stack.append(s)
    if len(order) != len(nodes):
        raise InvalidProblemError("coarsening: the merged graph has a cycle (this is a bug)")
    return order


def _reach(nodes: list[int], succ: Mapping[int, Any]) -> dict[int, int]:
    """Descendant bit sets of a DAG given as node ids and successor maps."""
    order = _topological(nodes, succ)
    reach: dict[int, int] = {}
    for n in reversed(order):
        acc = 0
        for s in succ[n]:
            acc |= reach[s] | (1 << s)
        reach[n] = acc
    return reach


def _reduced(nodes: list[int], succ: Mapping[int, Any], reach: dict[int, int]) -> set[tuple[int, int]]:
    """Edges of the transitive reduction."""
    kept: set[tuple[int, int]] = set()
    for u in nodes:
        outs = list(succ[u])
        for v in outs:
            bit = 1 << v
            if not any(w != v and reach[w] & bit for w in outs):
                kept.add((u, v))
    return kept


def redundant_edges(graph: Graph) -> tuple[Edge, ...]:
    """Edges ``u -> v`` of ``graph`` with another path from ``u`` to ``v``."""
    names = graph.block_names
    idx = {n: i for i, n in enumerate(names)}
    succ: dict[int, dict[int, int]] = {i: {} for i in range(len(names))}
    for e in graph.edges:
        succ[idx[e.src]][idx[e.dst]] = e.size
    nodes = list(range(len(names)))
    kept = _reduced(nodes, succ, _reach(nodes, succ))
    return tuple(e for e in graph.edges if (idx[e.src], idx[e.dst]) not in kept)


def transitive_reduction(graph: Graph) -> Graph:
    """``graph`` without its redundant edges (same reachability)."""
    drop = set(redundant_edges(graph))
    return Graph(blocks=graph.blocks, edges=[e for e in graph.edges if e not in drop])


# --------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------


@attrs.define
class _Group:
    members: list[str]
    #: device tuple -> summed duration, in the first member's option order
    options: dict[tuple[str, ...], int]
    memory: int  # D
    rise: int  # P (>= D), the highest level inside relative to the base
    kind: str
    stage: int | None
    mergeable: bool

    @property
    def size(self) -> int:
        return max(self.options.values())

    @property
    def workspace(self) -> int:
        return max(0, self.rise - self.memory)

    @property
    def footprint(self) -> int:
        return self.memory + self.workspace


def _single(block: Block, mergeable: bool) -> _Group:
    return _Group(
        members=[block.name],
        options={o.devices: o.duration for o in block.options},
        memory=block.memory,
        rise=block.memory + block.workspace,
        kind=block.kind,
        stage=block.stage,
        mergeable=mergeable,
    )


def _combined(first: _Group, second: _Group, room: Mapping[tuple[str, ...], float]) -> _Group | None:
    """The group running ``first``'s members then ``second``'s, or None when no
    common option is left (none shared, or the merged memory rise does not
    fit on the option's devices: ``room`` is the least free memory of each
    option's devices)."""
    rise = max(first.rise, first.memory + second.rise)
    need = max(first.memory + second.memory, 0) + max(0, rise - first.memory - second.memory)
    options = {
        d: first.options[d] + second.options[d] for d in first.options if d in second.options and need <= room[d]
    }
    if not options:
        return None
    return _Group(
        members=first.members + second.members,
        options=options,
        memory=first.memory + second.memory,
        rise=rise,
        kind=first.kind if first.kind == second.kind else "merged",
        stage=first.stage if first.stage == second.stage else None,
        mergeable=True,
    )


@attrs.frozen(kw_only=True)
class Coarsening:
    """A coarse problem and the map back to the original one.

    Attributes
    ----------
    original, coarse:
        The two problems (same cluster, micro-batches, initial memory).
    groups:
        Coarse block name -> its original blocks, in execution order.
    stats:
        Block and edge counts after each step, thresholds used.

    Examples
    --------
    A plan of the coarse problem expands into one of the original problem:

    >>> from schedsearch.loaders import jobshop_problem
    >>> one_job = jobshop_problem([[(0, 1), (0, 2), (0, 1), (1, 2), (1, 1)]], 2).problem  # 3 ops on m0, 2 on m1
    >>> from schedsearch.search import coarsen, list_plan
    >>> coarsening = coarsen(one_job, 2)
    >>> expanded = coarsening.expand(list_plan(coarsening.coarse))
    >>> [(task.block, task.start) for task in expanded.tasks]
    [('j0.o0', 0), ('j0.o1', 1), ('j0.o2', 3), ('j0.o3', 4), ('j0.o4', 6)]
    """

    original: Problem
    coarse: Problem
    groups: Mapping[str, tuple[str, ...]]
    stats: Mapping[str, Any]

    def group_of(self) -> dict[str, str]:
        """Original block name -> coarse block name."""
        return {m: g for g, members in self.groups.items() for m in members}

    def expand(self, schedule: Schedule) -> Schedule:
        """A schedule of the original problem from one of the coarse problem.

        ``schedule`` must validate against :attr:`coarse`; the result is
        validated against :attr:`original` (see the module notes).
        """
        assert_valid(self.coarse, schedule, "coarse schedule")
        return _expand(self, schedule)


def _room(problem: Problem) -> dict[tuple[str, ...], float]:
    """Per option (device tuple): the least ``capacity - initial memory`` of its devices."""
    free = {
        d.name: math.inf if d.memory is None else d.memory - problem.initial_memory_of(d.name)
        for d in problem.cluster.devices
    }
    return {o.devices: min(free[d] for d in o.devices) for b in problem.graph.blocks for o in b.options}


def _coarse_name(members: list[str], taken: set[str]) -> str:
    if len(members) == 1:
        return members[0]
    base = f"{members[0]}+{len(members) - 1}"
    name, i = base, 1
    while name in taken:
        name = f"{base}#{i}"
        i += 1
    return name


def coarsen(
    problem: Problem,
    target: int | None = None,
    *,
    max_duration: int | None = None,
    max_memory: int | None = None,
    strict_factor: float = 0.75,
    non_adjacent: bool = True,
) -> Coarsening:
    """Merge blocks of ``problem`` (see the module notes).

    Parameters
    ----------
    problem:
        The problem to coarsen (its graph is merged; everything else kept).
    target:
        Wanted number of coarse blocks. None: only the safe merges of step
        2, as far as the thresholds allow.
    max_duration, max_memory:
        Thresholds of step 2 on a merged block's (largest) duration and
        memory rise; step 3 uses ``strict_factor`` times them.
    strict_factor:
        In ``(0, 1]``.
    non_adjacent:
        Run step 3 when step 2 leaves more than ``target`` blocks.

    Returns
    -------
    Coarsening
        The coarse problem (it may keep more than ``target`` blocks when the
        thresholds stop the merging; ``stats["blocks"]`` says how many).

    Examples
    --------
    The operations that run back to back on one machine become one block
    lasting their sum:

    >>> from schedsearch.loaders import jobshop_problem
    >>> one_job = jobshop_problem([[(0, 1), (0, 2), (0, 1), (1, 2), (1, 1)]], 2).problem  # 3 ops on m0, 2 on m1
    >>> from schedsearch.search import coarsen
    >>> coarsening = coarsen(one_job, 2)
    >>> dict(coarsening.groups)
    {'j0.o0+2': ('j0.o0', 'j0.o1', 'j0.o2'), 'j0.o3+1': ('j0.o3', 'j0.o4')}
    >>> [block.options[0].duration for block in coarsening.coarse.graph.blocks]
    [4, 3]
    """
    if target is not None and (isinstance(target, bool) or not isinstance(target, int) or target < 1):
        raise InvalidProblemError(f"coarsening: 'target' must be an integer >= 1 or None, got {target!r}")
    if not 0 < strict_factor <= 1:
        raise InvalidProblemError(f"coarsening: 'strict_factor' must be in (0, 1], got {strict_factor!r}")
    for field, value in (("max_duration", max_duration), ("max_memory", max_memory)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidProblemError(f"coarsening: {field!r} must be an integer >= 0 or None, got {value!r}")
    state = _Merging.of(problem)
    groups = state.groups
    room = _room(problem)
    total = sum(g.size for g in groups.values())
    if max_duration is None:
        max_duration = math.ceil(3 * total / target) if target else max(g.size for g in groups.values())
    mem_limit = math.inf if max_memory is None else max_memory
    stats: dict[str, Any] = {
        "blocks_in": len(state.nodes),
        "edges_in": len(problem.graph.edges),
        "redundant_edges": len(problem.graph.edges) - len(_reduced(state.nodes, state.succ, state.reach)),
        "max_duration": max_duration,
        "max_memory": max_memory,
        "strict_factor": strict_factor,
    }

    def done() -> bool:
        return target is not None and len(groups) <= target

    # step 2: safe merges along reduced edges
    while not done():
        best = state.best_safe_pair(room, max_duration, mem_limit)
        if best is None:
            break
        state.merge(*best)
    stats["blocks_after_safe"] = len(groups)

    # step 3: the remaining pairs under stricter thresholds
    if non_adjacent and target is not None:
        strict_duration = strict_factor * max_duration
        strict_memory = strict_factor * mem_limit
        while not done():
            found = _best_other_pair(state.nodes, state.succ, state.pred, groups, state.reach, room, strict_duration,
                                     strict_memory)
            if found is None:
                break
            state.merge(*found)
    stats["blocks"] = len(groups)
    return _build(problem, groups, state.succ, stats)


@attrs.define
class _Merging:
    """The groups of :func:`coarsen` while it merges them, with their edges (summed sizes) both ways and
    the reachability between them."""

    groups: dict[int, _Group]
    succ: dict[int, dict[int, int]]
    pred: dict[int, dict[int, int]]
    nodes: list[int]
    reach: Any

    @classmethod
    def of(cls, problem: Problem) -> _Merging:
        """One group per block (blocks with a release or a fixed order stay unmerged)."""
        graph = problem.graph
        pinned = {r.block for r in problem.releases} | {b for order in problem.fixed_orders for b, _ in order}
        groups = {i: _single(b, b.name not in pinned) for i, b in enumerate(graph.blocks)}
        idx = {b.name: i for i, b in enumerate(graph.blocks)}
        succ: dict[int, dict[int, int]] = {i: {} for i in groups}
        pred: dict[int, dict[int, int]] = {i: {} for i in groups}
        for e in graph.edges:
            u, v = idx[e.src], idx[e.dst]
            succ[u][v] = e.size
            pred[v][u] = e.size
        nodes = list(groups)
        return cls(groups=groups, succ=succ, pred=pred, nodes=nodes, reach=_reach(nodes, succ))

    def merge(self, a: int, b: int, merged: _Group) -> None:
        """Merge group ``b`` into ``a`` (``merged`` runs a's members first); the reachability anew."""
        succ, pred = self.succ, self.pred
        self.groups[a] = merged
        del self.groups[b]
        for s, size in succ.pop(b).items():
            del pred[s][b]
            if s != a:
                succ[a][s] = succ[a].get(s, 0) + size
                pred[s][a] = succ[a][s]
        for p, size in pred.pop(b).items():
            del succ[p][b]
            if p != a:
                pred[a][p] = pred[a].get(p, 0) + size
                succ[p][a] = pred[a][p]
        self.nodes.remove(b)
        self.reach = _reach(self.nodes, succ)

    def best_safe_pair(self, room: Any, max_duration: float, mem_limit: float) -> tuple[int, int, _Group] | None:
        """Step 2's next merge: of the reduced edges ``u -> v`` where ``u`` has no other successor and ``v``
        no other predecessor, both mergeable and their merge within the thresholds, the shortest merge."""
        reduced = _reduced(self.nodes, self.succ, self.reach)
        out_deg: dict[int, int] = {n: 0 for n in self.nodes}
        in_deg: dict[int, int] = {n: 0 for n in self.nodes}
        for u, v in reduced:
            out_deg[u] += 1
            in_deg[v] += 1
        best: tuple[int, int, int, _Group] | None = None
        for u, v in sorted(reduced):
            if out_deg[u] != 1 or in_deg[v] != 1:
                continue
            gu, gv = self.groups[u], self.groups[v]
            if not (gu.mergeable and gv.mergeable):
                continue
            merged = _combined(gu, gv, room)
            if merged is None or merged.size > max_duration or merged.footprint > mem_limit:
                continue
            if best is None or merged.size < best[0]:
                best = (merged.size, u, v, merged)
        return None if best is None else best[1:]


def _top2(items: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """The two largest ``(value, node)`` pairs (``(0, -1)`` fills in)."""
    first = second = (0, -1)
    for item in items:
        if item > first:
            first, second = item, first
        elif item > second:
            second = item
    return first, second


def _max_except(top: tuple[tuple[int, int], tuple[int, int]], node: int) -> int:
    return top[1][0] if top[0][1] == node else top[0][0]


def _best_other_pair(
    nodes: list[int],
    succ: dict[int, dict[int, int]],
    pred: dict[int, dict[int, int]],
    groups: dict[int, _Group],
    reach: dict[int, int],
    room: Mapping[tuple[str, ...], float],
    max_duration: float,
    max_memory: float,
) -> tuple[int, int, _Group] | None:
    """Step 3's choice: the pair whose merge lengthens the longest path
    through it least (then the smaller merged duration), among pairs joined
    by a reduced edge or incomparable, within the thresholds."""
    heads, tails = _group_heads_tails(nodes, succ, pred, groups)
    reduced = _reduced(nodes, succ, reach)
    size = {n: groups[n].size for n in nodes}
    # the two latest inputs of each group and the two longest continuations,
    # so "every input of b except a" costs O(1)
    top_in = {n: _top2((heads[p] + size[p], p) for p in pred[n]) for n in nodes}
    top_out = {n: _top2((size[s] + tails[s], s) for s in succ[n]) for n in nodes}
    # least[n] <= the duration of any option: a merged group lasts at least
    # least[a] + least[b] on each common option, which makes the bounds below valid
    least = {n: min(groups[n].options.values()) for n in nodes}
    candidates = sorted((n for n in nodes if groups[n].mergeable and least[n] <= max_duration), key=lambda n: (least[n], n))
    best: tuple[tuple[int, int, int, int], int, int, _Group] | None = None
    best_key = (math.inf, math.inf)
    for i, a in enumerate(candidates):
        la, ha, ta = least[a], heads[a], tails[a]
        for b in candidates[i + 1 :]:
            both = la + least[b]
            if both > max_duration:
                break  # durations only grow from here
            # a lower bound of the score first: most pairs stop here
            if (max(ha, heads[b]) + both + max(ta, tails[b]), both) >= best_key:
                continue
            if reach[a] >> b & 1:
                if (a, b) not in reduced:
                    continue  # a longer path joins them: merging would make a cycle
                first, second = a, b
            elif reach[b] >> a & 1:
                if (b, a) not in reduced:
                    continue
                first, second = b, a
            else:
                first, second = (a, b) if (heads[a], a) <= (heads[b], b) else (b, a)
            # the merged group starts when every input of both members is there
            # and holds back every output of both until it ends
            head = max(heads[first], _max_except(top_in[second], first))
            tail = max(tails[second], _max_except(top_out[first], second))
            if (head + both + tail, both) >= best_key:
                continue
            merged = _combined(groups[first], groups[second], room)
            if merged is None or merged.size > max_duration or merged.footprint > max_memory:
                continue
            score = (head + merged.size + tail, merged.size, first, second)
            if best is None or score < best[0]:
                best = (score, first, second, merged)
                best_key = score[:2]
    if best is None:
        return None
    return best[1], best[2], best[3]


def _group_heads_tails(
    nodes: list[int], succ: dict[int, dict[int, int]], pred: dict[int, dict[int, int]], groups: dict[int, _Group]
) -> tuple[dict[int, int], dict[int, int]]:
    """Longest path (in largest durations, no transfers) into and out of each group."""
    order = _topological(nodes, succ)
    heads: dict[int, int] = {}
    for n in order:
        heads[n] = max((heads[p] + groups[p].size for p in pred[n]), default=0)
    tails: dict[int, int] = {}
    for n in reversed(order):
        tails[n] = max((groups[s].size + tails[s] for s in succ[n]), default=0)
    return heads, tails


def _build(
    problem: Problem, groups: dict[int, _Group], succ: dict[int, dict[int, int]], stats: dict[str, Any]
) -> Coarsening:
    """The coarse Problem of the final groups."""
    original_names = set(problem.graph.block_names)
    by_block = problem.graph.by_name()
    names: dict[int, str] = {}
    taken = set(original_names)
    for gid in sorted(groups, key=lambda g: problem.graph.block_names.index(groups[g].members[0])):
        name = _coarse_name(groups[gid].members, taken)
        taken.add(name)
        names[gid] = name
    group_of = {m: gid for gid, g in groups.items() for m in g.members}
    # merged transferring edges per pair of groups, for the latency padding
    transferring: dict[tuple[int, int], int] = {}
    for e in problem.graph.edges:
        gu, gv = group_of[e.src], group_of[e.dst]
        if gu != gv and e.size > 0:
            transferring[(gu, gv)] = transferring.get((gu, gv), 0) + 1
    pad_per_extra = max(
        (c.latency / c.time_per_unit for c in problem.cluster.channels if c.time_per_unit > 0), default=0.0
    )
    blocks = []
    for gid in names:
        g = groups[gid]
        if len(g.members) == 1:
            blocks.append(by_block[g.members[0]])
            continue
        blocks.append(
            Block(
                name=names[gid],
                kind=g.kind,
                options=[Option(devices=d, duration=dur) for d, dur in g.options.items()],
                memory=g.memory,
                workspace=g.workspace,
                stage=g.stage,
            )
        )
    edges = []
    for u in names:
        for v, size in sorted(succ[u].items(), key=lambda kv: names[kv[0]]):
            k = transferring.get((u, v), 0)
            if size > 0 and k > 1:
                size += math.ceil((k - 1) * pad_per_extra)
            edges.append(Edge(src=names[u], dst=names[v], size=size))
    overrides = []
    overridden = {(b, m) for b, m, _ in problem.duration_overrides}
    for gid, name in names.items():
        g = groups[gid]
        if len(g.members) == 1:
            continue
        for m in range(problem.num_microbatches):
            if not any((b, m) in overridden for b in g.members):
                continue
            durations = []
            for devices in g.options:
                total = 0
                for b in g.members:
                    block = by_block[b]
                    i = next(k for k, o in enumerate(block.options) if o.devices == devices)
                    total += problem.durations(b, m)[i]
                durations.append(total)
            overrides.append((name, m, tuple(durations)))
    kept_overrides = [(b, m, d) for b, m, d in problem.duration_overrides if len(groups[group_of[b]].members) == 1]
    coarse = problem.with_(
        graph=Graph(blocks=blocks, edges=edges),
        duration_overrides=kept_overrides + overrides,
        name=f"{problem.name} (coarse)" if problem.name else "coarse",
    )
    stats = dict(stats)
    stats["edges"] = len(edges)
    return Coarsening(
        original=problem,
        coarse=coarse,
        groups={names[gid]: tuple(groups[gid].members) for gid in names},
        stats=stats,
    )


# --------------------------------------------------------------------------
# Expansion
# --------------------------------------------------------------------------


def _expand(c: Coarsening, schedule: Schedule) -> Schedule:
    problem = c.original
    position = {m: (g, i) for g, members in c.groups.items() for i, m in enumerate(members)}
    coarse_tasks = schedule.by_key()
    coarse_transfers = {tr.key: tr for tr in schedule.transfers}
    # items: (sort key, kind, payload); kind 0 = transfer, 1 = task
    items: list[tuple[tuple[int, int, int, int, int], str, Any]] = []
    devices_of: dict[tuple[str, int], tuple[str, ...]] = {}
    option_of: dict[tuple[str, int], int] = {}
    for m in range(problem.num_microbatches):
        for b in problem.graph.blocks:
            g, i = position[b.name]
            ct = coarse_tasks[(g, m)]
            opt = next(k for k, o in enumerate(b.options) if set(o.devices) == set(ct.devices))
            option_of[(b.name, m)] = opt
            devices_of[(b.name, m)] = b.options[opt].devices
            items.append(((ct.start, 1, 0, i, 0), "task", (b.name, m)))
    group_order = {g: k for k, g in enumerate(c.groups)}
    channel_of: dict[tuple[str, str, int], str] = {}
    for m in range(problem.num_microbatches):
        for e in problem.graph.edges:
            if e.size <= 0:
                continue
            du, dv = devices_of[(e.src, m)], devices_of[(e.dst, m)]
            if set(du) & set(dv):
                continue
            gu, iu = position[e.src]
            gv, iv = position[e.dst]
            ctr = coarse_transfers.get((gu, gv, m))
            if ctr is None:  # pragma: no cover - the coarse schedule validated
                raise InvalidProblemError(f"coarse schedule lacks the transfer {gu!r} -> {gv!r} (micro-batch {m})")
            channel_of[(e.src, e.dst, m)] = ctr.channel
            items.append(((ctr.start, 0, group_order[gu], iu, iv), "transfer", (e.src, e.dst, m)))
    items.sort(key=lambda it: it[0])
    preds: dict[str, list[Edge]] = {b.name: [] for b in problem.graph.blocks}
    for e in problem.graph.edges:
        preds[e.dst].append(e)
    device_free: dict[str, int] = {d: 0 for d in problem.cluster.device_names}
    channel_free: dict[str, int] = {ch.name: 0 for ch in problem.cluster.channels}
    end: dict[tuple[str, int], int] = {}
    transfer_end: dict[tuple[str, str, int], int] = {}
    tasks: list[TaskInstance] = []
    transfers: list[Transfer] = []
    fixed_pred: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for order in problem.fixed_orders:
        for a, b in zip(order, order[1:]):
            fixed_pred.setdefault(b, []).append(a)
    for _, kind, payload in items:
        if kind == "transfer":
            src, dst, m = payload
            channel = problem.cluster.channel(channel_of[payload])
            size = next(e.size for e in preds[dst] if e.src == src)
            duration = channel.transfer_time(size)
            start = end[(src, m)]
            if duration > 0:
                start = max(start, channel_free[channel.name])
                channel_free[channel.name] = start + duration
            transfer_end[payload] = start + duration
            transfers.append(Transfer(src=src, dst=dst, microbatch=m, channel=channel.name, start=start, end=start + duration))
            continue
        name, m = payload
        devices = devices_of[payload]
        start = problem.release_of(name, m)
        for d in devices:
            start = max(start, device_free[d])
        for e in preds[name]:
            start = max(start, transfer_end.get((e.src, name, m), end[(e.src, m)]))
        for a in fixed_pred.get(payload, ()):
            start = max(start, end[a])
        duration = problem.durations(name, m)[option_of[payload]]
        end[payload] = start + duration
        for d in devices:
            device_free[d] = start + duration
        tasks.append(TaskInstance(block=name, microbatch=m, devices=devices, start=start, end=start + duration))
    expanded = Schedule(tasks=tasks, transfers=transfers, name=schedule.name)
    return assert_valid(problem, expanded, "expanded schedule")
