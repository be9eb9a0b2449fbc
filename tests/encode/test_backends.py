"""Both backends on small problems with known optima, statuses, warm starts and options."""

from __future__ import annotations

import pytest

from schedsearch.encode import SolveOptions, get_backend, solve
from schedsearch.errors import InvalidOptionsError, UnsupportedFeatureError, ValidationFailedError
from schedsearch.placements import bidirectional, vshape
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, TaskInstance, metrics
from schedsearch.search import optimal
from schedsearch.validate import validate

BACKENDS = ["cpsat", "z3"]
FAST = dict(time_limit_s=30, seed=0, workers=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "d,n,mem,expected",
    [
        # unbounded or roomy memory: the 1F1B closed form (n + d - 1)(F + B) = the per-device
        # bound of the last device (head d-1, work n(F+B), tail (d-1)B)
        (4, 4, None, 21),
        (4, 8, 4, 33),
        (2, 3, 1, 18),  # memory 1 on device 0: a micro-batch at a time, 3 x (F0 + F1 + B1 + B0) = 3 x 6
        (3, 1, None, 9),  # one micro-batch: the critical path d(F+B)
    ],
)
def test_vshape_optima(backend, d, n, mem, expected):
    problem = vshape(d, n, memory=mem)
    result = optimal(problem, backend=backend, **FAST)
    assert result.status is Status.OPTIMAL
    assert result.objective == expected == result.schedule.makespan
    assert result.lower_bound == expected
    assert validate(problem, result.schedule) == ()
    if mem is not None:
        assert max(metrics(problem, result.schedule).peak_memory.values()) <= mem


@pytest.mark.parametrize("backend", BACKENDS)
def test_bidirectional_small(backend):
    problem = bidirectional(2, 4, memory=2)
    result = optimal(problem, backend=backend, **FAST)
    other = optimal(problem, backend="cpsat" if backend == "z3" else "z3", **FAST)
    assert result.status is Status.OPTIMAL and other.status is Status.OPTIMAL
    assert result.objective == other.objective


def flexible_with_transfers() -> Problem:
    """Two devices, one channel; a can run on d0 (3) or d1 (2); b only on d1 (2);
    edge a -> b carries 2 units (2 time units on the channel).
    One micro-batch: a on d1 then b: 2 + 2 = 4 (no transfer); a on d0: 3 + 2 + 2 = 7.
    Two micro-batches: d1 would need 2+2+2+2 = 8 alone; putting one a on d0 gives
    a0@d0 [0,3) -> transfer [3,5) -> b0@d1; a1@d1 [0,2), b1@d1 [2,4), b0@d1 [5,7): 7."""
    blocks = [
        Block(name="a", options=[Option(devices=("d0",), duration=3), Option(devices=("d1",), duration=2)]),
        Block(name="b", options=[Option(devices=("d1",), duration=2)]),
    ]
    return Problem(
        graph=Graph(blocks=blocks, edges=[Edge(src="a", dst="b", size=2)]),
        num_microbatches=2,
        cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")],
                        channels=[Channel(name="c", endpoints=("d0", "d1"), time_per_unit=1)]),
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_flexible_options_and_transfers(backend):
    problem = flexible_with_transfers()
    result = optimal(problem, backend=backend, **FAST)
    assert result.status is Status.OPTIMAL and result.objective == 7
    assert len(result.schedule.transfers) == 1
    assert validate(problem, result.schedule) == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_channel_carries_one_transfer_at_a_time(backend):
    # a0, a1 on d0 (1 each), b on d1; each edge carries 3 units over one channel.
    # transfers serialize: a0 [0,1) t [1,4); a1 [1,2) t [4,7); b1 [7,8): makespan 8 (b0 [4,5))
    blocks = [Block(name="a", options=[(("d0",), 1)]), Block(name="b", options=[(("d1",), 1)])]
    problem = Problem(
        graph=Graph(blocks=blocks, edges=[Edge(src="a", dst="b", size=3)]), num_microbatches=2,
        cluster=Cluster(devices=["d0", "d1"], channels=[Channel(name="c", endpoints=("d0", "d1"))]),
    )
    result = optimal(problem, backend=backend, **FAST)
    assert result.objective == 8
    with_two = problem.with_(cluster=Cluster(devices=["d0", "d1"], channels=[
        Channel(name="c", endpoints=("d0", "d1")), Channel(name="c2", endpoints=("d0", "d1"))]))
    assert optimal(with_two, backend=backend, **FAST).objective == 6  # a1 [1,2) t [2,5) b1 [5,6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_is_a_status(backend):
    # a fixed order that contradicts the dependency a -> b
    problem = Problem(
        graph=Graph(blocks=[Block(name="a", options=[(("d0",), 1)]), Block(name="b", options=[(("d0",), 1)])],
                    edges=[("a", "b")]),
        num_microbatches=1, cluster=Cluster(devices=["d0"]), fixed_orders=[[("b", 0), ("a", 0)]],
    )
    result = optimal(problem, backend=backend, **FAST)
    assert result.status is Status.INFEASIBLE
    assert result.schedule is None and result.objective is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_memory_infeasible_is_a_status(backend):
    # two forwards of +1 on a device of capacity 1 and no backward: the second never fits
    problem = vshape(1, 2, backward=None, memory=1)
    result = optimal(problem, backend=backend, **FAST)
    assert result.status is Status.INFEASIBLE


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout_is_a_status(backend):
    problem = vshape(4, 24, memory=2, forward=2, backward=3)
    result = optimal(problem, backend=backend, time_limit_s=0.05, redundant=False)
    assert result.status in (Status.TIMEOUT, Status.FEASIBLE, Status.OPTIMAL, Status.UNKNOWN)
    if result.schedule is not None:
        assert validate(problem, result.schedule) == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_start_is_never_worse(backend):
    problem = vshape(3, 4, memory=3)
    first = optimal(problem, backend="cpsat", **FAST)
    delayed = first.schedule.shifted(5)  # a valid but worse schedule
    assert validate(problem, delayed) == ()
    result = optimal(problem, backend=backend, warm_start=delayed, **FAST)
    assert result.objective <= delayed.makespan
    assert result.objective == first.objective


