"""Executors: every task reported (done, failed, timed out); local processes and Ray give the inline results."""

from __future__ import annotations

import time

import pytest

import schedsearch
from schedsearch import Pipeline
from schedsearch.errors import InvalidOptionsError
from schedsearch.executors import LocalExecutor, RayExecutor, TaskStatus, get_executor


def _slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _pipeline() -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    return Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b"],
                    stages=[stage] * 2)


def _figures(result):
    return [(r.family, r.status, r.makespan_ms, r.peak_gib, r.bound_ms, r.handcrafted_ms) for r in result.rows]


def test_failed_and_timed_out_tasks_are_reported():
    outcomes = LocalExecutor(parallel=2).run(_slow, [0.0, "x", 30.0], timeout_s=3.0)
    assert [o.status for o in outcomes] == [TaskStatus.DONE, TaskStatus.RAISED, TaskStatus.TIMEOUT]
    assert "TypeError" in outcomes[1].error and outcomes[0].value == 0.0


def test_unknown_executor():
    with pytest.raises(InvalidOptionsError, match="'executor' must be one of"):
        get_executor("dask")


def test_local_processes_equal_inline():
    inline = schedsearch.plan(_pipeline(), time_limit_s=20, parallel=1, deterministic=True)
    processes = schedsearch.plan(_pipeline(), time_limit_s=20, parallel=2, deterministic=True)
    assert _figures(processes) == _figures(inline)
    assert processes.schedule == inline.schedule


@pytest.mark.slow
def test_ray_equals_local():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'schedsearch[ray]')")
    try:
        local = schedsearch.plan(_pipeline(), time_limit_s=20, parallel=1, deterministic=True)
        on_ray = schedsearch.plan(_pipeline(), time_limit_s=20, executor=RayExecutor(num_cpus=2), deterministic=True)
        assert on_ray.executor == "ray"
        assert _figures(on_ray) == _figures(local)
        assert on_ray.schedule == local.schedule
    finally:
        ray.shutdown()


SCRIPT = """
import schedsearch
stage = {{"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0}}  # 1F1B and ZB-H1
pipeline = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], stages=[stage] * 2)
{body}
"""
CALL = "result = schedsearch.plan(pipeline, time_limit_s=5, parallel=2)\nprint('best', result.best.family)"


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_calling_plan_works_or_says_to_add_a_main_guard(tmp_path, guarded):
    import os
    import subprocess
    import sys
    from pathlib import Path

    body = "if __name__ == '__main__':\n    " + CALL.replace("\n", "\n    ") if guarded else CALL
    script = tmp_path / "my_plan.py"
    script.write_text(SCRIPT.format(body=body))
    root = str(Path(schedsearch.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    if guarded:
        assert done.returncode == 0 and "best ZB-H1" in done.stdout, done.stderr[-2000:]
    else:
        assert done.returncode != 0 and "best" not in done.stdout
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("schedsearch.errors.WorkerProcessError: ") and "'my_plan.py'" in last, last
        assert "if __name__ == \"__main__\":" in last and "BrokenProcessPool" not in last


@pytest.mark.parametrize("parallel", [1, 2])
def test_plan_reports_each_candidate_as_it_finishes(parallel):
    lines = []
    result = schedsearch.plan(_pipeline(), time_limit_s=10, parallel=parallel, progress=lines.append)
    assert sorted(line.split("] ", 1)[1].split(":")[0] for line in lines) == sorted(r.family for r in result.rows)
    assert [line.split("]")[0] for line in lines] == [f"[{k}/{len(result.rows)}" for k in range(1, len(lines) + 1)]
    for row in result.rows:
        line = next(line for line in lines if f"] {row.family}: " in line)
        assert f"{row.makespan_ms:.3f} ms, {row.mark}" in line
    with pytest.raises(InvalidOptionsError, match="'progress'"):
        schedsearch.plan(_pipeline(), time_limit_s=10, parallel=1, progress="stderr")
