"""List scheduling (HEFT-like)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from schedsearch.loaders import jobshop_problem
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.result import Status
from schedsearch.schedule import peak_memory
from schedsearch.search.list_scheduling import HEFT_RULES, heft, list_plan, list_schedule, priorities
from schedsearch.testing import problems
from schedsearch.validate import validate


@settings(max_examples=60)
# fixed orders left out: list scheduling reads a cycle of orders and edges as a bug
@given(problems(max_devices=3, max_blocks=5, max_microbatches=3, max_tasks=12, max_duration=4, fixed_orders=False))
def test_every_list_schedule_validates(problem):
    for rule in HEFT_RULES:
        for insertion in (True, False):
            result = list_schedule(problem, rule=rule, insertion=insertion)
            assert result.problem is problem and result.strategy == "list_schedule"
            if result.schedule is None:
                # only memory can block list scheduling; that proves nothing
                assert result.status is Status.UNKNOWN
                assert any(d.memory is not None for d in problem.cluster.devices)
                continue
            assert result.status in (Status.FEASIBLE, Status.OPTIMAL) and result.engine.startswith("list scheduling")
            assert validate(problem, result.schedule) == ()
            assert result.lower_bound <= result.objective


@settings(max_examples=40)
@given(problems(max_devices=3, max_blocks=5, max_microbatches=2, max_tasks=10, max_duration=4, memory=False,
                fixed_orders=False))
def test_without_memory_limits_list_scheduling_always_succeeds(problem):
    result = heft(problem)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert validate(problem, result.schedule) == ()
    assert result.lower_bound <= result.objective


def test_two_job_example_is_optimal():
    # j0: m0 3 then m1 2; j1: m1 4 then m0 1. m1 must run j1.o0 (4) and
    # j0.o1 (2), and j0.o1 cannot start before 3: the best is j1.o0 [0, 4),
    # j0.o1 [4, 6) -> 6; the other order gives j0.o1 [3, 5), j1.o0 [5, 9) -> 10.
    p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    assert list_plan(p).makespan == 6
    result = list_schedule(p)
    assert (result.objective, result.bound_engine) == (6, "analytic")


def test_heft_chooses_the_earliest_finishing_option():
    # a on d0 (fast) or d1 (slow); b only on d0. a goes to d0 first (it finishes
    # earlier there); b then waits. With a transfer of 5, b after a on d0 is best.
    cluster = Cluster(devices=[Device(name="d0"), Device(name="d1")], channels=[Channel(name="c", endpoints=("d0", "d1"))])
    graph = Graph(
        blocks=[
            Block(name="a", options=[Option(devices=("d0",), duration=2), Option(devices=("d1",), duration=3)]),
            Block(name="b", options=[Option(devices=("d0",), duration=1)]),
        ],
        edges=[Edge(src="a", dst="b", size=5)],
    )
    p = Problem(graph=graph, num_microbatches=1, cluster=cluster)
    s = list_plan(p)
    assert {t.block: t.devices for t in s.tasks} == {"a": ("d0",), "b": ("d0",)}
    assert s.makespan == 3 and not s.transfers


def test_transfers_are_booked_on_the_fastest_channel():
    cluster = Cluster(
        devices=[Device(name="d0"), Device(name="d1")],
        channels=[
            Channel(name="slow", endpoints=("d0", "d1"), time_per_unit=3),
            Channel(name="fast", endpoints=("d0", "d1"), time_per_unit=1),
        ],
    )
    graph = Graph(
        blocks=[
            Block(name="a", options=[Option(devices=("d0",), duration=1)]),
            Block(name="b", options=[Option(devices=("d1",), duration=1)]),
        ],
        edges=[Edge(src="a", dst="b", size=2)],
    )
    s = list_plan(Problem(graph=graph, num_microbatches=1, cluster=cluster))
    (tr,) = s.transfers
    assert (tr.channel, tr.start, tr.end) == ("fast", 1, 3)
    assert s.makespan == 4


def _memory_problem(capacity: int) -> Problem:
    # two independent alloc/free pairs on one device: x1 (+3) -> x2 (-3),
    # y1 (+3) -> y2 (-3); with capacity 3 they cannot interleave.
    blocks = [
        Block(name=n, options=[Option(devices=("d0",), duration=1)], memory=m)
        for n, m in (("x1", 3), ("x2", -3), ("y1", 3), ("y2", -3))
    ]
    graph = Graph(blocks=blocks, edges=[Edge(src="x1", dst="x2"), Edge(src="y1", dst="y2")])
    return Problem(graph=graph, num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=capacity)]))


def test_memory_capacity_is_respected_by_placement_order():
    # priorities that would start both allocations first without a limit
    prio = {("x1", 0): 4, ("y1", 0): 3, ("x2", 0): 2, ("y2", 0): 1}
    free = list_plan(_memory_problem(6), priority=prio)
    assert [t.block for t in free.tasks] == ["x1", "y1", "x2", "y2"]
    assert peak_memory(_memory_problem(6), free)["d0"] == 6
    tight = list_plan(_memory_problem(3), priority=prio)
    assert [t.block for t in tight.tasks] == ["x1", "x2", "y1", "y2"]
    assert peak_memory(_memory_problem(3), tight)["d0"] == 3
    assert validate(_memory_problem(3), tight) == ()


def test_blocked_memory_gives_no_schedule():
    # every ready task allocates and the capacity only fits one allocation
    # before the frees, which come after both allocations
    blocks = [
        Block(name="x", options=[Option(devices=("d0",), duration=1)], memory=2),
        Block(name="y", options=[Option(devices=("d0",), duration=1)], memory=2),
        Block(name="z", options=[Option(devices=("d0",), duration=1)], memory=-4),
    ]
    graph = Graph(blocks=blocks, edges=[Edge(src="x", dst="z"), Edge(src="y", dst="z")])
    p = Problem(graph=graph, num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=3)]))
    assert list_plan(p) is None
    assert list_schedule(p).status is Status.UNKNOWN
    result = heft(p)
    assert result.status is Status.UNKNOWN and result.schedule is None


def test_priority_rules_and_errors():
    p = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    up = priorities(p, "upward_rank")
    assert up[("j0.o0", 0)] == 5 and up[("j0.o1", 0)] == 2
    work = priorities(p, "work_remaining")
    assert work[("j1.o0", 0)] == 5
    with pytest.raises(ValueError, match="'rule' must be one of"):
        priorities(p, "random")
    with pytest.raises(ValueError, match="'priority' lacks task"):
        list_plan(p, priority={("j0.o0", 0): 1.0})
    with pytest.raises(ValueError, match="'rules' must name at least one"):
        heft(p, rules=())


def test_heft_reports_every_rule(shared_data):
    from schedsearch.loaders import read_jobshop

    p = read_jobshop(shared_data / "jsp" / "ft" / "ft06.txt").problem
    result = heft(p)
    assert set(result.stats["makespans"]) == set(HEFT_RULES)
    assert result.objective == min(result.stats["makespans"].values())
    assert result.objective >= 55  # the optimum
    assert validate(p, result.schedule) == ()


def test_orders_against_the_edges_are_infeasible_not_an_error():
    # a -> b, but a fixed order runs b first: no plan exists (found by the
    # strategy property test, tests/test_strategy_properties.py)
    from schedsearch.search import jobshop

    blocks = [Block(name=n, options=[Option(devices=("d0",), duration=1)]) for n in ("a", "b")]
    p = Problem(graph=Graph(blocks=blocks, edges=[Edge(src="a", dst="b")]), num_microbatches=1,
                cluster=Cluster(devices=[Device(name="d0")]), fixed_orders=[[("b", 0), ("a", 0)]])
    assert heft(p).status is Status.INFEASIBLE
    result = jobshop(p, time_limit_s=10)
    assert result.status is Status.INFEASIBLE and result.schedule is None
    assert list_schedule(p).status is Status.INFEASIBLE
    with pytest.raises(ValueError, match="form a cycle"):
        list_plan(p)
