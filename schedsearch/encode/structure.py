"""Solver-neutral view of a Problem that every encoder builds on.

Both backends encode the same constraint families, in this order:

1. option choice: each task instance runs in exactly one of its block's
   options, with that option's duration;
2. no-overlap per device: tasks whose chosen option occupies a device do not
   overlap there;
3. dependencies: ``start(v, m) >= end(u, m)`` for every edge ``u -> v``;
4. transfers: when an edge has a size and its two ends run on disjoint
   device sets, one transfer of the channel's transfer time runs on one
   channel serving ``lead(u) -> lead(v)``, between ``end(u)`` and
   ``start(v)``; transfers on a channel do not overlap;
5. memory: on each device with a capacity, initial memory plus the deltas of
   the tasks started so far plus the workspace of the tasks running never
   exceeds the capacity;
6. releases and fixed orders;
7. symmetry breaking (optional, only for interchangeable micro-batches):
   ``start(b, m) <= start(b, m + 1)`` for the blocks of
   :func:`chained_blocks` (every block, when a fixed placement, one
   transfer time per edge and groups that survive renumbering allow it;
   else one block, :func:`microbatch_order_applies`);
8. redundant device bounds (optional): ``makespan >= first start on d +
   mandatory work on d + forced idle + least tail`` (the least tail
   replaced by :func:`~schedsearch.bounds.analytic.memory_tails` when
   larger) (and, for the
   ``"max_span"`` objective, ``span(d) >= mandatory work + forced idle``;
   the idle a device's memory forces on it is
   :func:`~schedsearch.bounds.analytic.memory_idle`);
9. objective: minimise the makespan (the last end), or, for
   ``"max_span"``, the longest device span ``max_d (last end on d - first
   start on d)`` over the tasks that run on ``d``;
10. ties (optional, from the solve options): ``start(b) = start(a) +
    offset`` for given pairs of task instances (a restriction the search
    strategies use for periodic or symmetric schedules).

Overlapped groups (:class:`~schedsearch.problem.Overlap`) enter families 1-3
and 8: each candidate group (one task instance per member block, of any
micro-batches except that the overlap's ``same_microbatch`` sets share
theirs) has a literal; a task runs alone or in exactly one active
group; an active group occupies its devices once for its duration (the
overlap's, or its longest member's own duration when that is longer), all
members start together and end with it, and an edge between two of its
members that follows the overlap's block order is the group's internal
order, not a precedence. Candidates that can never run are not built: an
edge between two members against the block order, or two members
consecutive in a fixed order (the fixed order needs one to end before the
other starts). The rules are those of the validator and of the problem
model's documentation; the oracle of :mod:`schedsearch.testing.oracle`
checks them independently.

This module computes what those families need (task list, which device an
option occupies, which transfers may occur, a horizon); it imports no solver.
"""

from __future__ import annotations

from typing import Any

import attrs

from schedsearch._union_find import UnionFind
from schedsearch.bounds.analytic import heads_and_tails, memory_idle, memory_tails
from schedsearch.deadline import checkpoint
from schedsearch.errors import InvalidProblemError, UnsupportedFeatureError
from schedsearch.problem import Channel, Problem, TaskKey
from schedsearch.schedule import Schedule, TaskInstance, Transfer

__all__ = [
    "TaskStructure",
    "TaskInfo",
    "TransferInfo",
    "build_structure",
    "symmetry_applies",
    "microbatch_order_applies",
    "chained_blocks",
    "resolve_ties",
]


@attrs.frozen(kw_only=True)
class TaskInfo:
    """One task instance: its options as (devices, duration) and its release."""

    key: TaskKey
    index: int
    options: tuple[tuple[tuple[str, ...], int], ...]
    memory: int
    workspace: int
    release: int
    head: int
    tail: int

    @property
    def fixed(self) -> bool:
        return len(self.options) == 1


@attrs.frozen(kw_only=True)
class TransferInfo:
    """A possible transfer of edge ``src -> dst`` in micro-batch ``m``.

    ``routes`` lists, for every pair of options ``(i, j)`` of the two ends that
    lie on disjoint devices, the channels that can carry it.
    """

    src: TaskKey
    dst: TaskKey
    size: int
    routes: tuple[tuple[int, int, tuple[Channel, ...]], ...]


