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
    "UnsupportedFeatureError",
    "SolverError",
    "ValidationFailedError",
    "FormatError",
]


class SchedSearchError(Exception):
    """Base class of every error raised by schedsearch."""


class InvalidProblemError(SchedSearchError, ValueError):
    """A Problem (or one of its parts) is malformed."""


class InvalidScheduleError(SchedSearchError, ValueError):
    """A Schedule is malformed in itself (not merely infeasible for a problem)."""


class InvalidOperatorGraphError(SchedSearchError, ValueError):
    """An operator graph (partitioning input) is malformed."""


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
