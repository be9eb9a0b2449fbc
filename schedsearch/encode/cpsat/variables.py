"""CP-SAT variables: task starts and ends, option literals and intervals, transfers."""

from __future__ import annotations

import attrs
from ortools.sat.python import cp_model

from schedsearch.deadline import checkpoint
from schedsearch.encode.structure import TaskStructure


@attrs.define(kw_only=True)
class TaskVars:
    start: cp_model.IntVar
    end: cp_model.IntVar
    #: one presence literal per option (the model's true literal for a fixed task)
    present: list
    #: one interval per option (optional unless the task is fixed; for a task
    #: that may join an overlapped group, the interval of running alone)
    intervals: list
    #: literal "runs alone" for a task that may join a group, else None
    solo: object = None
    #: interval [start, end) whatever the task runs in (tasks that may join a group)
    span: object = None
    #: the chosen option's duration, a variable for a task whose options differ in length, else None
    length: object = None


@attrs.define(kw_only=True)
class TransferVars:
    start: cp_model.IntVar
    #: literal "this transfer happens" (the true literal when it always does)
    needed: object
    #: channel name -> (presence literal, interval, duration)
    channels: dict
    #: every auxiliary literal, for complete hints: name -> literal
    aux: dict = attrs.field(factory=dict)


@attrs.define(kw_only=True)
class Variables:
    true: object
    tasks: list[TaskVars]
    transfers: list[TransferVars]
    makespan: cp_model.IntVar
    first_start: dict = attrs.field(factory=dict)
    #: per candidate group: (presence literal, interval)
    groups: list = attrs.field(factory=list)
    #: what is minimised: the makespan, or the longest device span
    objective: object = None
    #: "max_span" objective: device -> (first start, last end, span, {task: literal "runs on it"})
    spans: dict = attrs.field(factory=dict)


def and_literal(model: cp_model.CpModel, true_lit, lits: list, name: str):
    """A literal equal to the conjunction of ``lits`` (the true literal is dropped)."""
    lits = [lit for lit in lits if lit is not true_lit]
    if not lits:
        return true_lit
    if len(lits) == 1:
        return lits[0]
    both = model.new_bool_var(name)
    model.add_bool_and(lits).only_enforce_if(both)
    model.add_bool_or([lit.negated() for lit in lits]).only_enforce_if(both.negated())
    return both


def or_literal(model: cp_model.CpModel, true_lit, lits: list, name: str):
    """A literal equal to the sum of ``lits``, which are pairwise exclusive."""
    if any(lit is true_lit for lit in lits):
        return true_lit
    if len(lits) == 1:
        return lits[0]
    lit = model.new_bool_var(name)
    model.add(sum(lits) == lit)
    return lit