@attrs.frozen(kw_only=True)
class GroupInfo:
    """A candidate overlapped group: member tasks (in the overlap's block order)."""

    name: str
    members: tuple[int, ...]
    duration: int
    devices: tuple[str, ...]


#: Refuse to enumerate more candidate groups than this (a model of that size
#: would not be solvable anyway); the error names the overlap.
MAX_GROUPS = 200_000


@attrs.frozen(kw_only=True)
class TaskStructure:
    """The task instances of a problem and what the constraint families need about them.

    Built once per problem by :func:`build_structure` and read by both
    backends, so they encode the same families from the same tables:
    ``tasks`` (numbered; ``index`` maps a ``(block, micro-batch)`` key to
    its number) with their options, deltas, releases, heads and tails;
    ``precedences`` (edges of every micro-batch, then fixed orders);
    ``transfers`` that may occur and the channels that may carry them; the
    ``horizon`` that bounds the times of the variables; the micro-batch chains of the
    symmetry break (``symmetry_chains``); per device the tasks that must
    run there (``device_mandatory``), its capacity, its memory pairs and
    its forced idle; and the candidate overlapped groups. It imports no
    solver.
    """

    problem: Problem
    tasks: tuple[TaskInfo, ...]
    index: dict[TaskKey, int]
    precedences: tuple[tuple[int, int], ...]
    transfers: tuple[TransferInfo, ...]
    horizon: int
    symmetry_chains: tuple[tuple[int, ...], ...]
    device_mandatory: dict[str, tuple[int, ...]]
    capacities: dict[str, int]
    #: per device with a capacity: (alloc, free, part) task triples when
    #: every memory delta on it splits up that way (see :func:`_memory_pairs`),
    #: else None
    memory_pairs: dict[str, tuple[tuple[int, int, int], ...] | None]
    #: candidate overlapped groups
    groups: tuple[GroupInfo, ...] = ()
    #: task -> indices of the candidate groups it may join
    task_groups: dict[int, tuple[int, ...]] = attrs.field(factory=dict)
    #: precedence (u, v) -> groups holding both (the edge is then internal)
    internal: dict[tuple[int, int], tuple[int, ...]] = attrs.field(factory=dict)
    #: per device: idle its memory forces on it (:func:`~schedsearch.bounds.analytic.memory_idle`)
    forced_idle: dict[str, int] = attrs.field(factory=dict)
    #: per device: least time the makespan runs past its work after its last allocation
    #: (:func:`~schedsearch.bounds.analytic.memory_tails`); replaces the least tail when larger
    forced_tail: dict[str, int] = attrs.field(factory=dict)

    def device_work_bound(self, tasks: tuple[int, ...]) -> int:
        """A lower bound on the time a device needs for ``tasks`` run one at a time.

        Without groups: the sum of their least durations. A group of ``k``
        members saves ``sum(member durations) - duration`` at most; as a task
        joins at most one group, the savings are at most the sum over the
        tasks of their best ``saving / k``, which is subtracted (rounded
        down).
        """
        work = sum(min(d for _, d in self.tasks[t].options) for t in tasks)
        if not self.groups:
            return work
        from fractions import Fraction

        savings = Fraction(0)
        for t in tasks:
            best = Fraction(0)
            for g in self.task_groups.get(t, ()):
                info = self.groups[g]
                saving = sum(self.tasks[m].options[0][1] for m in info.members) - info.duration
                best = max(best, Fraction(saving, len(info.members)))
            savings += best
        return work - int(savings)

    def option_on(self, task: int, device: str) -> tuple[int, ...]:
        """Indices of the options of ``task`` that occupy ``device``."""
        return tuple(i for i, (devs, _) in enumerate(self.tasks[task].options) if device in devs)

    def tasks_on(self, device: str) -> tuple[int, ...]:
        return tuple(t.index for t in self.tasks if any(device in devs for devs, _ in t.options))

    def option_index_of(self, task: int, devices: tuple[str, ...]) -> int:
        for i, (devs, _) in enumerate(self.tasks[task].options):
            if set(devs) == set(devices):
                return i
        raise KeyError(devices)

    def to_schedule(
        self,
        chosen: list[tuple[int, int]],
        transfers: list[tuple[int, str, int]],
        active_groups: list[int] = (),
    ) -> Schedule:
        """The Schedule of a solver's answer.

        ``chosen[t] = (option index, start)`` for every task; ``transfers`` lists
        ``(transfer index, channel name, start)`` for the transfers that happen;
        ``active_groups`` the candidate groups that run.
        """
        in_group: dict[int, GroupInfo] = {}
        for g in active_groups:
            for m in self.groups[g].members:
                in_group[m] = self.groups[g]
        tasks = []
        for t, (info, (option, start)) in enumerate(zip(self.tasks, chosen)):
            devices, duration = info.options[option]
            group = in_group.get(t)
            tasks.append(
                TaskInstance(
                    block=info.key[0], microbatch=info.key[1], devices=devices, start=start,
                    end=start + (group.duration if group else duration), overlap=group.name if group else None,
                )
            )
        done = []
        for k, channel, start in transfers:
            info = self.transfers[k]
            duration = self.problem.cluster.channel(channel).transfer_time(info.size)
            done.append(
                Transfer(src=info.src[0], dst=info.dst[0], microbatch=info.src[1], channel=channel, start=start,
                         end=start + duration)
            )
        return Schedule(tasks=tasks, transfers=done)

    def hint_values(self, schedule: Schedule) -> dict[str, Any]:
        """Start, option and transfer values of a schedule, keyed for encoders.

        Returns ``{"start": {task: int}, "option": {task: int}, "transfer":
        {transfer index: (channel name, start)}}``; tasks or transfers the
        schedule lacks are left out.
        """
        starts: dict[int, int] = {}
        options: dict[int, int] = {}
        for t in schedule.tasks:
            i = self.index.get(t.key)
            if i is None:
                continue
            try:
                options[i] = self.option_index_of(i, t.devices)
            except KeyError:
                continue
            starts[i] = t.start
        by_edge = {tr.key: tr for tr in schedule.transfers}
        transfers: dict[int, tuple[str, int]] = {}
        for k, info in enumerate(self.transfers):
            tr = by_edge.get((info.src[0], info.dst[0], info.src[1]))
            if tr is not None:
                transfers[k] = (tr.channel, tr.start)
        groups: list[int] = []
        by_members = {frozenset(g.members): k for k, g in enumerate(self.groups)}
        seen: dict[tuple, list[int]] = {}
        for t in schedule.tasks:
            if t.group_key is not None and t.key in self.index:
                seen.setdefault(t.group_key, []).append(self.index[t.key])
        for members in seen.values():
            k = by_members.get(frozenset(members))
            if k is not None:
                groups.append(k)
        return {"start": starts, "option": options, "transfer": transfers, "groups": groups}


