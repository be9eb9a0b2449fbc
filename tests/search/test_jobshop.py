"""The job-shop planner: standard instances, memory levels, coarsening, transfers."""

from __future__ import annotations

import pytest

from schedsearch.graphs import machine_cluster, random_dag
from schedsearch.loaders import read_flexible_jobshop, read_jobshop
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.result import Status
from schedsearch.schedule import Schedule, TaskInstance, Transfer, peak_memory
from schedsearch.search import jobshop, optimal, transfer_overlap
from schedsearch.validate import validate


@pytest.mark.parametrize(
    ("path", "optimum", "backend"),
    [
        (("jsp", "ft", "ft06.txt"), 55, "cpsat"),
        (("jsp", "ft", "ft06.txt"), 55, "z3"),
        (("jsp", "la", "la01.txt"), 666, "cpsat"),
        (("jsp", "la", "la05.txt"), 593, "z3"),
        (("fjsp", "brandimarte", "mk01.txt"), 40, "cpsat"),
    ],
)
def test_standard_instances_are_proven_optimal(shared_data, path, optimum, backend):
    folder = shared_data.joinpath(*path)
    load = read_flexible_jobshop if path[0] == "fjsp" else read_jobshop
    problem = load(folder).problem
    result = jobshop(problem, backend=backend, time_limit_s=60, seed=0, workers=2)
    assert result.status is Status.OPTIMAL
    assert result.objective == optimum == result.lower_bound
    assert validate(problem, result.schedule) == ()
    assert result.stats["baseline"]["makespan"] >= optimum
    assert result.strategy == "jobshop"


def test_baseline_only_is_the_list_schedule(shared_data):
    problem = read_jobshop(shared_data / "jsp" / "ft" / "ft06.txt").problem
    result = jobshop(problem, list_baseline_only=True)
    assert result.status is Status.FEASIBLE
    assert result.objective == result.stats["baseline"]["makespan"] > 55
    assert "exact" not in result.stats and result.engine.startswith("list scheduling (HEFT, ")
    assert result.bound_engine == "analytic"
    assert validate(problem, result.schedule) == ()


def _two_chains(capacity: int | None) -> Problem:
    """Two chains x1 -> x2 -> x3 and y1 -> y2 -> y3; the first and last of each
    on d0, the middle on d1. x1/y1 allocate 4 (with a workspace of 1 while
    they run), x3/y3 free it."""
    def block(name: str, device: str, duration: int, memory: int = 0, workspace: int = 0) -> Block:
        return Block(name=name, options=[Option(devices=(device,), duration=duration)], memory=memory, workspace=workspace)

    blocks = []
    edges = []
    for c in "xy":
        blocks += [block(f"{c}1", "d0", 2, 4, 1), block(f"{c}2", "d1", 2), block(f"{c}3", "d0", 1, -4)]
        edges += [Edge(src=f"{c}1", dst=f"{c}2"), Edge(src=f"{c}2", dst=f"{c}3")]
    cluster = Cluster(devices=[Device(name="d0", memory=capacity), Device(name="d1")])
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=1, cluster=cluster)


@pytest.mark.parametrize("backend", ["cpsat", "z3"])
def test_memory_limit_forces_a_different_order(backend):
    # Unbounded: d0 runs x1 [0,2), y1 [2,4), x3 [4,5), y3 [6,7) (y3 waits for
    # y2 on d1 [4,6)): makespan 7, the optimum (each chain alone takes 5 and d0
    # holds 6 units of work; y3 cannot start before 6). Both allocations are
    # live during y1, plus its workspace: peak 4 + 4 + 1 = 9.
    free = optimal(_two_chains(None), backend=backend, time_limit_s=30)
    assert free.objective == 7 and free.status is Status.OPTIMAL
    assert peak_memory(_two_chains(None), free.schedule)["d0"] == 9
    # Capacity 8 would hold both allocations (8) but not the workspace on top:
    # the second chain's allocation must wait for the first chain's free, so
    # the chains run one after the other: 5 + 5 = 10.
    tight_problem = _two_chains(8)
    tight = jobshop(tight_problem, backend=backend, time_limit_s=30)
    assert tight.objective == 10 and tight.status is Status.OPTIMAL
    assert validate(tight_problem, tight.schedule) == ()
    assert peak_memory(tight_problem, tight.schedule)["d0"] <= 8
    order = [t.block for t in tight.schedule.on_device("d0")]
    first = order[0][0]
    assert order[:2] == [f"{first}1", f"{first}3"]
    free_order = [t.block for t in free.schedule.on_device("d0")]
    assert free_order[1][1] == "1"  # without the limit both allocations come first
    # the unbounded optimum is not valid under the limit: the validator says why
    violations = validate(tight_problem, free.schedule)
    assert [v.kind for v in violations] == ["memory"]


def test_infeasible_memory_is_a_status_not_an_error():
    blocks = [
        Block(name="x", options=[Option(devices=("d0",), duration=1)], memory=2),
        Block(name="y", options=[Option(devices=("d0",), duration=1)], memory=2),
        Block(name="z", options=[Option(devices=("d0",), duration=1)], memory=-4),
    ]
    graph = Graph(blocks=blocks, edges=[Edge(src="x", dst="z"), Edge(src="y", dst="z")])
    p = Problem(graph=graph, num_microbatches=1, cluster=Cluster(devices=[Device(name="d0", memory=3)]))
    result = jobshop(p, time_limit_s=10)
    assert result.status is Status.INFEASIBLE and result.schedule is None


