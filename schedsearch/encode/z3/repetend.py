"""Z3 modulo-scheduling model of one period (the repetend search's sub-problem).

The same families as :mod:`schedsearch.encode.cpsat.repetend`, in the same
order, over integer phases ``t_b in [0, P)`` and offsets ``o_b in [0,
max_offset]``:

M1. dependencies: ``t_v + P (o_u - o_v) >= t_u + p_u``;
M2. modulo no-overlap, pairwise for two blocks sharing a device:
    ``(t_a + p_a <= t_b and t_b + p_b <= t_a + P) or (t_b + p_b <= t_a and
    t_a + p_a <= t_b + P)``;
M3. memory: ``E_d = initial + sum_b o_b m_b <= capacity`` and at each start
    that raises the level ``E_d + m_b + w_b + sum_{b' != b} m_b' [t_b' <
    t_b] <= capacity`` (Z3 always uses this "events" form); the redundant
    average-level bound on paired devices;
M4. ``min o_b = 0`` and ``min t_b = 0``;
M5. forbidden offset vectors and cyclic orders;
M6. latency ``max(t_b + p_b - P o_b) - min(t_b - P o_b)`` (``<= max_latency``;
    for the latency objective, bisection with assumption literals from the
    critical path, as in the main Z3 backend: ``z3.Optimize`` is slower).
"""

from __future__ import annotations

import time
from typing import Any

import z3

from schedsearch.bounds.analytic import critical_path
from schedsearch.encode.repetend import RepetendOptions, PeriodResult, repetend_memory_pairs
from schedsearch.periodic import Repetend, RepetendTask
from schedsearch.problem import Problem
from schedsearch.result import Status

__all__ = ["build_repetend_solver", "solve_repetend"]


def build_repetend_solver(problem: Problem, options: RepetendOptions) -> tuple[z3.Solver, dict[str, Any]]:
    """Build families M1-M6 (without the latency objective) in a Z3 solver."""
    P = options.period
    graph = problem.graph
    blocks = graph.blocks
    solver = z3.Solver()
    solver.set(random_seed=options.seed)
    for key, value in options.backend_params.items():
        solver.set(key, value)
    place = {b.name: b.options[0] for b in blocks}
    phase = {b.name: z3.Int(f"t[{b.name}]") for b in blocks}
    offset = {b.name: z3.Int(f"o[{b.name}]") for b in blocks}
    for b in blocks:
        solver.add(phase[b.name] >= 0, phase[b.name] <= P - 1)
        solver.add(offset[b.name] >= 0, offset[b.name] <= options.max_offset)

    # M1
    for e in graph.edges:
        solver.add(phase[e.dst] + P * (offset[e.src] - offset[e.dst]) >= phase[e.src] + place[e.src].duration)

    # M2
    for d in problem.cluster.device_names:
        on = [b.name for b in blocks if d in place[b.name].devices]
        for i, a in enumerate(on):
            pa = place[a].duration
            for b in on[i + 1:]:
                pb = place[b].duration
                ta, tb = phase[a], phase[b]
                solver.add(z3.Or(z3.And(ta + pa <= tb, tb + pb <= ta + P), z3.And(tb + pb <= ta, ta + pa <= tb + P)))

    # M3
    starts = {b.name: phase[b.name] - P * offset[b.name] for b in blocks}
    pairs = repetend_memory_pairs(problem)
    for dev in problem.cluster.devices:
        if dev.memory is None:
            continue
        d, cap = dev.name, dev.memory
        on = [b for b in blocks if d in place[b.name].devices]
        entry = problem.initial_memory_of(d) + z3.Sum([b.memory * offset[b.name] for b in on] + [z3.IntVal(0)])
        solver.add(entry <= cap)
        for b in on:
            if b.memory + b.workspace <= 0:
                continue
            terms = [z3.If(phase[o.name] < phase[b.name], o.memory, 0) for o in on if o is not b and o.memory]
            solver.add(entry + b.memory + b.workspace + z3.Sum(terms + [z3.IntVal(0)]) <= cap)
        if options.redundant and pairs.get(d) is not None:
            held = [amount * (starts[f] - starts[a]) for a, f, amount in pairs[d]]
            held += [z3.IntVal(b.workspace * place[b.name].duration) for b in on]
            solver.add(z3.Sum(held + [z3.IntVal(0)]) <= (cap - problem.initial_memory_of(d)) * P)

    # M4
    solver.add(z3.Or([o == 0 for o in offset.values()]))
    solver.add(z3.Or([t == 0 for t in phase.values()]))

    # M5
    for vector in options.forbidden_offsets:
        solver.add(z3.Or([offset[name] != value for name, value in vector if name in offset]))
    for seq in options.cyclic_orders:
        for a, b in zip(seq, seq[1:]):
            solver.add(starts[a] <= starts[b])
        if len(seq) > 1:
            solver.add(starts[seq[-1]] <= starts[seq[0]] + P)

    # M6 (latency expression)
    preds, succs = graph.predecessors(), graph.successors()
    first, last = z3.Int("first_start"), z3.Int("last_end")
    sources = [starts[b.name] for b in blocks if not preds[b.name]]
    sinks = [starts[b.name] + place[b.name].duration for b in blocks if not succs[b.name]]
    solver.add([first <= s for s in sources] + [z3.Or([first == s for s in sources])])
    solver.add([last >= e for e in sinks] + [z3.Or([last == e for e in sinks])])
    latency = last - first
    if options.max_latency is not None:
        solver.add(latency <= options.max_latency)
    return solver, {"phase": phase, "offset": offset, "latency": latency, "place": place}