def resolve_ties(st: TaskStructure, ties: tuple) -> list[tuple[int, int, int]]:
    """Task indices of the ties ``((block, m), (block, m), offset)`` (family 10).

    Raises :class:`~schedsearch.errors.InvalidProblemError` (a ``ValueError``)
    naming a tie whose task instance the problem does not have.
    """
    out = []
    for a, b, offset in ties:
        for key in (a, b):
            if key not in st.index:
                raise InvalidProblemError(
                    f"tie {a} -> {b} (offset {offset}): the problem has no task instance {key[0]!r} "
                    f"(micro-batch {key[1]})"
                )
        out.append((st.index[a], st.index[b], offset))
    return out


def symmetry_applies(problem: Problem) -> bool:
    """True when each block's micro-batches may be put in order (see :func:`chained_blocks`)."""
    return bool(_relabelling_classes(problem))


def _relabelling_classes(problem: Problem) -> dict[str, str] | None:
    """Block -> the block whose start order numbers its micro-batches, when
    per-block relabelling is valid (see :func:`chained_blocks`), else None."""
    if problem.num_microbatches <= 1 or not problem.interchangeable_microbatches():
        return None
    if not all(b.is_fixed for b in problem.graph.blocks):
        return None
    blocks = problem.graph.by_name()
    for e in problem.graph.edges:
        if e.size <= 0:
            continue
        du, dv = blocks[e.src].options[0].devices, blocks[e.dst].options[0].devices
        if set(du) & set(dv):
            continue
        times = {c.transfer_time(e.size) for c in problem.cluster.channels_between(du[0], dv[0])}
        if len(times) > 1:
            return None
    # classes: blocks tied to one micro-batch in some group (union of the same_microbatch sets)
    root_of = UnionFind(blocks)
    for ov in problem.overlaps:
        for tied in ov.same_microbatch:
            root_of.union(*tied)
    edges = [(e.src, e.dst) for e in problem.graph.edges]
    for ov in problem.overlaps:
        members = set(ov.blocks)
        if any(a in members and b in members and root_of[a] != root_of[b] for a, b in edges):
            return None  # an internal edge across classes holds only inside one micro-batch's group
    outside: dict[str, set[str]] = {}  # class -> its blocks with edges leaving the class
    for a, b in edges:
        if root_of[a] != root_of[b]:
            outside.setdefault(root_of[a], set()).add(a)
            outside.setdefault(root_of[b], set()).add(b)
    leader: dict[str, str] = {}
    for root in {root_of[b] for b in blocks}:
        cls = [b for b in blocks if root_of[b] == root]
        linked = outside.get(root, set())
        if len(linked) > 1:
            return None
        lead = next(iter(linked)) if linked else cls[0]
        for b in cls:
            leader[b] = lead
    return leader


