"""One candidate's search: the executor's unit of work (:func:`_evaluate`) and the row it returns.

A candidate's share of the time (:mod:`schedsearch.plan.shares`) pays for
drawing its family's published schedule (when the share covers it; the note
says what ran out when it does not), the search
(:func:`~schedsearch.search.portfolio.solve`, warm-started from the published
schedule when that fits), and the row's figures, every one in milliseconds of
the unrounded times (:mod:`schedsearch.plan.times`).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import attrs

from schedsearch.deadline import set_aside, stopping, unstopped
from schedsearch.errors import DeadlineExceeded, InvalidProblemError
from schedsearch.handcrafted.simulate import validation_deferred
from schedsearch.options import Deadline, SearchOptions
from schedsearch.plan.pipeline import Pipeline, exact_bytes
from schedsearch.rewrite import with_capacities
from schedsearch.problem import Problem
from schedsearch.plan.shares import SEARCH_FLOOR_S, SEARCH_FLOOR_WITH_PLAN_S, ShareClock, WorkEstimate
from schedsearch.plan.times import CandidateTimes, float_below, retime_ms
from schedsearch.result import Status
from schedsearch.schedule import Schedule, metrics
from schedsearch.units import Units
from schedsearch.validate import validate
from schedsearch.plan.candidates import Candidate, _handcrafted
from schedsearch.plan.outcome import Reason
from schedsearch.plan.table import PlanRow, _row_without_plan


@attrs.frozen(kw_only=True)
class _Task:
    pipeline: Pipeline
    candidate: Candidate
    units: Units
    options: SearchOptions
    times: CandidateTimes  # the candidate's times and its integer problem, built once
    #: the wall-clock end of the whole call (``time.time()``; None: none, as in deterministic mode): nothing
    #: of the candidate but its row's figures runs past it; with the candidate's ``turn`` (its index, the
    #: candidates, how many run at once) its share is measured when it starts (:func:`_measured_share`), else
    #: it is the one in ``options``
    ends_at: float | None = None
    turn: tuple[int, int, int] | None = None


@attrs.frozen(kw_only=True)
class _Outcome:
    row: PlanRow
    schedule: Schedule | None
    handcrafted: Schedule | None


def _gibs(units: Units, problem: Problem, schedule: Schedule, figures: Any = None) -> tuple[float, ...]:
    """Each rank's peak in GiB (from ``figures``, the plan's metrics, when already computed)."""
    peak = (figures or metrics(problem, schedule)).peak_memory
    return tuple(round(units.gib(peak[d]), 3) for d in problem.cluster.device_names)


def _seconds(s: float) -> str:
    """A duration in words with two significant figures: ``"0.41 ms"``, ``"12 ms"``, ``"3.4 s"``."""
    def figures(x: float) -> str:
        return f"{x:.0f}" if x >= 10 else f"{x:.2g}"

    if s >= 1.0:
        return f"{figures(s)} s"
    return f"{figures(s * 1e3)} ms" if s * 1e3 >= 0.01 else "under 0.01 ms"


def _not_drawn_note(name: str, num_tasks: int, share_s: float, spent_s: float, need_s: float) -> str:
    """Why the published ``name`` was not drawn: what the candidate's share had left against what it needed."""
    left = share_s - spent_s
    what = (f"was used up ({_seconds(spent_s)} went to the work before it)" if left <= 0 else
            f"had {_seconds(left)} left")
    return (f"the published {name} was not drawn: the candidate's share of the time limit ({_seconds(share_s)}) "
            f"{what}, and drawing it and proving it against the bound take about {_seconds(need_s)} at {num_tasks} "
            f"task instances (a longer time_limit_s, or fewer candidates at once, gives it time)")


@attrs.frozen(kw_only=True)
class _Published:
    """The family's published schedule on one candidate's problem: drawn, or why not."""

    name: str | None = None
    schedule: Schedule | None = None
    fits: bool = False
    note: str = ""
    draw_s: float = 0.0  # wall seconds its drawing took


