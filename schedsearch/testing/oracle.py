"""An exact brute-force oracle for tiny problems, sharing no code with the encoders.

:func:`exact_optimum` returns the optimal ``"makespan"`` or ``"max_span"`` of a
:class:`~schedsearch.problem.Problem` (``"feasibility"`` is treated as
makespan), or ``None`` when the problem is infeasible, together with a witness
:class:`~schedsearch.schedule.Schedule`. It is the independent check of every
OPTIMAL claim and every lower bound the library makes, so it is written from
the semantics below and from nothing else; it imports only the standard
library, :mod:`attrs`, :mod:`schedsearch.problem`, :mod:`schedsearch.schedule`
and :mod:`schedsearch.errors`.

Semantics (the specification)
=============================

* Task instances are ``(block, m)`` for every block and ``m < N``. Each runs
  in exactly one option of its block, on ``option.devices`` (the first one is
  the *lead*), for ``problem.durations(block, m)[option]`` time units, over
  ``[start, end)``, with ``start >= problem.release_of(block, m)``.
* Two intervals on one device do not overlap (half-open).
* Edge ``src -> dst`` (per micro-batch): ``start(dst) >= end(src)``. If
  ``size > 0`` and the device *sets* of the two options are disjoint, a
  transfer on one channel ``c`` serving ``lead(src) -> lead(dst)`` lasts
  ``c.latency + size * c.time_per_unit``, starts ``>= end(src)`` and ends
  ``<= start(dst)``; transfers on one channel do not overlap (zero-length
  transfers occupy nothing).
* Fixed orders: consecutive ``a, b`` of a sequence: ``start(b) >= end(a)``.
* Memory on a device ``d`` with a capacity, at every time ``t``:
  ``initial(d) + sum(memory of tasks on d with start <= t) + sum(workspace of
  tasks on d with start <= t < end) <= capacity``; the level starts at the
  initial memory, so ``initial(d) <= capacity`` too. A plan's peak on ``d`` is
  the highest level at any instant, initial memory included: a plan of
  worst-device peak ``P`` is exactly a plan under the uniform capacity ``P``
  (:func:`least_peak`, :func:`exact_front`).
* Overlapped groups: one instance of each block of an :class:`Overlap` (any
  micro-batches, except that the blocks of each ``same_microbatch`` set come
  from one micro-batch) may run as a group: same start, on the members' common
  devices, occupied once, for ``G = max(ov.duration, each member instance's
  own duration)``; every member ends with the group. Each member's memory
  delta applies at the group start, its workspace is held over the group.
  An edge between two members of one group is the group's internal order:
  fine (no precedence, no transfer) iff ``src`` precedes ``dst`` in
  ``ov.blocks``, otherwise the group is not allowed. Two members consecutive
  in a fixed order make the group not allowed. A task joins at most one group.
* ``makespan`` = last task end; ``max_span`` = max over devices running a
  task of (last end - first start) on that device.

The search
==========

A schedule is a set of *items*: a task alone in a chosen option, a group (a
chosen set of member instances), or a needed transfer on a chosen channel.
Placing a transfer also fixes the option of its destination task (one whose
device set is disjoint from the source's and whose lead the channel serves);
a task is later placed only in that option. The depth-first search places
items one by one with **non-decreasing start times**: an item may be placed
at time ``t`` only if ``t >= `` the previous item's start and

* ``t >=`` its release; every predecessor (edge source, fixed-order
  predecessor, except another member of the same group) is placed and has
  ended by ``t``; every transfer it needs is placed and has ended by ``t``
  (a transfer needs its source placed and ended by ``t``);
* its devices (its channel, for a transfer of positive length) are free from
  ``t`` on. Every placed item starts ``<= t``, so an item on the device
  conflicts exactly when it ends after ``t``: "free from ``t``" is
  ``t >= max end of the placed items there``;
* memory holds at every time ``>= t`` with the placed items plus this one.
  All of them start ``<= t``, so after ``t`` the level only falls (workspace
  is released); checking the level *at* ``t`` suffices, and it falls as
  ``t`` grows: **the feasible times form an up-set** ``[t_min, oo)``.

Every placement is checked against everything placed before it, and later
items start later, so each leaf (all tasks placed) is a valid schedule.

Shadowing lemma
---------------
Let ``S*`` be any valid schedule. Order its items by start; among equal
starts put transfers first, then tasks and groups by increasing ``v = memory
+ workspace`` (for a group: the sum over its members; ``v`` is the same on
every device of the item). Predecessors come before their successors in this
order (a task lasts >= 1, so a predecessor starts strictly earlier; a
zero-length transfer may start with its destination, hence transfers first).
Give each item a *floor* ``f_k <= s*_k`` (its start in ``S*``) and place the
items in this order with the choices of ``S*`` (option, group, channel), each
at the least feasible ``t >= max(previous start, f_k)``. **Then every item
gets a start** ``sigma_k <= s*_k``, hence an end no later than in ``S*``.

By induction, show that ``s*_k`` itself is feasible given the placed items
``1..k-1`` (then the least feasible time is ``<= s*_k``; note
``s*_k >= s*_{k-1} >= sigma_{k-1}`` and ``s*_k >= f_k``):

* release, precedence, transfers: all predecessors are placed and end no
  later than in ``S*``, hence by ``s*_k``;
* devices and channels: a placed item ``j`` on a device of ``k`` has
  ``s*_j <= s*_k``; as they do not overlap in ``S*`` (both last >= 1),
  ``end*_j <= s*_k``, and ``end_j <= end*_j``. Zero-length transfers occupy
  nothing;
* memory on device ``d`` at a time ``t' >= s = s*_k``: items ``1..k`` have
  all started in both schedules with the same deltas, and a workspace held at
  ``t'`` in the search (``end_j > t'``) is held in ``S*`` too
  (``end*_j >= end_j``), so the level is <= that of items ``1..k`` in ``S*``,
  which is largest at ``t' = s``. That level is ``A + P`` where ``A`` counts
  the items starting before ``s`` (deltas, and workspaces still held at
  ``s``) and ``P`` is a prefix sum of the ``v``-values on ``d`` of the items
  starting at ``s``, taken in increasing order. A prefix of an increasing
  sequence sums to at most ``max(0, whole sum)`` (if its last term is <= 0
  every term is; otherwise every later term is > 0). ``A + 0 <=`` the level
  of ``S*`` just before ``s`` (or the initial memory when ``s = 0``) and
  ``A + whole sum`` is the level of ``S*`` at ``s``; both are <= capacity.

Makespan: earliest placement is complete
----------------------------------------
Every item is placed at its least feasible time (floors ``-oo``). The search
tries every order and every choice, so it meets the sequence of an optimal
``S*`` and, by the lemma, reaches a schedule whose makespan is <= the
optimum; every leaf being valid, the best leaf is optimal.

Max_span: first items on a device may wait
------------------------------------------
Delaying a device's first task can shorten its span. Take as floor of a task
or group the largest ``first*(d)`` (first start in ``S*``) over its devices,
and ``-oo`` for a transfer. Then every task on ``d`` starts ``>= first*(d)``
and the first one on ``d`` starts exactly there (``f_k = s*_k``), while ends
only move earlier: no span grows. In the search this means: an item that is
the first on one of its devices (in the order of placement, which is the
order of starts) is tried at **every** feasible time from its least one on;
every other item (all its devices already used, so its floor is
``<= t_prev``), and every transfer, is placed at its least feasible time.

How late can a first item be needed? Some optimal schedule ``S'`` leaves no
unit of time idle after ``R``, the largest release: in an optimal ``S`` take
``t >= R`` such that nothing runs on ``[t, t+1)`` and ``t < makespan``, and
shift every item starting after ``t`` one unit left. Releases still hold
(new starts are ``>= t >= R``); an item starting ``<= t`` ends ``<= t``, so
precedences between a kept and a shifted item still hold and a shifted item
cannot precede a kept one; device and channel orders keep; the new level at
``u >= t`` equals the old level at ``u + 1`` and is unchanged before ``t``;
on a device with kept and shifted tasks the first start stays and the last
end moves left, so no span grows. Repeat (the makespan shrinks each time).
In ``S'`` the units of ``[R, s'_k)`` are covered by items starting before
``s'_k``, i.e. by the items placed before ``k``, so
``s'_k <= R + (total length of the items placed so far)``, a quantity that
does not depend on their times. Applying the lemma to ``S'`` shows the
search, trying first items at every feasible ``t`` up to that limit, reaches
a schedule with max span <= the optimum. Feasibility does not depend on the
objective, so the makespan search runs first: it decides infeasibility and
its witness's max span is the first incumbent.

Pruning and memo (both exact)
-----------------------------
Every completion of a node places items at times ``>= t_prev`` (the last
placed start). The search looks for *strictly* better schedules than the
best found so far, and cuts a node when one of these lower bounds reaches it:

* makespan: the current makespan; per unplaced task, ``est + tail`` with
  ``est = max(t_prev, release, ends of placed predecessors and transfers into
  it, a placed source's end + the least transfer time when every option left
  needs that transfer)`` and ``tail`` its least duration plus the longest
  ``gap + tail`` of a *hard* successor (a fixed-order successor, or an edge
  successor unless both blocks are in one overlap with the source first: a
  group may run that edge with no precedence; ``gap`` = least transfer time
  when every pair of options needs one); per device, ``max(t_prev, its free
  time) +`` the least durations of the unplaced tasks every option puts there;
  per channel, ``max(t_prev, its free time) +`` the least times of the
  unplaced transfers sure to be needed and able to use only that channel,
  ``+`` the least duration of one of their destinations; all devices together:
  ``t_prev + ceil((busy time left after t_prev + least device-time of the
  unplaced tasks) / number of devices)``. Blocks in an overlap are left out of
  the device sums (group members share the device); elsewhere least durations
  are valid because a group lasts at least each member's own duration.
* max_span: each used device's current span (it only grows: later items
  start ``>= t_prev >=`` its first start), and per device the same
  ``est + least duration`` and remaining-load quantities measured from its
  first start (or, on an unused device, the load alone).

Memo: the future of a node depends only on its choices (options, groups,
channels of the placed items) and on times that can only hurt when larger:
``t_prev``, each placed end (an end ``<= t_prev`` constrains nothing, so it
counts as ``t_prev``), and for the value the makespan so far, or each used
device's last end and minus its first start. Every feasibility test is
monotone in these (a feasible time stays feasible when they shrink), so from
a node ``Y`` with the same choices and a componentwise ``<=`` vector, the
same sequence of items fits at no later times (the first items on a device
at the same times) and ends no worse. A node dominated by an earlier, fully
explored node is skipped: by induction on the order in which nodes finish,
the incumbent is then already <= every leaf below the earlier node.

Exceeding ``max_tasks`` task instances or ``node_limit`` search nodes raises
:class:`OracleTooLarge`; a partial search never returns a value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product

import attrs

from schedsearch.errors import InvalidOptionsError, InvalidProblemError, SchedSearchError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance, Transfer

__all__ = ["OracleResult", "OracleTooLarge", "exact_optimum", "least_peak", "exact_front"]

_OBJECTIVES = ("makespan", "max_span", "feasibility")
# the memo is only a shortcut: stop remembering beyond these sizes
_MEMO_LIMIT = 1_000_000  # vectors in all
_MEMO_PER_KEY = 8  # vectors per set of choices


@attrs.frozen
class OracleResult:
    """The optimum of a problem, as found by :func:`exact_optimum`.

    ``value`` is the optimum (None: infeasible), ``schedule`` a plan that
    reaches it, ``nodes`` the search nodes visited.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import exact_optimum
    >>> answer = exact_optimum(vshape(2, 2, memory=1))
    >>> answer.value, answer.schedule.makespan  # one activation: micro-batches one after the other
    (12, 12)
    """

    value: int | None  # optimal objective value; None = infeasible
    schedule: Schedule | None  # a witness plan reaching `value` (None when infeasible)
    nodes: int  # search nodes explored (for statistics)


class OracleTooLarge(SchedSearchError, ValueError):
    """The problem exceeds the oracle's limits (task count or search nodes).

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import OracleTooLarge, exact_optimum
    >>> try:
    ...     exact_optimum(vshape(4, 4))
    ... except OracleTooLarge as error:
    ...     print(error)
    exact_optimum: 32 task instances exceed 'max_tasks' = 10
    """


# --------------------------------------------------------------------------
# Static data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opt:
    devices: tuple[int, ...]  # device indices, lead first
    devset: frozenset[int]
    duration: int


@dataclass(frozen=True)
class _Task:
    block: str
    mb: int
    options: tuple[_Opt, ...]
    release: int
    delta: int  # memory delta
    ws: int  # workspace
    preds: tuple[int, ...]  # edge sources and fixed-order predecessor (task indices)
    in_transfers: tuple[int, ...]  # edge instances of size > 0 ending here

    @property
    def min_duration(self) -> int:
        return min(o.duration for o in self.options)


@dataclass(frozen=True)
class _EdgeInst:
    src: int
    dst: int
    size: int
    # (src option, dst option) -> ((channel index, transfer time), ...), only for disjoint device sets
    routes: dict[tuple[int, int], tuple[tuple[int, int], ...]]

    def least_time(self, model: _Model, src_options=None, dst_options=None) -> int | None:
        """Least transfer time if every pair of the given options needs a transfer, else 0.

        None when none of those pairs has a channel (the edge cannot be served).
        """
        src_options = range(len(model.tasks[self.src].options)) if src_options is None else src_options
        dst_options = range(len(model.tasks[self.dst].options)) if dst_options is None else dst_options
        times = []
        for pair in product(src_options, dst_options):
            if pair not in self.routes:
                return 0  # these options share a device: no transfer
            times.extend(time for _, time in self.routes[pair])
        return min(times, default=None)


@dataclass(frozen=True)
class _Group:
    tag: str
    members: tuple[int, ...]  # task indices, in the overlap's block order
    devices: tuple[int, ...]
    duration: int  # max(ov.duration, members' own durations)
    delta: int  # sum of members' memory deltas
    ws: int  # sum of members' workspaces


@dataclass(frozen=True)
class _Item:
    """One thing to place: a task alone, a group, or a transfer."""

    kind: str  # "task" | "group" | "transfer"
    ready: int  # lower bound on its start from release and predecessors
    duration: int
    devices: tuple[int, ...] = ()
    delta: int = 0
    ws: int = 0
    task: int = -1  # "task": the task
    option: int = -1  # "task": its option; "transfer": the destination's option
    group: int = -1  # "group": index into the model's groups
    edge: int = -1  # "transfer": the edge instance
    channel: int = -1  # "transfer": the channel


class _Model:
    """The problem flattened to integer indices."""

    def __init__(self, problem: Problem, capacities: dict[str, int | None] | None = None) -> None:
        self.problem = problem
        self.device_names = problem.cluster.device_names
        dev = {d: i for i, d in enumerate(self.device_names)}
        caps = {d: problem.capacity(d) for d in self.device_names}
        caps.update(capacities or {})
        self.capacity = tuple(caps[d] for d in self.device_names)
        self.initial = tuple(problem.initial_memory_of(d) for d in self.device_names)
        self.channels = problem.cluster.channels
        n_mb = problem.num_microbatches
        blocks = problem.graph.blocks
        index = {(b.name, m): i for i, (b, m) in enumerate((b, m) for m in range(n_mb) for b in blocks)}
        self.index = index

        preds: dict[int, list[int]] = {i: [] for i in index.values()}
        in_transfers: dict[int, list[int]] = {i: [] for i in index.values()}
        self.fixed_pairs: set[tuple[int, int]] = set()
        for order in problem.fixed_orders:
            for a, b in zip(order, order[1:]):
                preds[index[b]].append(index[a])
                self.fixed_pairs.add((index[a], index[b]))

        options = {
            b.name: [(tuple(dev[d] for d in o.devices), frozenset(dev[d] for d in o.devices)) for o in b.options]
            for b in blocks
        }
        self.tasks: list[_Task] = []  # filled below, after the edges
        self.edges: list[_EdgeInst] = []
        for m in range(n_mb):
            for e in problem.graph.edges:
                s, d = index[(e.src, m)], index[(e.dst, m)]
                preds[d].append(s)
                if e.size == 0:
                    continue
                routes = {}
                for (i, (sdevs, sset)), (j, (ddevs, dset)) in product(
                    enumerate(options[e.src]), enumerate(options[e.dst])
                ):
                    if sset & dset:
                        continue  # shared device: no transfer for this pair of options
                    lead_s, lead_d = self.device_names[sdevs[0]], self.device_names[ddevs[0]]
                    routes[(i, j)] = tuple(
                        (c, ch.transfer_time(e.size))
                        for c, ch in enumerate(self.channels)
                        if ch.serves(lead_s, lead_d)
                    )
                in_transfers[d].append(len(self.edges))
                self.edges.append(_EdgeInst(src=s, dst=d, size=e.size, routes=routes))

        for (name, m), i in sorted(index.items(), key=lambda kv: kv[1]):
            b = problem.graph.block(name)
            durations = problem.durations(name, m)
            self.tasks.append(
                _Task(
                    block=name,
                    mb=m,
                    options=tuple(
                        _Opt(devices=devs, devset=dset, duration=durations[k])
                        for k, (devs, dset) in enumerate(options[name])
                    ),
                    release=problem.release_of(name, m),
                    delta=b.memory,
                    ws=b.workspace,
                    preds=tuple(preds[i]),
                    in_transfers=tuple(in_transfers[i]),
                )
            )
        self.groups = self._groups()
        self.last_release = max(t.release for t in self.tasks)

        # blocks that some overlap may run with no precedence on an edge between them
        soft = {(x, y) for ov in problem.overlaps for p, x in enumerate(ov.blocks) for y in ov.blocks[p + 1 :]}
        in_overlap = {name for ov in problem.overlaps for name in ov.blocks}
        # hard precedences (successor, least gap after the end): fixed orders, and
        # edges no group may run internally (plus the least transfer time when
        # every pair of options needs a transfer)
        self.hard_succ: list[list[tuple[int, int]]] = [[] for _ in self.tasks]
        for a, b in self.fixed_pairs:
            self.hard_succ[a].append((b, 0))
        least_transfer = {(e.src, e.dst): e.least_time(self) for e in self.edges}
        for m in range(n_mb):
            for e in problem.graph.edges:
                if (e.src, e.dst) not in soft:
                    a, b = index[(e.src, m)], index[(e.dst, m)]
                    self.hard_succ[a].append((b, least_transfer.get((a, b)) or 0))
        self.min_duration = [t.min_duration for t in self.tasks]
        # least device-time (duration x devices) of tasks in no overlap; 0 for overlap members
        self.min_work = [
            0 if t.block in in_overlap else min(o.duration * len(o.devices) for o in t.options) for t in self.tasks
        ]
        self.tail = self._tails()
        # per device: the tasks every option puts there; `plain`: only those in no overlap
        self.mandatory = tuple(
            tuple(i for i, t in enumerate(self.tasks) if all(d in o.devset for o in t.options))
            for d in range(len(self.device_names))
        )
        self.mandatory_plain = tuple(
            tuple(i for i in tasks if self.tasks[i].block not in in_overlap) for tasks in self.mandatory
        )

    def _groups(self) -> list[_Group]:
        """Every allowed group: one instance of each block of an overlap."""
        problem = self.problem
        out: list[_Group] = []
        for ov in problem.overlaps:
            tag = ov.name or "+".join(ov.blocks)
            position = {name: p for p, name in enumerate(ov.blocks)}
            for mbs in product(range(problem.num_microbatches), repeat=len(ov.blocks)):
                members = tuple(self.index[(name, m)] for name, m in zip(ov.blocks, mbs))
                # blocks of a same_microbatch set come from one micro-batch
                allowed = all(len({mbs[position[name]] for name in tied}) == 1 for tied in ov.same_microbatch)
                for e in problem.graph.edges:  # internal edges must follow the block order
                    if e.src in position and e.dst in position and mbs[position[e.src]] == mbs[position[e.dst]]:
                        if position[e.dst] < position[e.src]:
                            allowed = False
                for a in members:  # consecutive in a fixed order: start(b) >= end(a) impossible
                    for b in members:
                        if (a, b) in self.fixed_pairs:
                            allowed = False
                if not allowed:
                    continue
                first = self.tasks[members[0]].options[0]
                out.append(
                    _Group(
                        tag=tag,
                        members=members,
                        devices=tuple(sorted(first.devset)),
                        duration=max(ov.duration, *(self.tasks[i].options[0].duration for i in members)),
                        delta=sum(self.tasks[i].delta for i in members),
                        ws=sum(self.tasks[i].ws for i in members),
                    )
                )
        return out

    def _tails(self) -> list[int]:
        """Least duration plus the longest tail of a hard successor (longest path).

        With a cycle of hard precedences (then the problem is infeasible and
        the search finds it out) every tail is just the least duration.
        """
        n = len(self.tasks)
        indeg = [0] * n
        for a in range(n):
            for b, _ in self.hard_succ[a]:
                indeg[b] += 1
        order = [i for i in range(n) if indeg[i] == 0]
        for i in order:  # Kahn's algorithm; `order` grows while iterating
            for b, _ in self.hard_succ[i]:
                indeg[b] -= 1
                if indeg[b] == 0:
                    order.append(b)
        tail = list(self.min_duration)
        if len(order) < n:
            return tail
        for i in reversed(order):
            tail[i] += max((gap + tail[b] for b, gap in self.hard_succ[i]), default=0)
        return tail


# --------------------------------------------------------------------------
# Search state
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    task: tuple  # per task: None or (start, end, option, group index or -1)
    transfer: tuple  # per edge instance: None or (start, end, channel, destination option)
    commit: tuple  # per task: None or the option a placed transfer fixed
    t_prev: int  # start of the last placed item
    makespan: int  # max end of the placed tasks
    dev_free: tuple  # per device: max end of the placed items on it
    chan_free: tuple  # per channel: max end of the placed positive-length transfers
    mem: tuple  # per device: initial memory + placed deltas
    held: tuple  # per device: ((end, workspace), ...) of placed items
    first: tuple  # per device: first start on it, or None
    last: tuple  # per device: last end on it, or None
    placed_length: int  # total length of the placed items (a group counts once)


class _Search:
    def __init__(self, model: _Model, objective: str, node_limit: int) -> None:
        self.m = model
        self.objective = objective
        self.node_limit = node_limit
        self.nodes = 0
        self.best: int | None = None
        self.best_state: _State | None = None
        self.memo: dict = {}
        self.memo_size = 0

    # -- entry ---------------------------------------------------------------

    def run(self) -> None:
        m = self.m
        n_dev = len(m.device_names)
        root = _State(
            task=(None,) * len(m.tasks),
            transfer=(None,) * len(m.edges),
            commit=(None,) * len(m.tasks),
            t_prev=0,
            makespan=0,
            dev_free=(0,) * n_dev,
            chan_free=(0,) * len(m.channels),
            mem=m.initial,
            held=((),) * n_dev,
            first=(None,) * n_dev,
            last=(None,) * n_dev,
            placed_length=0,
        )
        self._dfs(root)

    def _dfs(self, s: _State) -> None:
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise OracleTooLarge(f"exact_optimum: node limit {self.node_limit} reached before the search ended")
        if all(r is not None for r in s.task):
            value = self._value(s)
            if self.best is None or value < self.best:
                self.best, self.best_state = value, s
            return
        if self.best is not None and self._bound(s) >= self.best:
            return
        if self._seen(s):
            return
        children = sorted(self._children(s), key=lambda c: c[1])
        for item, t in children:
            self._dfs(self._place(s, item, t))

    def _value(self, s: _State) -> int:
        if self.objective == "makespan":
            return s.makespan
        return max(last - first for first, last in zip(s.first, s.last) if first is not None)

    def _seen(self, s: _State) -> bool:
        """True when an earlier node makes this one useless (see "Pruning and memo")."""
        key = (  # the choices made
            tuple(None if r is None else r[2] for r in s.task),
            tuple(None if r is None else r[2:] for r in s.transfer),
        )
        floor = s.t_prev  # an end <= t_prev constrains nothing any more
        times = [s.t_prev]  # times the future (and the value) can only suffer from when larger
        times += [max(r[1], floor) for r in s.task if r is not None]
        times += [max(r[1], floor) for r in s.transfer if r is not None]
        if self.objective == "makespan":
            times.append(s.makespan)
        else:
            times += [last for last in s.last if last is not None]
            times += [-first for first in s.first if first is not None]
        known = self.memo.setdefault(key, [])
        if any(all(x <= y for x, y in zip(old, times)) for old in known):
            return True
        known[:] = [old for old in known if not all(y <= x for x, y in zip(old, times))]
        if self.memo_size < _MEMO_LIMIT and len(known) < _MEMO_PER_KEY:
            known.append(times)
            self.memo_size += 1
        return False

    # -- lower bounds ---------------------------------------------------------

    def _est(self, s: _State, i: int) -> float:
        """A lower bound on the start of unplaced task i (infinity if it can never start)."""
        m = self.m
        task = m.tasks[i]
        est = max(s.t_prev, task.release)
        for p in task.preds:
            if s.task[p] is not None:
                est = max(est, s.task[p][1])
        for e in task.in_transfers:
            if s.transfer[e] is not None:
                est = max(est, s.transfer[e][1])
                continue
            src = s.task[m.edges[e].src]
            if src is not None:
                least = m.edges[e].least_time(m, (src[2],), self._options(s, i))
                if least is None:
                    return math.inf
                est = max(est, src[1] + least)
        return est

    def _forced_transfers(self, s: _State) -> Iterator[tuple[int, int, int]]:
        """(channel, least time, destination) of each unplaced transfer that is sure
        to be needed and has only one channel to run on."""
        m = self.m
        for e, edge in enumerate(m.edges):
            if s.transfer[e] is not None or s.task[edge.dst] is not None:
                continue
            src = s.task[edge.src]
            src_options = self._options(s, edge.src) if src is None else (src[2],)
            pairs = list(product(src_options, self._options(s, edge.dst)))
            if not all(pair in edge.routes for pair in pairs):
                continue
            routes = [route for pair in pairs for route in edge.routes[pair]]
            channels = {c for c, _ in routes}
            if len(channels) == 1:
                yield channels.pop(), min(time for _, time in routes), edge.dst

    def _bound(self, s: _State) -> float:
        """A lower bound on the objective of every completion of `s`."""
        m = self.m
        unplaced = [i for i, r in enumerate(s.task) if r is None]
        est = {i: self._est(s, i) for i in unplaced}
        if self.objective == "makespan":
            lb = s.makespan
            for i in unplaced:  # heads and tails
                lb = max(lb, est[i] + m.tail[i])
            for d, tasks in enumerate(m.mandatory_plain):  # one device's remaining work
                load = sum(m.min_duration[i] for i in tasks if s.task[i] is None)
                if load:
                    lb = max(lb, max(s.t_prev, s.dev_free[d]) + load)
            per_channel: dict[int, list[tuple[int, int]]] = {}
            for c, time, dst in self._forced_transfers(s):  # one channel's remaining transfers
                if time > 0:
                    per_channel.setdefault(c, []).append((time, m.min_duration[dst]))
            for c, items in per_channel.items():
                lb = max(
                    lb, max(s.t_prev, s.chan_free[c]) + sum(t for t, _ in items) + min(d for _, d in items)
                )
            work = sum(max(0, free - s.t_prev) for free in s.dev_free) + sum(m.min_work[i] for i in unplaced)
            lb = max(lb, s.t_prev + -(-work // len(m.device_names)))  # all devices' remaining work
            return lb
        # max_span: a device's span only grows once it has a task
        lb = max((last - first for first, last in zip(s.first, s.last) if first is not None), default=0)
        for d in range(len(m.device_names)):
            load = sum(m.min_duration[i] for i in m.mandatory_plain[d] if s.task[i] is None)
            must = [i for i in m.mandatory[d] if s.task[i] is None]
            if s.first[d] is None:
                lb = max(lb, load, max((m.min_duration[i] for i in must), default=0))
            else:
                if load:
                    lb = max(lb, max(s.t_prev, s.dev_free[d]) + load - s.first[d])
                for i in must:
                    lb = max(lb, est[i] + m.min_duration[i] - s.first[d])
        return lb

    # -- candidates -----------------------------------------------------------

    def _children(self, s: _State) -> Iterator[tuple[_Item, int]]:
        for item in self._items(s):
            t = self._earliest(s, item)
            if t is None:
                continue
            if self.objective == "max_span" and any(s.first[d] is None for d in item.devices):
                # the first item on a device: any feasible time (they form an up-set) up to
                # the largest release plus the length of everything placed so far
                for u in range(t, self.m.last_release + s.placed_length + 1):
                    yield item, u
            else:
                yield item, t

    def _ready(self, s: _State, i: int, option: int, group: tuple[int, ...] = ()) -> int | None:
        """Release and predecessor ends of task i in `option`; None while one is missing."""
        task = self.m.tasks[i]
        ready = task.release
        for p in task.preds:
            if p in group:
                continue  # internal order of the group (allowed orientations only)
            if s.task[p] is None:
                return None
            ready = max(ready, s.task[p][1])
        for e in task.in_transfers:
            edge = self.m.edges[e]
            if edge.src in group:
                continue
            src = s.task[edge.src]
            if (src[2], option) in edge.routes:  # disjoint device sets: the transfer is needed
                if s.transfer[e] is None:
                    return None
                ready = max(ready, s.transfer[e][1])
        return ready

    def _options(self, s: _State, i: int) -> range | tuple[int]:
        c = s.commit[i]
        return range(len(self.m.tasks[i].options)) if c is None else (c,)

    def _items(self, s: _State) -> Iterator[_Item]:
        m = self.m
        for i, task in enumerate(m.tasks):
            if s.task[i] is not None:
                continue
            for o in self._options(s, i):
                ready = self._ready(s, i, o)
                if ready is not None:
                    opt = task.options[o]
                    yield _Item(
                        kind="task", ready=ready, duration=opt.duration, devices=opt.devices,
                        delta=task.delta, ws=task.ws, task=i, option=o,
                    )
        for g, group in enumerate(m.groups):
            if any(s.task[i] is not None or s.commit[i] not in (None, 0) for i in group.members):
                continue
            readies = [self._ready(s, i, 0, group.members) for i in group.members]
            if None in readies:
                continue
            yield _Item(
                kind="group", ready=max(readies), duration=group.duration, devices=group.devices,
                delta=group.delta, ws=group.ws, group=g,
            )
        for e, edge in enumerate(m.edges):
            src = s.task[edge.src]
            if s.transfer[e] is not None or src is None or s.task[edge.dst] is not None:
                continue
            for o in self._options(s, edge.dst):
                for c, time in edge.routes.get((src[2], o), ()):
                    yield _Item(kind="transfer", ready=src[1], duration=time, edge=e, channel=c, option=o)

    def _earliest(self, s: _State, item: _Item) -> int | None:
        """The least feasible start of `item` (None if none); every later time is feasible too."""
        t = max(s.t_prev, item.ready)
        if item.kind == "transfer":
            return max(t, s.chan_free[item.channel]) if item.duration > 0 else t
        for d in item.devices:
            t = max(t, s.dev_free[d])
        capped = [d for d in item.devices if self.m.capacity[d] is not None]
        times = sorted({end for d in capped for end, _ in s.held[d] if end > t})
        for u in [t, *times]:
            if all(self._level(s, d, u) + item.delta + item.ws <= self.m.capacity[d] for d in capped):
                return u
        return None

    @staticmethod
    def _level(s: _State, d: int, u: int) -> int:
        """Memory on device d at time u >= t_prev, counting the placed items only."""
        return s.mem[d] + sum(ws for end, ws in s.held[d] if end > u)

    # -- placing ----------------------------------------------------------------

    def _place(self, s: _State, item: _Item, t: int) -> _State:
        end = t + item.duration
        task, transfer, commit = list(s.task), list(s.transfer), list(s.commit)
        dev_free, mem, held = list(s.dev_free), list(s.mem), list(s.held)
        first, last, chan_free = list(s.first), list(s.last), list(s.chan_free)
        makespan = s.makespan
        if item.kind == "transfer":
            transfer[item.edge] = (t, end, item.channel, item.option)
            commit[self.m.edges[item.edge].dst] = item.option
            if item.duration > 0:
                chan_free[item.channel] = end
        else:
            if item.kind == "task":
                task[item.task] = (t, end, item.option, -1)
            else:
                for i in self.m.groups[item.group].members:
                    task[i] = (t, end, 0, item.group)
            makespan = max(makespan, end)
            for d in item.devices:
                dev_free[d] = end
                mem[d] += item.delta
                held[d] = tuple((e, w) for e, w in held[d] if e > t) + (((end, item.ws),) if item.ws else ())
                first[d] = t if first[d] is None else first[d]
                last[d] = end if last[d] is None else max(last[d], end)
        return _State(
            task=tuple(task), transfer=tuple(transfer), commit=tuple(commit), t_prev=t, makespan=makespan,
            dev_free=tuple(dev_free), chan_free=tuple(chan_free), mem=tuple(mem), held=tuple(held),
            first=tuple(first), last=tuple(last), placed_length=s.placed_length + item.duration,
        )

    # -- witness ----------------------------------------------------------------

    def witness(self) -> Schedule | None:
        s = self.best_state
        if s is None:
            return None
        m = self.m
        tasks = []
        for i, (start, end, o, g) in enumerate(s.task):
            t = m.tasks[i]
            tasks.append(
                TaskInstance(
                    block=t.block,
                    microbatch=t.mb,
                    devices=tuple(m.device_names[d] for d in t.options[o].devices),
                    start=start,
                    end=end,
                    overlap=None if g < 0 else m.groups[g].tag,
                )
            )
        transfers = []
        for e, rec in enumerate(s.transfer):
            if rec is None:
                continue
            start, end, c, _ = rec
            edge = m.edges[e]
            transfers.append(
                Transfer(
                    src=m.tasks[edge.src].block,
                    dst=m.tasks[edge.dst].block,
                    microbatch=m.tasks[edge.src].mb,
                    channel=m.channels[c].name,
                    start=start,
                    end=end,
                )
            )
        return Schedule(tasks=tasks, transfers=transfers, name=f"oracle {self.objective}")


# --------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------


def exact_optimum(
    problem: Problem,
    *,
    objective: str | None = None,
    max_tasks: int = 10,
    node_limit: int = 2_000_000,
    capacities: Mapping[str, int | None] | None = None,
) -> OracleResult:
    """The exact optimum of a tiny problem by exhaustive search (see the module docstring).

    ``objective`` defaults to ``problem.objective``; ``"feasibility"`` is
    treated as ``"makespan"``. Returns ``value=None`` (and no schedule) when
    the problem is infeasible. Raises :class:`OracleTooLarge` when the
    problem has more than ``max_tasks`` task instances or the search needs
    more than ``node_limit`` nodes; it never returns a value from a partial
    search.

    ``capacities`` (device name -> capacity, None = unbounded) replaces the
    capacities of the devices it names for this search only, without
    building another :class:`~schedsearch.problem.Problem`: any capacity
    may be asked about, including ones the problem's constructor refuses
    (the answer is then None). A device whose initial memory is above its
    capacity holds no plan (the level starts at the initial memory).

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import exact_optimum
    >>> problem = vshape(2, 2)
    >>> exact_optimum(problem).value
    9

    A fixed order against the edges (a backward before its forward) leaves
    no plan:

    >>> exact_optimum(problem.with_(fixed_orders=[(("B0", 0), ("F0", 0))])).value is None
    True
    """
    if not isinstance(problem, Problem):
        raise InvalidProblemError(f"exact_optimum: 'problem' must be a Problem, got {type(problem).__name__}")
    objective = problem.objective if objective is None else objective
    if objective not in _OBJECTIVES:
        raise InvalidOptionsError(f"exact_optimum: 'objective' must be one of {_OBJECTIVES}, got {objective!r}")
    if objective == "feasibility":
        objective = "makespan"
    n_tasks = len(problem.graph.blocks) * problem.num_microbatches
    if n_tasks > max_tasks:
        raise OracleTooLarge(f"exact_optimum: {n_tasks} task instances exceed 'max_tasks' = {max_tasks}")
    unknown = sorted(set(capacities or {}) - set(problem.cluster.device_names))
    if unknown:
        raise InvalidOptionsError(f"exact_optimum: 'capacities' names unknown devices {unknown}")
    model = _Model(problem, dict(capacities or {}))
    if any(cap is not None and init > cap for cap, init in zip(model.capacity, model.initial)):
        return OracleResult(value=None, schedule=None, nodes=0)
    search = _Search(model, "makespan", node_limit)
    search.run()
    if objective == "max_span" and search.best_state is not None:
        # same feasible schedules; the makespan witness's max span is a first incumbent
        spans = _Search(model, "max_span", node_limit)
        spans.nodes = search.nodes  # one budget for both searches
        spans.best_state = search.best_state
        spans.best = spans._value(search.best_state)
        spans.run()
        search = spans
    return OracleResult(value=search.best, schedule=search.witness(), nodes=search.nodes)


# --------------------------------------------------------------------------
# The memory level: least peaks and the exact time-memory front
# --------------------------------------------------------------------------


def _uniform(problem: Problem, capacity: int, cap_existing: bool) -> dict[str, int | None]:
    """Every device at ``capacity``, or (``cap_existing``) its own capacity capped at it."""
    out: dict[str, int | None] = {}
    for d in problem.cluster.device_names:
        own = problem.capacity(d)
        out[d] = own if cap_existing and own is not None and own < capacity else capacity
    return out


def _peak_range(problem: Problem) -> tuple[int, int]:
    """Least and largest worst-device peak any plan can have.

    The level starts at the initial memory, so no peak is below the largest
    initial memory; no level exceeds a device's initial memory plus every
    positive delta and workspace of every instance that may run there.
    """
    n = problem.num_microbatches
    low = high = 0
    for d in problem.cluster.device_names:
        init = problem.initial_memory_of(d)
        rise = sum(n * (max(b.memory, 0) + b.workspace) for b in problem.graph.blocks
                   if any(d in o.devices for o in b.options))
        low, high = max(low, init), max(high, init + rise)
    return low, high


def least_peak(
    problem: Problem,
    within: int | None = None,
    *,
    objective: str | None = None,
    cap_existing: bool = False,
    max_tasks: int = 10,
    node_limit: int = 2_000_000,
) -> int | None:
    """The least worst-device peak among plans whose objective is at most ``within``, by brute force.

    The peak of a device is the highest level at any instant, initial
    memory included (module docstring), so a plan of worst-device peak
    ``P`` is a plan under the uniform capacity ``P`` and the other way
    round: the answer is the least uniform capacity under which
    :func:`exact_optimum` finds a plan of objective ``<= within`` (any
    plan when ``within`` is None). The problem's own capacities are
    replaced by it, or with ``cap_existing`` only capped by it (a device
    keeps the smaller). None when no capacity reaches ``within``.
    Feasibility within ``within`` only grows with the capacity, so the
    least one is found by bisection between the largest initial memory and
    the capacity at which no device can bind.

    Examples
    --------
    One device holding 2, a block freeing 1 and one allocating 1: freeing
    first keeps the level at 2.

    >>> from schedsearch import Block, Cluster, Device, Graph, Problem
    >>> p = Problem(graph=Graph(blocks=[Block(name="b0", options=[("d0", 1)], memory=1),
    ...                                 Block(name="b1", options=[("d0", 1)], memory=-1)]),
    ...             num_microbatches=1, cluster=Cluster(devices=[Device(name="d0")]), initial_memory={"d0": 2})
    >>> least_peak(p), least_peak(p, within=1)
    (2, None)
    """
    low, high = _peak_range(problem)

    def reaches(capacity: int) -> bool:
        value = exact_optimum(problem, objective=objective, max_tasks=max_tasks, node_limit=node_limit,
                              capacities=_uniform(problem, capacity, cap_existing)).value
        return value is not None and (within is None or value <= within)

    if not reaches(high):
        return None
    while low < high:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid + 1
    return low


def exact_front(
    problem: Problem,
    *,
    objective: str | None = None,
    max_tasks: int = 10,
    node_limit: int = 2_000_000,
) -> tuple[tuple[int, int], ...]:
    """The exact (objective, worst-device peak) Pareto front of a tiny problem, by brute force.

    Every device gets one uniform capacity (the problem's own are
    ignored). Points come by decreasing peak: the least objective ``T`` with
    no capacity, the least peak ``P`` reaching ``T`` (:func:`least_peak`),
    then the least objective under capacity ``P - 1``, and so on until no
    plan fits. Each point is non-dominated: no plan has a smaller objective
    at its peak or less, and every smaller peak needs a larger objective.

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> exact_front(vshape(2, 3), max_tasks=12)  # 1F1B: two activations, or one at a time
    ((12, 2), (18, 1))
    """
    limits = dict(objective=objective, max_tasks=max_tasks, node_limit=node_limit)
    low, high = _peak_range(problem)
    points: list[tuple[int, int]] = []
    capacity = high
    while capacity >= low:
        value = exact_optimum(problem, capacities=_uniform(problem, capacity, False), **limits).value
        if value is None:
            break
        peak = least_peak(problem, value, **limits)
        assert peak is not None and peak <= capacity
        points.append((value, peak))
        capacity = peak - 1
    return tuple(points)
