"""CP-SAT modulo-scheduling model of one period (the repetend search's sub-problem).

For a fixed period ``P`` every block ``b`` (duration ``p_b``, devices
``D_b``, memory delta ``m_b``, workspace ``w_b``) gets a phase
``t_b in [0, P)`` and an offset ``o_b in [0, max_offset]`` (see
:mod:`schedsearch.periodic` for their meaning). The families, in the same
order as the Z3 model:

M1. dependencies: ``t_v + P (o_u - o_v) >= t_u + p_u`` for each edge
    ``u -> v``;
M2. modulo no-overlap: on each device one ``NoOverlap`` over the intervals
    ``[t_b, t_b + p_b)`` and their copies ``[t_b + P, t_b + P + p_b)``
    (with ``t_b < P`` and ``p_b <= P`` this is exactly "disjoint modulo
    P");
M3. memory, per device with a capacity: the entry level ``E_d = initial +
    sum_b o_b m_b`` is at most the capacity, and at each start that raises
    the level, ``E_d + m_b + w_b + sum_{b' != b} m_b' [t_b' < t_b] <=
    capacity`` (the level only rises at such starts; tasks on a device do
    not overlap, so only ``b``'s workspace is held then); redundant, on a
    device whose deltas pair up into allocations and the frees that depend
    on them (see :func:`~schedsearch.encode.repetend.repetend_memory_pairs`):
    the time-average level over one period cannot exceed the capacity,
    ``sum_pairs a (s_free - s_alloc) + sum_b w_b p_b <= (capacity -
    initial) P`` with ``s_b = t_b - P o_b``;
M4. normalisation: ``min o_b = 0`` and ``min t_b = 0`` (shifting every
    start by whole periods, or rotating phases down to the first one,
    changes nothing);
M5. forbidden offset vectors (candidates already seen) and cyclic orders
    (``s_a <= s_b`` along each sequence and ``s_last <= s_first + P``, with
    ``s_b = t_b - P o_b``);
M6. objective: latency ``max(t_b + p_b - P o_b) - min(t_b - P o_b)``
    (``<= max_latency`` when given; minimised for the latency objective).
"""

from __future__ import annotations

import math
import time
from typing import Any

from ortools.sat.python import cp_model

from schedsearch.bounds.analytic import critical_path
from schedsearch.encode.cpsat.model import set_limits, wall_guard_hit
from schedsearch.encode.repetend import RepetendOptions, PeriodResult, repetend_memory_pairs
from schedsearch.errors import InvalidOptionsError, SolverError
from schedsearch.periodic import Repetend, RepetendTask
from schedsearch.problem import Problem
from schedsearch.result import Status

__all__ = ["build_repetend_model", "solve_repetend"]


