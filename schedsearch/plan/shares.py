"""The planner's time: ``plan(time_limit_s=...)`` split into the candidates' shares, and one share spent.

The search floor gives one search one budget (:class:`~schedsearch.search.run.Run`,
the options' ``time_limit_s``). The planner runs many searches, one per
candidate, and around each of them work the search does not see: drawing the
family's published schedule, re-timing the plan with the real times, the row's
figures. This module is the whole of that arithmetic, in two parts.

**Shares of the limit** (:class:`Shares`, in the parent process). The
candidates run ``parallel`` at a time (default 2), so in
``rounds = ceil(candidates / parallel)`` rounds; each gets
``share_s = max(1, time_limit_s / rounds)`` seconds as its search options'
``time_limit_s``, so that the rounds end within the limit. The time spent
before any candidate starts (choosing the units and the candidates, loading
the solver) is charged to the shares: each is cut in proportion, keeping at
least half (:meth:`Shares.after_setup`). The executor waits
:meth:`Shares.executor_timeout_s` for the whole batch before it reports the
rest as timed out.

**One share spent** (:class:`ShareClock` and :class:`WorkEstimate`, in the
worker). The share's clock starts when the candidate's work starts. The work
around the search is estimated per task instance (the constants below,
measured on one core) and reserved: the published schedule is drawn only
when its drawing, the search's bound and the row's figures fit in what is
left (:meth:`ShareClock.covers`), and the search gets what is left less the
work after it, at least a floor (:meth:`ShareClock.search_options`).

In deterministic mode none of this reads the clock: the shares are
deterministic time (the solver's work count), never cut, and every published
schedule is drawn, so every run and engine gives the same table.
"""

from __future__ import annotations

import math
import os

import attrs

from schedsearch.options import Deadline, SearchOptions

__all__ = ["BOUND_S_PER_TASK", "FIGURES_S_PER_TASK", "RETIME_S_PER_TASK", "SEARCH_FLOOR_S", "WORKER_START_S", "worker_start_s",
           "SEARCH_FLOOR_WITH_PLAN_S", "SETUP_PREPARE_SHARE", "SETUP_PROPOSALS_SHARE", "ShareClock", "Shares", "WorkEstimate"]

#: The parts of a ``plan_layers`` limit its setup may take before any search (a wall-clock limit only): the
#: configurations with their split proposals, then the candidates' schedule models and bounds. Past either,
#: the rest is left out (proposals) or not reached (configurations, with their floors as bounds); the first
#: configuration is prepared within the whole limit, so that a search has something to start from.
SETUP_PROPOSALS_SHARE = 0.3
SETUP_PREPARE_SHARE = 0.5

#: The least time a candidate's search gets when the candidate has no plan yet, whatever its share has left.
SEARCH_FLOOR_S = 0.5

#: The least time a candidate's search gets when the published schedule is already its plan: the search
#: may then only improve on it, so it gets what the share has left (the bound comes first in it).
SEARCH_FLOOR_WITH_PLAN_S = 0.05

#: Seconds per task instance assumed for the search's lower bound (it runs first in the search, whatever the
#: time left): 4-5 us at 65,000-120,000 task instances on one core.
BOUND_S_PER_TASK = 5e-6

#: Seconds per task instance assumed for a row's figures of its plan once the search is over (the metrics
#: and the real time ratios: 1-1.5 us at 80,000-120,000 task instances on one core).
FIGURES_S_PER_TASK = 2e-6

#: Seconds per task instance assumed for re-timing a plan the search found with the real times (3-4 us).
RETIME_S_PER_TASK = 4e-6

#: Candidates searched at once when the caller does not say.
DEFAULT_PARALLEL = 2

#: Seconds a worker process takes to start and import the search on an idle machine (0.6-1 s, with a
#: margin): with less time left after the setup than this times the machine's slowness now
#: (:func:`worker_start_s`), the local executor's candidates run in the calling process, one after the other.
WORKER_START_S = 2.0


def worker_start_s(wall_s: float, cpu_s: float, queue: float | None = None) -> float:
    """Wall seconds a worker process is expected to take to start now: :data:`WORKER_START_S` times how
    much slower than idle this machine runs a process, the larger of two readings: the calling process's
    wall seconds over its CPU seconds in the call so far (1 while that is too short to tell), and the
    processes waiting for each core (``queue``: by default the load average of the last minute over the
    cores, plus this one). Eight busy processes on two cores make it 4-5 times slower: a worker then
    starts in 3-4 s, not 1.

    >>> worker_start_s(2.0, 2.0, queue=0.5), worker_start_s(2.5, 0.5, queue=1.0), worker_start_s(0.01, 0.001, queue=4.5)
    (2.0, 10.0, 9.0)
    """
    if queue is None:
        try:
            queue = (os.getloadavg()[0] + 1) / (os.cpu_count() or 1)
        except OSError:  # no load average on this system
            queue = 1.0
    slow = wall_s / cpu_s if cpu_s >= 0.05 and wall_s > cpu_s else 1.0
    return WORKER_START_S * max(1.0, slow, queue)