def chained_blocks(problem: Problem) -> tuple[str, ...]:
    """The blocks whose micro-batches the symmetry break puts in order.

    Per-block relabelling (every block in order) keeps an optimal schedule
    when every feasible schedule can be renumbered, block by block, so that
    the ``i``-th earliest start of each block belongs to micro-batch ``i``.
    Renumbering keeps every interval on every device and channel and every
    memory event (deltas are per block), so it keeps device, channel and
    memory feasibility; it keeps an edge ``u -> v`` when sorting each
    block's instances by start also sorts them by end (then the ``i``-th
    earliest end of ``u`` is at most the ``i``-th earliest start of ``v``,
    by the bijection the original numbering gives). Validity condition:

    * interchangeable micro-batches: no releases, fixed orders or
      per-micro-batch durations;
    * a fixed placement (one option per block): a block's instances then
      run on the same devices and never overlap there (alone or in
      different groups), so start order is end order; with several
      options, micro-batches may take different options and durations (a
      three-micro-batch example where ordering them costs one time unit is
      in the tests);
    * one transfer time per edge (parallel channels of different speeds
      give micro-batches different transfer times);
    * overlapped groups survive renumbering: the blocks of a
      ``same_microbatch`` set (a class) are renumbered together, by the
      start order of the one block of the class that has edges leaving
      the class (so a class may have such edges at one block only; the
      others are not put in order), and every edge between two blocks of
      one overlap lies inside a class (an internal edge holds only inside
      one micro-batch's group).

    When this fails but the micro-batches are interchangeable,
    :func:`microbatch_order_applies` still orders one block. Returns ()
    when no ordering is valid.
    """
    leader = _relabelling_classes(problem)
    if leader is not None:
        return tuple(b.name for b in problem.graph.blocks if leader[b.name] == b.name)
    if microbatch_order_applies(problem):
        return (_order_block(problem),)
    return ()


def microbatch_order_applies(problem: Problem) -> bool:
    """True when ordering the micro-batches by one block's start is safe.

    Validity condition: the micro-batches are interchangeable (no
    releases, fixed orders or per-micro-batch durations). Then renumbering
    the micro-batches of a schedule as a whole (every task, transfer and
    group member of micro-batch ``m`` moves to ``pi(m)``) gives a schedule
    with the same intervals, options, channels, groups and memory events,
    so some optimal schedule starts one chosen block's micro-batches in
    order: ``start(b, m) <= start(b, m + 1)``. This holds with flexible
    options, parallel channels and overlapped groups, where
    :func:`symmetry_applies` (every block in order) does not.
    """
    return problem.num_microbatches > 1 and problem.interchangeable_microbatches()


def _order_block(problem: Problem) -> str:
    """The block whose micro-batches :func:`microbatch_order_applies` orders:
    the first, in topological order, fixed on a single device (its
    instances never overlap there, so ``start(b, m + 1) >= end(b, m)``
    follows), else the first block."""
    order = problem.graph.topological_order()
    for name in order:
        b = problem.graph.block(name)
        if b.is_fixed and len(b.options[0].devices) == 1:
            return name
    return order[0]


