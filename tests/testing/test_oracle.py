"""The exact brute-force oracle: hand-derived optima, its witnesses, and a
time-indexed brute force (judged by the validator) on tiny problems."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Overlap, Problem, Release
from schedsearch.schedule import Schedule, TaskInstance, Transfer, objective_value
from schedsearch.testing.oracle import OracleResult, OracleTooLarge, exact_optimum
from schedsearch.validate import validate
from schedsearch.testing.strategies import overlap_problems, problems


def blk(name, *options, memory=0, workspace=0):
    """A block; each option is (devices, duration) with devices a tuple or one name."""
    return Block(name=name, options=[Option(devices=d, duration=t) for d, t in options],
                 memory=memory, workspace=workspace)


def problem(blocks, edges=(), n=1, devices=("d0",), channels=(), **kw) -> Problem:
    devs = [d if isinstance(d, Device) else Device(name=d) for d in devices]
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=n,
                   cluster=Cluster(devices=devs, channels=channels), **kw)


def check(p: Problem, expected: int | None, objective: str | None = None) -> OracleResult:
    """The oracle finds `expected`, and (when feasible) a valid witness reaching it."""
    r = exact_optimum(p, objective=objective)
    assert r.value == expected
    if expected is None:
        assert r.schedule is None
    else:
        assert validate(p, r.schedule) == ()
        assert objective_value(r.schedule, objective or p.objective) == expected
    assert r.nodes >= 1
    return r


# --------------------------------------------------------------------------
# Transfers and channels
# --------------------------------------------------------------------------


def test_two_transfers_use_both_channels():
    # a (d0) -> b (d1), size 2, two micro-batches. slow: 2 + 2*3 = 8, fast: 2 + 2*2 = 6.
    # a0 [0,1), a1 [1,2). Both transfers on one channel: the second ends >= 1 + 6 + 6 = 13.
    # Different channels: the one starting at 1 may be the slow one, [1,9) -> b [9,10),
    # the fast one [2,8) -> b [8,9): makespan 10. (Fast first: [1,7) and slow [2,10) -> 11.)
    p = problem([blk("a", ("d0", 1)), blk("b", ("d1", 1))], [Edge(src="a", dst="b", size=2)], n=2,
                devices=("d0", "d1"),
                channels=[Channel(name="slow", endpoints=("d0", "d1"), time_per_unit=3, latency=2),
                          Channel(name="fast", endpoints=("d0", "d1"), time_per_unit=2, latency=2)])
    r = check(p, 10)
    assert {t.channel for t in r.schedule.transfers} == {"slow", "fast"}


def test_directed_channel_serves_one_way_only():
    # a (d0) -> b (d1), size 1. 'back' (d1 -> d0 only, 1 unit) cannot carry it;
    # 'both' (undirected) takes 4: a [0,1), transfer [1,5), b [5,6) -> 6.
    p = problem([blk("a", ("d0", 1)), blk("b", ("d1", 1))], [Edge(src="a", dst="b", size=1)],
                devices=("d0", "d1"),
                channels=[Channel(name="back", endpoints=("d1", "d0"), time_per_unit=1, directed=True),
                          Channel(name="both", endpoints=("d0", "d1"), time_per_unit=4)])
    r = check(p, 6)
    assert [t.channel for t in r.schedule.transfers] == ["both"]


def test_lead_device_decides_the_channel():
    # s (d2, 1) -> t (size 1). t runs on (d0, d1) for 1 or on (d1, d0) for 2: the same
    # devices, but the transfer goes to the lead. d2-d0 takes 5, d2-d1 takes 1.
    # Lead d0: s [0,1), transfer [1,6), t [6,7) -> 7. Lead d1: [1,2), t [2,4) -> 4.
    # (If only the device set counted, 1 + 1 + 1 = 3 would be possible.)
    p = problem([blk("s", ("d2", 1)), blk("t", (("d0", "d1"), 1), (("d1", "d0"), 2))],
                [Edge(src="s", dst="t", size=1)], devices=("d0", "d1", "d2"),
                channels=[Channel(name="slow", endpoints=("d2", "d0"), time_per_unit=5),
                          Channel(name="fast", endpoints=("d2", "d1"), time_per_unit=1)])
    r = check(p, 4)
    (t,) = [x for x in r.schedule.tasks if x.block == "t"]
    assert t.devices == ("d1", "d0") and r.schedule.transfers[0].channel == "fast"


def test_shared_device_needs_no_transfer():
    # a (d0, d1) -> b (d1): the sets share d1, so no transfer even though the leads differ
    # and no channel exists: 2 + 1 = 3.
    p = problem([blk("a", (("d0", "d1"), 2)), blk("b", ("d1", 1))], [Edge(src="a", dst="b", size=5)],
                devices=("d0", "d1"))
    r = check(p, 3)
    assert r.schedule.transfers == ()


# --------------------------------------------------------------------------
# Overlapped groups
# --------------------------------------------------------------------------


def test_group_with_a_shortened_member():
    # F, W on d0, 2 each, two micro-batches, W1 lasts 1 (override); a group lasts
    # max(3, members) = 3. Alone: 2 + 2 + 2 + 1 = 7. {F0, W0} (3) + F1 + W1 = 6;
    # two groups: 3 + 3 = 6. Nothing shorter: every group lasts 3, and F0, F1 (2 each)
    # need a group or their own time: 6 is the least.
    p = problem([blk("F", ("d0", 2)), blk("W", ("d0", 2))], n=2,
                overlaps=[Overlap(blocks=("F", "W"), duration=3)], duration_overrides=[("W", 1, (1,))])
    check(p, 6)


def test_group_lasts_its_longest_member():
    # N = 1, F0 lasts 5 (override), W0 2, declared group 3: the group lasts max(3, 5, 2) = 5,
    # alone 5 + 2 = 7: the optimum is the group, 5.
    p = problem([blk("F", ("d0", 2)), blk("W", ("d0", 2))],
                overlaps=[Overlap(blocks=("F", "W"), duration=3)], duration_overrides=[("F", 0, (5,))])
    r = check(p, 5)
    assert {(t.start, t.end, t.overlap) for t in r.schedule.tasks} == {(0, 5, "F+W")}


def test_group_order_forbids_same_microbatch_pairs():
    # F -> B on d0 (3 each), N = 2, overlap ("B", "F") lasting 5. A group {B_m, F_m} would run
    # B before F against the edge: not allowed. {B0, F1} and {B1, F0} each need the other's F
    # first, so at most one group: F0 [0,3), {B0, F1} [3,8), B1 [8,11) = 11 (alone: 12).
    p = problem([blk("F", ("d0", 3)), blk("B", ("d0", 3))], [("F", "B")], n=2,
                overlaps=[Overlap(blocks=("B", "F"), duration=5)])
    r = check(p, 11)
    assert sum(t.overlap is not None for t in r.schedule.tasks) == 2


def test_internal_edge_in_block_order_is_free():
    # i -> w on d0 (1 each), N = 2, group ("i", "w") lasting 1: each micro-batch's pair runs
    # as one unit, 1 + 1 = 2 (alone: 4).
    p = problem([blk("i", ("d0", 1)), blk("w", ("d0", 1))], [("i", "w")], n=2,
                overlaps=[Overlap(blocks=("i", "w"), duration=1)])
    check(p, 2)


def test_fixed_order_between_members_forbids_the_group():
    # The same pair with a fixed order i0 then w0: w0 must start after i0 ends, so no group:
    # 1 + 1 alone = 2 instead of 1.
    p = problem([blk("i", ("d0", 1)), blk("w", ("d0", 1))], [("i", "w")],
                overlaps=[Overlap(blocks=("i", "w"), duration=1)], fixed_orders=[[("i", 0), ("w", 0)]])
    check(p, 2)
    check(p.with_(fixed_orders=()), 1)


def test_same_microbatch_sets_restrict_the_pairs():
    # i, w on d0 (1 each), N = 2, group lasting 1; releases: w0 and i1 at 5.
    # Any micro-batches: {i0, w1} [0,1) and {i1, w0} [5,6) -> 6.
    # With same_microbatch (i, w): {i0, w0} and {i1, w1} both wait until 5; alone,
    # i0 and w1 run early and i1, w0 run from 5: [5,6), [6,7) -> 7 either way.
    releases = [Release(block="w", microbatch=0, time=5), Release(block="i", microbatch=1, time=5)]
    blocks = [blk("i", ("d0", 1)), blk("w", ("d0", 1))]
    check(problem(blocks, n=2, releases=releases, overlaps=[Overlap(blocks=("i", "w"), duration=1)]), 6)
    tied = Overlap(blocks=("i", "w"), duration=1, same_microbatch=[("i", "w")])
    check(problem(blocks, n=2, releases=releases, overlaps=[tied]), 7)


def test_longer_group_is_optional():
    # f (1), b (2) with a group lasting 4: running alone (3) is better.
    p = problem([blk("f", ("d0", 1)), blk("b", ("d0", 2))], overlaps=[Overlap(blocks=("f", "b"), duration=4)])
    r = check(p, 3)
    assert all(t.overlap is None for t in r.schedule.tasks)


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------


def test_memory_infeasible():
    # two allocations of 2 that are never freed on a device of capacity 3: each fits alone,
    # both never do.
    p = problem([blk("a", ("d0", 1), memory=2), blk("b", ("d0", 1), memory=2)],
                devices=[Device(name="d0", memory=3)])
    check(p, None)
    check(p, None, "max_span")


A_C_R = [blk("A", ("d0", 1), memory=1), blk("C", ("d1", 3)), blk("R", ("d0", 1), memory=-1)]


def test_memory_bound_delays_the_second_microbatch():
    # A (d0, +1) -> C (d1, 3) -> R (d0, -1), two micro-batches.
    # Unbounded: A0 [0,1), A1 [1,2), C0 [1,4), C1 [4,7), R0 [4,5), R1 [7,8) -> 8.
    # Capacity 1 on d0: A1 must wait for R0 (starts >= 4, d0 busy until 5): A1 [5,6),
    # C1 [6,9), R1 [9,10) -> 10.
    free = problem(A_C_R, [("A", "C"), ("C", "R")], n=2, devices=("d0", "d1"))
    check(free, 8)
    capped = free.with_(cluster=Cluster(devices=[Device(name="d0", memory=1), Device(name="d1")]))
    check(capped, 10)
    # capacity 2 lets both micro-batches hold their activation: 8 again ...
    two = free.with_(cluster=Cluster(devices=[Device(name="d0", memory=2), Device(name="d1")]))
    check(two, 8)
    # ... unless 1 unit is already held at time 0 (initial memory): 10.
    check(two.with_(initial_memory={"d0": 1}), 10)


def test_workspace_forces_the_order():
    # d0 has capacity 3. A (+2 persistent) -> B (d1, 3); W (workspace 2, 2 long) on d0.
    # Unbounded: A [0,1), W [1,3), B [1,4) -> 4. Capacity 3: after A the level is 2 and
    # W needs 2 more while it runs, so W must run first: W [0,2) (workspace released at
    # 2, half-open), A [2,3), B [3,6) -> 6.
    blocks = [blk("A", ("d0", 1), memory=2), blk("W", ("d0", 2), workspace=2), blk("B", ("d1", 3))]
    free = problem(blocks, [("A", "B")], devices=("d0", "d1"))
    check(free, 4)
    r = check(free.with_(cluster=Cluster(devices=[Device(name="d0", memory=3), Device(name="d1")])), 6)
    starts = {t.block: t.start for t in r.schedule.tasks}
    assert starts == {"W": 0, "A": 2, "B": 3}


# --------------------------------------------------------------------------
# Releases, fixed orders, options
# --------------------------------------------------------------------------


def test_release_reorders():
    # x (3, released at 1) and y (1) on d0: y [0,1), x [1,4) -> 4 (x first: [1,4), y -> 5).
    p = problem([blk("x", ("d0", 3)), blk("y", ("d0", 1))], releases=[Release(block="x", microbatch=0, time=1)])
    check(p, 4)


def test_fixed_order_is_kept():
    # x (2) and y (1) on d0, y -> z (d1, 3). Free: y [0,1), z [1,4), x [1,3) -> 4.
    # Fixed order x then y: x [0,2), y [2,3), z [3,6) -> 6.
    p = problem([blk("x", ("d0", 2)), blk("y", ("d0", 1)), blk("z", ("d1", 3))], [("y", "z")],
                devices=("d0", "d1"))
    check(p, 4)
    check(p.with_(fixed_orders=[[("x", 0), ("y", 0)]]), 6)


def test_multi_device_option_occupies_every_device():
    # T on (d0, d1) for 2, U on d1 (2), V on d0 (2): T blocks both devices, then U and V
    # in parallel: 4. With a second option for T, d0 alone for 3: T [0,3) + V = 5 on d0,
    # so the wide option stays best: 4. With d0 alone for 1 instead: T + V = 3 on d0 and
    # U on d1 at 0: 3.
    fixed = [blk("T", (("d0", "d1"), 2)), blk("U", ("d1", 2)), blk("V", ("d0", 2))]
    check(problem(fixed, devices=("d0", "d1")), 4)
    check(problem([blk("T", (("d0", "d1"), 2), ("d0", 3)), *fixed[1:]], devices=("d0", "d1")), 4)
    check(problem([blk("T", (("d0", "d1"), 2), ("d0", 1)), *fixed[1:]], devices=("d0", "d1")), 3)


def test_options_on_the_same_devices_with_different_durations():
    # two options on d0, 5 and 3: the shorter wins, 3 (+ 1 for b) = 4.
    p = problem([blk("a", ("d0", 5), ("d0", 3)), blk("b", ("d0", 1))])
    r = check(p, 4)
    assert {t.block: t.duration for t in r.schedule.tasks} == {"a": 3, "b": 1}


def test_flexible_placement_balances_devices():
    # three blocks of 2 that may run on d0 or d1: two on one device, one on the other: 4.
    p = problem([blk(n, ("d0", 2), ("d1", 2)) for n in "abc"], devices=("d0", "d1"))
    check(p, 4)


# --------------------------------------------------------------------------
# max_span
# --------------------------------------------------------------------------


def test_max_span_delays_a_first_task():
    # P (1) and Q (1, released at 5) on d0. Earliest: P [0,1), Q [5,6) -> span 6.
    # Delay P to [4,5): span 2. The makespan optimum is 6 either way.
    p = problem([blk("P", ("d0", 1)), blk("Q", ("d0", 1))], releases=[Release(block="Q", microbatch=0, time=5)])
    check(p, 6)
    r = check(p, 2, "max_span")
    assert {t.block: t.start for t in r.schedule.tasks} == {"P": 4, "Q": 5}


def test_max_span_across_devices():
    # L (d0, 3) -> Q (d1, 1), P (d1, 1). d0's span is 3. On d1, Q starts >= 3; P at 0 gives
    # d1 a span of 4, P at [2,3) (or [4,5)) gives 2: max span 3. Makespan 4.
    p = problem([blk("L", ("d0", 3)), blk("Q", ("d1", 1)), blk("P", ("d1", 1))], [("L", "Q")],
                devices=("d0", "d1"), objective="max_span")
    check(p, 3)
    check(p, 4, "makespan")


def test_max_span_ignores_transfers():
    # a (d0, 1) -> b (d1, 1), size 3 over a channel of 1 per unit: d0 span 1, d1 span 1,
    # the transfer [1,4) counts for nothing: max span 1 (makespan 5).
    p = problem([blk("a", ("d0", 1)), blk("b", ("d1", 1))], [Edge(src="a", dst="b", size=3)],
                devices=("d0", "d1"), channels=[Channel(name="c", endpoints=("d0", "d1"))])
    check(p, 1, "max_span")
    check(p, 5)


# --------------------------------------------------------------------------
# API
# --------------------------------------------------------------------------


def test_objective_defaults_and_feasibility():
    p = problem([blk("P", ("d0", 1)), blk("Q", ("d0", 1))], releases=[Release(block="Q", microbatch=0, time=5)])
    assert exact_optimum(p).value == 6
    assert exact_optimum(p.with_(objective="max_span")).value == 2
    assert exact_optimum(p.with_(objective="feasibility")).value == 6
    assert exact_optimum(p, objective="feasibility").value == 6
    with pytest.raises(ValueError, match="objective"):
        exact_optimum(p, objective="throughput")


def test_too_large():
    p = problem([blk("a", ("d0", 1), ("d1", 1)), blk("b", ("d0", 1), ("d1", 1))], n=6, devices=("d0", "d1"))
    with pytest.raises(OracleTooLarge, match="max_tasks"):
        exact_optimum(p)
    assert exact_optimum(p, max_tasks=12).value == 6
    with pytest.raises(OracleTooLarge, match="node limit"):
        exact_optimum(p, max_tasks=12, node_limit=5)
    assert issubclass(OracleTooLarge, ValueError)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


def _witness_is_valid(p: Problem, objective: str) -> None:
    r = exact_optimum(p, objective=objective, node_limit=200_000)
    if r.value is None:
        assert r.schedule is None
        return
    assert validate(p, r.schedule) == ()
    assert objective_value(r.schedule, objective) == r.value


@settings(max_examples=30)
@given(problems(max_tasks=6, max_devices=3))
def test_witness_valid_makespan(p):
    _witness_is_valid(p, "makespan")


@settings(max_examples=30)
@given(problems(max_tasks=4, max_devices=3))
def test_witness_valid_max_span(p):
    _witness_is_valid(p, "max_span")


@settings(max_examples=30)
@given(overlap_problems())
def test_witness_valid_overlaps(p):
    _witness_is_valid(p, "makespan")
    _witness_is_valid(p, "max_span")


# -- a second, time-indexed brute force: every start in [0, H] for every task,
#    group and transfer; the validator decides what is valid --------------------


@st.composite
def tiny_problems(draw) -> Problem:
    """At most 3 task instances on 1-3 devices with every feature switched on at random."""
    nd = draw(st.integers(1, 3))
    names = [f"d{i}" for i in range(nd)]
    nb = draw(st.integers(1, 3))
    n = draw(st.integers(1, 3 // nb))
    blocks = []
    for i in range(nb):
        options = []
        for _ in range(draw(st.integers(1, 2))):
            devs = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(2, nd), unique=True)))
            o = Option(devices=devs, duration=draw(st.integers(1, 3)))
            if o not in options:
                options.append(o)
        blocks.append(Block(name=f"b{i}", options=options, memory=draw(st.integers(-1, 2)),
                            workspace=draw(st.integers(0, 1))))
    overlaps = []
    if nb >= 2 and draw(st.booleans()):  # b0 and b1 become a possible group on b0's devices
        a, b = blocks[0], blocks[1]
        blocks[0] = Block(name="b0", options=[a.options[0]], memory=a.memory, workspace=a.workspace)
        blocks[1] = Block(name="b1", options=[Option(devices=a.options[0].devices, duration=b.options[0].duration)],
                          memory=b.memory, workspace=b.workspace)
        longest = max(blocks[0].options[0].duration, blocks[1].options[0].duration)
        overlaps = [Overlap(blocks=tuple(draw(st.permutations(["b0", "b1"]))),
                            duration=longest + draw(st.integers(0, 1)), name="g",
                            same_microbatch=[("b0", "b1")] if draw(st.booleans()) else ())]
    edges = [Edge(src=f"b{i}", dst=f"b{j}", size=draw(st.integers(0, 2)))
             for j in range(nb) for i in range(j) if draw(st.booleans())]
    channels = []  # one undirected channel per pair (every transfer has one), maybe a directed extra
    for a in range(nd):
        for b in range(a + 1, nd):
            channels.append(Channel(name=f"c{a}{b}", endpoints=(names[a], names[b]),
                                    time_per_unit=draw(st.integers(0, 2)), latency=draw(st.integers(0, 2))))
            if draw(st.booleans()):
                ends = draw(st.permutations([names[a], names[b]]))
                channels.append(Channel(name=f"x{a}{b}", endpoints=ends, time_per_unit=draw(st.integers(0, 1)),
                                        directed=True))
    initial = {d: draw(st.integers(0, 1)) for d in names}
    devices = []
    for d in names:
        need = max((max(b.memory, 0) + b.workspace for b in blocks if d in b.devices), default=0)
        cap = draw(st.one_of(st.none(), st.integers(0, 2)))
        devices.append(Device(name=d, memory=None if cap is None else initial[d] + need + cap))
    tasks = [(b.name, m) for m in range(n) for b in blocks]
    releases = [(b, m, draw(st.integers(1, 4))) for b, m in tasks if draw(st.integers(0, 4)) == 0]
    fixed = [draw(st.permutations(tasks))[:2]] if len(tasks) >= 2 and draw(st.integers(0, 3)) == 0 else []
    overrides = [(b, m, tuple(draw(st.integers(1, 4)) for _ in blocks[int(b[1:])].options))
                 for b, m in tasks if draw(st.integers(0, 5)) == 0]
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=n,
                   cluster=Cluster(devices=devices, channels=channels), initial_memory=initial,
                   releases=releases, fixed_orders=fixed, duration_overrides=overrides, overlaps=overlaps)


def _horizon(p: Problem) -> int:
    """Largest release + every task's longest duration or group + every transfer's longest time."""
    h = max(p.release_of(b, m) for b, m in p.tasks)
    for b, m in p.tasks:
        longest = max(p.durations(b, m))
        for ov in p.overlaps:
            if b in ov.blocks:
                longest = max(longest, ov.duration,
                              *(max(p.durations(x, k)) for x in ov.blocks for k in range(p.num_microbatches)))
        h += longest
    for e in p.graph.edges:
        if e.size:
            h += p.num_microbatches * max([c.transfer_time(e.size) for c in p.cluster.channels], default=0)
    return h


def brute_force(p: Problem, horizon: int) -> dict[str, int | None]:
    """Least makespan and max span over all schedules with starts in [0, horizon]."""
    blocks = p.graph.by_name()
    groupings = [[]]  # every set of disjoint groups (one instance of each overlap block)
    for ov in p.overlaps:
        for mbs in product(range(p.num_microbatches), repeat=len(ov.blocks)):
            members = list(zip(ov.blocks, mbs))
            groupings += [g + [(ov, members)] for g in groupings
                          if not {k for _, ms in g for k in ms} & set(members)]
    best: dict[str, int | None] = {"makespan": None, "max_span": None}

    def placements(unit):
        ov, members = unit
        if ov is not None:
            length = max([ov.duration, *(p.durations(b, m)[0] for b, m in members)])
            for s in range(horizon + 1):
                yield [TaskInstance(block=b, microbatch=m, devices=blocks[b].options[0].devices,
                                    start=s, end=s + length, overlap=ov.name) for b, m in members]
        else:
            ((b, m),) = members
            for o, d in zip(blocks[b].options, p.durations(b, m)):
                for s in range(horizon + 1):
                    yield [TaskInstance(block=b, microbatch=m, devices=o.devices, start=s, end=s + d)]

    def clash(new, chosen):  # two items on one device at once (cheap pre-filter)
        return any(set(t.devices) & set(u.devices) and t.start < u.end and u.start < t.end
                   and not (t.overlap and t.overlap == u.overlap and t.start == u.start)
                   for t in new for u in chosen)

    def with_transfers(tasks):
        at = {t.key: t for t in tasks}
        choices = []
        for e in p.graph.edges:
            for m in range(p.num_microbatches):
                u, v = at[(e.src, m)], at[(e.dst, m)]
                if e.size and not set(u.devices) & set(v.devices):
                    choices.append([Transfer(src=e.src, dst=e.dst, microbatch=m, channel=c.name, start=s,
                                             end=s + c.transfer_time(e.size))
                                    for c in p.cluster.channels_between(u.devices[0], v.devices[0])
                                    for s in range(u.end, v.start - c.transfer_time(e.size) + 1)])
        for transfers in product(*choices):
            yield Schedule(tasks=tasks, transfers=transfers)

    def search(units, chosen):
        if not units:
            for schedule in with_transfers(chosen):
                if not validate(p, schedule):
                    for objective, value in best.items():
                        v = objective_value(schedule, objective)
                        if value is None or v < value:
                            best[objective] = v
            return
        for new in placements(units[0]):
            if not clash(new, chosen):
                search(units[1:], chosen + new)

    for grouping in groupings:
        grouped = {k for _, ms in grouping for k in ms}
        units = [(ov, ms) for ov, ms in grouping] + [(None, [k]) for k in p.tasks if k not in grouped]
        search(units, [])
    return best


@settings(max_examples=30)
@given(tiny_problems())
def test_oracle_matches_brute_force(p):
    h = _horizon(p)
    if h > 12:
        return  # keep the brute force quick
    expected = brute_force(p, h)
    assert exact_optimum(p, objective="makespan").value == expected["makespan"]
    assert exact_optimum(p, objective="max_span").value == expected["max_span"]