def build_repetend_model(problem: Problem, options: RepetendOptions) -> tuple[cp_model.CpModel, dict[str, Any]]:
    """Build families M1-M6; return the model and its variables by role."""
    P = options.period
    graph = problem.graph
    blocks = graph.blocks
    model = cp_model.CpModel()
    phase = {b.name: model.new_int_var(0, P - 1, f"t[{b.name}]") for b in blocks}
    offset = {b.name: model.new_int_var(0, options.max_offset, f"o[{b.name}]") for b in blocks}
    place = {b.name: b.options[0] for b in blocks}

    # M1 dependencies (same micro-batch)
    for e in graph.edges:
        model.add(phase[e.dst] + P * (offset[e.src] - offset[e.dst]) >= phase[e.src] + place[e.src].duration)

    # M2 modulo no-overlap
    for d in problem.cluster.device_names:
        intervals = []
        for b in blocks:
            if d not in place[b.name].devices:
                continue
            p = place[b.name].duration
            intervals.append(model.new_fixed_size_interval_var(phase[b.name], p, f"iv[{d}/{b.name}]"))
            intervals.append(model.new_fixed_size_interval_var(phase[b.name] + P, p, f"iv+P[{d}/{b.name}]"))
        if len(intervals) > 2:
            model.add_no_overlap(intervals)

    # M3 memory
    before: dict[tuple[str, str], Any] = {}

    def precedes(a: str, b: str) -> Any:
        """Literal ``t_a < t_b`` for two blocks sharing a device (phases differ)."""
        if (a, b) not in before:
            lit = model.new_bool_var(f"before[{a},{b}]")
            model.add(phase[a] < phase[b]).only_enforce_if(lit)
            model.add(phase[a] > phase[b]).only_enforce_if(~lit)
            before[(a, b)] = lit
            before[(b, a)] = ~lit
        return before[(a, b)]

    starts = {b.name: phase[b.name] - P * offset[b.name] for b in blocks}
    pairs = repetend_memory_pairs(problem)
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        d, cap = dev.name, dev.memory
        room = cap - problem.initial_memory_of(d)
        on = [b for b in blocks if d in place[b.name].devices]
        paired = pairs.get(d) is not None
        if paired and options.memory_encoding in ("cumulative", "both"):
            _add_paired_memory(model, P, d, room, pairs[d], on, phase, offset, place)
        if not paired or options.memory_encoding in ("events", "both"):
            entry = problem.initial_memory_of(d) + sum(b.memory * offset[b.name] for b in on)
            model.add(entry <= cap)
            for b in on:
                if b.memory + b.workspace <= 0:
                    continue
                level = entry + b.memory + b.workspace
                level += sum(o.memory * precedes(o.name, b.name) for o in on if o is not b and o.memory)
                model.add(level <= cap)
        if options.redundant and pairs.get(d) is not None:
            held = sum(amount * (starts[f] - starts[a]) for a, f, amount in pairs[d])
            held += sum(b.workspace * place[b.name].duration for b in on)
            model.add(held <= room * P)

    # M4 normalisation
    zero = model.new_constant(0)
    model.add_min_equality(zero, list(offset.values()))
    model.add_min_equality(zero, list(phase.values()))

    # M5 forbidden offset vectors
    for k, vector in enumerate(options.forbidden_offsets):
        differs = []
        for name, value in vector:
            if name not in offset:
                continue
            lit = model.new_bool_var(f"differs[{k}/{name}]")
            model.add(offset[name] != value).only_enforce_if(lit)
            model.add(offset[name] == value).only_enforce_if(~lit)
            differs.append(lit)
        model.add_bool_or(differs)

    for seq in options.cyclic_orders:
        for a, b in zip(seq, seq[1:]):
            model.add(starts[a] <= starts[b])
        if len(seq) > 1:
            model.add(starts[seq[-1]] <= starts[seq[0]] + P)

    # M6 latency
    lo = -P * options.max_offset
    hi = P - 1 + max(b.min_duration for b in blocks)
    preds = graph.predecessors()
    succs = graph.successors()
    first = model.new_int_var(lo, hi, "first_start")
    last = model.new_int_var(lo, hi, "last_end")
    model.add_min_equality(first, [starts[b.name] for b in blocks if not preds[b.name]])
    model.add_max_equality(last, [starts[b.name] + place[b.name].duration for b in blocks if not succs[b.name]])
    latency = model.new_int_var(0, hi - lo, "latency")
    model.add(latency == last - first)
    if options.max_latency is not None:
        model.add(latency <= options.max_latency)
    if options.objective == "latency":
        model.minimize(latency)
    if options.hint is not None and options.hint.period == P:
        for t in options.hint.tasks:
            if t.block in phase:
                model.add_hint(phase[t.block], t.phase)
                model.add_hint(offset[t.block], t.offset)
    return model, {"phase": phase, "offset": offset, "latency": latency, "place": place}


