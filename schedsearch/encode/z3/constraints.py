"""Z3 constraint families 2-8 (see :mod:`schedsearch.encode.structure`)."""

from __future__ import annotations

import z3

from schedsearch.encode.structure import TaskStructure
from schedsearch.encode.z3.variables import Variables, on_device


def _ordered_pairs(st: TaskStructure) -> set[tuple[int, int]]:
    """Pairs (a, b) where b cannot start before a ends whatever the schedule:
    a precedence path in the same micro-batch, or a symmetry chain of a block
    fixed on one device."""
    succ: dict[int, list[int]] = {}
    for u, v in st.precedences:
        if (u, v) not in st.internal:  # an edge inside a group may not order its ends
            succ.setdefault(u, []).append(v)
    out: set[tuple[int, int]] = set()
    for t in succ:
        # iterative search: safe on deep chains and on cyclic (infeasible) orders
        seen: set[int] = set()
        stack = list(succ[t])
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(succ.get(n, ()))
        out.update((t, n) for n in seen if n != t)
    for chain in st.symmetry_chains:
        first = st.tasks[chain[0]]
        if first.fixed and len(first.options[0][0]) == 1:
            for i, a in enumerate(chain):
                for b in chain[i + 1:]:
                    out.add((a, b))
    return out


def add_groups(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 1 for overlapped groups: a task runs alone (ending after its own
    duration) or in exactly one active group (starting with it and ending
    after the group's duration)."""
    for t, groups in st.task_groups.items():
        tv = var.tasks[t]
        lits = [var.groups[g] for g in groups]
        solver.add(z3.AtMost(*lits, 1))
        ((_, dur),) = st.tasks[t].options
        solver.add(z3.Implies(z3.Not(z3.Or(lits)), tv.end == tv.start + dur))
    for g, info in enumerate(st.groups):
        first = var.tasks[info.members[0]]
        for m in info.members:
            if m != info.members[0]:
                solver.add(z3.Implies(var.groups[g], var.tasks[m].start == first.start))
            solver.add(z3.Implies(var.groups[g], var.tasks[m].end == first.start + info.duration))


def _shared_groups(st: TaskStructure, a: int, b: int) -> list[int]:
    ga = st.task_groups.get(a)
    if not ga:
        return []
    gb = set(st.task_groups.get(b, ()))
    return [g for g in ga if g in gb]


def add_no_overlap(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 2: two tasks on the same device do not overlap (pairwise disjunctions;
    pairs already ordered by a precedence path or a chain are skipped; two
    members of one active group share the device as the group)."""
    ordered = _ordered_pairs(st)
    for d in st.problem.cluster.device_names:
        tasks = st.tasks_on(d)
        on = {t: on_device(st, var, t, d) for t in tasks}
        for x, a in enumerate(tasks):
            for b in tasks[x + 1:]:
                if (a, b) in ordered or (b, a) in ordered:
                    continue
                ta, tb = var.tasks[a], var.tasks[b]
                apart = z3.Or([ta.end <= tb.start, tb.end <= ta.start] + [var.groups[g] for g in _shared_groups(st, a, b)])
                guards = [z3.Not(g) for g in (on[a], on[b]) if not z3.is_true(g)]
                solver.add(z3.Or(guards + [apart]) if guards else apart)


def add_dependencies(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Families 3 and 6 (fixed orders): ``start(v) >= end(u)``, unless a
    group holding both runs (the edge is then the group's internal order)."""
    for u, v in st.precedences:
        shared = st.internal.get((u, v))
        after = var.tasks[v].start >= var.tasks[u].end
        solver.add(z3.Or([after] + [var.groups[g] for g in shared]) if shared else after)


def add_transfers(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 4: a needed transfer runs between its two ends on one channel;
    transfers sharing a channel do not overlap."""
    per_channel: dict[str, list[tuple[z3.BoolRef, z3.ArithRef, int]]] = {}
    for k, tr in enumerate(st.transfers):
        tv = var.transfers[k]
        u, v = st.index[tr.src], st.index[tr.dst]
        solver.add(tv.start >= var.tasks[u].end)
        for name, (lit, duration) in tv.channels.items():
            solver.add(z3.Implies(lit, var.tasks[v].start >= tv.start + duration))
            if duration > 0:
                per_channel.setdefault(name, []).append((lit, tv.start, duration))
    for items in per_channel.values():
        for x, (la, sa, da) in enumerate(items):
            for lb, sb, db in items[x + 1:]:
                solver.add(z3.Or(z3.Not(la), z3.Not(lb), sa + da <= sb, sb + db <= sa))


def add_memory(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 5, exactly: the level only rises at task starts, so it is
    checked at every start that raises it.

    Paired devices: ``initial + sum of a over pairs with start(alloc) <= t <
    start(free) + running workspace <= capacity`` at each alloc start.
    Otherwise: ``initial + sum over started tasks of (memory + workspace) -
    sum over ended tasks of workspace <= capacity`` at each start.
    """
    for d, cap in st.capacities.items():
        init = st.problem.initial_memory_of(d)
        pairs = st.memory_pairs.get(d)
        ws_tasks = [t for t in st.tasks_on(d) if st.tasks[t].workspace]
        on = {t: on_device(st, var, t, d) for t in st.tasks_on(d)}

        def workspace_at(time: z3.ArithRef) -> list:
            return [
                z3.If(z3.And(on[t], var.tasks[t].start <= time, time < var.tasks[t].end), st.tasks[t].workspace, 0)
                for t in ws_tasks
            ]

        if pairs is not None:
            checks = [(var.tasks[a].start, z3.BoolVal(True)) for a, _, _ in pairs]
            checks += [(var.tasks[t].start, on[t]) for t in ws_tasks]
            for time, guard in checks:
                held = [
                    z3.If(z3.And(var.tasks[a].start <= time, time < var.tasks[f].start), amount, 0)
                    for a, f, amount in pairs
                ]
                terms = held + workspace_at(time)
                if terms:
                    solver.add(z3.Implies(guard, init + z3.Sum(terms) <= cap))
            continue
        events = [t for t in st.tasks_on(d) if st.tasks[t].memory or st.tasks[t].workspace]
        raising = [t for t in events if st.tasks[t].memory + st.tasks[t].workspace > 0]
        for i in raising:
            time = var.tasks[i].start
            terms = []
            for j in events:
                info = st.tasks[j]
                if info.memory:
                    terms.append(z3.If(z3.And(on[j], var.tasks[j].start <= time), info.memory, 0))
            terms += workspace_at(time)
            solver.add(z3.Implies(on[i], init + z3.Sum(terms) <= cap))


def add_symmetry_breaking(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 7: micro-batches of the same block in order."""
    for chain in st.symmetry_chains:
        fixed_single = st.tasks[chain[0]].fixed and len(st.tasks[chain[0]].options[0][0]) == 1
        for a, b in zip(chain, chain[1:]):
            solver.add(var.tasks[b].start >= (var.tasks[a].end if fixed_single else var.tasks[a].start))


def add_redundant_bounds(solver: z3.Solver, st: TaskStructure, var: Variables) -> None:
    """Family 8: ``makespan >= end + tail``; ``makespan >= first start + work + forced idle +
    least tail`` (and ``span(d) >= work + forced idle`` for the ``"max_span"`` objective).

    Valid in every feasible schedule; the validity condition of each term
    is in the CP-SAT twin of this function
    (:func:`schedsearch.encode.cpsat.constraints.add_redundant_bounds`)."""
    for t in st.tasks:
        solver.add(var.makespan >= var.tasks[t.index].end + t.tail)
    for d, tasks in st.device_mandatory.items():
        if not tasks:
            continue
        work = st.device_work_bound(tasks) + st.forced_idle.get(d, 0)
        if d in var.spans:
            solver.add(var.spans[d] >= work)
        if len(tasks) < 2:
            continue
        least_tail = max(min(st.tasks[t].tail for t in tasks), st.forced_tail.get(d, 0))
        first = z3.Int(f"first[{d}]")
        solver.add([first <= var.tasks[t].start for t in tasks])
        solver.add(z3.Or([first == var.tasks[t].start for t in tasks]))
        var.first_start[d] = first
        solver.add(var.makespan >= first + work + least_tail)
