"""Every OPTIMAL and every lower bound against the brute-force oracle.

The oracle (:mod:`schedsearch.testing.oracle`) shares no code with the
encoders, ``encode/structure.py`` or ``bounds/``; the problems
(:func:`schedsearch.testing.strategies.problems`) cover every feature of the
model and their intersections. For each problem: both backends, cold and
warm-started from the oracle's plan, with and without the redundant
constraints; the analytic bound and the best bound; no exception.

Problems per run: 200 in the ``ci`` profile, 5,000 in ``thorough``
(``HYPOTHESIS_PROFILE=thorough``); and the pipelines of the placement
builders up to 16 task instances (1F1B, zero bubble, interleaved, V,
Chimera, DualPipe and DualPipeV with their groups, Tessel's shapes): 100 and
2,000.

The memory level (below): the constructor's refusals
(:meth:`~schedsearch.problem.Problem.memory_refusal`), every ``pareto``
point, every ``min_memory`` answer and both orders of ``solve``'s levels
against the oracle's least peaks and exact front
(:func:`~schedsearch.testing.oracle.least_peak`,
:func:`~schedsearch.testing.oracle.exact_front`), with peaks recomputed
from the semantics by brute force; on random DAGs with frees that may come
before allocations, initial memory 0..2 and tight capacities, and on
pipelines: 40 and 30 problems in ``ci``, 1,000 and 500 in ``thorough``.
``pytest -s`` prints what was checked.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schedsearch import Block, Cluster, Device, Graph, Problem
from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.bounds.schedule_bounds import lower_bound
from schedsearch.errors import InvalidProblemError
from schedsearch.result import Status
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import objective_value
from schedsearch.search import min_memory, optimal, pareto, solve
from schedsearch.testing.oracle import OracleTooLarge, exact_front, exact_optimum, least_peak
from schedsearch.testing.strategies import pipeline_problems, problems
from schedsearch.validate import validate

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES = {"thorough": 5000, "dev": 50}.get(PROFILE, 200)
PIPELINE_EXAMPLES = {"thorough": 2000, "dev": 20}.get(PROFILE, 100)
LIMIT = dict(time_limit_s=30, seed=0, workers=1)


def assert_claims_agree(problem, truth, result, what):
    """A result's claims against the true optimum ``truth`` (None = infeasible)."""
    if truth is None:
        assert result.status in (Status.INFEASIBLE, Status.TIMEOUT, Status.UNKNOWN), f"{what}: {result}"
        assert result.schedule is None, what
        return
    assert result.status is not Status.INFEASIBLE, f"{what}: INFEASIBLE, but the oracle has {truth}"
    if result.lower_bound is not None:
        assert result.lower_bound <= truth, f"{what}: bound {result.lower_bound} > optimum {truth}"
    if result.schedule is not None:
        assert not validate(problem, result.schedule), what
        assert result.objective == objective_value(result.schedule, problem.objective), what
        assert result.objective >= truth, f"{what}: objective {result.objective} < optimum {truth}"
    if result.status is Status.OPTIMAL:
        assert result.objective == truth, f"{what}: OPTIMAL {result.objective}, the optimum is {truth}"


def oracle_with_sound_bounds(problem, **limits):
    """The oracle's answer (the example is skipped when it is too large for it), its
    plan checked, and the analytic and best bounds checked against it."""
    try:
        oracle = exact_optimum(problem, **limits)
    except OracleTooLarge:
        assume(False)
    truth = oracle.value
    if oracle.schedule is not None:
        assert not validate(problem, oracle.schedule)
        assert objective_value(oracle.schedule, problem.objective) == truth
    if truth is not None:
        assert objective_lower_bound(problem).value <= truth
        if problem.objective == "makespan":
            assert lower_bound(problem).value <= truth
    return oracle


