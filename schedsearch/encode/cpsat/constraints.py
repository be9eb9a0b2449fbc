"""CP-SAT constraint families 2-8 (see :mod:`schedsearch.encode.structure`)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from schedsearch.deadline import checkpoint
from schedsearch.encode.cpsat.variables import Variables
from schedsearch.encode.structure import TaskStructure


def add_groups(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 1 for overlapped groups: a task runs alone or in exactly one
    active group; the members of an active group start together and end
    with it."""
    for t, groups in st.task_groups.items():
        tv = var.tasks[t]
        model.add_exactly_one([tv.solo] + [var.groups[g][0] for g in groups])
    for g, info in enumerate(st.groups):
        lit = var.groups[g][0]
        first = var.tasks[info.members[0]]
        for m in info.members:
            if m != info.members[0]:
                model.add(var.tasks[m].start == first.start).only_enforce_if(lit)
            model.add(var.tasks[m].end == first.start + info.duration).only_enforce_if(lit)


def add_no_overlap(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 2: on each device, the intervals of options occupying it (and of
    the overlapped groups on it, each occupying it once) do not overlap."""
    group_intervals: dict[str, list] = {}
    for g, info in enumerate(st.groups):
        for d in info.devices:
            group_intervals.setdefault(d, []).append(var.groups[g][1])
    for d in st.problem.cluster.device_names:
        intervals = [
            var.tasks[t].intervals[i] for t in st.tasks_on(d) for i in st.option_on(t, d)
        ] + group_intervals.get(d, [])
        if len(intervals) > 1:
            model.add_no_overlap(intervals)


def add_dependencies(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Families 3 and 6 (fixed orders): ``start(v) >= end(u)`` for every
    precedence, unless a group holding both ``u`` and ``v`` runs (the edge is
    then the group's internal order)."""
    for u, v in st.precedences:
        checkpoint()
        shared = st.internal.get((u, v))

        if shared:
            model.add(var.tasks[v].start >= var.tasks[u].end).only_enforce_if(
                [var.groups[g][0].negated() for g in shared]
            )
        else:
            model.add(var.tasks[v].start >= var.tasks[u].end)


def add_transfers(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 4: a needed transfer runs between its two ends on one channel; a
    channel carries one transfer at a time."""
    per_channel: dict[str, list] = {}
    for k, tr in enumerate(st.transfers):
        tv = var.transfers[k]
        u, v = st.index[tr.src], st.index[tr.dst]
        model.add(tv.start >= var.tasks[u].end)
        for name, (lit, iv, duration) in tv.channels.items():
            model.add(var.tasks[v].start >= tv.start + duration).only_enforce_if(lit)
            if duration > 0:
                per_channel.setdefault(name, []).append(iv)
    for intervals in per_channel.values():
        if len(intervals) > 1:
            model.add_no_overlap(intervals)


def add_memory(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 5: memory never above capacity, per device with a capacity.

    When the device's deltas pair up into (alloc, free) pairs (see
    :func:`~schedsearch.encode.structure.build_structure`), a cumulative
    constraint of capacity ``capacity - initial`` over the intervals
    ``[start(alloc), start(free))`` (demand: the amount) and the tasks'
    own intervals (demand: their workspace). Otherwise a reservoir with
    events ``memory + workspace`` at each start, ``-workspace`` at each
    end and ``+initial`` at time 0; its ``min_level`` is a bound no real
    level reaches, so only the capacity binds. Both say: initial memory
    plus the deltas started so far plus the workspace of running tasks
    never exceeds the capacity.
    """
    for d, cap in st.capacities.items():
        init = st.problem.initial_memory_of(d)
        pairs = st.memory_pairs.get(d)
        if pairs is not None:
            intervals, demands = [], []
            for a, f, amount in pairs:
                ta, tf = var.tasks[a], var.tasks[f]
                size = model.new_int_var(0, st.horizon, f"held[{d}/{a}-{f}]")
                intervals.append(model.new_interval_var(ta.start, size, tf.start, f"mem[{d}/{a}-{f}]"))
                demands.append(amount)
            for t in st.tasks_on(d):
                if st.tasks[t].workspace:
                    spans = [var.tasks[t].span] if var.tasks[t].span is not None else [
                        var.tasks[t].intervals[i] for i in st.option_on(t, d)]
                    for iv in spans:
                        intervals.append(iv)
                        demands.append(st.tasks[t].workspace)
            if intervals:
                model.add_cumulative(intervals, demands, cap - init)
            continue
        times, changes, actives = [], [], []
        lowest = init
        for t in st.tasks_on(d):
            info = st.tasks[t]
            if info.memory == 0 and info.workspace == 0:
                continue
            for i in st.option_on(t, d):
                lit = var.tasks[t].present[i]
                times.append(var.tasks[t].start)
                changes.append(info.memory + info.workspace)
                actives.append(lit)
                if info.workspace:
                    times.append(var.tasks[t].end)
                    changes.append(-info.workspace)
                    actives.append(lit)
                lowest += min(info.memory, 0) - info.workspace
        if not times:
            continue
        if init:
            times.append(0)
            changes.append(init)
            actives.append(var.true)
        model.add_reservoir_constraint_with_active(times, changes, actives, min(lowest, 0), cap)


def add_symmetry_breaking(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 7: micro-batches of the same block in order (only for
    interchangeable micro-batches; the chains are empty otherwise). A block
    fixed on one device runs its micro-batches one after the other there."""
    for chain in st.symmetry_chains:
        fixed_single = st.tasks[chain[0]].fixed and len(st.tasks[chain[0]].options[0][0]) == 1
        for a, b in zip(chain, chain[1:]):
            if fixed_single:
                model.add(var.tasks[b].start >= var.tasks[a].end)
            else:
                model.add(var.tasks[b].start >= var.tasks[a].start)


def add_redundant_bounds(model: cp_model.CpModel, st: TaskStructure, var: Variables) -> None:
    """Family 8: ``makespan >= end + tail`` per task, and per device
    ``makespan >= first start + mandatory work + forced idle + least tail``
    (and ``span(d) >= mandatory work + forced idle`` for the ``"max_span"``
    objective).

    Validity condition: each term is a lower bound that holds in every
    feasible schedule, so adding them removes no schedule. ``tail`` is the
    least time that must follow a task's end (longest path of least
    durations and unavoidable transfers, see
    :func:`~schedsearch.bounds.analytic.heads_and_tails`; a member of a
    group ends with the group, never earlier than alone). The mandatory
    work counts the tasks every option of which occupies the device, run
    one at a time there, less what overlapped groups can save
    (:meth:`~schedsearch.encode.structure.TaskStructure.device_work_bound`);
    the forced idle (:func:`~schedsearch.bounds.analytic.memory_idle`) is
    only nonzero on devices whose tasks are all fixed there and in no
    overlap; so is the forced tail
    (:func:`~schedsearch.bounds.analytic.memory_tails`: the time that must
    follow the device's last allocation less the most work that can still
    run there), which replaces the least tail when larger. These are the
    same formulas as the analytic bound; the
    oracle campaign (``tests/test_oracle_campaign.py``) checks them with
    ``redundant`` on and off.
    """
    for t in st.tasks:
        model.add(var.makespan >= var.tasks[t.index].end + t.tail)
    for d, tasks in st.device_mandatory.items():
        if not tasks:
            continue
        work = st.device_work_bound(tasks) + st.forced_idle.get(d, 0)
        if d in var.spans:
            model.add(var.spans[d][2] >= work)
        if len(tasks) < 2:
            continue
        least_tail = max(min(st.tasks[t].tail for t in tasks), st.forced_tail.get(d, 0))
        first = model.new_int_var(0, st.horizon, f"first[{d}]")
        model.add_min_equality(first, [var.tasks[t].start for t in tasks])
        var.first_start[d] = (first, tasks)
        model.add(var.makespan >= first + work + least_tail)