def test_invalid_warm_start_is_refused():
    problem = vshape(2, 2)
    bad = Schedule(tasks=[TaskInstance(block="F0", microbatch=0, devices="d0", start=0, end=1)])
    with pytest.raises(InvalidOptionsError, match="optimal: warm start 0 is not a valid plan of problem 'vshape-2x2'"):
        optimal(problem, warm_start=bad)


def test_releases_and_duration_overrides():
    problem = vshape(2, 2).with_(releases=[("F0", 1, 10)], duration_overrides={("B0", 0): (5,)})
    for backend in BACKENDS:
        result = optimal(problem, backend=backend, **FAST)
        assert result.status is Status.OPTIMAL
        by = result.schedule.by_key()
        assert by[("F0", 1)].start >= 10
        assert by[("B0", 0)].duration == 5
        # mb 1 released at 10: 10 + F0 1 + F1 1 + B1 2 + B0 2 = 16
        assert result.objective == 16


def test_upper_bound_restricts_search():
    problem = vshape(2, 2)  # optimum (2 + 2 - 1) x 3 = 9
    for backend in BACKENDS:
        assert optimal(problem, backend=backend, upper_bound=8).status is Status.INFEASIBLE
        assert optimal(problem, backend=backend, upper_bound=9).objective == 9


def test_registry_errors():
    with pytest.raises(ValueError, match="unknown name 'gurobi'"):
        get_backend("gurobi")
    assert get_backend("z3").name == "z3"


class _Limited:
    """A backend that expresses no feature and declares no capability (never asked to solve)."""

    name = "limited"
    features = frozenset()

    def solve(self, problem, options):  # pragma: no cover - never reached
        raise AssertionError


def test_unsupported_feature_names_the_alternative():
    with pytest.raises(UnsupportedFeatureError, match=r"cannot express \['memory'\]; use backend 'cpsat'"):
        solve(vshape(2, 2, memory=2), _Limited())


