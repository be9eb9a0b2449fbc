"""Start-time ties that restrict an exact search to structured schedules.

A tie ``((block, m), (block', m'), offset)`` asks ``start(block', m') =
start(block, m) + offset`` (family 10 of the encoders, see
:class:`~schedsearch.encode.SolveOptions`). Ties shrink the search space;
a schedule found under ties is a valid schedule of the problem, but an
optimum under ties need not be the problem's optimum (the strategies only
claim optimality when the analytic lower bound is reached).

* :func:`periodic_ties`: micro-batches ``first .. last`` of every block
  repeat with a fixed period: ``start(b, m + 1) = start(b, m) + period``
  (Tessel's repetend, imposed inside one model: the warm-up and the
  cool-down stay free).
* :func:`steady_period`: the least period a steady state can have, the
  largest work of one micro-batch on a device.
* :func:`mirror_ties`: pairs of blocks start together in every micro-batch
  (mirror-symmetric schedules of symmetric placements, e.g. DualPipe's
  down and up pipelines).
"""

from __future__ import annotations

from collections.abc import Iterable

from schedsearch.errors import InvalidProblemError
from schedsearch.problem import Problem

__all__ = ["Tie", "periodic_ties", "steady_period", "mirror_ties"]

Tie = tuple[tuple[str, int], tuple[str, int], int]


def steady_period(problem: Problem) -> int:
    """The largest work one micro-batch puts on a device (mandatory blocks,
    least durations): no periodic steady state is shorter."""
    work: dict[str, int] = {}
    for b in problem.graph.blocks:
        for d in b.devices:
            if all(d in o.devices for o in b.options):
                work[d] = work.get(d, 0) + b.min_duration
    return max(work.values(), default=1)


def periodic_ties(problem: Problem, first: int, last: int, period: int | None = None) -> tuple[Tie, ...]:
    """``start(b, m + 1) = start(b, m) + period`` for every block and ``first <= m < last``.

    ``period`` defaults to :func:`steady_period`. Needs ``0 <= first <=
    last < num_microbatches``.
    """
    n = problem.num_microbatches
    if not (0 <= first <= last < n):
        raise InvalidProblemError(
            f"periodic ties: need 0 <= first <= last < num_microbatches ({n}), got first={first}, last={last}"
        )
    period = steady_period(problem) if period is None else period
    if isinstance(period, bool) or not isinstance(period, int) or period < 1:
        raise InvalidProblemError(f"periodic ties: 'period' must be an integer >= 1, got {period!r}")
    return tuple(((b.name, m), (b.name, m + 1), period) for b in problem.graph.blocks for m in range(first, last))


def mirror_ties(problem: Problem, pairs: Iterable[tuple[str, str]]) -> tuple[Tie, ...]:
    """``start(b', m) = start(b, m)`` for each block pair ``(b, b')`` and every micro-batch."""
    names = set(problem.graph.block_names)
    out = []
    for a, b in pairs:
        for name in (a, b):
            if name not in names:
                raise InvalidProblemError(f"mirror ties: the problem has no block {name!r}")
        out.extend(((a, m), (b, m), 0) for m in range(problem.num_microbatches))
    return tuple(out)
