"""Rewrites of problems and schedules that keep their meaning: solver-free.

Search strategies, the handcrafted comparison, the examples and the
benchmarks all change a problem in the same few ways before searching it,
and move schedules between a problem with overlapped groups and the same
problem without them. Those rewrites live here, once, below every solver:

* :func:`with_capacities` -- the problem under other memory capacities (one
  for every device, or some devices by name; replacing the capacities or
  capping them), and :func:`resolved_capacities`, the capacities it sets;
* :func:`overlaps_redundant` / :func:`reduced_problem` -- whether the
  overlap declarations can shorten anything, and the problem without them
  when they cannot;
* :func:`flatten_overlaps` -- a schedule with every overlapped group run
  member after member (a schedule of the problem without the declarations);
* :func:`regroup_overlaps` -- the opposite: back-to-back runs of tasks that
  make up a declared group become that group.

The schedule rewrites return schedules the independent validator accepts
(for the problem named in each docstring); none of them searches.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Cluster, Problem
from schedsearch.schedule import Schedule, TaskInstance, overlap_groups
from schedsearch.validate import validate

__all__ = ["with_capacities", "resolved_capacities", "overlaps_redundant", "reduced_problem", "flatten_overlaps",
           "regroup_overlaps"]


def with_capacities(
    problem: Problem,
    capacities: int | None | Mapping[str, int | None],
    *,
    cap_existing: bool = False,
) -> Problem:
    """A copy of ``problem`` under other device memory capacities.

    Parameters
    ----------
    capacities:
        One capacity for every device (an int, or None for unbounded), or a
        mapping device name -> capacity for some devices (the others keep
        theirs).
    cap_existing:
        False (default): the given capacities *replace* the devices' own,
        so ``with_capacities(p, 8)`` gives every device exactly 8 (and
        ``with_capacities(p, None)`` makes memory unbounded). True: each
        given capacity only *caps* the device's own, so a device keeps the
        smaller of the two (a None on either side is no cap):
        ``with_capacities(p, 8, cap_existing=True)`` leaves a device of
        capacity 6 at 6 and brings one of 12 or None down to 8.

    Initial memory is kept and counts against the new capacities.

    Raises
    ------
    InvalidProblemError
        ``capacities`` names a device the problem does not have, or a
        capacity is not an integer >= 0 (from the device's own check), or
        no order fits the capacities (the problem's own check,
        :meth:`~schedsearch.problem.Problem.memory_refusal`: a device's
        initial memory over its capacity, or a block that does not fit even
        after every free that may run before it).

    Examples
    --------
    >>> from schedsearch.placements import vshape
    >>> p = vshape(2, 4, memory=4)
    >>> [d.memory for d in with_capacities(p, 8).cluster.devices]
    [8, 8]
    >>> [d.memory for d in with_capacities(p, 8, cap_existing=True).cluster.devices]
    [4, 4]
    >>> [d.memory for d in with_capacities(p, {"d1": None}).cluster.devices]
    [4, None]
    """
    wanted = resolved_capacities(problem, capacities, cap_existing=cap_existing)
    devices = [attrs.evolve(d, memory=wanted[d.name]) for d in problem.cluster.devices]
    return problem.with_(cluster=Cluster(devices=devices, channels=problem.cluster.channels))


def resolved_capacities(
    problem: Problem,
    capacities: int | None | Mapping[str, int | None],
    *,
    cap_existing: bool = False,
) -> dict[str, int | None]:
    """Every device's capacity in :func:`with_capacities` ``(problem, capacities, cap_existing=...)``.

    Raises :class:`~schedsearch.errors.InvalidProblemError` for unknown
    devices and capacities that are not integers >= 0, as
    :func:`with_capacities` does. Searches that walk capacities ask
    :meth:`~schedsearch.problem.Problem.memory_refusal` about these before
    building the problem under them: a refusal there is a proof that no
    order fits.

    >>> from schedsearch.placements import vshape
    >>> resolved_capacities(vshape(2, 4, memory=4), {"d1": 2})
    {'d0': 4, 'd1': 2}
    """
    names = problem.cluster.device_names
    if isinstance(capacities, Mapping):
        unknown = sorted(set(capacities) - set(names))
        if unknown:
            raise InvalidProblemError(
                f"with_capacities: 'capacities' names unknown devices {unknown} (the problem's devices: {list(names)})"
            )
        wanted = dict(capacities)
    else:
        wanted = {name: capacities for name in names}

    def capacity(own: int | None, given: int | None) -> int | None:
        if not cap_existing or own is None:
            return given
        return own if given is None else min(own, given)

    out = {d.name: capacity(d.memory, wanted[d.name]) if d.name in wanted else d.memory
           for d in problem.cluster.devices}
    for d in problem.cluster.devices:
        attrs.evolve(d, memory=out[d.name])  # the device's own check of a capacity
    return out


def overlaps_redundant(problem: Problem) -> bool:
    """True when the problem's overlap declarations cannot improve any schedule.

    That holds when every declared overlap lasts at least its members'
    longest durations added up, no dependency inside it runs from a
    member that allocates memory to one that does not (so running the
    non-allocating members first, then the others, respects the group's
    internal order), and in that order no member's workspace outweighs the
    frees still to come: with ``L`` the level before the group (within the
    capacity), member ``i`` runs flattened at ``L + delta_1 + ... +
    delta_i + workspace_i``, which must be at most ``L`` or the group's own
    level ``L + every delta + every workspace``. Then flattening a group
    into its members, run one
    after the other inside its interval (:func:`flatten_overlaps`), keeps
    every dependency, never raises the memory level, and leaves the device
    busy over the same interval: the optimal makespan, device spans and
    time-memory front are those of the problem without the declarations.
    False when there are none.
    """
    if not problem.overlaps:
        return False
    blocks = problem.graph.by_name()
    edges = {(e.src, e.dst) for e in problem.graph.edges}
    position = {name: i for i, name in enumerate(problem.graph.topological_order())}
    n = problem.num_microbatches
    for ov in problem.overlaps:
        if problem.duration_overrides:
            longest = sum(max(problem.durations(b, m)[0] for m in range(n)) for b in ov.blocks)
        else:  # every micro-batch of a block lasts its option's duration
            longest = sum(blocks[b].options[0].duration for b in ov.blocks)
        if ov.duration < longest:
            return False
        for u in ov.blocks:
            for v in ov.blocks:
                if (u, v) in edges and blocks[u].memory > 0 >= blocks[v].memory:
                    return False
        # flattened in flatten_overlaps' order, member i runs at L + the deltas up to i + its workspace,
        # which must stay within L or the group's own level L + every delta + every workspace
        order = [blocks[b] for b in sorted(ov.blocks, key=lambda b: (blocks[b].memory > 0, position[b]))]
        group = sum(b.memory + b.workspace for b in order)
        so_far = 0
        for b in order:
            so_far += b.memory
            if so_far + b.workspace > max(0, group):
                return False
    return True


def reduced_problem(problem: Problem) -> Problem:
    """The problem without its overlap declarations when they are redundant
    (:func:`overlaps_redundant`), else ``problem`` itself.

    ``problem`` itself too when no order of the problem without them fits
    its capacities (:meth:`~schedsearch.problem.Problem.memory_refusal`
    with ``overlaps=False``: a group may run a free with the block it
    follows, flattened it may not), so the searches settle it on the
    problem as given.
    """
    if not overlaps_redundant(problem) or problem.memory_refusal(overlaps=False) is not None:
        return problem
    return problem.with_(overlaps=())


def flatten_overlaps(problem: Problem, schedule: Schedule) -> Schedule | None:
    """``schedule`` with every overlapped group run member after member, or None.

    Inside the group's interval, members that do not allocate memory
    (delta <= 0) run first, then the others, each part in dependency order
    (the ordering the proof of :func:`overlaps_redundant` uses). A member's
    dependencies outside the group ended before the group started and its
    successors start after the group ended, so the result keeps every
    dependency, and the memory level never exceeds what it was just before
    or during the group: it is a schedule of ``problem`` without its
    overlap declarations. Returns None when some group is shorter than its
    members' durations added up (it cannot be flattened in place).
    """
    blocks = problem.graph.by_name()
    position = {name: i for i, name in enumerate(problem.graph.topological_order())}
    tasks: list[TaskInstance] = [t for t in schedule.tasks if t.group_key is None]
    for (_, _, start), members in overlap_groups(schedule).items():
        durations = {m.key: problem.durations(m.block, m.microbatch)[0] for m in members}
        if sum(durations.values()) > max(m.end for m in members) - start:
            return None
        t = start
        for m in sorted(members, key=lambda m: (blocks[m.block].memory > 0, position[m.block])):
            tasks.append(attrs.evolve(m, start=t, end=t + durations[m.key], overlap=None))
            t += durations[m.key]
    return Schedule(tasks=tasks, transfers=schedule.transfers, name=schedule.name)


def regroup_overlaps(problem: Problem, schedule: Schedule) -> Schedule:
    """``schedule`` with back-to-back runs of tasks merged into declared groups.

    The opposite of :func:`flatten_overlaps`: a schedule found without the
    declarations (see :func:`reduced_problem`) then exports with DualPipe's
    ``OVERLAP_F_B`` pairs (a forward and the input and weight gradients of
    another stage) and full ``B`` actions (a fused ``I`` and ``W`` of one
    stage), the way DualPipe's runtime overlaps the communication of one
    half with the computation of the other.

    A run of consecutive tasks on one device (no gap between them) whose
    blocks are exactly those of a declared overlap, whose members linked by
    a dependency share their micro-batch and follow the overlap's order,
    and which lasts exactly the overlap's duration becomes one group
    starting at the run's start, when every dependency from outside the run
    has ended by then, every dependent outside the run starts after its
    end, no member has a transfer, and the memory (all deltas and
    workspaces of the members at the group's start) fits. Runs are taken
    from left to right, longer overlaps first. Tasks already in a group
    stay as they are. The result is validated; when nothing merges, the
    schedule comes back unchanged.
    """
    if not problem.overlaps:
        return schedule
    blocks = problem.graph.by_name()
    preds = problem.graph.predecessors()
    succs = problem.graph.successors()
    by_key = schedule.by_key()
    with_transfer = {(tr.src, tr.microbatch) for tr in schedule.transfers} | {
        (tr.dst, tr.microbatch) for tr in schedule.transfers}
    overlaps = sorted(problem.overlaps, key=lambda ov: -len(ov.blocks))
    sizes = sorted({len(ov.blocks) for ov in overlaps}, reverse=True)
    caps = {d: problem.capacity(d) for d in problem.cluster.device_names}
    level_before = _levels(problem, schedule)
    new_tasks: dict[tuple[str, int], TaskInstance] = {}
    for d in problem.cluster.device_names:
        tasks = [t for t in schedule.on_device(d) if len(t.devices) == 1 and t.overlap is None]
        i = 0
        while i < len(tasks):
            merged = False
            for k in sizes:
                run = tasks[i:i + k]
                if len(run) < k or any(a.end != b.start for a, b in zip(run, run[1:])):
                    continue
                ov = problem.overlap_for(t.block for t in run)
                if ov is None or len({t.block for t in run}) != k or run[-1].end - run[0].start != ov.duration:
                    continue
                if _can_group(problem, ov, run, blocks, preds, succs, by_key, new_tasks, with_transfer, caps,
                              level_before):
                    start, end = run[0].start, run[0].start + ov.duration
                    for t in run:
                        new_tasks[t.key] = attrs.evolve(t, start=start, end=end, overlap=ov.name or "+".join(ov.blocks))
                    i += k
                    merged = True
                    break
            if not merged:
                i += 1
    if not new_tasks:
        return schedule
    out = Schedule(tasks=[new_tasks.get(t.key, t) for t in schedule.tasks], transfers=schedule.transfers,
                   name=schedule.name)
    if validate(problem, out):  # pragma: no cover - the local checks cover every rule
        return schedule
    return out


def _levels(problem: Problem, schedule: Schedule) -> dict[tuple[str, int], int]:
    """Memory level of each task's device just before the task starts (single-device tasks)."""
    blocks = problem.graph.by_name()
    out: dict[tuple[str, int], int] = {}
    for d in problem.cluster.device_names:
        level = problem.initial_memory_of(d)
        for t in schedule.on_device(d):
            out[t.key] = level
            level += blocks[t.block].memory
    return out


def _can_group(problem, ov, run, blocks, preds, succs, by_key, new_tasks, with_transfer, caps, level_before) -> bool:
    members = {t.key for t in run}
    order = {b: i for i, b in enumerate(ov.blocks)}
    start, end = run[0].start, run[0].start + ov.duration
    for t in run:
        if t.key in with_transfer:
            return False
        for e in preds[t.block]:
            src = (e.src, t.microbatch)
            if src in members:
                if order[e.src] > order[e.dst]:
                    return False  # against the group's order: not internal
                continue
            if e.src in order and any(m[0] == e.src for m in members):
                return False  # linked members must share the micro-batch
            if new_tasks.get(src, by_key[src]).end > start:
                return False
        for e in succs[t.block]:
            dst = (e.dst, t.microbatch)
            if dst in members:
                continue
            if e.dst in order and any(m[0] == e.dst for m in members):
                return False
            if new_tasks.get(dst, by_key[dst]).start < end:
                return False
    d = run[0].devices[0]
    cap = caps.get(d)
    if cap is not None:
        need = sum(blocks[t.block].memory for t in run) + sum(blocks[t.block].workspace for t in run)
        if level_before[run[0].key] + need > cap:
            return False
    return True
