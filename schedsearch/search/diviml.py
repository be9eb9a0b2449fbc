"""DiviML's MILP: place and schedule a DAG on heterogeneous devices.

DiviML (Yousefzadeh-Asl-Miandoab et al.) maps the operators of one DNN onto
devices of different speeds with communication between them and minimises
the makespan with a mixed-integer linear program. This module writes that
MILP for any :class:`~schedsearch.problem.Problem` whose memory cannot bind
(one micro-batch is the DiviML setting; several are unrolled as more
tasks), so its optimum can be compared with the exact CP-SAT model and its
dual bound certifies a schedule where it does not finish.

Variables and rows (``M`` = an upper bound on the makespan: the warm
start's makespan, or a serial schedule's)::

    y[t, o] in {0, 1}, sum_o y[t, o] = 1          task t runs with option o
    p[t] = sum_o dur(t, o) y[t, o]                 its duration
    s[t] >= release(t)                             start
    C >= s[t] + p[t],  C <= M                      makespan

    edge u -> v (same micro-batch), no transfer possible:
        s[v] >= s[u] + p[u]
    edge with a size: for every option pair (a, b) on disjoint devices
        w[e, a, b] >= y[u, a] + y[v, b] - 1        the transfer happens on
                                                   the channel of (lead a, lead b)
        r[e] >= s[u] + p[u]
        s[v] >= r[e] + sum_{a, b} d(e, a, b) w[e, a, b]

    device d, tasks t1, t2 that may both occupy d and are not ordered by a
    path (one order binary q per pair; on_d(t) = sum_{o owns d} y[t, o]):
        s[t2] >= s[t1] + p[t1] - M (1 - q) - M (2 - on_d(t1) - on_d(t2))
        s[t1] >= s[t2] + p[t2] - M q       - M (2 - on_d(t1) - on_d(t2))
    channel c, transfers i, j that may both use it: the same pair of rows
    on r with the transfer durations and the activity sums of w.
    fixed orders: s[next] >= s[prev] + p[prev].

From a solution the module keeps only the options and the order of the
tasks on every device and channel, and recomputes integer earliest starts
along that order (a longest path), so the schedule it returns is integral,
no longer than the MILP's, and passes the independent validator.

Not expressible here (an :class:`~schedsearch.errors.UnsupportedFeatureError`
names the CP-SAT search instead): overlapped groups, memory capacities that could bind
(time-varying memory needs one variable per event; DiviML itself only has
static capacities), and two or more channels between one pair of devices.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from schedsearch.bounds.mip import DEFAULT_SOLVER, SOLVERS, MipModel, MipOptions, MipResult, solve_mip
from schedsearch.bounds.schedule_bounds import ScheduleBound, lower_bound
from schedsearch.errors import InvalidOptionsError, UnsupportedFeatureError
from schedsearch.options import Deadline, Reporter, Rule, SearchOptions, resolve_options
from schedsearch.problem import Channel, Problem, TaskKey
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance, Transfer
from schedsearch.validate import assert_valid

__all__ = ["diviml", "diviml_supports", "diviml_lower_bound", "memory_never_binds"]


def memory_never_binds(problem: Problem) -> bool:
    """True if no schedule can exceed a capacity: on every device with one,
    initial memory + every positive delta and workspace that could land
    there, over all micro-batches, fits."""
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        worst = problem.initial_memory_of(dev.name)
        for b in problem.graph.blocks:
            if dev.name in b.devices:
                worst += (max(b.memory, 0) + b.workspace) * problem.num_microbatches
        if worst > dev.memory:
            return False
    return True


def _channel_map(problem: Problem) -> dict[tuple[str, str], Channel]:
    out: dict[tuple[str, str], Channel] = {}
    for c in problem.cluster.channels:
        pairs = [tuple(c.endpoints)] + ([] if c.directed else [tuple(reversed(c.endpoints))])
        for pair in pairs:
            if pair in out:
                raise UnsupportedFeatureError(
                    f"DiviML MILP: devices {pair[0]!r} -> {pair[1]!r} are served by channels {out[pair].name!r} "
                    f"and {c.name!r}; choosing among channels is not modelled, use the CP-SAT search (optimal)"
                )
            out[pair] = c
    return out


def diviml_supports(problem: Problem) -> str | None:
    """None if :func:`diviml` can model ``problem``, else the reason."""
    if getattr(problem, "overlaps", ()):
        return "overlapped groups are not modelled; use the CP-SAT search (optimal)"
    if not memory_never_binds(problem):
        return "memory capacities may bind (the MILP has no time-varying memory); use the CP-SAT search (optimal)"
    try:
        _channel_map(problem)
    except UnsupportedFeatureError as exc:
        return str(exc)
    return None


def _ancestors(problem: Problem) -> dict[str, set[str]]:
    preds = problem.graph.predecessors()
    anc: dict[str, set[str]] = {}
    for b in problem.graph.topological_order():
        s: set[str] = set()
        for e in preds[b]:
            s.add(e.src)
            s |= anc[e.src]
        anc[b] = s
    return anc


def _serial_upper_bound(problem: Problem, channels: dict) -> int:
    total = max((r.time for r in problem.releases), default=0)
    for b, m in problem.tasks:
        total += max(problem.durations(b, m))
    for e in problem.graph.edges:
        if e.size:
            worst = max((c.transfer_time(e.size) for c in problem.cluster.channels), default=0)
            total += worst * problem.num_microbatches
    return max(total, 1)


def diviml(
    problem: Problem,
    *,
    solver: str = DEFAULT_SOLVER,
    relative_gap: float = 1e-6,
    threads: int = 1,
    pass_hint: bool | None = None,
    options: SearchOptions | None = None,
    **common: Any,
) -> SearchResult:
    """Solve ``problem`` with the DiviML MILP (module docstring).

    Parameters
    ----------
    solver:
        The MILP solver: ``"highs"`` (default), ``"scip"`` or ``"cbc"``.
    relative_gap:
        Stop when the MILP's relative gap is at most this; the default 1e-6
        proves integral optima exactly.
    threads:
        The MILP solver's threads (see :class:`~schedsearch.bounds.mip.MipOptions`:
        HiGHS and SCIP solve MIPs on one thread; HiGHS keeps one thread pool
        per process, so keep one count per process).
    pass_hint:
        Hand the warm start to the solver as a starting solution (see
        :class:`~schedsearch.bounds.mip.MipOptions`; by default not to HiGHS).
    options, common:
        The common settings (:class:`~schedsearch.options.SearchOptions`,
        or keywords of its field names): ``time_limit_s`` for the whole
        call, ``seed``, ``log``, ``progress`` and ``warm_starts``: the best
        of them (each must be a valid plan of ``problem``) caps the big-M
        constants, and the result is never worse than it. The MILP solvers
        are not backends: ``backend`` other than ``"auto"`` and
        ``backend_params`` are errors naming ``solver``; ``workers`` is not
        used (``threads`` is the MILP's own knob).

    Returns
    -------
    SearchResult
        ``strategy`` and ``engine`` are ``"diviml"`` (``engine`` is ``"warm
        start"`` when the warm start stays the best plan), ``backend`` is
        ``"diviml-<solver>"``; ``lower_bound`` is the MILP's dual bound
        rounded up (makespans are integers); the schedule is validated and
        ``problem`` is ``problem``. Progress phase: ``"diviml MILP"``.

    Examples
    --------
    Two blocks of 2 on either of two devices; running them apart costs a
    transfer of 3, so the optimum keeps them together: makespan 4.

    >>> from schedsearch import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
    >>> either = [Option(devices=("x",), duration=2), Option(devices=("y",), duration=2)]
    >>> problem = Problem(graph=Graph(blocks=[Block(name="a", options=either), Block(name="b", options=either)],
    ...                               edges=[Edge(src="a", dst="b", size=3)]),
    ...                   num_microbatches=1, cluster=Cluster(devices=[Device(name="x"), Device(name="y")],
    ...                   channels=[Channel(name="xy", endpoints=("x", "y"))]))
    >>> result = diviml(problem, time_limit_s=10)
    >>> result.status.value, result.objective, result.lower_bound
    ('OPTIMAL', 4, 4)
    """
    opts = resolve_options(options, common, "diviml", own={
        "problem": (problem, Rule.instance(Problem, "a Problem")),
        "solver": (solver, Rule.choice(SOLVERS)), "relative_gap": (relative_gap, Rule.number(0)),
        "threads": (threads, Rule.integer(1)), "pass_hint": (pass_hint, Rule.boolean(none=True)),
    })
    _check_common(opts)
    deadline = Deadline(opts.time_limit_s)
    reporter = Reporter(opts.progress, deadline.t0)
    reason = diviml_supports(problem)
    if reason is not None:
        raise UnsupportedFeatureError(f"DiviML MILP: {reason}")
    warm = _best_warm_start(problem, opts)
    milp = _build_milp(problem, warm)
    if warm is not None:
        milp.model.set_hint(_hint_from_schedule(problem, warm, milp))
    left = deadline.left()
    mip_options = MipOptions(solver=solver, time_limit_s=None if left is None else max(left, 1e-3),
                             relative_gap=relative_gap, threads=threads, seed=opts.seed, log=opts.log,
                             pass_hint=pass_hint)
    res = solve_mip(milp.model, mip_options)
    result = _result(problem, milp, res, warm, mip_options, wall_time_s=deadline.elapsed)
    reporter.report("diviml MILP", incumbent=result.objective, bound=result.lower_bound)
    return result


def _check_common(opts: SearchOptions) -> None:
    """Refuse the common settings the MILP cannot honour, naming what to use instead."""
    if opts.backend != "auto":
        raise InvalidOptionsError(
            f"diviml: 'backend' must be 'auto' (the MILP chooses its solver with 'solver'), got {opts.backend!r}"
        )
    if opts.backend_params:
        raise InvalidOptionsError(
            f"diviml: 'backend_params' are not taken by the MILP solvers (choose one with 'solver'), "
            f"got {dict(opts.backend_params)!r}"
        )


def _best_warm_start(problem: Problem, opts: SearchOptions) -> Schedule | None:
    """The warm start of least makespan (the first of those), each checked to be a valid plan."""
    starts = opts.checked_warm_starts(problem, "diviml")
    return min(starts, key=lambda schedule: schedule.makespan, default=None)


@attrs.frozen(kw_only=True)
class _TransferVars:
    """The variables of the transfer of edge ``key`` (src, dst, micro-batch): its
    start ``r`` and, per channel, the ``(w, duration)`` of every option pair it serves."""

    key: tuple[str, str, int]
    r: int
    use: Mapping[str, list[tuple[int, float]]]
    u: TaskKey
    v: TaskKey


@attrs.frozen(kw_only=True)
class _Milp:
    """The DiviML MILP of a problem and its variables (indices into ``model``)."""

    model: MipModel
    channels: dict[tuple[str, str], Channel]
    big: int
    y: dict[TaskKey, list[int]]
    s: dict[TaskKey, int]
    p_terms: dict[TaskKey, list[tuple[int, float]]]
    cmax: int
    transfers: list[_TransferVars] = attrs.field(factory=list)
    order_var: dict[tuple[TaskKey, TaskKey], int] = attrs.field(factory=dict)
    by_channel: dict[str, list[_TransferVars]] = attrs.field(factory=lambda: defaultdict(list))

    def after(self, later: TaskKey, earlier: TaskKey) -> None:
        """The row ``s[later] >= s[earlier] + p[earlier]``."""
        self.model.add_ge([(self.s[later], 1.0), (self.s[earlier], -1.0)]
                          + [(v, -d) for v, d in self.p_terms[earlier]], 0.0)


def _build_milp(problem: Problem, warm: Schedule | None) -> _Milp:
    """The MILP of the module docstring, its big M the warm start's makespan or a serial schedule's."""
    channels = _channel_map(problem)
    big = warm.makespan if warm is not None else _serial_upper_bound(problem, channels)
    milp = _task_variables(problem, channels, big)
    _edge_rows(problem, milp)
    _device_disjunctions(problem, milp)
    _channel_disjunctions(milp)
    for order in problem.fixed_orders:
        for t_prev, t_next in zip(order, order[1:]):
            milp.after(t_next, t_prev)
    milp.model.minimize([(milp.cmax, 1.0)])
    return milp


def _task_variables(problem: Problem, channels: dict[tuple[str, str], Channel], big: int) -> _Milp:
    """Per task its option binaries ``y`` (one chosen), start ``s`` (from its
    release) and duration terms; the makespan ``C`` after every task."""
    m = MipModel(f"DiviML {problem.name}")
    y: dict[TaskKey, list[int]] = {}
    s: dict[TaskKey, int] = {}
    p_terms: dict[TaskKey, list[tuple[int, float]]] = {}
    for key in problem.tasks:
        b, mb = key
        durs = problem.durations(b, mb)
        ys = [m.new_binary(f"y[{b},{mb},{i}]") for i in range(len(durs))]
        m.add_eq([(v, 1.0) for v in ys], 1.0)
        y[key] = ys
        s[key] = m.new_continuous(float(problem.release_of(b, mb)), float(big), f"s[{b},{mb}]")
        p_terms[key] = [(v, float(d)) for v, d in zip(ys, durs)]
    cmax = m.new_continuous(0.0, float(big), "C")
    for key in problem.tasks:
        m.add_ge([(cmax, 1.0), (s[key], -1.0)] + [(v, -d) for v, d in p_terms[key]], 0.0)
    return _Milp(model=m, channels=channels, big=big, y=y, s=s, p_terms=p_terms, cmax=cmax)


def _edge_rows(problem: Problem, milp: _Milp) -> None:
    """Per edge and micro-batch: a precedence, or, when the ends may run
    apart, the transfer's start ``r`` and its option-pair activities ``w``."""
    m, big, blocks = milp.model, milp.big, problem.graph.by_name()
    for e in problem.graph.edges:
        ba, bb = blocks[e.src], blocks[e.dst]
        for mb in range(problem.num_microbatches):
            u, v = (e.src, mb), (e.dst, mb)
            pairs = []
            if e.size > 0:
                for ia, oa in enumerate(ba.options):
                    for ib, ob in enumerate(bb.options):
                        if set(oa.devices) & set(ob.devices):
                            continue
                        ch = milp.channels.get((oa.devices[0], ob.devices[0]))
                        if ch is None:  # pragma: no cover - Problem validation forbids it
                            raise UnsupportedFeatureError(f"edge {e.src!r} -> {e.dst!r}: no channel")
                        pairs.append((ia, ib, ch))
            if not pairs:
                milp.after(v, u)
                continue
            r = m.new_continuous(0.0, float(big), f"r[{e.src},{e.dst},{mb}]")
            m.add_ge([(r, 1.0), (milp.s[u], -1.0)] + [(vv, -d) for vv, d in milp.p_terms[u]], 0.0)
            use: dict[str, list[tuple[int, float]]] = defaultdict(list)
            delay = []
            for ia, ib, ch in pairs:
                w = m.new_continuous(0.0, 1.0, f"w[{e.src},{e.dst},{mb},{ia},{ib}]")
                m.add_ge([(w, 1.0), (milp.y[u][ia], -1.0), (milp.y[v][ib], -1.0)], -1.0)
                d = float(ch.transfer_time(e.size))
                delay.append((w, d))
                use[ch.name].append((w, d))
            m.add_ge([(milp.s[v], 1.0), (r, -1.0)] + [(w, -d) for w, d in delay], 0.0)
            milp.transfers.append(_TransferVars(key=(e.src, e.dst, mb), r=r, use=use, u=u, v=v))


def _device_disjunctions(problem: Problem, milp: _Milp) -> None:
    """Per device, one order binary per pair of tasks that may both run there
    and no path orders, with the two big-M rows (relaxed when either runs elsewhere)."""
    m, big, s, p_terms = milp.model, milp.big, milp.s, milp.p_terms
    blocks = problem.graph.by_name()
    anc = _ancestors(problem)
    on: dict[tuple[TaskKey, str], list[int]] = {}
    may: dict[str, list[TaskKey]] = defaultdict(list)
    for key in problem.tasks:
        blk = blocks[key[0]]
        for d in sorted(blk.devices):
            on[key, d] = [milp.y[key][i] for i, o in enumerate(blk.options) if d in o.devices]
            may[d].append(key)
    for d, ts in may.items():
        for i, t1 in enumerate(ts):
            for t2 in ts[i + 1:]:
                if t1[1] == t2[1] and (t1[0] in anc[t2[0]] or t2[0] in anc[t1[0]]):
                    continue  # a path orders them already
                q = milp.order_var.get((t1, t2))
                if q is None:
                    q = m.new_binary(f"q[{t1},{t2}]")
                    milp.order_var[t1, t2] = q
                both = [(vv, -big) for vv in on[t1, d]] + [(vv, -big) for vv in on[t2, d]]
                # q = 1: t1 before t2; rows relax when either task is elsewhere
                m.add_ge([(s[t2], 1.0), (s[t1], -1.0), (q, -big)] + [(vv, -dd) for vv, dd in p_terms[t1]] + both,
                         -3 * big)
                m.add_ge([(s[t1], 1.0), (s[t2], -1.0), (q, big)] + [(vv, -dd) for vv, dd in p_terms[t2]] + both,
                         -2 * big)


def _channel_disjunctions(milp: _Milp) -> None:
    """Per channel, one order binary per pair of transfers of positive length that may both use it."""
    m, big = milp.model, milp.big
    for tv in milp.transfers:
        for ch_name, ws in tv.use.items():
            if any(d > 0 for _, d in ws):
                milp.by_channel[ch_name].append(tv)
    for ch_name, tvs in milp.by_channel.items():
        for i, a in enumerate(tvs):
            for b in tvs[i + 1:]:
                q = m.new_binary(f"qc[{ch_name},{a.key},{b.key}]")
                act = [(w, -big) for w, _ in a.use[ch_name]] + [(w, -big) for w, _ in b.use[ch_name]]
                da = [(w, -d) for w, d in a.use[ch_name]]
                db = [(w, -d) for w, d in b.use[ch_name]]
                m.add_ge([(b.r, 1.0), (a.r, -1.0), (q, -big)] + da + act, -3 * big)
                m.add_ge([(a.r, 1.0), (b.r, -1.0), (q, big)] + db + act, -2 * big)


def _result(problem: Problem, milp: _Milp, res: MipResult, warm: Schedule | None, mip_options: MipOptions,
            wall_time_s: float) -> SearchResult:
    """The plan rebuilt from the MILP's answer (or the warm start when better), and the dual bound rounded up."""
    schedule = None
    if res.values is not None:
        schedule = _rebuild(problem, res.values, milp)
        assert_valid(problem, schedule, "schedule rebuilt from the DiviML MILP")
    if warm is not None and (schedule is None or warm.makespan < schedule.makespan):
        schedule = warm
    bound = None
    if res.best_bound is not None:
        bound = max(0, math.ceil(res.best_bound - 1e-6 * max(1.0, abs(res.best_bound))))
    objective = schedule.makespan if schedule is not None else None
    if objective is not None and bound is not None:
        bound = min(bound, objective)
    if schedule is not None:
        status = Status.OPTIMAL if bound is not None and bound >= objective else Status.FEASIBLE
    elif res.status is Status.INFEASIBLE:
        status = Status.INFEASIBLE
    else:
        status = res.status if res.status is not Status.FEASIBLE else Status.UNKNOWN
    stats = {"mip": str(milp.model), "mip_status": res.status.value, "mip_objective": res.objective,
             "mip_bound": res.best_bound, "big_m": milp.big, **{f"mip_{k}": v for k, v in res.stats.items()}}
    return SearchResult(
        status=status, schedule=schedule, objective=objective, lower_bound=bound,
        wall_time_s=wall_time_s, backend=f"diviml-{mip_options.solver}", stats=stats, strategy="diviml",
        engine="warm start" if schedule is not None and schedule is warm else "diviml",
        bound_engine="diviml" if bound is not None else "", problem=problem,
    )


def diviml_lower_bound(
    problem: Problem,
    *,
    time_limit_s: float,
    solver: str = "highs",
    lp: bool | None = None,
) -> ScheduleBound:
    """:func:`schedsearch.bounds.lower_bound` joined by the DiviML MILP's dual bound.

    The MILP runs for ``time_limit_s`` where it applies
    (:func:`diviml_supports`); its dual bound, when it has one, becomes the
    part ``"DiviML MILP"``. Every part is a valid lower bound, so their
    maximum is too. ``lp`` and ``solver`` are passed to
    :func:`~schedsearch.bounds.lower_bound`; ``solver`` also solves the MILP.
    """
    bound = lower_bound(problem, lp=lp, solver=solver)
    if diviml_supports(problem) is not None:
        return bound
    milp = diviml(problem, solver=solver, time_limit_s=time_limit_s).lower_bound
    if milp is None:
        return bound
    parts = {**bound.parts, "DiviML MILP": milp}
    return ScheduleBound(value=max(parts.values()), parts=parts)


def _option_index(problem: Problem, t: TaskInstance) -> int:
    for i, o in enumerate(problem.graph.block(t.block).options):
        if set(o.devices) == set(t.devices):
            return i
    raise UnsupportedFeatureError(f"task {t.block!r}: devices {t.devices} are no option")  # pragma: no cover


def _hint_from_schedule(problem: Problem, schedule: Schedule, milp: _Milp) -> dict[int, float]:
    """The MILP's variables set from a valid schedule (options, starts, transfers, order binaries)."""
    m, y, s, cmax = milp.model, milp.y, milp.s, milp.cmax
    hint: dict[int, float] = {}
    placed = schedule.by_key()
    for key, ys in y.items():
        t = placed[key]
        idx = _option_index(problem, t)
        for i, v in enumerate(ys):
            hint[v] = 1.0 if i == idx else 0.0
        hint[s[key]] = float(t.start)
    hint[cmax] = float(schedule.makespan)
    tr = {x.key: x for x in schedule.transfers}
    for tv in milp.transfers:
        x = tr.get(tv.key)
        hint[tv.r] = float(x.start) if x is not None else float(placed[tv.u].end)
        for ws in tv.use.values():
            for w, _ in ws:
                hint[w] = 0.0
        if x is not None:
            # the w variable of the chosen option pair
            ia = _option_index(problem, placed[tv.u])
            ib = _option_index(problem, placed[tv.v])
            name = f"w[{tv.key[0]},{tv.key[1]},{tv.key[2]},{ia},{ib}]"
            for ws in tv.use.values():
                for w, _ in ws:
                    if m.var_names[w] == name:
                        hint[w] = 1.0
    for (t1, t2), q in milp.order_var.items():
        hint[q] = 1.0 if placed[t1].start <= placed[t2].start else 0.0
    for i, name in enumerate(m.var_names):
        if name.startswith("qc[") and i not in hint:
            hint[i] = 0.0
    # channel order binaries: set from transfer starts
    for ch_name, tvs in milp.by_channel.items():
        for a_i, a in enumerate(tvs):
            for b in tvs[a_i + 1:]:
                name = f"qc[{ch_name},{a.key},{b.key}]"
                for i, n in enumerate(m.var_names):
                    if n == name:
                        hint[i] = 1.0 if hint[a.r] <= hint[b.r] else 0.0
    return hint


def _rebuild(problem: Problem, values: Sequence[float], milp: _Milp) -> Schedule:
    """Options and orders from the MILP; integer earliest starts along them."""
    y, s, channels = milp.y, milp.s, milp.channels
    blocks = problem.graph.by_name()
    choice: dict[TaskKey, int] = {}
    for key, ys in y.items():
        choice[key] = max(range(len(ys)), key=lambda i: values[ys[i]])
    dur = {key: problem.durations(*key)[choice[key]] for key in y}
    devs = {key: blocks[key[0]].options[choice[key]].devices for key in y}
    # nodes: tasks ('t', key) and transfers ('x', edge key)
    preds: dict[tuple, list[tuple[tuple, int]]] = defaultdict(list)  # node -> [(pred node, lag after pred start)]
    nodes: dict[tuple, float] = {}  # node -> MILP start (for ordering)
    length: dict[tuple, int] = {}
    for key in y:
        nodes["t", key] = values[s[key]]
        length["t", key] = dur[key]
    chan_of: dict[tuple, str] = {}
    for e in problem.graph.edges:
        for mb in range(problem.num_microbatches):
            u, v = (e.src, mb), (e.dst, mb)
            needs = e.size > 0 and not (set(devs[u]) & set(devs[v]))
            if needs:
                ch = channels[(devs[u][0], devs[v][0])]
                tv = next(t for t in milp.transfers if t.key == (e.src, e.dst, mb))
                node = ("x", (e.src, e.dst, mb))
                nodes[node] = values[tv.r]
                length[node] = ch.transfer_time(e.size)
                chan_of[node] = ch.name
                preds[node].append((("t", u), dur[u]))
                preds["t", v].append((node, length[node]))
            else:
                preds["t", v].append((("t", u), dur[u]))
    # sequence per device and per channel by the MILP's starts (ties: path order)
    topo_rank = {b: i for i, b in enumerate(problem.graph.topological_order())}

    def rank(node):
        if node[0] == "t":
            return (nodes[node], node[1][1], topo_rank[node[1][0]])
        return (nodes[node], node[1][2], topo_rank[node[1][0]])

    per_resource: dict[str, list[tuple]] = defaultdict(list)
    for key in y:
        for d in devs[key]:
            per_resource["dev:" + d].append(("t", key))
    for node, ch in chan_of.items():
        if length[node] > 0:
            per_resource["ch:" + ch].append(node)
    for seq in per_resource.values():
        seq.sort(key=rank)
        for a, b in zip(seq, seq[1:]):
            preds[b].append((a, length[a]))
    for order in problem.fixed_orders:
        for a, b in zip(order, order[1:]):
            preds["t", b].append((("t", a), dur[a]))
    # longest path (Kahn on the precedence graph)
    succ: dict[tuple, list[tuple]] = defaultdict(list)
    indeg = {node: 0 for node in nodes}
    for node, ps in preds.items():
        for p, _ in ps:
            succ[p].append(node)
            indeg[node] += 1
    start = {node: 0 for node in nodes}
    for key in y:
        start["t", key] = problem.release_of(*key)
    ready = [node for node, d in indeg.items() if d == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for p, lag in preds.get(node, ()):
            start[node] = max(start[node], start[p] + lag)
        for w in succ[node]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if seen != len(nodes):  # pragma: no cover - the MILP's order is acyclic
        raise UnsupportedFeatureError("DiviML MILP: the solution's order has a cycle")
    tasks = [
        TaskInstance(block=key[0], microbatch=key[1], devices=devs[key], start=start["t", key],
                     end=start["t", key] + dur[key])
        for key in y
    ]
    transfers = [
        Transfer(src=node[1][0], dst=node[1][1], microbatch=node[1][2], channel=ch, start=start[node],
                 end=start[node] + length[node])
        for node, ch in chan_of.items()
    ]
    return Schedule(tasks=tasks, transfers=transfers)