def _read(model: z3.ModelRef, problem: Problem, var: dict[str, Any], period: int) -> Repetend:
    tasks = []
    for b in problem.graph.blocks:
        option = var["place"][b.name]
        tasks.append(
            RepetendTask(
                block=b.name,
                offset=model.eval(var["offset"][b.name], model_completion=True).as_long(),
                phase=model.eval(var["phase"][b.name], model_completion=True).as_long(),
                devices=option.devices,
                duration=option.duration,
            )
        )
    return Repetend(period=period, tasks=tasks)


def solve_repetend(problem: Problem, options: RepetendOptions) -> PeriodResult:
    """Solve the repetend sub-problem with Z3 (see the module docstring)."""
    t0 = time.perf_counter()
    deadline = None if options.time_limit_s is None else t0 + options.time_limit_s
    solver, var = build_repetend_solver(problem, options)
    checks: list[dict[str, Any]] = []

    def check(bound: int | None) -> z3.CheckSatResult | None:
        if deadline is not None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0.01:
                return None
            solver.set("timeout", max(1, int(remaining * 1000)))
        c0 = time.perf_counter()
        if bound is None:
            answer = solver.check()
        else:
            lit = z3.Bool(f"latency<={bound}")
            solver.add(z3.Implies(lit, var["latency"] <= bound))
            answer = solver.check(lit)
        checks.append({"bound": bound, "answer": str(answer), "seconds": time.perf_counter() - c0})
        return None if answer == z3.unknown else answer

    answer = check(None)
    stats: dict[str, Any] = {"checks": checks}
    if answer is None:
        reason = solver.reason_unknown()
        limit_hit = deadline is not None and (time.perf_counter() >= deadline - 0.05 or "timeout" in reason
                                              or "canceled" in reason)
        return PeriodResult(status=Status.TIMEOUT if limit_hit else Status.UNKNOWN,
                            wall_time_s=time.perf_counter() - t0, backend="z3", stats=stats)
    if answer == z3.unsat:
        return PeriodResult(status=Status.INFEASIBLE, wall_time_s=time.perf_counter() - t0, backend="z3", stats=stats)
    best = _read(solver.model(), problem, var, options.period)
    if options.objective == "feasibility":
        return PeriodResult(status=Status.OPTIMAL, repetend=best, latency=best.latency(),
                            wall_time_s=time.perf_counter() - t0, backend="z3", stats=stats)
    lower = critical_path(problem.with_(num_microbatches=1))
    status = Status.OPTIMAL
    while lower < best.latency():
        mid = (lower + best.latency() - 1) // 2
        answer = check(mid)
        if answer is None:
            status = Status.FEASIBLE
            break
        if answer == z3.sat:
            best = _read(solver.model(), problem, var, options.period)
        else:
            lower = mid + 1
    return PeriodResult(
        status=status,
        repetend=best,
        latency=best.latency(),
        latency_bound=min(lower, best.latency()),
        wall_time_s=time.perf_counter() - t0,
        backend="z3",
        stats=stats,
    )