def _draw_published(candidate: Candidate, problem: Problem, clock: ShareClock, work: WorkEstimate) -> _Published:
    """The family's published schedule on ``problem``, drawn once (the row shows it, and when it fits the
    budget the search starts from it), or why it was not: not timed by the description, no time left in the
    share, a precondition of the construction not met."""
    name = candidate.handcrafted_name()
    if name is None:
        return _Published()
    if candidate.record.overlap and not candidate.overlap:
        return _Published(name=name, note=(f"no published {name} to compare with: it runs a forward and a backward "
                                           f"together, which the description does not time (give 'fb_overlap_ms')"))
    cost = work.draw_s + work.with_published_s
    if not clock.covers(cost) and cost > SEARCH_FLOOR_S:
        # a drawing within the search's floor is drawn whatever the share has left: a search without a plan
        # gets that floor anyway, and the drawing is the cheapest plan it can start from
        return _Published(name=name, note=_not_drawn_note(name, work.num_tasks, clock.share_s, clock.spent_s, cost))
    drawn_at = time.perf_counter()
    free = problem if all(d.memory is None for d in problem.cluster.devices) else with_capacities(problem, None)
    try:
        with validation_deferred():  # validated once, below, against ``problem`` itself
            hand = _handcrafted(candidate, free)
    except DeadlineExceeded as stop:  # the share ended while it was drawn: stopped, not waited for
        set_aside(stop)
        return _Published(name=name, note=_not_drawn_note(name, work.num_tasks, clock.share_s, clock.spent_s,
                                                          work.draw_s + work.with_published_s))
    except InvalidProblemError as exc:  # a precondition of the published construction: say which
        return _Published(name=name, note=f"no published {name} to compare with: {exc}")
    except Exception as exc:  # the construction failed on this problem: an error inside the library
        return _Published(name=name, note=(f"no published {name} to compare with: its construction failed on this "
                                           f"candidate ({type(exc).__name__}, an error inside the library)"))
    try:
        broken = validate(problem, hand)  # a plan of ``problem`` itself: no check again in the search
    except DeadlineExceeded as stop:
        set_aside(stop)
        return _Published(name=name, note=_not_drawn_note(name, work.num_tasks, clock.share_s, clock.spent_s,
                                                          work.draw_s + work.with_published_s))

    other = [v for v in broken if v.kind != "memory"]
    assert not other, f"{name}: the handcrafted schedule breaks more than memory: {other[:3]}"
    return _Published(name=name, schedule=hand, fits=not broken, draw_s=time.perf_counter() - drawn_at)


def _search(problem: Problem, options: SearchOptions) -> tuple[Any, list[str]]:
    """:func:`~schedsearch.search.portfolio.solve` on one candidate's problem, and what its row must say."""
    from schedsearch.search.portfolio import ENGINES, solve

    notes = []
    try:
        result = solve(problem, options=options)
    except (KeyError, IndexError) as exc:
        # a handcrafted construction of the portfolio failed on this problem: search without them
        notes.append("the published schedules the search starts from could not be drawn for this candidate "
                     f"({type(exc).__name__}); searched without them")
        result = solve(problem, options=options, engines=[e for e in ENGINES if e != "handcrafted"])
    if result.wall_guard_hit:
        notes.append("a deterministic search hit its wall-clock guard: this row may differ on another run")
    return result, notes


def _evaluate(task: _Task) -> _Outcome:
    """Solve one candidate and run its handcrafted schedule (the executor's unit of work).

    The candidate's share of the time (:mod:`schedsearch.plan.shares`) pays
    for building its problem, drawing its published schedule (when the share
    covers it), the search, and the row's figures (reserved before the
    search starts).
    """
    from schedsearch.search.portfolio import HANDCRAFTED_S_PER_TASK, estimated_tasks

    call = None  # the whole call's end, when the share is measured here
    if task.ends_at is not None:
        left = task.ends_at - time.time()
        if left <= 0:
            return _Outcome(row=_row_without_plan(task.candidate, Reason.TIMED_OUT, (
                "not searched: the time limit ended before its turn (the candidates before it took it; a longer "
                "time_limit_s, or fewer candidates at once, gives it time)")), schedule=None, handcrafted=None)
        if task.turn is not None:
            task = attrs.evolve(task, options=task.options.replace(time_limit_s=_measured_share(left, task.turn)))
        call = Deadline(left)

    clock = ShareClock(task.options)
    candidate, problem = task.candidate, task.times.problem
    work = WorkEstimate(num_tasks=problem.num_tasks,
                        weighted=estimated_tasks(problem), memory_exact=task.times.memory_exact,
                        draw_s_per_task=HANDCRAFTED_S_PER_TASK)
    with stopping(call):  # nothing of the candidate but its row's figures runs past the call's end
        # a drawing the share (at least the search's floor) cannot pay for is stopped, not waited for
        floor = Deadline(None if task.options.deterministic else SEARCH_FLOOR_S)
        with stopping(clock.deadline if clock.covers(SEARCH_FLOOR_S) else floor):
            published = _draw_published(candidate, problem, clock, work)
        reserve = work.after_search_s
        if published.schedule is not None and work.draw_s > 0:
            # a machine slower than the estimates (a loaded one) is slower after the search too: keep the
            # reserve in proportion
            reserve *= max(1.0, published.draw_s / work.draw_s)
        options = clock.search_options(reserve, SEARCH_FLOOR_WITH_PLAN_S if published.fits else SEARCH_FLOOR_S)
        if published.fits:
            options = options.replace(warm_starts=(published.schedule,))
        result, notes = _search(problem, options)
    if published.note:
        notes.append(published.note)
    with unstopped():  # the figures of what was found, whatever the clock says
        row, schedule = _figures(task, result, published, notes)
    row["wall_time_s"] = round(clock.spent_s, 3)
    return _Outcome(row=PlanRow(**row), schedule=schedule, handcrafted=published.schedule)