def test_coarsened_plan_of_a_random_graph():
    dag = random_dag(60, seed=4)
    problem = dag.on_machines(machine_cluster(2, channels=2, directed=True))
    result = jobshop(problem, coarsen_to=15, time_limit_s=6, seed=0, workers=2)
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    stats = result.stats
    assert stats["coarsening"]["blocks"] == 15
    assert stats["expanded"]["makespan"] <= stats["coarse"]["makespan"]
    assert result.objective <= min(stats["baseline"]["makespan"], stats["expanded"]["makespan"])
    assert result.lower_bound >= max(-(-dag.total_work // 2), dag.critical_path())
    # that the limit covers coarsening and refinement too: tests/search/test_common_options.py


def test_coarsened_plan_without_refinement_is_the_expanded_or_the_baseline():
    dag = random_dag(40, seed=1)
    problem = dag.on_machines(machine_cluster(2, channels=2, directed=True))
    result = jobshop(problem, coarsen_to=10, refine=False, time_limit_s=5)
    assert "exact" not in result.stats
    assert result.objective == min(result.stats["expanded"]["makespan"], result.stats["baseline"]["makespan"])


def test_transfer_overlap_by_hand():
    cluster = Cluster(devices=[Device(name="d0"), Device(name="d1")], channels=[Channel(name="c", endpoints=("d0", "d1"))])
    graph = Graph(
        blocks=[Block(name=n, options=[Option(devices=(d,), duration=k)]) for n, d, k in
                (("a", "d0", 2), ("b", "d1", 1), ("c", "d0", 4), ("e", "d1", 3))],
        edges=[Edge(src="a", dst="b", size=4)],
    )
    p = Problem(graph=graph, num_microbatches=1, cluster=cluster)
    # transfer [2, 6): d0 computes c over [2, 6); d1 computes e over [0, 3)
    s = Schedule(
        tasks=[TaskInstance(block="a", microbatch=0, devices=("d0",), start=0, end=2),
               TaskInstance(block="c", microbatch=0, devices=("d0",), start=2, end=6),
               TaskInstance(block="e", microbatch=0, devices=("d1",), start=0, end=3),
               TaskInstance(block="b", microbatch=0, devices=("d1",), start=6, end=7)],
        transfers=[Transfer(src="a", dst="b", microbatch=0, channel="c", start=2, end=6)],
    )
    assert validate(p, s) == ()
    assert transfer_overlap(p, s) == {"total": 4, "hidden_both": 0.25, "hidden_any": 1.0, "exposed": 0.0}


def test_bad_arguments():
    p = _two_chains(None)
    with pytest.raises(ValueError, match=r"'coarse_share' must be a number in \(0, 1\]"):
        jobshop(p, coarse_share=0)
    with pytest.raises(ValueError, match="'coarsen_to' must be an integer >= 1"):
        jobshop(p, coarsen_to=0)


def test_strong_disjunctive_propagation_only_for_classic_job_shops():
    from schedsearch.loaders import flexible_jobshop_problem, jobshop_problem

    classic = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    flexible = flexible_jobshop_problem([[[(0, 3), (1, 4)], [(1, 2)]], [[(1, 4)], [(0, 1)]]], 2).problem
    kwargs = dict(time_limit_s=5, list_baseline=False)
    assert jobshop(classic, **kwargs).stats["backend_params"] == {"use_strong_propagation_in_disjunctive": True}
    assert jobshop(flexible, **kwargs).stats["backend_params"] == {}
    assert jobshop(classic, strong_disjunctive=False, **kwargs).stats["backend_params"] == {}
    explicit = {"use_strong_propagation_in_disjunctive": False}
    assert jobshop(classic, backend_params=explicit, **kwargs).stats["backend_params"] == explicit
    assert jobshop(classic, backend="z3", **kwargs).stats["backend_params"] == {}
    for result in (jobshop(classic, **kwargs), jobshop(flexible, **kwargs)):
        assert result.status is Status.OPTIMAL


class _CpSatWithoutCapabilities:
    """CP-SAT behind another name that declares no capability: what the job-shop search does depends on what a
    backend says it supports, not on its name."""

    name = "plain cp-sat"

    def __init__(self) -> None:
        from schedsearch.encode.cpsat.model import CpSatBackend

        self.inner = CpSatBackend()
        self.features = self.inner.features
        self.warm_starts: list[object] = []  # what each search was given to start from

    def solve(self, problem, options):
        self.warm_starts.append(options.warm_start)
        return self.inner.solve(problem, options)


def test_the_job_shop_search_asks_the_backend_what_it_supports():
    from schedsearch.loaders import jobshop_problem

    classic = jobshop_problem([[(0, 3), (1, 2)], [(1, 4), (0, 1)]], 2).problem
    backend = _CpSatWithoutCapabilities()
    kwargs = dict(time_limit_s=5, seed=0, workers=1, list_baseline=False)
    result = jobshop(classic, backend=backend, **kwargs)
    assert result.status is Status.OPTIMAL and result.objective == 6
    # no stronger no-overlap propagation to switch on, so the redundant bounds stay and no quick pass runs
    assert result.stats["backend_params"] == {} and result.stats["redundant"] is True
    assert "quick" not in result.stats and len(backend.warm_starts) == 1
    # CP-SAT by its name declares the capabilities: the classic job shop gets the stronger propagation
    named = jobshop(classic, backend="cpsat", **kwargs)
    assert named.stats["backend_params"] == {"use_strong_propagation_in_disjunctive": True}
    assert named.stats["redundant"] is False