def build_structure(problem: Problem, symmetry_breaking: bool = True) -> TaskStructure:
    """The solver-neutral :class:`TaskStructure` of ``problem`` (the
    symmetry chains only with ``symmetry_breaking``)."""
    heads, tails = heads_and_tails(problem)
    tasks: list[TaskInfo] = []
    index: dict[TaskKey, int] = {}
    for m in range(problem.num_microbatches):
        checkpoint(len(problem.graph.blocks))
        for b in problem.graph.blocks:
            durations = problem.durations(b.name, m)
            key = (b.name, m)
            index[key] = len(tasks)
            tasks.append(
                TaskInfo(
                    key=key,
                    index=len(tasks),
                    options=tuple((o.devices, d) for o, d in zip(b.options, durations)),
                    memory=b.memory,
                    workspace=b.workspace,
                    release=problem.release_of(b.name, m),
                    head=heads[key],
                    tail=tails[key],
                )
            )
    precedences: list[tuple[int, int]] = []
    transfers: list[TransferInfo] = []
    for m in range(problem.num_microbatches):
        checkpoint(len(problem.graph.edges))
        for e in problem.graph.edges:
            u, v = index[(e.src, m)], index[(e.dst, m)]
            precedences.append((u, v))

            if e.size <= 0:
                continue
            routes = []
            for i, (du, _) in enumerate(tasks[u].options):
                for j, (dv, _) in enumerate(tasks[v].options):
                    if set(du) & set(dv):
                        continue
                    routes.append((i, j, problem.cluster.channels_between(du[0], dv[0])))
            if routes:
                transfers.append(TransferInfo(src=(e.src, m), dst=(e.dst, m), size=e.size, routes=tuple(routes)))
    for order in problem.fixed_orders:
        for a, b in zip(order, order[1:]):
            precedences.append((index[a], index[b]))
    chains: list[tuple[int, ...]] = []
    if symmetry_breaking:
        for b in chained_blocks(problem):
            chains.append(tuple(index[(b, m)] for m in range(problem.num_microbatches)))
    horizon = max((t.release for t in tasks), default=0)
    horizon += sum(max(d for _, d in t.options) for t in tasks)
    for tr in transfers:
        horizon += max((c.transfer_time(tr.size) for _, _, chans in tr.routes for c in chans), default=0)
    mandatory = {
        d: tuple(t.index for t in tasks if all(d in devs for devs, _ in t.options))
        for d in problem.cluster.device_names
    }
    capacities = {d.name: d.memory for d in problem.cluster.devices if d.memory is not None}
    pairs = {d: _memory_pairs(problem, index, d) for d in capacities}
    groups, task_groups, internal = _candidate_groups(problem, index, tasks)
    for t, gs in task_groups.items():
        # a task in a group may last the group's duration instead of its own
        longest = max(groups[g].duration for g in gs)
        horizon += max(0, longest - max(d for _, d in tasks[t].options))
    return TaskStructure(
        problem=problem,
        tasks=tuple(tasks),
        index=index,
        precedences=tuple(precedences),
        transfers=tuple(transfers),
        horizon=horizon,
        symmetry_chains=tuple(chains),
        device_mandatory=mandatory,
        capacities=capacities,
        memory_pairs=pairs,
        groups=groups,
        task_groups=task_groups,
        internal=internal,
        forced_idle=memory_idle(problem) if capacities else {},
        forced_tail=memory_tails(problem) if capacities else {},
    )


