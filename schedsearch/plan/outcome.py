"""What became of one candidate of the planner, as types: a row's :class:`Reason` beside its status.

A row of the plan table (:class:`~schedsearch.plan.planner.PlanRow`) has the
library's :class:`~schedsearch.result.Status` and, when the status alone does
not say it, a :class:`Reason`: why the candidate was left out before any
search, why its search gave no answer, or why its plan is not the one
written. The planner decides on these two values, never on the text of a
note or an exception; the note says the same in a user's words.

=====================  ==============  ==========  =========================================================
reason                 status          mark        when
=====================  ==============  ==========  =========================================================
``SHAPE``              ``UNKNOWN``     skipped     the family does not apply to the description (its stage
                                                   count, split-backward times, ranks or micro-batches, a
                                                   zero time, an F&B pair shorter than its members)
``MEMORY``             ``INFEASIBLE``  skipped     proven before any search: no plan keeps a rank within
                                                   the memory budget
``MODEL``              ``UNKNOWN``     skipped     the schedule model refuses the candidate's integer
                                                   problem (a description the checks accepted)
``TIMED_OUT``          ``TIMEOUT``     timeout     the executor stopped waiting for the candidate's search
``WORKER_LOST``        ``UNKNOWN``     failed      the worker process stopped, or its answer could not
                                                   come back
``LIBRARY_ERROR``      ``UNKNOWN``     failed      the candidate's search raised an error inside the library
``RUNTIME``            the plan's      the plan's  a plan the chosen runtime cannot execute: not the plan
                                       status      written
=====================  ==============  ==========  =========================================================

A row without a reason is its search's outcome: ``OPTIMAL`` (the makespan
meets the bound and the peak memory is proven least among the plans of that
makespan), ``FEASIBLE`` (a plan, one of the two not proven), ``TIMEOUT`` or
``INFEASIBLE`` (no plan).

Examples
--------
>>> from schedsearch.plan.outcome import Reason
>>> Reason.MEMORY.status.value, Reason.MEMORY.mark, Reason.TIMED_OUT.mark
('INFEASIBLE', 'skipped', 'timeout')
"""

from __future__ import annotations

import enum

from schedsearch.executors import TaskStatus
from schedsearch.result import Status

__all__ = ["Reason"]


class Reason(enum.Enum):
    """Why a row has no plan of its own search, or why its plan is not the one written (see the module)."""

    SHAPE = "shape"  #: the family does not apply to the description's shape
    MEMORY = "memory"  #: proven over the memory budget before any search
    MODEL = "model"  #: the schedule model refuses the candidate's integer problem
    TIMED_OUT = "timed out"  #: the executor stopped waiting for the candidate's search
    WORKER_LOST = "worker lost"  #: the worker process stopped, or its answer could not come back
    LIBRARY_ERROR = "library error"  #: the candidate's search raised an error inside the library
    RUNTIME = "runtime"  #: the chosen runtime cannot execute the row's plan: not the plan written

    @property
    def left_out(self) -> bool:
        """True when the candidate was left out before any search."""
        return self in (Reason.SHAPE, Reason.MEMORY, Reason.MODEL)

    @property
    def status(self) -> Status:
        """The row's status when the reason is why it has no plan (``RUNTIME`` rows keep their plan's)."""
        return {Reason.MEMORY: Status.INFEASIBLE, Reason.TIMED_OUT: Status.TIMEOUT}.get(self, Status.UNKNOWN)

    @property
    def mark(self) -> str:
        """The table's status cell of a row without a plan for this reason ("" for ``RUNTIME``: the status)."""
        if self.left_out:
            return "skipped"
        if self is Reason.TIMED_OUT:
            return "timeout"
        return "" if self is Reason.RUNTIME else "failed"

    @classmethod
    def of_task(cls, status: TaskStatus) -> Reason:
        """Why a candidate whose executor task ended with ``status`` (not ``DONE``) has no answer."""
        return {TaskStatus.TIMEOUT: cls.TIMED_OUT, TaskStatus.RAISED: cls.LIBRARY_ERROR}.get(status, cls.WORKER_LOST)
