"""plan()'s milliseconds are the user's: checked against a plain CP-SAT model of the unrounded pipeline.

The oracle shares no code with the planner: it scales every time (given
in thousandths of a millisecond) to an exact integer, models the 1F1B
family's pipeline directly in CP-SAT (one stage per rank, activations
held from the forward's start to the end of the backward or weight
gradient, parameters held throughout, the budget in bytes) and gives the
true optimum in ms. Every row of the table must satisfy
``bound_ms <= optimum <= makespan_ms``, and the best plan's makespan must
equal an independent as-soon-as-possible re-timing of its order.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from schedsearch.result import Status
from schedsearch.plan.outcome import Reason
import schedsearch
from schedsearch import Pipeline


def oracle_optimum_ms(stages: list[dict], m: int, budget: int | None, split: bool) -> Fraction:
    """The least makespan (ms) of the pipeline, one stage per rank, times in thousandths of a ms."""
    P = len(stages)
    k = lambda ms: int(round(ms * 1000))  # noqa: E731  (the test draws whole thousandths)
    horizon = sum(k(s["forward_ms"]) + k(s["backward_ms"]) + k(s.get("input_grad_ms", 0)) +
                  k(s.get("weight_grad_ms", 0)) for s in stages) * m
    model = cp_model.CpModel()
    ends = []

    def task(dur: int):
        start = model.new_int_var(0, horizon, "")
        end = model.new_int_var(0, horizon, "")
        iv = model.new_interval_var(start, dur, end, "")
        ends.append(end)
        return start, end, iv

    F, Bk, last = {}, {}, {}
    per_rank: dict[int, list] = {s: [] for s in range(P)}
    for s, st_ in enumerate(stages):
        for j in range(m):
            F[s, j] = task(k(st_["forward_ms"]))
            if split:
                Bk[s, j] = task(k(st_["input_grad_ms"]))
                w = task(k(st_["weight_grad_ms"]))
                model.add(w[0] >= Bk[s, j][1])
                per_rank[s] += [F[s, j][2], Bk[s, j][2], w[2]]
                last[s, j] = w[1]
            else:
                Bk[s, j] = task(k(st_["backward_ms"]))
                per_rank[s] += [F[s, j][2], Bk[s, j][2]]
                last[s, j] = Bk[s, j][1]
    for j in range(m):
        for s in range(P):
            if s > 0:
                model.add(F[s, j][0] >= F[s - 1, j][1])
            model.add(Bk[s, j][0] >= (Bk[s + 1, j][1] if s < P - 1 else F[s, j][1]))
    for s in range(P):
        model.add_no_overlap(per_rank[s])
        if budget is not None:
            held = []
            for j in range(m):
                size = model.new_int_var(0, horizon, "")
                held.append(model.new_interval_var(F[s, j][0], size, last[s, j], ""))
            model.add_cumulative(held, [stages[s]["activation_bytes"]] * m, budget - stages[s]["parameter_bytes"])
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, ends)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    assert solver.solve(model) == cp_model.OPTIMAL
    return Fraction(int(solver.objective_value), 1000)


def retime_ms(result) -> Fraction:
    """The best plan's order, every task (overlapped group) and transfer started as soon as possible with its
    real time: a fixed point over the dependencies, each device's and each channel's sequence."""
    problem, schedule, stages, pipeline = result.problem, result.schedule, result.stages, result.pipeline
    field = {"F": "forward_ms", "B": "backward_ms", "I": "input_grad_ms", "W": "weight_grad_ms"}

    def real(block: str) -> Fraction:
        return Fraction(repr(getattr(stages[problem.graph.block(block).stage], field[block[0]])))

    node = {t.key: (t.overlap, frozenset(t.devices), t.start) if t.overlap else t.key for t in schedule.tasks}
    dur: dict = {}
    for t in schedule.tasks:
        if t.overlap is None:
            dur[t.key] = real(t.block)
        else:  # a group lasts its own time or its longest member's
            own = Fraction(repr(pipeline.fb_overlap_ms)) if t.overlap == "F&B" else Fraction(repr(
                stages[problem.graph.block(t.block).stage].backward_ms))
            dur[node[t.key]] = max(dur.get(node[t.key], own), real(t.block))
    hop = {tr.key: Fraction(repr(pipeline.p2p.time_ms)) for tr in schedule.transfers}
    dur.update(hop)
    before: dict = {key: set() for key in dur}
    for e in problem.graph.edges:
        for j in range(problem.num_microbatches):
            u, v = node[(e.src, j)], node[(e.dst, j)]
            if (e.src, e.dst, j) in hop:
                before[(e.src, e.dst, j)].add(u)
                before[v].add((e.src, e.dst, j))
            elif u != v:
                before[v].add(u)
    for d in schedule.devices:
        seq = sorted({(t.start, node[t.key]) for t in schedule.on_device(d)}, key=lambda x: x[0])
        for (_, a), (_, b) in zip(seq, seq[1:]):
            before[b].add(a)
    channels: dict = {}
    for tr in schedule.transfers:
        channels.setdefault(tr.channel, []).append(tr)
    for trs in channels.values():
        trs.sort(key=lambda tr: tr.start)
        for a, b in zip(trs, trs[1:]):
            before[b.key].add(a.key)
    start = {key: Fraction(0) for key in dur}
    changed = True
    while changed:
        changed = False
        for key, preds in before.items():
            s = max((start[p] + dur[p] for p in preds), default=Fraction(0))
            if s > start[key]:
                start[key], changed = s, True
    return max(start[key] + dur[key] for key in dur)


thousandths = st.integers(200, 3000).map(lambda k: k / 1000)


@st.composite
def pipelines(draw):
    P = draw(st.integers(2, 3))
    split = draw(st.booleans())
    stages = []
    for _ in range(P):
        s = {"forward_ms": draw(thousandths), "backward_ms": draw(thousandths),
             "activation_bytes": draw(st.sampled_from([2**20, 3 * 2**20, 1_000_003])),
             "parameter_bytes": draw(st.sampled_from([0, 2**20, 5_000_011]))}
        if split:
            s.update(input_grad_ms=draw(thousandths), weight_grad_ms=draw(thousandths))
        stages.append(s)
    m = draw(st.integers(2, 4))
    budget = draw(st.sampled_from([None, 2, 3]))
    if budget is not None:  # room for the parameters and `budget` activations of the largest stage
        budget = max(s["parameter_bytes"] for s in stages) + budget * max(s["activation_bytes"] for s in stages)
    return stages, m, budget, split, draw(st.sampled_from([0.01, 0.05, 0.2]))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines())
def test_every_figure_in_ms_holds_for_the_unrounded_pipeline(case):
    stages, m, budget, split, tolerance = case
    pipeline = Pipeline(num_ranks=len(stages), num_microbatches=m, memory_budget_bytes=budget, families=["1f1b"],
                        stages=stages, time_tolerance=tolerance)
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    for row in result.rows:
        if row.reason is not None and row.reason.left_out:
            continue
        optimum = oracle_optimum_ms(stages, m, budget, split=row.family == "ZB-H1")
        if row.bound_ms is not None:
            assert Fraction(row.bound_ms) <= optimum, (row.family, row.bound_ms, optimum)
        if row.makespan_ms is not None:
            assert optimum <= Fraction(row.makespan_ms) * (1 + Fraction(1, 10**12)), (row.family, optimum)
        if row.makespan_proven:
            assert row.bound_ms == pytest.approx(row.makespan_ms, rel=1e-12)
    assert result.best.makespan_ms == float(retime_ms(result))


def test_the_bound_is_the_real_one_when_times_round_up():
    # 0.995 and 1.99 ms on a 0.5 ms unit: the integer problem says 15 ms; the real optimum is 14.925 ms
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"],
                        stages=[{"forward_ms": 0.995, "backward_ms": 1.99}] * 2)
    row = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True).rows[0]
    assert row.family == "1F1B" and row.makespan_proven
    assert row.makespan_ms == pytest.approx(14.925) and row.bound_ms <= 14.925
    assert Fraction(row.bound_ms) <= oracle_optimum_ms([{"forward_ms": 0.995, "backward_ms": 1.99}] * 2, 4, None,
                                                       split=False)


def test_a_zero_weight_gradient_is_not_rounded_up():
    stage = {"forward_ms": 10.0, "backward_ms": 20.0, "input_grad_ms": 10.0, "weight_grad_ms": 0.0}
    result = schedsearch.plan(Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[stage] * 2),
                              time_limit_s=20, parallel=1, deterministic=True)
    rows = {r.family: r for r in result.rows}
    assert rows["ZB-H1"].reason is Reason.SHAPE and "weight_grad_ms = 0" in rows["ZB-H1"].note
    assert rows["1F1B"].makespan_ms == 150.0 and result.units.max_time_error == 0.0


def test_transfers_are_retimed_with_their_real_time():
    stages = [{"forward_ms": 1.013, "backward_ms": 2.0, "activation_bytes": 2**20}] * 3
    pipeline = Pipeline(num_ranks=3, num_microbatches=3, families=["1f1b"], stages=stages,
                        p2p={"time_ms": 0.0304}, time_tolerance=0.2)
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True)
    assert result.schedule.transfers
    assert result.best.makespan_ms == float(retime_ms(result))
    assert result.best.bound_ms <= result.best.makespan_ms


@pytest.mark.parametrize("family", ["dualpipev", "dualpipe", "zb-v", "interleaved"])
def test_overlapped_groups_and_transfers_are_retimed_with_their_real_time(family):
    layers = [{"forward_ms": f, "backward_ms": round(i + w, 3), "input_grad_ms": i, "weight_grad_ms": w}
              for f, i, w in [(1.013, 0.987, 1.021), (0.991, 1.003, 0.979), (1.007, 1.019, 0.995),
                              (0.983, 0.996, 1.012)]]
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, families=[family], stages=layers, partition="dp",
                        fb_overlap_ms=2.203, p2p={"time_ms": 0.0513}, time_tolerance=0.1)
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True, runtime="any")
    assert result.best.makespan_ms == float(retime_ms(result))
    assert result.best.bound_ms <= result.best.makespan_ms
    if family.startswith("dualpipe"):
        assert any(t.overlap for t in result.schedule.tasks)


class TimesOut:
    """An executor whose every search is stopped before it returns."""

    name = "stopped"
    workers = 1

    def run(self, fn, tasks, timeout_s=None):
        from schedsearch.executors import TaskOutcome, TaskStatus

        return [TaskOutcome(status=TaskStatus.TIMEOUT, error="stopped at the time limit") for _ in tasks]


def test_the_fitting_handcrafted_plan_is_returned_when_no_search_returns():
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    pipeline = Pipeline(num_ranks=2, num_microbatches=6, memory_budget_bytes="4 GiB", families=["1f1b"],
                        stages=[stage] * 2)
    result = schedsearch.plan(pipeline, time_limit_s=5, executor=TimesOut())
    assert result.best.family == "1F1B" and result.best.status is Status.FEASIBLE
    assert result.best.makespan_ms == 21.0 == float(retime_ms(result))  # (m + p - 1)(F + B)
    assert "the plan is 1F1B's" in result.best.note
    assert not schedsearch.validate(result.problem, result.schedule)
    # a budget the handcrafted plan does not fit: nothing to return, a named error
    with pytest.raises(schedsearch.errors.NoFittingPlanError, match="no candidate has a plan"):
        schedsearch.plan(attrs.evolve(pipeline, memory_budget_bytes="2.5 GiB"), time_limit_s=5, executor=TimesOut())


@pytest.mark.parametrize("families, p2p", [
    (["1f1b"], None), (["1f1b"], {"time_ms": 1.0}), (["interleaved"], None), (["interleaved"], {"time_ms": 1.0}),
    (["zb-v"], {"time_ms": 1.0}),
])
def test_a_published_schedule_with_exact_times_reads_its_own_times_in_ms(families, p2p):
    # the shortcut plan() takes for a published schedule when every time is exact: its makespan in units
    # times the unit equals the as-soon-as-possible re-timing of its order with the real times
    from schedsearch.plan.planner import _handcrafted, _prepare
    from schedsearch.plan.times import retime_ms

    stage = {"forward_ms": 2.0, "backward_ms": 4.0, "input_grad_ms": 2.0, "weight_grad_ms": 2.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB", "send_bytes": "1 MiB"}
    extra = {"p2p": p2p} if p2p else {}
    num_stages = 4 if families == ["1f1b"] else 8
    pipeline = Pipeline(num_ranks=4, num_microbatches=8, families=families, stages=[stage] * num_stages, **extra)
    prepared = _prepare(pipeline, time_limit_s=10, parallel=1, deterministic=False, seed=0)
    checked = 0
    for task in prepared.tasks:
        times = task.times
        try:
            hand = _handcrafted(task.candidate, times.problem)
        except Exception:
            continue  # the published schedule does not apply to this candidate
        assert times.exact()  # whole milliseconds on a unit that divides them
        assert retime_ms(hand, times) == Fraction(hand.makespan) * times.unit_ms
        checked += 1
    assert checked
