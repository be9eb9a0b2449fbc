"""Deterministic mode: searches stopped by their limit give the same table on every run and engine."""

from __future__ import annotations

import time

import pytest

import schedsearch
from schedsearch import Pipeline
from schedsearch.options import Deadline
from schedsearch.sweep import LocalExecutor, RayExecutor

# uneven stages, a budget below what 1F1B's warm-up needs on rank 0: ZB-H1's search stops at its limit
_MS = [(1.3, 2.9, 1.4, 1.5), (1.7, 3.1, 1.6, 1.5), (1.1, 2.6, 1.2, 1.4), (1.9, 3.4, 1.8, 1.6)]


def _pipeline() -> Pipeline:
    stages = [{"forward_ms": f, "backward_ms": b, "input_grad_ms": i, "weight_grad_ms": w,
               "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"} for f, b, i, w in _MS]
    return Pipeline(num_ranks=4, num_microbatches=16, memory_budget_bytes="4 GiB", families=["1f1b"],
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
    first = schedsearch.plan(_pipeline(), time_limit_s=2, engine=LocalExecutor(workers=2), workers=2)
    assert "FEASIBLE" in [r.status for r in first.rows]  # a search stopped at its limit, not proven
    second = schedsearch.plan(_pipeline(), time_limit_s=2, engine=LocalExecutor(workers=1), workers=2)
    assert _table(second) == _table(first)
    assert second.schedule == first.schedule


@pytest.mark.slow
def test_ray_equals_local_when_stopped_by_the_limit():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'schedsearch[ray]')")
    try:
        local = schedsearch.plan(_pipeline(), time_limit_s=2, workers=2)
        on_ray = schedsearch.plan(_pipeline(), time_limit_s=2, engine=RayExecutor(num_cpus=2), workers=2)
        assert "FEASIBLE" in [r.status for r in local.rows]
        assert _table(on_ray) == _table(local)
        assert on_ray.schedule == local.schedule
    finally:
        ray.shutdown()