def _measured_share(left_s: float, turn: tuple[int, int, int]) -> float:
    """A candidate's share measured when it starts: the ``left_s`` seconds the call has left over the rounds
    left (its own included; ``turn`` is its index, the number of candidates and how many run at once), so
    that the time the candidates before it did not use goes to those after it, and the time they overran is
    taken from them.

    >>> _measured_share(6.0, (4, 8, 2))  # 4 candidates left, 2 at once: 2 rounds
    3.0
    """
    index, count, at_once = turn
    return left_s / max(1, math.ceil((count - index) / max(1, at_once)))


def _rounding_note(times: CandidateTimes, units: Units, gap: float) -> str:
    """The note of a plan optimal for the integer problem whose real figures leave a gap to the bound: it names
    what the integers rounded (the times, the memory amounts, or both) and the gap."""
    rounded = []
    if not times.exact():
        rounded.append(("times", f"the times rounded to {units.time_unit_ms:g} ms units"))
    if not times.memory_exact:
        rounded.append(("memory amounts", f"the memory amounts rounded to {exact_bytes(units.memory_unit_bytes)} "
                                          f"units{'' if rounded else ' (the times are exact)'}"))
    if not rounded:  # unreachable while the bound is of the integer problem's optimum: both exact close the gap
        rounded.append(("figures", "the integer problem"))
    what = " and ".join(text for _, text in rounded)
    real = " and ".join(name for name, _ in rounded)
    return f"optimal for {what}; with the real {real} within {100 * gap:.2f}% of the bound"


def _figures(task: _Task, result: Any, published: _Published,
             notes: list[str]) -> tuple[dict[str, Any], Schedule | None]:
    """The row's fields of one candidate's search and published schedule, every figure in ms of the real
    times (the plan's order re-timed, a bound on the real problem), and the plan it shows."""
    candidate, units, times = task.candidate, task.units, task.times
    problem = times.problem
    hand, name = published.schedule, published.name
    engine = f"handcrafted {name}" if hand is not None and result.schedule is hand else result.engine
    row: dict[str, Any] = {"candidate": candidate, "status": result.status, "engine": engine}
    bound = times.bound_ms(result.lower_bound)
    if bound is not None:
        row["bound_ms"] = float_below(bound)
    schedule = result.schedule  # validated by the search (every plan solve returns is)
    hand_real = hand_fig = None
    if hand is not None:
        # a published schedule is timed as soon as possible in its order (schedule_from_orders): with every
        # time exact, re-timing it with the real times gives its own times in ms
        hand_real = Fraction(hand.makespan) * times.unit_ms if times.exact() else retime_ms(hand, times)
    real = None
    if schedule is not None:
        real = hand_real if schedule is hand else retime_ms(schedule, times)
    if name is not None:
        row["handcrafted"] = name
    if hand is not None:
        hand_fig = metrics(problem, hand)
        row.update(handcrafted_ms=float(hand_real), handcrafted_peak_gib=_gibs(units, problem, hand, hand_fig),
                   handcrafted_fits=published.fits)
        if published.fits and (real is None or hand_real < real):  # the search had nothing better in time
            notes.append(f"the search found {'no plan' if real is None else 'no better plan'} in time: "
                         f"the plan is {name}'s")
            schedule, real = hand, hand_real
            row["status"] = Status.FEASIBLE
    if schedule is not None:
        fig = hand_fig if schedule is hand else metrics(problem, schedule)
        peak_proven = result.proven_levels >= 2 and schedule is result.schedule
        row.update(makespan_ms=float(real), bubble_pct=round(100 * fig.bubble_global / fig.makespan, 2),
                   peak_gib=_gibs(units, problem, schedule, fig), peak_proven=peak_proven)
        if bound is not None:
            row["gap"] = float((real - bound) / real) if real else 0.0
            row["makespan_proven"] = bound >= real
            row["status"] = Status.OPTIMAL if bound >= real and peak_proven else Status.FEASIBLE
            if bound < real and result.status is Status.OPTIMAL and schedule is result.schedule:
                notes.append(_rounding_note(times, units, row["gap"]))
    row["note"] = "; ".join(notes)
    return row, schedule

