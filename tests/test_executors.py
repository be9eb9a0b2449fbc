"""The local executor's sessions: rounds of tasks share one set of worker processes (machine-independent facts:
which processes answered, never timings)."""

from __future__ import annotations

import os
import time

from schedsearch.executors import LocalExecutor, TaskStatus


def _pid(_: object) -> int:
    return os.getpid()


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_a_session_keeps_its_worker_processes_between_runs():
    with LocalExecutor(parallel=2).session() as runs:
        assert not runs.workers_running
        first = runs.run(_pid, [0, 1, 2, 3])
        assert runs.workers_running
        second = runs.run(_pid, [0, 1, 2, 3])
    assert all(o.status is TaskStatus.DONE for o in first + second)
    mine = os.getpid()
    started = {o.value for o in first}
    assert mine not in started and 1 <= len(started) <= 2
    assert {o.value for o in second} <= started  # the same processes answered the second run


def test_a_run_that_times_out_stops_its_workers_and_the_next_starts_others():
    with LocalExecutor(parallel=2).session() as runs:
        slow = runs.run(_sleep, [60.0, 60.0], timeout_s=0.5)
        assert [o.status for o in slow] == [TaskStatus.TIMEOUT, TaskStatus.TIMEOUT]
        assert not runs.workers_running  # still busy with the abandoned tasks: stopped, not reused
        again = runs.run(_pid, [0, 1])
    assert all(o.status is TaskStatus.DONE for o in again)


def test_one_task_or_one_process_runs_in_this_process():
    with LocalExecutor(parallel=1).session() as runs:
        assert [o.value for o in runs.run(_pid, [0, 1])] == [os.getpid()] * 2
        assert not runs.workers_running
