"""Z3 variables: task starts, option choices, transfers."""

from __future__ import annotations

import attrs
import z3

from schedsearch.encode.structure import TaskStructure


@attrs.define(kw_only=True)
class TaskVars:
    start: z3.ArithRef
    end: z3.ArithRef
    #: one Bool per option (z3.BoolVal(True) for a fixed task)
    present: list


@attrs.define(kw_only=True)
class TransferVars:
    start: z3.ArithRef
    #: channel name -> (Bool "uses this channel", duration)
    channels: dict
    #: route (i, j) -> Bool "options i and j chosen"; (i, j, channel) -> Bool for a multi-channel route
    aux: dict = attrs.field(factory=dict)


@attrs.define(kw_only=True)
class Variables:
    tasks: list[TaskVars]
    transfers: list[TransferVars]
    makespan: z3.ArithRef
    first_start: dict = attrs.field(factory=dict)
    #: per candidate group: Bool "this group runs"
    groups: list = attrs.field(factory=list)
    #: what is minimised: the makespan, or the longest device span
    objective: object = None
    #: "max_span" objective: device -> its span expression
    spans: dict = attrs.field(factory=dict)


def _or(lits: list) -> z3.BoolRef:
    if any(z3.is_true(lit) for lit in lits):
        return z3.BoolVal(True)
    return lits[0] if len(lits) == 1 else z3.Or(lits)


def _and(lits: list) -> z3.BoolRef:
    lits = [lit for lit in lits if not z3.is_true(lit)]
    if not lits:
        return z3.BoolVal(True)
    return lits[0] if len(lits) == 1 else z3.And(lits)


def on_device(st: TaskStructure, var: Variables, task: int, device: str) -> z3.BoolRef:
    """True when ``task`` runs in an option occupying ``device``."""
    return _or([var.tasks[task].present[i] for i in st.option_on(task, device)])


def make_variables(solver: z3.Solver, st: TaskStructure, horizon: int) -> Variables:
    """Family 1 (option choice) and the transfer choice of family 4."""
    tasks: list[TaskVars] = []
    for t in st.tasks:
        tag = f"{t.key[0]}#{t.key[1]}"
        start = z3.Int(f"start[{tag}]")
        lo = max(t.release, t.head)
        min_dur = min(d for _, d in t.options)
        solver.add(start >= lo, start <= max(lo, horizon - min_dur - t.tail))
        if t.fixed and t.index in st.task_groups:
            # the end is the start plus its own duration, or plus its group's
            ((_, dur),) = t.options
            end = z3.Int(f"end[{tag}]")
            tasks.append(TaskVars(start=start, end=end, present=[z3.BoolVal(True)]))
            continue
        if t.fixed:
            ((_, dur),) = t.options
            tasks.append(TaskVars(start=start, end=start + dur, present=[z3.BoolVal(True)]))
            continue
        present = [z3.Bool(f"opt[{tag}/{i}]") for i in range(len(t.options))]
        solver.add(z3.PbEq([(p, 1) for p in present], 1))
        end = z3.Int(f"end[{tag}]")
        for p, (_, dur) in zip(present, t.options):
            solver.add(z3.Implies(p, end == start + dur))
        tasks.append(TaskVars(start=start, end=end, present=present))
    transfers: list[TransferVars] = []
    for tr in st.transfers:
        tag = f"{tr.src[0]}->{tr.dst[0]}#{tr.src[1]}"
        u, v = st.index[tr.src], st.index[tr.dst]
        start = z3.Int(f"tstart[{tag}]")
        solver.add(start >= 0)
        aux: dict = {}
        channel_lits: dict[str, list] = {}
        for i, j, chans in tr.routes:
            route = _and([tasks[u].present[i], tasks[v].present[j]])
            aux[(i, j)] = route
            if len(chans) == 1:
                channel_lits.setdefault(chans[0].name, []).append(route)
                continue
            picks = [z3.Bool(f"via[{tag}/{i},{j}/{c.name}]") for c in chans]
            for c, pick in zip(chans, picks):
                aux[(i, j, c.name)] = pick
                channel_lits.setdefault(c.name, []).append(pick)
            solver.add(z3.PbEq([(p, 1) for p in picks] + [(z3.Not(route), 1)], 1))
        channels = {
            name: (_or(lits), st.problem.cluster.channel(name).transfer_time(tr.size))
            for name, lits in channel_lits.items()
        }
        transfers.append(TransferVars(start=start, channels=channels, aux=aux))
    groups = [z3.Bool(f"group[{g}:{info.name}]") for g, info in enumerate(st.groups)]
    return Variables(tasks=tasks, transfers=transfers, makespan=z3.Int("makespan"), groups=groups)
