"""Deterministic mode: searches stopped by their limit give the same table on every run and engine."""

from __future__ import annotations

import time

import pytest

import schedsearch
from schedsearch import Pipeline
from schedsearch.options import Deadline
from schedsearch.executors import LocalExecutor, RayExecutor
from schedsearch.result import Status

# uneven stages, a budget below what 1F1B's warm-up needs on rank 0: ZB-H1's search stops at its limit
_MS = [(1.3, 2.9, 1.4, 1.5), (1.7, 3.1, 1.6, 1.5), (1.1, 2.6, 1.2, 1.4), (1.9, 3.4, 1.8, 1.6)]


def _pipeline(num_microbatches: int = 16) -> Pipeline:
    stages = [{"forward_ms": f, "backward_ms": b, "input_grad_ms": i, "weight_grad_ms": w,
               "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"} for f, b, i, w in _MS]
    return Pipeline(num_ranks=4, num_microbatches=num_microbatches, memory_budget_bytes="4 GiB", families=["1f1b"],
                    stages=stages, p2p={"time_ms": 0.2})


def _table(result):
    return [(r.family, r.status, r.makespan_ms, r.peak_gib, r.bound_ms, r.gap, r.handcrafted_ms, r.note)
            for r in result.rows]


def test_deadline_spends_only_what_is_charged():
    deadline = Deadline(0.01, deterministic=True)
    time.sleep(0.02)
    assert not deadline.expired() and deadline.left() == 0.01
    deadline.charge(0.02)
    assert deadline.expired()
    assert Deadline(0.01).left() < 0.01  # wall-clock mode


def test_local_runs_stopped_by_the_limit_are_equal():
    # 8 micro-batches and a budget of 1 s: both searches stop at their limit, far below the wall-clock guard
    first = schedsearch.plan(_pipeline(8), time_limit_s=1, executor=LocalExecutor(parallel=2), parallel=2,
                             deterministic=True)
    assert Status.FEASIBLE in [r.status for r in first.rows]  # a search stopped at its limit, not proven
    second = schedsearch.plan(_pipeline(8), time_limit_s=1, executor=LocalExecutor(parallel=1), parallel=2,
                              deterministic=True)
    assert _table(second) == _table(first)
    assert second.schedule == first.schedule


@pytest.mark.slow
def test_ray_equals_local_when_stopped_by_the_limit():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'schedsearch[ray]')")
    try:
        local = schedsearch.plan(_pipeline(), time_limit_s=2, parallel=2, deterministic=True)
        on_ray = schedsearch.plan(_pipeline(), time_limit_s=2, executor=RayExecutor(num_cpus=2), parallel=2,
                                  deterministic=True)
        assert Status.FEASIBLE in [r.status for r in local.rows]
        assert _table(on_ray) == _table(local)
        assert on_ray.schedule == local.schedule
    finally:
        ray.shutdown()


def test_a_search_stopped_by_the_wall_clock_guard_says_so(monkeypatch):
    """A deterministic search whose deterministic time runs slower than the calibration stops at its guard and
    its result says it may differ on another run."""
    import schedsearch.encode.cpsat.model as cpsat_model
    from schedsearch.options import SearchOptions
    from schedsearch.plan.planner import _prepare, build_problem

    monkeypatch.setattr(cpsat_model, "DETERMINISTIC_WALL_GUARD", 0.0)
    monkeypatch.setattr(cpsat_model, "DETERMINISTIC_WALL_GUARD_S", 0.05)
    pipeline = _pipeline()
    prepared = _prepare(pipeline, time_limit_s=100, parallel=1, deterministic=True, seed=0)
    candidate = next(c for c in prepared.runnable if c.split_backward)
    problem = build_problem(pipeline, candidate, pipeline.stages, prepared.units)
    result = schedsearch.solve(problem, engines=["exact"],
                               options=SearchOptions(time_limit_s=100, deterministic=True, workers=1))
    assert result.wall_guard_hit is True
    assert result.wall_time_s < 30  # the guard, not the 100 s of deterministic time, stopped it


def test_plan_honours_its_wall_clock_limit_by_default():
    """Without deterministic mode each candidate's share is wall-clock time: the searches stop at their share."""
    from schedsearch.plan.planner import _prepare

    prepared = _prepare(_pipeline(), time_limit_s=4, parallel=2, deterministic=False, seed=0)
    assert all(not t.options.deterministic and t.options.time_limit_s == 4.0 for t in prepared.tasks)
