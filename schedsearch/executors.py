"""Executors: run independent tasks (plan candidates, sweep points) in parallel.

One interface, :class:`Executor` (``run(fn, tasks, timeout_s)``), two
executors, by name (:data:`EXECUTORS`):

* ``"local"`` (:class:`LocalExecutor`, the default): processes of this
  machine (``parallel`` of them; one runs the tasks in this process), nothing
  to start;
* ``"ray"`` (:class:`RayExecutor`): tasks of a Ray cluster, joined at
  ``address`` or started locally by ``ray.init()`` (install the optional
  extra: ``pip install 'schedsearch[ray]'``).

Every task comes back as a :class:`TaskOutcome` in the order given, with a
:class:`TaskStatus`: its value, or the error it raised, or that it timed out,
or that its worker process was lost; nothing is lost. The
function and the tasks must be picklable (module-level functions, attrs
data). Ctrl-C stops the workers.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import enum

import attrs

from schedsearch.errors import InvalidOptionsError, MissingDependencyError, WorkerProcessError
from schedsearch.heap import survivors_frozen

__all__ = ["TaskStatus", "TaskOutcome", "Executor", "LocalExecutor", "RayExecutor", "get_executor", "EXECUTORS",
           "ENGINES"]

#: The executors :func:`get_executor` knows by name.
EXECUTORS = ("local", "ray")
#: Deprecated name of :data:`EXECUTORS`.
ENGINES = EXECUTORS


class TaskStatus(enum.Enum):
    """What became of one task (callers decide on it, never on the ``error`` text)."""

    DONE = "done"  #: the function returned: ``value`` is its answer
    RAISED = "raised"  #: the function raised: ``error`` is the exception's last line
    TIMEOUT = "timeout"  #: no answer within the run's ``timeout_s``
    WORKER_LOST = "worker lost"  #: the worker process running it stopped (killed, out of memory) before answering
    ANSWER_LOST = "answer lost"  #: the answer could not come back from the worker process (not picklable, ...)


@attrs.frozen(kw_only=True)
class TaskOutcome:
    """What became of one task: its :class:`TaskStatus`, its value when done, else ``error`` in words.

    Examples
    --------
    >>> from schedsearch.executors import LocalExecutor
    >>> outcomes = LocalExecutor(parallel=1).run(abs, [-2, "x"])
    >>> [(o.status.name, o.value) for o in outcomes]
    [('DONE', 2), ('RAISED', None)]
    >>> outcomes[1].error
    "TypeError: bad operand type for abs(): 'str'"
    """

    status: TaskStatus = attrs.field(converter=lambda s: _task_status(s),
                                     validator=attrs.validators.instance_of(TaskStatus))
    value: Any = None
    error: str = ""
    wall_time_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is TaskStatus.DONE


#: The status words of earlier versions (an executor written for them still works, with a warning).
_OLD_STATUS = {"done": TaskStatus.DONE, "failed": TaskStatus.RAISED, "timeout": TaskStatus.TIMEOUT}


def _task_status(status: Any) -> Any:
    if isinstance(status, str) and status in _OLD_STATUS:
        warnings.warn(f"TaskOutcome(status={status!r}) is deprecated: pass TaskStatus.{_OLD_STATUS[status].name}",
                      DeprecationWarning, stacklevel=4)
        return _OLD_STATUS[status]
    return status


def _call(fn: Callable[[Any], Any], task: Any) -> TaskOutcome:
    t0 = time.perf_counter()
    try:
        with survivors_frozen():  # a task is a call: its full collections do not rescan what it keeps
            value = fn(task)
    except Exception as exc:  # a failed task is reported, not raised
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return TaskOutcome(status=TaskStatus.RAISED, error=last, wall_time_s=time.perf_counter() - t0)
    return TaskOutcome(status=TaskStatus.DONE, value=value, wall_time_s=time.perf_counter() - t0)


class Executor(Protocol):
    """Runs ``fn`` on every task; returns one :class:`TaskOutcome` per task, in order.

    ``name`` says which executor it is; an optional ``parallel`` attribute
    says how many tasks it runs at once.
    """

    name: str

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float | None = None) -> list[TaskOutcome]:
        ...


@attrs.frozen(kw_only=True, init=False)
class LocalExecutor:
    """``parallel`` processes on this machine running tasks at once (None: one per CPU, at most one per task).

    With ``parallel=1`` (or one task) the tasks run in this process, one
    after the other. ``timeout_s`` is the wall time allowed to the whole run
    past which the unfinished tasks are reported as timed out and the
    processes stopped. (``workers=`` is the deprecated name of ``parallel``.)
    """

    parallel: int | None = None
    name: str = "local"

    def __init__(self, *, parallel: int | None = None, name: str = "local", workers: Any = None) -> None:
        if workers is not None:
            warnings.warn("LocalExecutor(workers=...) is deprecated: use parallel=", DeprecationWarning, stacklevel=2)
            parallel = workers if parallel is None else parallel
        self.__attrs_init__(parallel=parallel, name=name)

    @property
    def workers(self) -> int | None:
        """Deprecated name of :attr:`parallel`."""
        warnings.warn("LocalExecutor.workers is deprecated: use LocalExecutor.parallel", DeprecationWarning,
                      stacklevel=2)
        return self.parallel

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float | None = None,
            on_done: Callable[[int, TaskOutcome], None] | None = None) -> list[TaskOutcome]:
        """One outcome per task, in order; ``on_done(index, outcome)`` is called as each task finishes."""
        with self.session() as pooled:
            return pooled.run(fn, tasks, timeout_s, on_done)

    @contextlib.contextmanager
    def session(self) -> Iterator[_PooledRuns]:
        """An executor for several runs in a row (rounds of tasks) that share one set of worker processes:
        started by the first run that needs them, kept while every run ends with all its answers, stopped at
        the end of the session (or when a run's timeout stops them). A caller running rounds pays the
        processes' start once: 0.6-1 s on an idle machine, several seconds on a loaded one.

        >>> from schedsearch.executors import LocalExecutor
        >>> with LocalExecutor(parallel=1).session() as runs:
        ...     [o.value for o in runs.run(abs, [-1])] + [o.value for o in runs.run(abs, [-2])]
        [1, 2]
        """
        pooled = _PooledRuns(self)
        try:
            yield pooled
        finally:
            pooled.close()


class _PooledRuns:
    """:meth:`LocalExecutor.session`'s executor: :meth:`LocalExecutor.run` with the worker processes kept
    between runs."""

    def __init__(self, executor: LocalExecutor) -> None:
        self.executor = executor
        self.name = executor.name
        self.parallel = executor.parallel
        self.pool: cf.ProcessPoolExecutor | None = None
        self.size = 0

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float | None = None,
            on_done: Callable[[int, TaskOutcome], None] | None = None) -> list[TaskOutcome]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s  # the processes' start counts
        tasks = list(tasks)
        workers = min(self.parallel or os.cpu_count() or 1, max(1, len(tasks)))
        if workers <= 1:
            out = []
            for i, t in enumerate(tasks):
                out.append(_call(fn, t))
                if on_done is not None:
                    on_done(i, out[-1])
            return out
        if self.pool is None or self.size < workers:
            self.close()
            # "spawn": a forked copy of a process that has run OR-tools' threads may hang
            self.pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
            self.size = workers
        pool = self.pool
        futures = [pool.submit(_call, fn, t) for t in tasks]
        index = {f: i for i, f in enumerate(futures)}
        results: dict[int, TaskOutcome] = {}
        pending = set(futures)
        try:
            while pending:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                done, pending = cf.wait(pending, timeout=left, return_when=cf.FIRST_COMPLETED)
                if not done:  # the deadline passed
                    break
                for f in sorted(done, key=index.__getitem__):
                    try:
                        outcome = f.result()
                    except cf.process.BrokenProcessPool:  # a worker process died
                        outcome = TaskOutcome(status=TaskStatus.WORKER_LOST, error="the worker process running "
                                                                          "it stopped (killed, or out of memory)")
                    except Exception as exc:  # the answer could not come back (not picklable, ...)
                        outcome = TaskOutcome(status=TaskStatus.ANSWER_LOST, error=f"its answer could not come back "
                                                                          f"from the worker process "
                                                                          f"({type(exc).__name__})")
                    results[index[f]] = outcome
                    if on_done is not None:
                        on_done(index[f], outcome)
        except KeyboardInterrupt:
            self.stop()
            raise
        for f in sorted(pending, key=index.__getitem__):
            results[index[f]] = TaskOutcome(status=TaskStatus.TIMEOUT, error=f"no answer within {timeout_s:g} s")
            if on_done is not None:
                on_done(index[f], results[index[f]])
        out = [results[i] for i in range(len(futures))]
        if out and all(o.status is TaskStatus.WORKER_LOST for o in out):
            self.stop()
            raise WorkerProcessError(_no_worker_answered())
        if pending or any(o.status is TaskStatus.WORKER_LOST for o in out):
            self.stop()  # workers still running a task (or one lost): not reused
        return out

    @property
    def workers_running(self) -> bool:
        """Whether worker processes are started (a run on them pays no start)."""
        return self.pool is not None

    def stop(self) -> None:
        """Stop the worker processes at once (their tasks are abandoned)."""
        if self.pool is not None:
            _stop(self.pool)
            self.pool = None

    def close(self) -> None:
        """Let the idle worker processes exit (not waited for)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


def _no_worker_answered() -> str:
    """Why no worker process answered, in the user's terms: most often a script without a ``__main__`` guard."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if script and getattr(main, "__spec__", None) is None:
        return (f"the worker processes stopped before answering any task. They start by importing the script "
                f"{os.path.basename(script)!r} again: when it calls plan() at its top level, put that code under "
                f"'if __name__ == \"__main__\":' (or pass parallel=1 to search in this process)")
    return ("the worker processes stopped before answering any task (killed, or out of memory); pass parallel=1 to "
            "search in this process")


def _stop(pool: cf.ProcessPoolExecutor) -> None:
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


@attrs.frozen(kw_only=True)
class RayExecutor:
    """Ray tasks: joins the cluster at ``address`` or starts a local one (``num_cpus`` CPUs).

    Ray is started on first use and left running for the next calls of this
    process (``ray.shutdown()`` stops it).
    """

    address: str | None = None
    num_cpus: int | None = None
    name: str = "ray"

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], timeout_s: float | None = None,
            on_done: Callable[[int, TaskOutcome], None] | None = None) -> list[TaskOutcome]:
        """One outcome per task, in order; ``on_done(index, outcome)`` is called as each is collected."""
        ray = _ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"address": self.address} if self.address else {"num_cpus": self.num_cpus}
            ray.init(ignore_reinit_error=True, log_to_driver=False, include_dashboard=False, **kwargs)
        remote = ray.remote(num_cpus=1, max_retries=0)(_call)
        refs = [remote.remote(fn, t) for t in tasks]
        out: list[TaskOutcome] = []
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            for ref in refs:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    out.append(ray.get(ref, timeout=left))
                except ray.exceptions.GetTimeoutError:
                    ray.cancel(ref, force=True)
                    out.append(TaskOutcome(status=TaskStatus.TIMEOUT, error=f"no answer within {timeout_s:g} s"))
                except ray.exceptions.RayError as exc:
                    out.append(TaskOutcome(status=TaskStatus.WORKER_LOST,
                                           error=f"its Ray task failed ({type(exc).__name__})"))
                if on_done is not None:
                    on_done(len(out) - 1, out[-1])
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        return out


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "engine 'ray' needs Ray: install the extra with pip install 'schedsearch[ray]' (or pip install ray)"
        ) from None
    return ray


def get_executor(executor: str | Executor = "local", *, parallel: int | None = None, address: str | None = None,
                 workers: int | None = None) -> Executor:
    """The executor named ``executor`` (``"local"`` or ``"ray"``), or ``executor`` itself when it is one.

    ``parallel``: tasks run at once (``workers=`` is its deprecated name).

    Examples
    --------
    >>> from schedsearch.executors import get_executor
    >>> get_executor("local", parallel=2)
    LocalExecutor(parallel=2, name='local')
    >>> get_executor("dask")
    Traceback (most recent call last):
    ...
    schedsearch.errors.InvalidOptionsError: plan: 'executor' must be one of ('local', 'ray') or an executor, got 'dask'
    """
    if workers is not None:
        warnings.warn("get_executor(workers=...) is deprecated: use parallel=", DeprecationWarning, stacklevel=2)
        parallel = workers if parallel is None else parallel
    if not isinstance(executor, str):
        if not callable(getattr(executor, "run", None)):
            raise InvalidOptionsError(f"plan: 'executor' must be one of {EXECUTORS} or an executor, got {executor!r}")
        return executor
    if executor == "local":
        return LocalExecutor(parallel=parallel)
    if executor == "ray":
        return RayExecutor(address=address, num_cpus=parallel)
    raise InvalidOptionsError(f"plan: 'executor' must be one of {EXECUTORS} or an executor, got {executor!r}")