def _add_paired_memory(model, P, d, room, pairs, on, phase, offset, place) -> None:
    """M3 on a paired device, as one cumulative over the circle.

    Pair ``(a, f, x)`` holds ``x`` for ``s_f - s_a = q P + w`` time units
    from ``s_a``: ``q`` whole periods (``q = o_a - o_f - wrap``, ``wrap =
    [t_f < t_a]``) plus the circular window ``[t_a, t_a + w)`` of length
    ``w = t_f - t_a + P wrap``. The level at any phase is ``initial + sum x
    q + (windows covering it) + (workspace of the task running)``. Windows
    and task intervals are doubled (``+P``) so that a cumulative on ``[0,
    3P)`` sees, on ``[P, 2P)``, exactly the circular load; its capacity is
    ``capacity - initial - sum x q``.
    """
    intervals, demands, whole = [], [], []
    for a, f, amount in pairs:
        wrap = model.new_bool_var(f"wrap[{d}/{a}-{f}]")
        model.add(phase[f] < phase[a]).only_enforce_if(wrap)
        model.add(phase[f] >= phase[a]).only_enforce_if(~wrap)
        width = model.new_int_var(0, P - 1, f"window[{d}/{a}-{f}]")
        model.add(width == phase[f] - phase[a] + P * wrap)
        until = model.new_int_var(0, 2 * P - 2, f"until[{d}/{a}-{f}]")
        model.add(until == phase[a] + width)
        for shift in (0, P):
            intervals.append(model.new_interval_var(phase[a] + shift, width, until + shift, f"held[{d}/{a}-{f}/{shift}]"))
            demands.append(amount)
        whole.append(amount * (offset[a] - offset[f] - wrap))
    for b in on:
        if b.workspace:
            p = place[b.name].duration
            for shift in (0, P):
                intervals.append(model.new_fixed_size_interval_var(phase[b.name] + shift, p, f"ws[{d}/{b.name}/{shift}]"))
                demands.append(b.workspace)
    capacity = model.new_int_var(0, max(room, 0), f"room[{d}]")
    model.add(capacity == room - sum(whole))
    if intervals:
        model.add_cumulative(intervals, demands, capacity)


def solve_repetend(problem: Problem, options: RepetendOptions) -> PeriodResult:
    """Solve the repetend sub-problem with CP-SAT (see the module docstring)."""
    t0 = time.perf_counter()
    model, var = build_repetend_model(problem, options)
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = options.workers
    params.random_seed = options.seed
    params.log_search_progress = options.log
    set_limits(params, options.time_limit_s, options.deterministic)
    for key, value in options.backend_params.items():
        if not hasattr(params, key):
            raise InvalidOptionsError(f"backend 'cpsat': unknown parameter {key!r} in 'backend_params'")
        setattr(params, key, value)
    code = solver.solve(model)
    wall = time.perf_counter() - t0
    stats = {
        "solver_status": solver.status_name(code),
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
        "solve_s": solver.wall_time,
    }
    guard_hit = wall_guard_hit(solver, options.time_limit_s, options.deterministic)
    if code == cp_model.MODEL_INVALID:
        raise SolverError(f"backend 'cpsat': the repetend model is invalid ({model.validate()})")
    if code == cp_model.INFEASIBLE:
        return PeriodResult(status=Status.INFEASIBLE, wall_time_s=wall, backend="cpsat", stats=stats,
                            wall_guard_hit=guard_hit)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        limit_hit = options.time_limit_s is not None  # CP-SAT answers UNKNOWN when a limit stopped it
        return PeriodResult(
            status=Status.TIMEOUT if limit_hit else Status.UNKNOWN, wall_time_s=wall, backend="cpsat", stats=stats,
            wall_guard_hit=guard_hit,
        )
    tasks = []
    for b in problem.graph.blocks:
        option = var["place"][b.name]
        tasks.append(
            RepetendTask(
                block=b.name,
                offset=solver.value(var["offset"][b.name]),
                phase=solver.value(var["phase"][b.name]),
                devices=option.devices,
                duration=option.duration,
            )
        )
    repetend = Repetend(period=options.period, tasks=tasks)
    latency = repetend.latency()
    if options.objective == "latency":
        bound = max(math.ceil(solver.best_objective_bound - 1e-6), critical_path(problem.with_(num_microbatches=1)))
        status = Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE
    else:
        bound, status = None, Status.OPTIMAL
    return PeriodResult(
        status=status,
        repetend=repetend,
        latency=latency,
        latency_bound=min(bound, latency) if bound is not None else None,
        wall_time_s=wall,
        backend="cpsat",
        stats=stats,
        wall_guard_hit=guard_hit,
    )
