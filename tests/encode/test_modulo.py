"""The modulo-scheduling sub-problem on both backends.

Fixture: the V-shape on 2 devices (F = 1, B = 2), work 3 per device.

* Unbounded memory: every period >= 3 is feasible, 2 is not (d0 must run
  3 units per period); the least latency is the critical path
  1 + 1 + 2 + 2 = 6.
* Capacity 1 per device: only one micro-batch may hold d0's activation, from
  F0's start to B0's start (at least 1 + 1 + 2 = 4 later); the next F0 may
  start only once B0 has started and must not overlap B0 (2 units), so the
  period is at least 4 + 2 = 6: periods 3-5 are infeasible, 6 is feasible.
"""

from __future__ import annotations

import pytest

from schedsearch.encode.repetend import REPETEND_BACKENDS, RepetendOptions, solve_repetend
from schedsearch.errors import UnsupportedFeatureError
from schedsearch.periodic import check_repetend
from schedsearch.placements import chain_pipelines, vshape
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Problem
from schedsearch.result import Status

BACKENDS = sorted(REPETEND_BACKENDS)


def options(**kw) -> RepetendOptions:
    # deterministic: the tests assert proven statuses (OPTIMAL, INFEASIBLE), which CP-SAT under a wall-clock
    # limit does not guarantee on a loaded machine (Z3 keeps its wall-clock limit, ample for these sizes)
    base = dict(max_offset=4, time_limit_s=20, workers=2, seed=0, deterministic=True)
    base.update(kw)
    return RepetendOptions(**base)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unbounded_memory_least_period_is_the_work_and_latency_the_critical_path(backend) -> None:
    problem = vshape(2, 4)
    assert solve_repetend(problem, backend, options(period=2)).status is Status.INFEASIBLE
    result = solve_repetend(problem, backend, options(period=3))
    assert result.status is Status.OPTIMAL
    assert result.latency == 6 == result.repetend.latency()
    assert check_repetend(problem, result.repetend) == ()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("encoding", ["cumulative", "events", "both"])
def test_capacity_one_needs_period_six(backend, encoding) -> None:
    problem = vshape(2, 4, memory=1)
    for period in (3, 4, 5):
        got = solve_repetend(problem, backend, options(period=period, objective="feasibility", memory_encoding=encoding))
        assert got.status is Status.INFEASIBLE, period
    got = solve_repetend(problem, backend, options(period=6, objective="feasibility", memory_encoding=encoding))
    assert got.status is Status.OPTIMAL
    assert check_repetend(problem, got.repetend) == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_forbidden_offsets_and_latency_cap_are_kept(backend) -> None:
    problem = vshape(2, 4)
    first = solve_repetend(problem, backend, options(period=3)).repetend
    vector = {b: o[0] for b, o in first.offsets.items()}
    second = solve_repetend(problem, backend, options(period=3, forbidden_offsets=[vector], objective="feasibility"))
    assert second.repetend is not None
    assert {b: o[0] for b, o in second.repetend.offsets.items()} != vector
    capped = solve_repetend(problem, backend, options(period=3, max_latency=5))
    assert capped.status is Status.INFEASIBLE  # below the critical path


@pytest.mark.parametrize("backend", BACKENDS)
def test_cyclic_order_is_kept(backend) -> None:
    # two copies of one chain on one device; copy 1 may not start before copy 0
    problem = chain_pipelines([[0, 0]], 1, 1, backward=None, forward_memory=0)
    folded = Problem(
        graph=Graph(
            blocks=[Block(name=f"F{s}~{c}", options=[(("d0",), 1)]) for c in range(2) for s in range(2)],
            edges=[Edge(src=f"F0~{c}", dst=f"F1~{c}") for c in range(2)],
        ),
        num_microbatches=1,
        cluster=problem.cluster,
    )
    got = solve_repetend(folded, backend, options(period=4, cyclic_orders=[("F0~0", "F0~1")]))
    rep = got.repetend
    start = {t.block: t.phase - 4 * t.offset for t in rep.tasks}
    assert start["F0~0"] <= start["F0~1"] <= start["F0~0"] + 4


def test_backends_agree_on_feasibility_of_an_interleaved_pipeline() -> None:
    # interleaved on 2 devices (stages on 0, 1, 0, 1), capacity 2
    problem = chain_pipelines([[0, 1, 0, 1]], 2, 4, memory=2)
    answers = {}
    for backend in BACKENDS:
        answers[backend] = [
            solve_repetend(problem, backend, options(period=p, objective="feasibility", max_offset=6)).status
            for p in range(6, 12)
        ]
    assert answers["cpsat"] == answers["z3"]
    assert Status.OPTIMAL in answers["cpsat"]


def test_unsupported_problems_name_the_alternative() -> None:
    cluster = Cluster(devices=[Device(name="d0"), Device(name="d1")],
                      channels=[{"name": "c", "endpoints": ("d0", "d1")}])
    graph = Graph(blocks=[Block(name="a", options=[(("d0",), 1)]), Block(name="b", options=[(("d1",), 1)])],
                  edges=[Edge(src="a", dst="b", size=2)])
    problem = Problem(graph=graph, num_microbatches=2, cluster=cluster)
    with pytest.raises(UnsupportedFeatureError, match="use optimal"):
        solve_repetend(problem, "cpsat", options(period=2))
    flexible = Problem(
        graph=Graph(blocks=[Block(name="a", options=[(("d0",), 1), (("d1",), 1)])]),
        num_microbatches=2,
        cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")]),
    )
    with pytest.raises(UnsupportedFeatureError, match="flexible_options"):
        solve_repetend(flexible, "cpsat", options(period=2))


def test_modulo_options_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="'objective'"):
        RepetendOptions(period=3, max_offset=1, objective="fast")
    with pytest.raises(ValueError, match="'memory_encoding'"):
        RepetendOptions(period=3, max_offset=1, memory_encoding="bits")
    with pytest.raises(ValueError, match="'period'"):
        RepetendOptions(period=0, max_offset=1)
    with pytest.raises(ValueError, match="'max_offset'"):
        RepetendOptions(period=3, max_offset=-1)
    with pytest.raises(ValueError, match="unknown name"):
        solve_repetend(vshape(2, 2), "gurobi", options(period=3))


def test_the_old_modulo_names_still_work() -> None:
    from schedsearch.encode import repetend
    from schedsearch.search.run import Run

    assert repetend.ModuloOptions is repetend.RepetendOptions and repetend.ModuloResult is repetend.PeriodResult
    assert repetend.solve_modulo is repetend.solve_repetend and repetend.MODULO_BACKENDS is repetend.REPETEND_BACKENDS
    assert Run.modulo_options is Run.repetend_options


def test_a_backend_object_with_the_old_method_name_is_called_with_a_warning() -> None:
    from schedsearch.encode.cpsat.repetend import solve_repetend as cpsat_solve

    class OldBackend:
        name = "old-cpsat"

        def __init__(self) -> None:
            self.calls = 0

        def solve_modulo(self, problem, opts):
            self.calls += 1
            return cpsat_solve(problem, opts)

    backend = OldBackend()
    with pytest.warns(DeprecationWarning, match="solve_modulo"):
        result = solve_repetend(vshape(2, 4), backend, options(period=3))
    assert backend.calls == 1 and result.status is Status.OPTIMAL and result.latency == 6
