"""The one error hierarchy of schedsearch.

Every error subclasses :class:`SchedSearchError` and the builtin it resembles,
so callers may catch either. Messages name the entity, the field and the
value, e.g. ``block 'F3': option 0: 'duration' must be >= 1, got 0``.

Infeasible and timed-out searches are *statuses* of a result, never errors.

The package raises no bare builtin error of its own (no ``ValueError``,
``TypeError``, ``RuntimeError``, ...): a check that fails raises a class of
this module. Four builtins are raised directly, each where a protocol asks
for it (``tests/test_errors.py`` holds the package to this list):

- ``KeyError`` from a look-up by name (``Graph.block``, ``Cluster.device``,
  ``Cluster.channel``, ...), as a mapping does;
- ``AttributeError`` from a module's ``__getattr__`` (PEP 562), for a name the
  module does not have;
- ``AssertionError`` for an internal invariant that cannot fail unless the
  library has a bug (marked unreachable where it is raised);
- ``SystemExit`` from the command line, with its exit code.
"""

from __future__ import annotations

__all__ = [
    "SchedSearchError",
    "InvalidProblemError",
    "InvalidScheduleError",
    "InvalidOperatorGraphError",
    "InvalidOptionsError",
    "UnsupportedFeatureError",
    "SolverError",
    "ValidationFailedError",
    "FormatError",
    "PlanError",
    "ExecutionError",
    "MissingDependencyError",
    "WorkerProcessError",
    "UnsoundBoundWarning",
    "InvalidPipelineError",
    "NoFittingPlanError",
    "DeadlineExceeded",
]


class SchedSearchError(Exception):
    """Base class of every error raised by schedsearch.

    Catch it to handle any error of the library; each subclass also derives
    from the builtin it resembles (``ValueError``, ``RuntimeError``, ...).

    Examples
    --------
    >>> from schedsearch import Device, SchedSearchError
    >>> try:
    ...     Device(name="d0", memory=-1)
    ... except SchedSearchError as error:
    ...     print(error)
    device 'd0': 'memory' must be >= 0, got -1
    """


class InvalidProblemError(SchedSearchError, ValueError):
    """A Problem (or one of its parts) is malformed.

    Examples
    --------
    >>> from schedsearch import Edge, InvalidProblemError
    >>> try:
    ...     Edge(src="F0", dst="F0")
    ... except InvalidProblemError as error:
    ...     print(error)
    edge 'F0' -> 'F0': 'dst' must differ from 'src' (self-loop), got 'F0'
    >>> issubclass(InvalidProblemError, ValueError)
    True
    """


class InvalidScheduleError(SchedSearchError, ValueError):
    """A Schedule is malformed in itself (not merely infeasible for a problem).

    A schedule that breaks a problem's rules is not an error: those are the
    violations :func:`~schedsearch.validate.validate` returns.

    Examples
    --------
    >>> from schedsearch import InvalidScheduleError, TaskInstance
    >>> try:
    ...     TaskInstance(block="F0", microbatch=0, devices=("d0",), start=3, end=3)
    ... except InvalidScheduleError as error:
    ...     print(error)
    task 'F0' (micro-batch 0): 'end' must be > 'start' (3), got 3
    """


class InvalidOperatorGraphError(SchedSearchError, ValueError):
    """An operator graph (partitioning input) is malformed."""


class InvalidOptionsError(SchedSearchError, ValueError):
    """A search or solver option (seed, workers, time limit, ...) is of the wrong
    type or out of the range every backend accepts; the message names the
    option, the allowed range and the value."""


class FormatError(SchedSearchError, ValueError):
    """A file or document could not be read or written in the requested format."""


class UnsupportedFeatureError(SchedSearchError, NotImplementedError):
    """A backend or exporter cannot express a feature; the message names an alternative."""


class SolverError(SchedSearchError, RuntimeError):
    """A solver failed in a way that is not a search status (a bug or a crash)."""


class ValidationFailedError(SolverError):
    """A solver returned a schedule that the independent validator rejects.

    This is never expected; it means an encoder bug. The violations are kept
    in :attr:`violations`.
    """

    def __init__(self, message: str, violations: tuple = ()) -> None:
        super().__init__(message)
        self.violations = tuple(violations)


class PlanError(SchedSearchError, ValueError):
    """An execution plan (e.g. a compute-only pipeline CSV) cannot run as given:
    the message names the rank, the action, the stage and the micro-batch."""


class InvalidPipelineError(InvalidProblemError):
    """A pipeline description (:class:`~schedsearch.plan.pipeline.Pipeline`) is malformed:
    the message names the stage or section, the field and the value."""


class NoFittingPlanError(SchedSearchError, ValueError):
    """No schedule family fits the pipeline's memory budget: the message says,
    for the first families, which rank needs how much memory in any plan of
    that family, and counts the rest; :attr:`reasons` holds every
    ``(family, reason)`` pair (empty when the message has no list).
    """

    def __init__(self, message: str, reasons: tuple = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)


class ExecutionError(SchedSearchError, RuntimeError):
    """Running a plan failed: a process raised, crashed or did not finish in time.

    :attr:`rank` is the first rank that failed (None when the whole run timed
    out), :attr:`details` the per-rank reports gathered before the run was
    stopped.
    """

    def __init__(self, message: str, rank: int | None = None, details: tuple = ()) -> None:
        super().__init__(message)
        self.rank = rank
        self.details = tuple(details)


class WorkerProcessError(SchedSearchError, RuntimeError):
    """The local worker processes stopped before answering any task (a script without a ``__main__`` guard, ...)."""


class MissingDependencyError(SchedSearchError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class UnsoundBoundWarning(UserWarning):
    """A lower bound turned out larger than the objective of a validated plan.

    The bound (and any optimality proof resting on it) is dropped; the plan
    is returned without a claim. This is never expected: it means a bug in
    a bound or a solver, and the problem is worth reporting.
    """


class DeadlineExceeded(SchedSearchError, TimeoutError):
    """A call's time limit passed at one of its phases' checkpoints (:func:`schedsearch.deadline.checkpoint`).

    The phase running stops where it is; the call that set the deadline
    (:func:`~schedsearch.solve`, :func:`~schedsearch.plan`,
    :func:`~schedsearch.search.jobshop`) catches it and returns what it has
    (a plan found before, or TIMEOUT with the best bound), so it never leaves
    a public entry.
    """