@attrs.frozen(kw_only=True)
class Shares:
    """``time_limit_s`` split among ``num_candidates`` searches run ``parallel`` at a time.

    Examples
    --------
    >>> from schedsearch.plan.shares import Shares
    >>> shares = Shares(time_limit_s=60.0, num_candidates=9, parallel=4)
    >>> shares.rounds, shares.share_s, shares.after_setup(shares.share_s, 6.0)
    (3, 20.0, 18.0)
    """

    time_limit_s: float
    num_candidates: int
    parallel: int | None = None

    @property
    def rounds(self) -> int:
        """Rounds of searches: ``ceil(candidates / parallel)``."""
        return math.ceil(self.num_candidates / max(1, self.parallel or DEFAULT_PARALLEL))

    @property
    def share_s(self) -> float:
        """Each candidate's search time: the limit over the rounds, at least one second."""
        return max(1.0, self.time_limit_s / self.rounds)

    def after_setup(self, share_s: float, spent_s: float) -> float:
        """``share_s`` cut in proportion to the ``spent_s`` seconds of the limit used before any candidate
        started (each share keeps at least half): the rounds' shares then add up to what is left."""
        if spent_s <= 0 or self.time_limit_s <= 0:
            return share_s
        return share_s * max(0.5, 1.0 - spent_s / self.time_limit_s)

    def executor_timeout_s(self, per_task_s: float) -> float:
        """Wall time the executor allows the batch: each round ``per_task_s`` (a search stops at its share,
        or in deterministic mode at its wall-clock guard) plus 30 s, and 60 s of start-up."""
        return self.rounds * (per_task_s + 30.0) + 60.0


@attrs.frozen(kw_only=True)
class WorkEstimate:
    """Seconds estimated for the work around one candidate's search, from its number of task instances.

    ``num_tasks`` counts the task instances, ``weighted`` counts members of
    overlapped groups more (:func:`~schedsearch.search.portfolio.estimated_tasks`);
    ``memory_exact`` says whether the search's bound holds for the bytes as
    it is (else the bound of a second problem, memory rounded the other way,
    is computed after the search); ``draw_s_per_task`` is the cost of drawing
    and validating a published schedule.

    Examples
    --------
    >>> from schedsearch.plan.shares import WorkEstimate
    >>> w = WorkEstimate(num_tasks=100_000, weighted=100_000, memory_exact=True, draw_s_per_task=1e-5)
    >>> round(w.draw_s, 6), round(w.with_published_s, 6), round(w.after_search_s, 6)
    (1.0, 0.7, 0.6)
    """

    num_tasks: int
    weighted: int
    memory_exact: bool
    draw_s_per_task: float

    @property
    def _relaxed_per_task(self) -> float:
        return 0.0 if self.memory_exact else BOUND_S_PER_TASK

    @property
    def draw_s(self) -> float:
        """Drawing the published schedule and validating it."""
        return self.draw_s_per_task * self.weighted

    @property
    def with_published_s(self) -> float:
        """With the published schedule as the plan: the search's bound (to prove it), the relaxed bound and
        the row's figures (no re-timing: its times are as soon as possible in its order)."""
        return (BOUND_S_PER_TASK + self._relaxed_per_task) * self.num_tasks + FIGURES_S_PER_TASK * self.weighted

    @property
    def after_search_s(self) -> float:
        """After the search: the row's figures, the re-timing of the plan it found and the relaxed bound."""
        return (FIGURES_S_PER_TASK + RETIME_S_PER_TASK) * self.weighted + self._relaxed_per_task * self.num_tasks


class ShareClock:
    """One candidate's share as it is spent, from the moment the candidate's work starts.

    ``left()`` is None without a wall-clock limit: no limit, or a
    deterministic one (deterministic limits must not depend on the clock).
    """

    def __init__(self, options: SearchOptions) -> None:
        self.options = options
        self.share_s = options.time_limit_s
        self._deadline = Deadline(None if options.deterministic else options.time_limit_s)

    @property
    def deadline(self) -> Deadline:
        """The share as a :class:`~schedsearch.options.Deadline` (no limit in deterministic mode): the hard
        stop of the work it pays for (:func:`~schedsearch.deadline.stopping`)."""
        return self._deadline

    @property
    def spent_s(self) -> float:
        """Wall seconds since the candidate's work started."""

        return self._deadline.elapsed

    def left(self) -> float | None:
        """Seconds the share has left (may be <= 0); None without a wall-clock limit."""
        return self._deadline.left()

    def covers(self, seconds: float) -> bool:
        """True when ``seconds`` of work fit in what the share has left (always without a wall-clock limit)."""
        left = self.left()
        return left is None or seconds <= left

    def search_options(self, reserve_s: float, floor_s: float) -> SearchOptions:
        """The search's options: its time limit cut to what the share has left less ``reserve_s`` (the work
        after it), at least ``floor_s``; unchanged without a wall-clock limit."""
        left = self.left()
        if left is None:
            return self.options
        return self.options.replace(time_limit_s=max(floor_s, left - reserve_s))