def _candidate_groups(
    problem: Problem, index: dict[TaskKey, int], tasks: list[TaskInfo]
) -> tuple[tuple[GroupInfo, ...], dict[int, tuple[int, ...]], dict[tuple[int, int], tuple[int, ...]]]:
    """Every candidate group of every declared overlap (see the module docstring).

    A candidate takes one task instance of each member block, of any
    micro-batches (the blocks of a ``same_microbatch`` set of the overlap
    share theirs). It lasts the overlap's duration, or its longest member's
    own duration when that is longer. Candidates that can never run are
    left out: an edge of one micro-batch between two members that goes
    against the overlap's block order, or two members consecutive in a
    fixed order. Returns the candidates, the candidates of each task, and
    per precedence ``(u, v)`` (graph edges only) the candidates in which
    it is the group's internal order.
    """
    if not problem.overlaps:
        return (), {}, {}
    import itertools

    edges = {(e.src, e.dst) for e in problem.graph.edges}
    ordered = {(a, b) for order in problem.fixed_orders for a, b in zip(order, order[1:])}
    ordered |= {(b, a) for a, b in ordered}
    n = problem.num_microbatches
    groups: list[GroupInfo] = []
    internal: dict[tuple[int, int], list[int]] = {}
    for ov in problem.overlaps:
        classes = ov.microbatch_classes()
        count = n ** len(classes)
        if len(groups) + count > MAX_GROUPS:
            raise UnsupportedFeatureError(
                f"overlap {ov.name or '+'.join(ov.blocks)!r}: {count} candidate groups over "
                f"{n} micro-batches is more than an exact model can hold ({MAX_GROUPS}); "
                f"search without overlaps (problem.with_(overlaps=())) or with fewer micro-batches"
            )
        devices = problem.graph.block(ov.blocks[0]).options[0].devices
        # edges between members, as positions in the overlap's block order
        links = [(i, j) for i, a in enumerate(ov.blocks) for j, b in enumerate(ov.blocks) if (a, b) in edges]
        class_of = {b: k for k, cls in enumerate(classes) for b in cls}
        for per_class in itertools.product(range(n), repeat=len(classes)):
            combo = tuple(per_class[class_of[b]] for b in ov.blocks)
            if any(combo[i] == combo[j] and j < i for i, j in links):
                continue  # an edge of one micro-batch against the group's order
            keys = [(b, m) for b, m in zip(ov.blocks, combo)]
            if any((a, b) in ordered for a in keys for b in keys if a != b):
                continue  # a fixed order would need one member to end before the other starts
            members = tuple(index[k] for k in keys)
            longest = max(tasks[t].options[0][1] for t in members)
            g = len(groups)
            groups.append(GroupInfo(name=ov.name or "+".join(ov.blocks), members=members,
                                    duration=max(ov.duration, longest), devices=devices))
            for i, j in links:
                if combo[i] == combo[j]:
                    internal.setdefault((members[i], members[j]), []).append(g)
    task_groups: dict[int, list[int]] = {}
    for g, info in enumerate(groups):
        for m in info.members:
            task_groups.setdefault(m, []).append(g)
    return (
        tuple(groups),
        {t: tuple(v) for t, v in task_groups.items()},
        {k: tuple(v) for k, v in internal.items()},
    )


def _memory_pairs(problem: Problem, index: dict[TaskKey, int], device: str) -> tuple[tuple[int, int, int], ...] | None:
    """Split the allocations on ``device`` over the later frees that return them.

    When every block with a nonzero memory delta that may run on ``device`` is
    fixed there, and each free ``-b`` can be covered by parts of allocations
    ``+a`` it depends on (transitively), every allocation being used up
    exactly, the memory level on the device is the initial memory plus the
    sum of the parts ``x`` of the (alloc, free, ``x``) triples with
    ``start(alloc) <= t < start(free)`` (plus workspace): a cumulative
    constraint over intervals ``[start(alloc), start(free))``, equivalent to
    the reservoir and propagating better. (A forward allocating 2 whose
    input gradient frees 1 and weight gradient frees 1 gives two triples of
    part 1.) Frees take from the latest allocation they depend on first.
    Returns the triples for every micro-batch, or None when the deltas do
    not split up this way.
    """
    graph = problem.graph
    on_device = [b for b in graph.blocks if b.memory != 0 and device in b.devices]
    if any(not (b.is_fixed and device in b.options[0].devices) for b in on_device):
        return None
    succ = graph.successors()
    order = graph.topological_order()
    descendants: dict[str, set[str]] = {}
    for name in reversed(order):
        acc: set[str] = set()
        for e in succ[name]:
            acc.add(e.dst)
            acc |= descendants[e.dst]
        descendants[name] = acc
    position = {n: i for i, n in enumerate(order)}
    allocs = sorted((b for b in on_device if b.memory > 0), key=lambda b: position[b.name])
    frees = sorted((b for b in on_device if b.memory < 0), key=lambda b: position[b.name])
    if sum(b.memory for b in on_device) != 0:
        return None
    left = {a.name: a.memory for a in allocs}
    matched: list[tuple[str, str, int]] = []
    for f in frees:
        need = -f.memory
        for a in reversed(allocs):
            if need == 0:
                break
            if left[a.name] and f.name in descendants[a.name]:
                part = min(need, left[a.name])
                left[a.name] -= part
                need -= part
                matched.append((a.name, f.name, part))
        if need:
            return None
    return tuple(
        (index[(a, m)], index[(f, m)], amount)
        for m in range(problem.num_microbatches)
        for a, f, amount in matched
    )