def test_a_lying_backend_is_caught():
    class Liar:
        name = "liar"
        features = frozenset({"memory"})

        def solve(self, problem, options):
            bogus = Schedule(tasks=[TaskInstance(block=b, microbatch=m, devices="d0", start=0, end=1)
                                    for b, m in problem.tasks])
            return SearchResult(status=Status.OPTIMAL, schedule=bogus, objective=1, lower_bound=1, backend="liar")

    with pytest.raises(ValidationFailedError, match="backend 'liar' fails validation"):
        solve(vshape(2, 2, memory=2), Liar())


def test_progress_reports_improvements():
    events = []
    optimal(vshape(4, 12, memory=3, forward=2, backward=3), progress=events.append, **FAST)
    assert events and all(e.elapsed_s >= 0 for e in events)
    incumbents = [e.incumbent for e in events if e.incumbent is not None]
    assert incumbents == sorted(incumbents, reverse=True)


def test_deterministic_search_repeats():
    problem = vshape(3, 6, memory=2)
    a = optimal(problem, deterministic=True, seed=3, **{k: v for k, v in FAST.items() if k != "seed"})
    b = optimal(problem, deterministic=True, seed=3, **{k: v for k, v in FAST.items() if k != "seed"})
    assert a.schedule == b.schedule


def test_symmetry_breaking_skipped_for_flexible_options():
    """Ordering micro-batches would cost one unit here: b0 may run on d0 (1) or d2 (4);
    the best plan puts micro-batch 0's b0 on d2 and runs the others first on d0."""
    blocks = [
        Block(name="b0", options=[Option(devices=("d0",), duration=1), Option(devices=("d2",), duration=4)], memory=-2),
        Block(name="b1", options=[Option(devices=("d0",), duration=1)]),
    ]
    problem = Problem(graph=Graph(blocks=blocks, edges=[("b0", "b1")]), num_microbatches=3,
                      cluster=Cluster(devices=["d0", "d1", "d2"]), initial_memory={"d2": 1})
    for backend in BACKENDS:
        with_sym = optimal(problem, backend=backend, symmetry_breaking=True, **FAST)
        without = optimal(problem, backend=backend, symmetry_breaking=False, **FAST)
        assert with_sym.objective == without.objective == 5


def test_every_backend_declares_what_it_supports_with_what_that_needs():
    # a capability comes with what it names: the guard's length, and parameters the backend takes
    from schedsearch.encode.backends import BACKENDS, Capability, supports

    for name in BACKENDS:
        backend = get_backend(name)
        assert backend.capabilities <= set(Capability)
        if supports(name, Capability.WALL_GUARD):
            assert backend.wall_guard_s(10.0) > 10.0
        params = {}
        if supports(name, Capability.STRONG_DISJUNCTIVE):
            params[backend.strong_disjunctive_param] = True
        if supports(name, Capability.DETERMINISTIC_TIME):
            params[backend.deterministic_limit_param] = 1.0
        assert backend.params_error(params) is None, (name, params)
    assert supports("cpsat", Capability.SOLUTION_HINT) and not supports("z3", Capability.SOLUTION_HINT)


def test_a_backend_object_without_capabilities_supports_none():
    from schedsearch.encode.backends import Capability, supports

    assert not any(supports(_Limited(), capability) for capability in Capability)


def test_the_facts_of_a_search_are_fields():
    # what the run's budget and the callers read: the deterministic time used, the guard, as typed fields
    problem = vshape(2, 3)
    cpsat = solve(problem, "cpsat", SolveOptions(time_limit_s=10, workers=1, deterministic=True))
    assert cpsat.deterministic_s is not None and cpsat.deterministic_s >= 0 and cpsat.wall_guard_hit is False
    assert "deterministic_s" not in cpsat.stats and "wall_guard_hit" not in cpsat.stats
    z3 = solve(problem, "z3", SolveOptions(time_limit_s=10))
    assert z3.deterministic_s is None and z3.wall_guard_hit is False


def test_the_search_code_never_compares_a_backend_name():
    # callers ask a backend what it supports (encode.backends.supports) instead of comparing its name
    import re
    from pathlib import Path

    import schedsearch

    root = Path(schedsearch.__file__).parent
    pattern = re.compile(r"""backend\w*\s*(==|!=)\s*["'](cpsat|z3)["']|\(\s*["']cpsat["']\s*,\s*["']z3["']\s*\)""")
    found = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name != "registry.py"  # the names' home
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found
