"""Coarsening: structure properties and expansion back to the original problem."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from schedsearch.bounds.analytic import critical_path
from schedsearch.errors import InvalidProblemError
from schedsearch.graphs import DagNode, OperationDag, machine_cluster, random_dag
from schedsearch.problem import Edge, Graph
from schedsearch.search import optimal
from schedsearch.search.coarsening import coarsen, redundant_edges, transitive_reduction
from schedsearch.search.list_scheduling import list_plan
from schedsearch.testing import problems
from schedsearch.validate import validate
from dag_strategies import dag_problems, dags


def _reachable(graph: Graph) -> set[tuple[str, str]]:
    succ = graph.successors()
    out = set()
    for name in graph.block_names:
        stack, seen = [name], set()
        while stack:
            for e in succ[stack.pop()]:
                if e.dst not in seen:
                    seen.add(e.dst)
                    stack.append(e.dst)
        out |= {(name, d) for d in seen}
    return out


def _check_partition(c, problem):
    members = [m for ms in c.groups.values() for m in ms]
    assert sorted(members) == sorted(problem.graph.block_names)
    assert set(c.groups) == set(c.coarse.graph.block_names)
    # members run in an order that respects every edge between them
    position = {m: (g, i) for g, ms in c.groups.items() for i, m in enumerate(ms)}
    for e in problem.graph.edges:
        (gu, iu), (gv, iv) = position[e.src], position[e.dst]
        assert gu != gv or iu < iv


@given(dags(max_nodes=10, memory=False))
def test_transitive_reduction_keeps_reachability_and_drops_every_shortcut(dag):
    graph = dag.on_machines(machine_cluster(1)).graph
    reduced = transitive_reduction(graph)
    assert _reachable(reduced) == _reachable(graph)
    assert redundant_edges(reduced) == ()
    for e in redundant_edges(graph):
        assert e not in reduced.edges


@settings(max_examples=40)
@given(problems(max_devices=3, max_blocks=6, max_microbatches=2, max_tasks=12, max_duration=4,
                releases=False, fixed_orders=False, overrides=False, overlaps=False, max_span=False, directed=False),
       st.integers(1, 6))
def test_coarsening_never_creates_a_cycle_and_partitions_the_blocks(problem, target):
    # the coarse Graph constructor rejects cycles, so building it is the check
    c = coarsen(problem, target)
    _check_partition(c, problem)
    assert len(c.coarse.graph.blocks) == c.stats["blocks"]
    assert c.coarse.cluster == problem.cluster
    assert c.coarse.num_microbatches == problem.num_microbatches


@settings(max_examples=40)
@given(dag_problems(max_nodes=14), st.integers(1, 10))
def test_coarsening_keeps_total_work_on_every_machine(problem, target):
    c = coarsen(problem, target)
    for d in problem.cluster.device_names:
        def work(p):
            return sum(o.duration for b in p.graph.blocks for o in b.options if o.devices == (d,))
        assert work(c.coarse) == work(problem)
    # memory deltas add up too
    assert sum(b.memory for b in c.coarse.graph.blocks) == sum(b.memory for b in problem.graph.blocks)


@settings(max_examples=40)
@given(dag_problems(max_nodes=14))
def test_safe_merges_never_lengthen_the_critical_path(problem):
    c = coarsen(problem, 1, non_adjacent=False)
    assert critical_path(c.coarse) <= critical_path(problem)
    _check_partition(c, problem)


def _coarse_schedule(c):
    schedule = list_plan(c.coarse)
    assume(schedule is not None)
    return schedule


@settings(max_examples=40)
@given(dag_problems(max_nodes=14, memory=True), st.integers(1, 8))
def test_every_coarse_schedule_expands_to_a_valid_schedule(problem, target):
    c = coarsen(problem, target)
    coarse_schedule = _coarse_schedule(c)
    expanded = c.expand(coarse_schedule)
    assert validate(problem, expanded) == ()


@settings(max_examples=40)
@given(dag_problems(max_nodes=14, latency=True), st.integers(1, 8))
def test_expansion_is_never_later_than_the_coarse_schedule(problem, target):
    # every channel has time_per_unit >= 1, so merged transfers are padded
    # for their latencies and the coarse timing is one feasible replay
    c = coarsen(problem, target)
    coarse_schedule = _coarse_schedule(c)
    assert c.expand(coarse_schedule).makespan <= coarse_schedule.makespan


@settings(max_examples=30)
@given(problems(max_devices=3, max_blocks=6, max_microbatches=2, max_tasks=12, max_duration=4,
                releases=False, fixed_orders=False, overrides=False, overlaps=False, max_span=False, directed=False),
       st.integers(1, 6))
def test_expansion_validates_on_heterogeneous_options_and_multi_device_blocks(problem, target):
    c = coarsen(problem, target)
    schedule = list_plan(c.coarse)
    assume(schedule is not None)
    assert validate(problem, c.expand(schedule)) == ()


def test_optimal_coarse_schedules_expand_to_valid_schedules():
    for seed in range(3):
        dag = random_dag(24, seed=seed, memory=(0, 3), workspace=(0, 1))
        problem = dag.on_machines(machine_cluster(2, channels=2, directed=True))
        c = coarsen(problem, 8)
        assert c.stats["blocks"] == 8
        result = optimal(c.coarse, time_limit_s=10, seed=0, workers=2)
        assert result.schedule is not None
        expanded = c.expand(result.schedule)
        assert validate(problem, expanded) == ()
        assert expanded.makespan <= result.schedule.makespan


def test_merged_block_sums_durations_and_covers_the_memory_peak():
    # chain a (+5, ws 1) -> b (-4, ws 2) -> c (+1): one group a, b, c.
    # levels above the base: during a 5 + 1 = 6, during b 1 + 2 = 3, during c 2
    # -> delta 2, workspace 6 - 2 = 4.
    dag = OperationDag(
        nodes=[
            DagNode(name="a", duration=2, memory=5, workspace=1),
            DagNode(name="b", duration=3, memory=-4, workspace=2),
            DagNode(name="c", duration=1, memory=1),
        ],
        edges=[Edge(src="a", dst="b", size=2), Edge(src="b", dst="c", size=1)],
    )
    problem = dag.on_machines(machine_cluster(2, channels=1))
    c = coarsen(problem, 1)
    (block,) = c.coarse.graph.blocks
    assert c.groups[block.name] == ("a", "b", "c")
    assert [o.duration for o in block.options] == [6, 6]
    assert (block.memory, block.workspace) == (2, 4)
    assert c.coarse.graph.edges == ()


def test_transitive_edges_keep_their_data_and_safe_merges_use_the_reduction():
    # a -> b -> c plus the shortcut a -> c (size 3): the shortcut is redundant,
    # so a -> b and b -> c are safe merges; nothing else joins b.
    dag = OperationDag(
        nodes=[DagNode(name=n, duration=1) for n in "abcd"],
        edges=[Edge(src="a", dst="b", size=1), Edge(src="b", dst="c", size=1), Edge(src="a", dst="c", size=3),
               Edge(src="c", dst="d", size=2), Edge(src="a", dst="d", size=4)],
    )
    problem = dag.on_machines(machine_cluster(2, channels=1))
    assert {(e.src, e.dst) for e in redundant_edges(problem.graph)} == {("a", "c"), ("a", "d")}
    c = coarsen(problem, 2, non_adjacent=False, max_duration=2)
    # smallest merged duration first, ties by order: a+b, then c+d
    assert sorted(c.groups.values()) == [("a", "b"), ("c", "d")]
    (edge,) = c.coarse.graph.edges
    assert edge.size == 1 + 3 + 4  # b->c, a->c and a->d all cross the groups


def test_latency_pads_merged_transfers():
    # two edges a->c, b->c of size 1 on a channel with latency 2 and one unit
    # per size: expanded they take 3 + 3 = 6; the coarse edge {a,b} -> c gets
    # size 2 + (2 - 1) * 2 / 1 = 4, i.e. 2 + 4 = 6 time units.
    dag = OperationDag(
        nodes=[DagNode(name=n, duration=1) for n in "abc"],
        edges=[Edge(src="a", dst="c", size=1), Edge(src="b", dst="c", size=1)],
    )
    problem = dag.on_machines(machine_cluster(2, channels=1, latency=2))
    c = coarsen(problem, 2)
    assert sorted(c.groups.values()) == [("a", "b"), ("c",)]
    (edge,) = c.coarse.graph.edges
    assert edge.size == 4


def test_pinned_blocks_are_not_merged_and_errors_are_clear():
    dag = OperationDag(nodes=[DagNode(name=n, duration=1) for n in "abcd"],
                       edges=[Edge(src="a", dst="b"), Edge(src="b", dst="c")])
    problem = dag.on_machines(machine_cluster(2, channels=1)).with_(
        releases=[("b", 0, 3)], fixed_orders=[[("d", 0), ("c", 0)]]
    )
    c = coarsen(problem, 1)
    assert ("b",) in c.groups.values() and ("d",) in c.groups.values()
    assert c.coarse.releases == problem.releases and c.coarse.fixed_orders == problem.fixed_orders
    expanded = c.expand(list_plan(c.coarse))
    assert validate(problem, expanded) == ()
    with pytest.raises(InvalidProblemError, match="'target' must be an integer >= 1"):
        coarsen(problem, 0)
    with pytest.raises(InvalidProblemError, match="'strict_factor' must be in"):
        coarsen(problem, 2, strict_factor=0)
    with pytest.raises(InvalidProblemError, match="'max_duration' must be an integer >= 0"):
        coarsen(problem, 2, max_duration=-1)


def test_random_graph_reaches_the_target():
    dag = random_dag(200, seed=3)
    problem = dag.on_machines(machine_cluster(2, channels=2, directed=True))
    c = coarsen(problem, 40)
    assert c.stats["blocks"] == 40
    assert c.stats["blocks_after_safe"] < 200
    _check_partition(c, problem)


def test_duration_overrides_of_merged_members_add_up():
    # two micro-batches; micro-batch 1 of 'b' is longer (5 and 6 instead of 2)
    dag = OperationDag(nodes=[DagNode(name="a", duration=1), DagNode(name="b", duration=2)], edges=[Edge(src="a", dst="b")])
    problem = dag.on_machines(machine_cluster(2, channels=1)).with_(num_microbatches=2, duration_overrides=[("b", 1, (5, 6))])
    c = coarsen(problem, 1)
    (name,) = c.groups
    assert c.coarse.durations(name, 0) == (3, 3)
    assert c.coarse.durations(name, 1) == (6, 7)
    expanded = c.expand(list_plan(c.coarse))
    assert validate(problem, expanded) == ()
