"""The one error hierarchy of schedsearch.

Every error subclasses :class:`SchedSearchError` and the builtin it resembles,
so callers may catch either. Messages name the entity, the field and the
value, e.g. ``block 'F3': option 0: 'duration' must be >= 1, got 0``.

Infeasible and timed-out searches are *statuses* of a result, never errors.
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
    "UnsoundBoundWarning",
]


class SchedSearchError(Exception):
    """Base class of every error raised by schedsearch."""


class InvalidProblemError(SchedSearchError, ValueError):
    """A Problem (or one of its parts) is malformed."""


class InvalidScheduleError(SchedSearchError, ValueError):
    """A Schedule is malformed in itself (not merely infeasible for a problem)."""


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


class MissingDependencyError(SchedSearchError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class UnsoundBoundWarning(UserWarning):
    """A lower bound turned out larger than the objective of a validated plan.

    The bound (and any optimality proof resting on it) is dropped; the plan
    is returned without a claim. This is never expected: it means a bug in
    a bound or a solver, and the problem is worth reporting.
    """