@settings(max_examples=EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(problems())
def test_every_claim_agrees_with_the_oracle(problem):
    oracle = oracle_with_sound_bounds(problem)
    truth = oracle.value
    for backend in ("cpsat", "z3"):
        result = optimal(problem, backend=backend, **LIMIT)
        assert_claims_agree(problem, truth, result, f"{backend} cold")
        if truth is not None:
            assert result.status is Status.OPTIMAL, f"{backend}: {result} on a tiny problem"
            warm = optimal(problem, backend=backend, warm_start=oracle.schedule, **LIMIT)
            assert_claims_agree(problem, truth, warm, f"{backend} warm")
            assert warm.status is Status.OPTIMAL
    plain = optimal(problem, backend="cpsat", redundant=False, symmetry_breaking=False, **LIMIT)
    assert_claims_agree(problem, truth, plain, "cpsat without pruning")


@settings(max_examples=PIPELINE_EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(pipeline_problems(max_tasks=16, max_microbatches=3))
def test_pipeline_claims_agree_with_the_oracle(problem):
    truth = oracle_with_sound_bounds(problem, max_tasks=16, node_limit=300_000).value
    for backend in ("cpsat", "z3"):
        result = optimal(problem, backend=backend, **LIMIT)
        assert_claims_agree(problem, truth, result, f"{backend} cold")


# --------------------------------------------------------------------------
# The memory level: the constructor's refusals, pareto, min_memory and both
# orders of solve's levels against the oracle's least peaks and exact front
# --------------------------------------------------------------------------

MEMORY_EXAMPLES = {"thorough": 1000, "dev": 20}.get(PROFILE, 40)
PIPELINE_MEMORY_EXAMPLES = {"thorough": 500, "dev": 10}.get(PROFILE, 30)
MEMORY_ORACLE = dict(max_tasks=8, node_limit=200_000)
#: what the memory campaign checked (printed at the end of the module with ``-s``)
TALLY = Counter()


@pytest.fixture(scope="module", autouse=True)
def _memory_tally():
    yield
    if TALLY:
        print(f"\nmemory campaign ({PROFILE}): " + ", ".join(f"{k} {v}" for k, v in sorted(TALLY.items())))


def claim(ok, what):
    """One claim of the library checked against the oracle."""
    TALLY["claims checked"] += 1
    assert ok, what


def levels_by_brute_force(problem, schedule):
    """Per device, the highest memory level at any instant, initial memory included, from the
    semantics alone (every instant a task starts, each task counted afresh)."""
    blocks = problem.graph.by_name()
    peaks = {}
    for d in problem.cluster.device_names:
        on = [t for t in schedule.tasks if d in t.devices]
        level = problem.initial_memory_of(d)
        peak = level
        for u in {t.start for t in on}:
            here = level + sum(blocks[t.block].memory for t in on if t.start <= u)
            here += sum(blocks[t.block].workspace for t in on if t.start <= u < t.end)
            peak = max(peak, here)
        peaks[d] = peak
    return peaks


def uniform(problem, capacity, cap_existing=False):
    out = {}
    for d in problem.cluster.device_names:
        own = problem.capacity(d)
        out[d] = own if cap_existing and own is not None and (capacity is None or own < capacity) else capacity
    return out


def least_time(problem, capacity, objective, cap_existing=False):
    return exact_optimum(problem, objective=objective, capacities=uniform(problem, capacity, cap_existing),
                         **MEMORY_ORACLE).value


@st.composite
def memory_problems(draw, base=problems(max_tasks=6)):
    """A problem of ``base`` (default: random DAGs of :func:`problems`, deltas -2..2 with frees that may
    come before allocations, every feature) with initial memory 0..2, unbounded, and capacities to try
    drawn from the initial memory up to it plus the largest need of one block, so that some blocks fit
    only after a free."""
    problem = draw(base)
    initial = {d: draw(st.integers(0, 2)) for d in problem.cluster.device_names}
    free = Cluster(devices=[Device(name=d) for d in problem.cluster.device_names], channels=problem.cluster.channels)
    unbounded = problem.with_(initial_memory={d: v for d, v in initial.items() if v}, cluster=free)
    caps = {}
    for d in problem.cluster.device_names:
        need = max((max(b.memory, 0) + b.workspace for b in problem.graph.blocks if d in b.devices), default=0)
        caps[d] = None if draw(st.integers(0, 3)) == 0 else initial[d] + draw(st.integers(0, need))
    return unbounded, caps


def check_front(problem, objective):
    """Every point of ``pareto`` against the exact front (the problem's own capacities are ignored)."""
    front = exact_front(problem, objective=objective, **MEMORY_ORACLE)
    TALLY["pareto problems"] += 1
    TALLY["front points"] += len(front)
    result = pareto(problem, (objective, "peak_memory"), **LIMIT)
    for point in result:
        what = f"pareto point ({point.objective}, {point.peak_memory}) {point.how}; front {front}"
        TALLY["pareto points"] += 1
        claim(not validate(point.problem, point.schedule), what)
        peaks = levels_by_brute_force(problem, point.schedule)
        claim(dict(point.peak_per_device) == peaks and point.peak_memory == max(peaks.values()), what)
        claim(point.objective == objective_value(point.schedule, objective), what)
        claim(any(t <= point.objective and p <= point.peak_memory for t, p in front), what)
        truth = least_time(problem, point.capacity, objective)
        if point.lower_bound is not None:
            claim(point.lower_bound <= truth, f"{what}: bound {point.lower_bound} > {truth}")
        if point.status is Status.OPTIMAL:
            claim(point.objective == truth, f"{what}: OPTIMAL under {point.capacity}, the optimum is {truth}")
        if point.proven:
            claim((point.objective, point.peak_memory) in front, what)
    settled = result.stop_reason in ("infeasible", "peak memory 0") or result.stop_reason.startswith("capacity")
    if settled and all(point.proven for point in result):
        claim(tuple((p.objective, p.peak_memory) for p in result) == front, f"{list(result)} != {front}")
    return front


def check_min_memory(problem, target):
    truth = least_peak(problem, target, objective="makespan", **MEMORY_ORACLE)
    walk = min_memory(problem, target, **LIMIT)
    what = f"min_memory({target}) = {walk.objective} {walk.status.value} ({walk.bound_engine}); least peak {truth}"
    TALLY["min_memory answers"] += 1
    if walk.status is Status.INFEASIBLE:
        claim(truth is None, what)
    if walk.schedule is not None:
        claim(not validate(walk.problem, walk.schedule) and walk.schedule.makespan <= target, what)
        claim(max(levels_by_brute_force(problem, walk.schedule).values()) == walk.objective, what)
        claim(truth is not None and walk.objective >= truth, what)
    if walk.lower_bound is not None:
        claim(truth is not None and walk.lower_bound <= truth, what)
    if walk.status is Status.OPTIMAL:
        claim(walk.objective == truth, what)


def check_solve(problem, names):
    """Both levels of ``solve(objective=names)`` against the oracle (the problem's own capacities apply)."""
    result = solve(problem, objective=names, **LIMIT)
    TALLY[f"solve {'/'.join(names)}"] += 1
    time_name = names[0] if names[0] != "peak_memory" else names[1]
    feasible = exact_optimum(problem, objective=time_name, **MEMORY_ORACLE).value is not None
    what = f"solve{names}: {result}"
    if not feasible:
        claim(result.schedule is None and result.status is not Status.OPTIMAL, what)
        return
    claim(result.status is not Status.INFEASIBLE, what)
    if result.schedule is None:
        return
    claim(not validate(problem, result.schedule), what)
    peak = max(levels_by_brute_force(problem, result.schedule).values())
    value = {"peak_memory": peak, time_name: objective_value(result.schedule, time_name)}
    levels = {level.name: level for level in result.levels}
    for level in result.levels:
        claim(level.value == value[level.name], f"{what}: {level.name} {level.value} != {value[level.name]}")
    if names[0] == "peak_memory":
        truths = {"peak_memory": least_peak(problem, objective=time_name, cap_existing=True, **MEMORY_ORACLE)}
        truths[time_name] = least_time(problem, levels["peak_memory"].value, time_name, cap_existing=True)
    else:
        truths = {time_name: exact_optimum(problem, objective=time_name, **MEMORY_ORACLE).value}
        truths["peak_memory"] = least_peak(problem, levels[time_name].value, objective=time_name, cap_existing=True,
                                           **MEMORY_ORACLE)
    for level in result.levels:
        truth = truths[level.name]
        claim(level.value >= truth, f"{what}: {level.name} {level.value} < the least {truth}")
        if level.bound is not None:
            claim(level.bound <= truth, f"{what}: {level.name} bound {level.bound} > the least {truth}")
        if level.proven:
            claim(level.value == truth, f"{what}: {level.name} proven {level.value}, the least is {truth}")


SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@settings(max_examples=MEMORY_EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=SLOW_OK)
@given(memory_problems(), st.data())
def test_memory_claims_agree_with_the_oracle(drawn, data):
    check_memory_claims(*drawn, data)


@settings(max_examples=PIPELINE_MEMORY_EXAMPLES, deadline=None, derandomize=PROFILE != "thorough",
          suppress_health_check=SLOW_OK)
@given(memory_problems(pipeline_problems(max_tasks=8, max_microbatches=3)), st.data())
def test_pipeline_memory_claims_agree_with_the_oracle(drawn, data):
    check_memory_claims(*drawn, data)


def check_memory_claims(problem, caps, data):
    """Every claim of the memory level on one problem (skipped when too large for the oracle)."""
    assume(len(problem.tasks) <= MEMORY_ORACLE["max_tasks"])
    try:
        memory_claims(problem, caps, data)
    except OracleTooLarge:
        assume(False)


def memory_claims(problem, caps, data):
    TALLY["problems"] += 1
    # the constructor refuses only what no order fits
    refusal = problem.memory_refusal(caps)
    if refusal is not None:
        TALLY["refusals"] += 1
        claim(exact_optimum(problem, capacities=caps, **MEMORY_ORACLE).value is None, f"refused: {refusal}")
        with pytest.raises(InvalidProblemError):
            with_capacities(problem, caps)
    # the time-memory front, with the problem's time objective
    front = check_front(problem, problem.objective)
    # the least capacity for the least makespan, and for a target between two points of the makespan front
    fronts = front if problem.objective == "makespan" else exact_front(problem, **MEMORY_ORACLE)
    times = sorted({t for t, _ in fronts})
    target = data.draw(st.integers(times[0] - 1, times[-1] + 1)) if times else 1
    for t in {times[0] if times else 1, target}:
        check_min_memory(problem, t)
    # under the drawn capacities: the encoders and the bounds, then both orders of solve's levels
    if refusal is None:
        capped = with_capacities(problem, caps)
        truth = exact_optimum(capped, **MEMORY_ORACLE).value
        if truth is not None:
            claim(objective_lower_bound(capped).value <= truth, "analytic bound")
            if capped.objective == "makespan":
                claim(lower_bound(capped).value <= truth, "best bound")
        for backend in ("cpsat", "z3"):
            result = optimal(capped, backend=backend, **LIMIT)
            TALLY[f"optimal {backend}"] += 1
            TALLY["claims checked"] += 1
            assert_claims_agree(capped, truth, result, f"{backend} under tight capacities")
        check_solve(capped, ("makespan", "peak_memory"))
        check_solve(capped, ("peak_memory", "makespan"))


def test_the_memory_campaign_checks_the_findings():
    """The findings that opened this campaign: a free before an allocation under initial memory."""
    problem = Problem(graph=Graph(blocks=[Block(name="b0", options=[("d0", 1)], memory=1),
                                          Block(name="b1", options=[("d0", 1)], memory=-1)]),
                      num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=4)]),
                      initial_memory={"d0": 2})
    # order b1, b0: levels 2, 1, 2 at makespan 2
    assert least_peak(problem, 2, **MEMORY_ORACLE) == 2
    assert problem.memory_refusal({"d0": 2}) is None
    assert check_front(problem, "makespan") == ((2, 2),)
    check_min_memory(problem, 3)
    check_solve(problem, ("makespan", "peak_memory"))
    check_solve(problem, ("peak_memory", "makespan"))
    # a free at time 0 under initial memory 1: the peak is the initial memory, never below it
    frees = problem.with_(graph=Graph(blocks=[Block(name="b0", options=[("d0", 1)], memory=-1)]),
                          initial_memory={"d0": 1})
    check_solve(frees, ("makespan", "peak_memory"))
    check_solve(frees, ("peak_memory", "makespan"))
