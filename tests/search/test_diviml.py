"""DiviML's MILP against the exact CP-SAT search on the same problems."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings

from schedsearch.errors import UnsupportedFeatureError
from schedsearch.placements import vshape
from schedsearch.problem import Block, Channel, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.result import Status
from schedsearch.search import optimal
from schedsearch.search.diviml import diviml, diviml_lower_bound, diviml_supports
from schedsearch.testing import problems
from schedsearch.testing.oracle import exact_optimum
from schedsearch.validate import validate

#: tiny problems without memory or the features DiviML cannot express (checked again by diviml_supports)
SMALL_PROBLEMS = problems(max_devices=3, max_blocks=4, max_microbatches=2, max_tasks=6, max_duration=4, memory=False,
                          releases=False, fixed_orders=False, overrides=False, overlaps=False, max_span=False,
                          directed=False)


@settings(max_examples=20)
@given(SMALL_PROBLEMS)
def test_diviml_optimum_equals_cpsat(problem):
    assume(diviml_supports(problem) is None)
    d = diviml(problem, time_limit_s=20)
    c = optimal(problem, time_limit_s=20, workers=1)
    assert d.status is Status.OPTIMAL and c.status is Status.OPTIMAL
    assert d.objective == c.objective
    assert validate(problem, d.schedule) == ()


@settings(max_examples=15)
@given(SMALL_PROBLEMS)
def test_diviml_agrees_with_the_brute_force_oracle(problem):
    # DiviML is outside the backend registry (docs/engines.md): its optimum and dual bound are held to
    # the oracle that shares no code with any encoder, like the backends' are
    assume(diviml_supports(problem) is None)
    d = diviml(problem, time_limit_s=20)
    oracle = exact_optimum(problem)
    assert d.status is Status.OPTIMAL and d.objective == oracle.value
    assert d.lower_bound is not None and d.lower_bound <= oracle.value
    assert validate(problem, d.schedule) == ()


def heterogeneous(n_ops: int = 6) -> Problem:
    """A fork-join DAG on a fast and a slow device linked by one channel."""
    blocks = [
        Block(name=f"op{i}", options=[Option(devices=("fast",), duration=2 + i % 3),
                                      Option(devices=("slow",), duration=4 + 2 * (i % 3))])
        for i in range(n_ops)
    ]
    edges = [Edge(src="op0", dst=f"op{i}", size=1) for i in range(1, n_ops - 1)]
    edges += [Edge(src=f"op{i}", dst=f"op{n_ops - 1}", size=1) for i in range(1, n_ops - 1)]
    cluster = Cluster(devices=[Device(name="fast"), Device(name="slow")],
                      channels=[Channel(name="link", endpoints=("fast", "slow"), time_per_unit=1)])
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=1, cluster=cluster, name="hetero")


def test_heterogeneous_devices_with_communication():
    p = heterogeneous()
    d = diviml(p, time_limit_s=30)
    c = optimal(p, time_limit_s=30, workers=1)
    assert d.status is Status.OPTIMAL and c.status is Status.OPTIMAL
    assert d.objective == c.objective
    # a scheduler's result like the others', carrying its problem (what export needs)
    assert d.strategy == d.engine == d.bound_engine == "diviml" and d.problem is p
    # both devices are used and a transfer appears: the slow device is worth using
    assert {t.devices[0] for t in d.schedule.tasks} == {"fast", "slow"}
    assert d.schedule.transfers


def test_lower_bound_is_available_when_the_milp_does_not_finish():
    p = heterogeneous(9).with_(num_microbatches=3)
    # the MIP solvers have no deterministic mode: the limit leaves room for the root relaxation on a loaded
    # machine (0.5 s gave the bound at load 13, 0.05 s gave none); the MILP stopped at 0.5 s either way
    d = diviml(p, time_limit_s=2)
    assert d.lower_bound is not None and d.lower_bound >= 1
    c = optimal(p, time_limit_s=20, workers=1)
    if c.status is Status.OPTIMAL:
        assert d.lower_bound <= c.objective


def test_warm_start_is_never_lost():
    p = vshape(2, 2)  # no capacities
    start = optimal(p, time_limit_s=10).schedule
    d = diviml(p, warm_start=start, time_limit_s=10)
    assert d.objective <= start.makespan


def test_unsupported_features_name_the_alternative():
    with pytest.raises(UnsupportedFeatureError, match="memory capacities may bind.*optimal"):
        diviml(vshape(4, 8, memory=2))
    p = heterogeneous(3)
    two = p.cluster.channels + (Channel(name="link2", endpoints=("fast", "slow"), time_per_unit=2),)
    p2 = p.with_(cluster=Cluster(devices=p.cluster.devices, channels=two))
    with pytest.raises(UnsupportedFeatureError, match="served by channels 'link' and 'link2'"):
        diviml(p2)


def test_diviml_bound_joins_when_asked():
    # a -> b with a transfer of 3 if they run apart; each block 2 on either device: optimum 4 (same device)
    blocks = [Block(name=n, options=[Option(devices=("x",), duration=2), Option(devices=("y",), duration=2)])
              for n in ("a", "b")]
    p = Problem(graph=Graph(blocks=blocks, edges=[Edge(src="a", dst="b", size=3)]), num_microbatches=1,
                cluster=Cluster(devices=[Device(name="x"), Device(name="y")],
                                channels=[Channel(name="xy", endpoints=("x", "y"))]))
    bound = diviml_lower_bound(p, time_limit_s=10)
    assert bound.parts["DiviML MILP"] == 4 == bound.value
    assert optimal(p, time_limit_s=10).objective == 4


def test_diviml_takes_the_common_options():
    # the same answer from an options object and from keywords; the MILP's own knobs stay keywords
    from schedsearch.errors import InvalidOptionsError
    from schedsearch.options import ProgressEvent, SearchOptions

    p = heterogeneous(4)
    by_keywords = diviml(p, time_limit_s=30, seed=3)
    by_object = diviml(p, options=SearchOptions(time_limit_s=30, seed=3), relative_gap=1e-6)
    assert (by_keywords.status, by_keywords.objective) == (by_object.status, by_object.objective)
    assert by_keywords.status is Status.OPTIMAL and by_keywords.backend == "diviml-highs"
    events: list[ProgressEvent] = []
    diviml(p, time_limit_s=30, progress=events.append, warm_starts=[by_keywords.schedule])
    assert [e.phase for e in events] == ["diviml MILP"] and events[0].incumbent == by_keywords.objective
    with pytest.raises(InvalidOptionsError, match=r"^diviml: unknown option 'time_limt_s'"):
        diviml(p, time_limt_s=5)
    with pytest.raises(InvalidOptionsError, match=r"^diviml: 'backend' must be 'auto' .*'solver'.*got 'z3'"):
        diviml(p, backend="z3")
    with pytest.raises(InvalidOptionsError, match=r"^diviml: 'backend_params' are not taken"):
        diviml(p, backend_params={"x": 1})