def make_variables(model: cp_model.CpModel, st: TaskStructure, horizon: int) -> Variables:
    """Create every decision variable of the model (family 1 and the transfer choice of 4)."""
    true_lit = model.new_bool_var("true")
    model.add(true_lit == 1)
    tasks: list[TaskVars] = []
    for t in st.tasks:
        checkpoint()
        tag = f"{t.key[0]}#{t.key[1]}"

        lo = max(t.release, t.head)
        min_dur = min(d for _, d in t.options)
        hi_start = max(lo, horizon - min_dur - t.tail)
        start = model.new_int_var(lo, hi_start, f"start[{tag}]")
        if t.fixed and t.index in st.task_groups:
            ((_, dur),) = t.options
            longest = max(st.groups[g].duration for g in st.task_groups[t.index])
            end = model.new_int_var(lo + dur, hi_start + max(dur, longest), f"end[{tag}]")
            solo = model.new_bool_var(f"solo[{tag}]")
            interval = model.new_optional_interval_var(start, dur, end, solo, f"iv[{tag}]")
            span = model.new_interval_var(start, model.new_int_var(dur, max(dur, longest), f"len[{tag}]"), end,
                                          f"span[{tag}]")
            tasks.append(TaskVars(start=start, end=end, present=[true_lit], intervals=[interval], solo=solo, span=span))
            continue
        if t.fixed:
            ((_, dur),) = t.options
            end = model.new_int_var(lo + dur, hi_start + dur, f"end[{tag}]")
            interval = model.new_interval_var(start, dur, end, f"iv[{tag}]")
            tasks.append(TaskVars(start=start, end=end, present=[true_lit], intervals=[interval]))
            continue
        end = model.new_int_var(lo + min_dur, horizon, f"end[{tag}]")
        present, intervals = [], []
        for i, (_, dur) in enumerate(t.options):
            lit = model.new_bool_var(f"opt[{tag}/{i}]")
            present.append(lit)
            intervals.append(model.new_optional_fixed_size_interval_var(start, dur, lit, f"iv[{tag}/{i}]"))
            model.add(end == start + dur).only_enforce_if(lit)
        model.add_exactly_one(present)
        # the task's whole extent as one interval (its length the chosen option's): implied by the
        # options, it lets CP-SAT reason on the task as one interval (precedences, the objective);
        # without it, one-worker searches of flexible job shops swing 100-fold with the seed (mk08)
        longest = max(d for _, d in t.options)
        if longest > min_dur:
            length = model.new_int_var(min_dur, longest, f"len[{tag}]")
            for lit, (_, dur) in zip(present, t.options):
                model.add(length == dur).only_enforce_if(lit)
            model.new_interval_var(start, length, end, f"task[{tag}]")
        else:
            length = None
            model.new_interval_var(start, min_dur, end, f"task[{tag}]")
        tasks.append(TaskVars(start=start, end=end, present=present, intervals=intervals, length=length))

    transfers: list[TransferVars] = []
    for tr in st.transfers:
        tag = f"{tr.src[0]}->{tr.dst[0]}#{tr.src[1]}"
        u, v = st.index[tr.src], st.index[tr.dst]
        start = model.new_int_var(0, horizon, f"tstart[{tag}]")
        aux: dict[str, object] = {}
        route_lits = []
        channel_lits: dict[str, list] = {}
        for i, j, chans in tr.routes:
            route = and_literal(model, true_lit, [tasks[u].present[i], tasks[v].present[j]], f"route[{tag}/{i},{j}]")
            aux[f"route/{i},{j}"] = route
            route_lits.append(route)
            if len(chans) == 1:
                channel_lits.setdefault(chans[0].name, []).append(route)
                continue
            picks = []
            for c in chans:
                pick = model.new_bool_var(f"via[{tag}/{i},{j}/{c.name}]")
                aux[f"via/{i},{j}/{c.name}"] = pick
                channel_lits.setdefault(c.name, []).append(pick)
                picks.append(pick)
            model.add(sum(picks) == route)
        needed = or_literal(model, true_lit, route_lits, f"needed[{tag}]")
        channels = {}
        for name, lits in channel_lits.items():
            duration = st.problem.cluster.channel(name).transfer_time(tr.size)
            lit = or_literal(model, true_lit, lits, f"on[{tag}/{name}]")
            aux[f"on/{name}"] = lit
            if lit is true_lit:
                iv = model.new_fixed_size_interval_var(start, duration, f"tiv[{tag}/{name}]")
            else:
                iv = model.new_optional_fixed_size_interval_var(start, duration, lit, f"tiv[{tag}/{name}]")
            channels[name] = (lit, iv, duration)
        transfers.append(TransferVars(start=start, needed=needed, channels=channels, aux=aux))
    groups = []
    for g, info in enumerate(st.groups):
        lit = model.new_bool_var(f"group[{g}:{info.name}]")
        first = tasks[info.members[0]]
        groups.append((lit, model.new_optional_fixed_size_interval_var(first.start, info.duration, lit, f"giv[{g}]")))
    makespan = model.new_int_var(0, horizon, "makespan")
    return Variables(true=true_lit, tasks=tasks, transfers=transfers, makespan=makespan, groups=groups)
