"""The memory-area bound against exact optima from an oracle of its own.

The oracle is a CP-SAT model written here from the problem's definition
(options, dependencies, releases, per-micro-batch durations, memory deltas at
start and workspace over the run, capacity minus initial memory), sharing
no code with the library's encoders or bounds. Problems carry no
transfers (no channels, edges of size 0), which the oracle does not model.
Every bound :func:`memory_area_bounds` claims must be at most the proven
optimum.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from schedsearch import Block, Cluster, Device, Graph, Problem
from schedsearch.bounds import memory_area_bounds
from schedsearch.errors import InvalidProblemError
from schedsearch.placements import chain_pipelines, interleaved, vshape
from schedsearch.problem import Release

cp_model = pytest.importorskip("ortools.sat.python.cp_model")


def exact_makespan(problem: Problem, time_limit_s: float = 5.0) -> int | None:
    """The proven least makespan, or None when not proven (or infeasible)."""
    assert not problem.overlaps and not problem.fixed_orders and not problem.cluster.channels
    m = cp_model.CpModel()
    n = problem.num_microbatches
    horizon = sum(max(problem.durations(b.name, k)) for b in problem.graph.blocks for k in range(n))
    horizon += max([r.time for r in problem.releases], default=0)
    start, end = {}, {}
    on_device: dict[str, list] = {d: [] for d in problem.cluster.device_names}
    events: dict[str, list] = {d: [] for d in problem.cluster.device_names}
    for k in range(n):
        for b in problem.graph.blocks:
            s = m.new_int_var(problem.release_of(b.name, k), horizon, f"s{b.name},{k}")
            e = m.new_int_var(0, horizon, f"e{b.name},{k}")
            start[b.name, k], end[b.name, k] = s, e
            durs = problem.durations(b.name, k)
            chosen = [m.new_bool_var(f"x{b.name},{k},{i}") for i in range(len(durs))]
            m.add_exactly_one(chosen)
            for x, opt, dur in zip(chosen, b.options, durs):
                m.add(e == s + dur).only_enforce_if(x)
                iv = m.new_optional_interval_var(s, dur, e, x, f"i{b.name},{k}")
                for d in opt.devices:
                    on_device[d].append(iv)
                    if b.memory + b.workspace:
                        events[d].append((s, b.memory + b.workspace, x))
                    if b.workspace:
                        events[d].append((e, -b.workspace, x))
    for k in range(n):
        for edge in problem.graph.edges:
            assert edge.size == 0
            m.add(start[edge.dst, k] >= end[edge.src, k])
    for d, ivs in on_device.items():
        m.add_no_overlap(ivs)
        cap = problem.capacity(d)
        if cap is not None and events[d]:
            room = cap - problem.initial_memory_of(d)
            if room < 0:
                return None
            low = -sum(abs(delta) for _, delta, _ in events[d])
            m.add_reservoir_constraint_with_active(
                [t for t, _, _ in events[d]], [delta for _, delta, _ in events[d]], [a for _, _, a in events[d]],
                min(low, 0), room)
    makespan = m.new_int_var(0, horizon, "makespan")
    m.add_max_equality(makespan, list(end.values()))
    m.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = 1
    status = solver.solve(m)
    if status != cp_model.OPTIMAL:
        return None
    return int(solver.objective_value)


def check(problem: Problem) -> tuple[dict[str, int], int | None]:
    bounds = memory_area_bounds(problem)
    if not bounds:
        return bounds, None
    opt = exact_makespan(problem)
    if opt is not None:
        for d, lb in bounds.items():
            assert lb <= opt, f"{problem.name}: memory-area bound {lb} on {d} exceeds the optimum {opt}"
    return bounds, opt


def _problem_or_reject(**fields) -> Problem:
    """The problem of ``fields``, or the example rejected when the model refuses it."""
    try:
        return Problem(**fields)
    except InvalidProblemError:
        reject()


@st.composite
def hand_built(draw) -> Problem:
    """Small problems of odd shapes: frees before allocations, several options, releases, workspace."""
    num_devices = draw(st.integers(1, 3))
    devices = [f"d{i}" for i in range(num_devices)]
    num_blocks = draw(st.integers(2, 5))
    blocks = []
    for i in range(num_blocks):
        if draw(st.integers(0, 3)) == 0:
            opts = draw(st.lists(st.tuples(st.sampled_from(devices), st.integers(1, 4)), min_size=1, max_size=2,
                                 unique_by=lambda o: o[0]))
        else:
            opts = [(draw(st.sampled_from(devices)), draw(st.integers(1, 4)))]
        blocks.append(Block(name=f"b{i}", options=opts, memory=draw(st.integers(-3, 3)),
                            workspace=draw(st.sampled_from([0, 0, 1, 2]))))
    edges = draw(st.lists(st.tuples(st.integers(0, num_blocks - 1), st.integers(0, num_blocks - 1))
                          .filter(lambda e: e[0] < e[1]), max_size=6, unique=True))
    n = draw(st.integers(1, 3))
    caps = [draw(st.one_of(st.none(), st.integers(1, 6))) for _ in devices]
    initial = [(d, draw(st.integers(0, 2))) for d in devices if draw(st.booleans())]
    releases = []
    overrides = []
    if draw(st.booleans()):
        releases = [(f"b{draw(st.integers(0, num_blocks - 1))}", draw(st.integers(0, n - 1)), draw(st.integers(0, 5)))]
    if draw(st.booleans()):
        b = draw(st.integers(0, num_blocks - 1))
        overrides = [(f"b{b}", draw(st.integers(0, n - 1)),
                      tuple(draw(st.integers(1, 5)) for _ in blocks[b].options))]
    return _problem_or_reject(
        graph=Graph(blocks=blocks, edges=[(f"b{a}", f"b{b}") for a, b in edges]), num_microbatches=n,
        cluster=Cluster(devices=[Device(name=d, memory=c) for d, c in zip(devices, caps)]), initial_memory=initial,
        releases=[Release(block=b, microbatch=m, time=t) for b, m, t in releases], duration_overrides=overrides,
        name="hand-built")


@given(hand_built())
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_hand_built_bounds_at_most_the_optimum(problem):
    check(problem)


@st.composite
def alloc_then_free(draw) -> Problem:
    """Allocations on a capped device, frees after them (directly or through blocks elsewhere, some with
    several options), zero-delta and early-free blocks mixed in: the shapes the bound claims on."""
    num_devices = draw(st.integers(1, 3))
    devices = [f"d{i}" for i in range(num_devices)]
    blocks: list[Block] = []
    allocs = draw(st.integers(1, 3))
    for i in range(allocs):
        blocks.append(Block(name=f"a{i}", options=[("d0", draw(st.integers(1, 4)))], memory=draw(st.integers(1, 3)),
                            workspace=draw(st.sampled_from([0, 0, 1]))))
    for i in range(draw(st.integers(0, 2))):
        if num_devices > 1 and draw(st.booleans()):
            opts = draw(st.lists(st.tuples(st.sampled_from(devices[1:]), st.integers(1, 4)), min_size=1, max_size=2,
                                 unique_by=lambda o: o[0]))
        else:
            opts = [(draw(st.sampled_from(devices)), draw(st.integers(1, 4)))]
        on_d0 = any(d == "d0" for d, _ in opts)
        blocks.append(Block(name=f"m{i}", options=opts, memory=draw(st.integers(-2, 2)) if on_d0 else 0))
    for i in range(draw(st.integers(1, 3))):
        blocks.append(Block(name=f"f{i}", options=[("d0", draw(st.integers(1, 4)))], memory=-draw(st.integers(1, 3)),
                            workspace=draw(st.sampled_from([0, 0, 1, 2]))))
    names = [b.name for b in blocks]
    edges = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if draw(st.integers(0, 2)) > 0]
    n = draw(st.integers(1, 3))
    cap = draw(st.integers(1, 6))
    initial = draw(st.integers(0, 2))
    releases = []
    if draw(st.integers(0, 3)) == 0:
        releases = [Release(block=draw(st.sampled_from(names)), microbatch=draw(st.integers(0, n - 1)),
                            time=draw(st.integers(0, 5)))]
    overrides = []
    if draw(st.integers(0, 3)) == 0:
        b = draw(st.sampled_from(blocks))
        overrides = [(b.name, draw(st.integers(0, n - 1)), tuple(draw(st.integers(1, 5)) for _ in b.options))]
    return _problem_or_reject(
        graph=Graph(blocks=blocks, edges=edges), num_microbatches=n,
        cluster=Cluster(devices=[Device(name=d, memory=cap if d == "d0" else None) for d in devices]),
        initial_memory=[("d0", initial)], releases=releases, duration_overrides=overrides, name="alloc-then-free")


@given(alloc_then_free())
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_alloc_then_free_bounds_at_most_the_optimum(problem):
    check(problem)


@st.composite
def placed(draw) -> Problem:
    """chain_pipelines / vshape / interleaved problems: uneven times, split backward, free at end, initial memory,
    several pipelines."""
    d = draw(st.integers(2, 3))
    n = draw(st.integers(2, 3))
    times = st.lists(st.integers(1, 3), min_size=d, max_size=d)
    kw = dict(forward=draw(times), backward=draw(times), memory=draw(st.integers(1, 4)))
    if draw(st.booleans()):
        kw.update(split_backward=True, input_grad=draw(times), weight_grad=draw(times),
                  input_grad_memory=draw(st.sampled_from([0, -1])))
    shape = draw(st.sampled_from(["vshape", "two", "interleaved"]))
    try:
        if shape == "interleaved":
            return interleaved(d, 2, n, forward=1, backward=2, memory=kw["memory"])
        if shape == "vshape":
            return vshape(d, n, forward=kw["forward"], backward=kw["backward"], memory=kw["memory"],
                          free_at_end=draw(st.booleans()))
        return chain_pipelines([list(range(d)), list(reversed(range(d)))], d, n, free_at_end=draw(st.booleans()),
                               initial_memory=draw(st.integers(0, 1)), **kw)
    except InvalidProblemError:
        reject()


@given(placed())
@settings(max_examples=8, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_placements_bounds_at_most_the_optimum(problem):
    check(problem)


@pytest.mark.slow
@given(st.one_of(placed(), alloc_then_free(), hand_built()))
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_bounds_at_most_the_optimum_many(problem):
    check(problem)


def test_oracle_agrees_with_a_worked_case():
    # two slots on d0 of a 2-stage 1F1B: the bounds hold and the oracle finds the optimum
    bounds, opt = check(vshape(2, 4, memory=2))
    assert opt == 15 and bounds["d0"] <= opt
