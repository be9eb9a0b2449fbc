"""plan_sweep() and ``schedsearch sweep``: a grid of micro-batch counts, budgets and families through one executor."""

from __future__ import annotations

import schedsearch
from schedsearch import Pipeline
from schedsearch.cli import main
from schedsearch.executors import TaskOutcome, TaskStatus
from schedsearch.plan.outcome import Reason


def _pipeline() -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    return Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b"],
                    stages=[stage] * 2)


def _figures(result):
    return [(r.family, r.status, r.makespan_ms, r.peak_gib, r.bound_ms, r.handcrafted_ms, r.note) for r in result.rows]


def test_each_point_equals_plan_of_that_point():
    sweep = schedsearch.plan_sweep(_pipeline(), num_microbatches=[4, 6], memory_budgets=["1.5 GiB", "6 GiB"],
                                   time_limit_s=10, parallel=2, deterministic=True)
    assert [(p.num_microbatches, p.memory_budget_bytes) for p in sweep.points] == [
        (4, 3 * 2**29), (4, 6 * 2**30), (6, 3 * 2**29), (6, 6 * 2**30)]
    for point in sweep.points:
        if point.memory_budget_bytes < 2**31:
            assert point.result is None and "rank 0 holds its parameters" in point.error
            continue
        alone = schedsearch.plan(Pipeline(**{**_pipeline().to_dict(), "num_microbatches": point.num_microbatches}),
                                 time_limit_s=10, parallel=2, deterministic=True)
        assert _figures(point.result) == _figures(alone)
        assert point.result.schedule == alone.schedule
    combined = sweep.combined()
    assert "m=6 budget=6 GiB families=1f1b" in combined and "ZB-H1" in combined
    assert combined.count("no schedule family fits") == 2
    assert sweep.table().count("==") == 4


def test_rejected_values_and_families_are_points_too():
    sweep = schedsearch.plan_sweep(_pipeline(), num_microbatches=[0], families=[["1f1b"], ["zb-v", "1f1b"]],
                                   time_limit_s=5, parallel=1)
    assert len(sweep.points) == 2 and all(p.result is None for p in sweep.points)
    assert "num_microbatches" in sweep.points[0].error
    assert sweep.points[1].families == ("zb-v", "1f1b")


class _TimesOut:
    name = "stub"

    def run(self, fn, tasks, timeout_s=None):
        return [TaskOutcome(status=TaskStatus.TIMEOUT, error="no answer within 1 s") for _ in tasks]


def test_timed_out_candidates_are_reported_in_their_point():
    # 2.5 GiB: no handcrafted plan fits (each rank holds two activations), so nothing stands in for the searches
    sweep = schedsearch.plan_sweep(_pipeline(), num_microbatches=[4, 6], memory_budgets=["2.5 GiB"],
                                   executor=_TimesOut(), time_limit_s=5)
    for point in sweep.points:
        assert {r.reason for r in point.result.rows} == {Reason.TIMED_OUT} and point.best is None
    assert "1F1B: timeout (the executor stopped waiting for its search: no answer within 1 s; a longer time_limit_s gives it more time)" in sweep.combined()


def test_sweep_command(tmp_path, capsys):
    path = _pipeline().save(tmp_path / "pipeline.toml")
    code = main(["sweep", str(path), "--microbatches", "4,6", "--budgets", "6 GiB", "--families", "1f1b",
                 "--combined", "--time-limit", "10", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "m=4 budget=6 GiB families=1f1b" in out and "m=6 budget=6 GiB families=1f1b" in out
    assert main(["sweep", str(path), "--microbatches", "4,x"]) == 2
    assert "'--microbatches' must be integers" in capsys.readouterr().err


def test_ctrl_c_stops_the_workers():
    import multiprocessing
    import signal
    import time

    import pytest

    from schedsearch.executors import LocalExecutor

    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            LocalExecutor(parallel=2).run(time.sleep, [60, 60])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t0 < 30
    for _ in range(50):
        if not multiprocessing.active_children():
            break
        time.sleep(0.1)
    assert not multiprocessing.active_children()
