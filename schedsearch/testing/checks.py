"""Assertions for testing schedulers, bounds and search strategies.

Each check raises :class:`CheckFailed` (an :class:`AssertionError`, so
pytest and hypothesis treat it as a test failure and hypothesis shrinks it)
with a report meant to be read: the problem in one line, every broken rule
grouped by kind, and the plan per device. None of them needs hypothesis.

* :func:`assert_valid`: the plan breaks no rule of the problem;
* :func:`assert_result_consistent`: a search result's claims hold (valid
  plan, objective recomputed from it, bound not above it, status agreeing);
* :func:`assert_optimal`: the plan (or result) reaches the exact optimum of
  the brute-force oracle (small problems only);
* :func:`assert_bound_sound`: a lower bound is not above the optimum (or
  above any given valid plan);
* :func:`assert_never_worse`: a plan is valid and no worse than a baseline.

The objective is the problem's (``"makespan"``, or ``"max_span"``: the
longest device span) unless ``objective=`` says otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from schedsearch.errors import InvalidOptionsError, InvalidScheduleError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, objective_value
from schedsearch.testing.oracle import OracleResult, OracleTooLarge, exact_optimum
from schedsearch.validate import Violation, validate

__all__ = [
    "CheckFailed",
    "assert_valid",
    "assert_result_consistent",
    "assert_optimal",
    "assert_bound_sound",
    "assert_never_worse",
    "describe_schedule",
]

_SHOWN = 12  # violations listed in a report


class CheckFailed(AssertionError):
    """A check of :mod:`schedsearch.testing.checks` failed; ``violations``
    holds the validator's findings when a plan was invalid.

    It subclasses ``AssertionError``, so test runners report it as a
    failed assertion.

    Examples
    --------
    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import CheckFailed, assert_valid
    >>> try:
    ...     assert_valid(vshape(2, 2, memory=1), gpipe(vshape(2, 2)))
    ... except CheckFailed as failure:
    ...     print(failure.violations[0])
    [memory] device 'd0': memory level 2 exceeds capacity 1 at time 1 (peak 2)
    """

    def __init__(self, message: str, violations: Iterable[Violation] = ()) -> None:
        super().__init__(message)
        self.violations = tuple(violations)


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


def _problem_line(problem: Problem) -> str:
    caps = {d.name: d.memory for d in problem.cluster.devices if d.memory is not None}
    extras = []
    if caps:
        extras.append(f"capacities {caps}")
    if problem.cluster.channels:
        extras.append(f"{len(problem.cluster.channels)} channel(s)")
    for field, label in (("releases", "releases"), ("fixed_orders", "fixed orders"), ("overlaps", "overlaps"),
                         ("duration_overrides", "duration overrides")):
        if getattr(problem, field):
            extras.append(f"{len(getattr(problem, field))} {label}")
    if problem.objective != "makespan":
        extras.append(f"objective {problem.objective}")
    label = f"{problem.name!r}: " if problem.name else ""
    return (f"problem {label}{len(problem.graph.blocks)} blocks x {problem.num_microbatches} micro-batches on "
            f"{len(problem.cluster.devices)} device(s)" + (f" ({', '.join(extras)})" if extras else ""))


def describe_schedule(schedule: Schedule, devices: Iterable[str] | None = None, max_tasks: int = 40) -> str:
    """The plan as text: one line per device (``block/micro-batch[start,end)``,
    ``*`` after an overlapped member) and one per channel.

    The checks put it in their failure messages, so a failing property
    shows the plan it failed on.

    Examples
    --------
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import describe_schedule
    >>> print(describe_schedule(one_f_one_b(vshape(2, 2))))
        d0: F0/0[0,1) F0/1[1,2) B0/0[4,6) B0/1[7,9)
        d1: F1/0[1,2) B1/0[2,4) F1/1[4,5) B1/1[5,7)
    """
    names = list(devices) if devices is not None else list(schedule.devices)
    for d in schedule.devices:
        if d not in names:
            names.append(d)
    lines = []
    for d in names:
        items = [f"{t.block}/{t.microbatch}[{t.start},{t.end}){'*' if t.overlap else ''}"
                 for t in schedule.on_device(d)]
        more = f" ... (+{len(items) - max_tasks})" if len(items) > max_tasks else ""
        lines.append(f"    {d}: {' '.join(items[:max_tasks]) or '(idle)'}{more}")
    by_channel: dict[str, list[str]] = {}
    for tr in schedule.transfers:
        by_channel.setdefault(tr.channel, []).append(f"{tr.src}->{tr.dst}/{tr.microbatch}[{tr.start},{tr.end})")
    for ch, items in by_channel.items():
        lines.append(f"    channel {ch}: {' '.join(items[:max_tasks])}")
    return "\n".join(lines)


def _checked_oracle(problem: Problem, objective: str, oracle: OracleResult | None, max_tasks: int,
                    node_limit: int) -> OracleResult:
    """The oracle's answer (computed unless given), its witness plan checked:
    an invalid witness is an oracle bug, reported as such rather than as a
    failure of the code under test."""
    if oracle is None:
        oracle = exact_optimum(problem, objective=objective, max_tasks=max_tasks, node_limit=node_limit)
    if oracle.schedule is not None:
        violations = validate(problem, oracle.schedule)
        if violations:
            raise CheckFailed(
                f"the brute-force oracle's plan is invalid (a bug of schedsearch.testing.oracle, not of the code "
                f"under test) for {_problem_line(problem)}:\n  "
                + "\n  ".join(str(v) for v in violations[:_SHOWN])
                + f"\n  plan:\n{describe_schedule(oracle.schedule, problem.cluster.device_names)}",
                violations,
            )
    return oracle


def _value(schedule: Schedule, objective: str) -> int:
    return objective_value(schedule, objective)


def _schedule_of(item: Any, field: str = "schedule") -> Schedule | None:
    """A Schedule from a Schedule, a search result (its ``schedule``) or None."""
    if item is None or isinstance(item, Schedule):
        return item
    if hasattr(item, "schedule"):
        return item.schedule
    raise InvalidScheduleError(f"checks: {field!r} must be a Schedule, a search result or None, got {type(item).__name__}")


def _bound_value(bound: Any) -> int | None:
    """An int from an int, a bound object (``.value``) or a search result (``.lower_bound``)."""
    if bound is None or isinstance(bound, int) and not isinstance(bound, bool):
        return bound
    for attr in ("value", "lower_bound"):
        if hasattr(bound, attr):
            return getattr(bound, attr)
    raise InvalidOptionsError(f"assert_bound_sound: 'bound' must be an int, a bound (.value) or a search result "
                              f"(.lower_bound), got {type(bound).__name__}")


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def assert_valid(problem: Problem, schedule: Schedule | Any, what: str = "schedule") -> Schedule:
    """Return the plan if it breaks no rule of ``problem``; else raise :class:`CheckFailed`.

    ``schedule`` may also be a search result (its plan is checked). The
    report lists the problem, the violations grouped by kind and the plan
    per device, e.g.::

        schedule breaks 1 rule(s) of problem '1f1b-p1-m2': 2 blocks x 2 micro-batches on 1 device(s) (...)
          kinds: memory x1
          [memory] device 'd0': memory level 2 exceeds capacity 1 at time 1 (peak 2)
          plan:
            d0: F0/0[0,1) F0/1[1,2) B0/0[2,3) B0/1[3,4)

    Examples
    --------
    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import assert_valid
    >>> problem = vshape(2, 2)
    >>> assert_valid(problem, gpipe(problem)).makespan
    9
    >>> assert_valid(vshape(2, 2, memory=1), gpipe(problem))  # GPipe holds two activations
    Traceback (most recent call last):
    ...
    schedsearch.testing.checks.CheckFailed: schedule breaks 2 rule(s) of problem 'vshape-2x2': ...
    """
    plan = _schedule_of(schedule)
    if plan is None:
        raise CheckFailed(f"{what}: there is no plan (None) for {_problem_line(problem)}")
    violations = validate(problem, plan)
    if violations:
        kinds = Counter(v.kind for v in violations)
        shown = "\n  ".join(str(v) for v in violations[:_SHOWN])
        more = f"\n  ... and {len(violations) - _SHOWN} more" if len(violations) > _SHOWN else ""
        raise CheckFailed(
            f"{what} breaks {len(violations)} rule(s) of {_problem_line(problem)}\n"
            f"  kinds: {', '.join(f'{k} x{n}' for k, n in kinds.items())}\n  {shown}{more}\n"
            f"  plan:\n{describe_schedule(plan, problem.cluster.device_names)}",
            violations,
        )
    return plan


def assert_result_consistent(problem: Problem, result: Any, what: str = "result") -> None:
    """A search result's claims agree with its plan.

    Its plan (if any) is valid and its ``objective`` is the plan's value
    recomputed; its ``lower_bound`` is not above the objective; ``OPTIMAL``
    and ``FEASIBLE`` carry a plan and the others none; an ``OPTIMAL``
    result's bound equals its objective.

    Examples
    --------
    A property of a strategy over random problems (hypothesis):

    >>> from hypothesis import given, settings
    >>> from schedsearch.search import list_schedule
    >>> from schedsearch.testing import assert_result_consistent, problems
    >>> @settings(max_examples=10, derandomize=True, database=None, deadline=None)
    ... @given(problems(max_tasks=4))
    ... def test_list_schedule_claims(problem):
    ...     assert_result_consistent(problem, list_schedule(problem))
    >>> test_list_schedule_claims()
    """
    status = getattr(result, "status", None)
    name = getattr(status, "value", str(status))
    has_plan = name in ("OPTIMAL", "FEASIBLE")
    if has_plan != (result.schedule is not None):
        raise CheckFailed(f"{what}: status {name} but {'no plan' if has_plan else 'a plan'} "
                          f"({_problem_line(problem)})")
    if result.schedule is None:
        return
    assert_valid(problem, result.schedule, f"{what}'s plan")
    objective = getattr(result, "objective_name", None) or problem.objective
    value = _value(result.schedule, objective)
    if result.objective != value:
        raise CheckFailed(f"{what}: claims {objective} {result.objective}, but its plan has {value}\n"
                          f"  plan:\n{describe_schedule(result.schedule, problem.cluster.device_names)}")
    if result.lower_bound is not None and result.lower_bound > value:
        raise CheckFailed(f"{what}: lower bound {result.lower_bound} above its own plan's {objective} {value}")
    if name == "OPTIMAL" and result.lower_bound != value:
        raise CheckFailed(f"{what}: OPTIMAL with objective {value} but lower bound {result.lower_bound}")


def assert_optimal(
    problem: Problem,
    result: Any,
    *,
    objective: str | None = None,
    oracle: OracleResult | None = None,
    max_tasks: int = 10,
    node_limit: int = 2_000_000,
) -> OracleResult:
    """The plan reaches the exact optimum (brute-force oracle); returns the oracle's answer.

    ``result`` is a search result or a plan (None: "found nothing"). When
    the problem is infeasible the result must carry no plan (and no
    ``OPTIMAL``/``FEASIBLE`` status). Raises
    :class:`~schedsearch.testing.oracle.OracleTooLarge` when the problem is
    beyond the oracle (more than ``max_tasks`` task instances or
    ``node_limit`` search nodes): call it on small problems only (in a
    hypothesis test, ``assume`` it away). Pass ``oracle`` (an earlier
    answer of :func:`~schedsearch.testing.oracle.exact_optimum` for this
    problem and objective) to skip the search.

    Examples
    --------
    1F1B is optimal on its placement; GPipe too, without a memory limit:

    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import assert_optimal
    >>> problem = vshape(2, 2)
    >>> assert_optimal(problem, one_f_one_b(problem)).value
    9
    """
    objective = objective or problem.objective
    oracle = _checked_oracle(problem, objective, oracle, max_tasks, node_limit)
    plan = _schedule_of(result, "result")
    status = getattr(getattr(result, "status", None), "value", None)
    if oracle.value is None:
        if plan is not None or status in ("OPTIMAL", "FEASIBLE"):
            assert_valid(problem, plan, "plan of an infeasible problem")
            raise CheckFailed(f"the oracle finds {_problem_line(problem)} infeasible, but a valid plan was "
                              f"given (an oracle bug?)")
        return oracle
    if plan is None:
        raise CheckFailed(
            f"no plan{f' (status {status})' if status else ''}, but the optimal {objective} of "
            f"{_problem_line(problem)} is {oracle.value}:\n"
            f"{describe_schedule(oracle.schedule, problem.cluster.device_names)}"
        )
    assert_valid(problem, plan)
    value = _value(plan, objective)
    if value != oracle.value:
        raise CheckFailed(
            f"{objective} {value} is not optimal for {_problem_line(problem)}: the optimum is {oracle.value}\n"
            f"  plan:\n{describe_schedule(plan, problem.cluster.device_names)}\n"
            f"  an optimal plan:\n{describe_schedule(oracle.schedule, problem.cluster.device_names)}"
        )
    claimed = getattr(result, "objective", None) if not isinstance(result, Schedule) else None
    if claimed is not None and claimed != value:
        raise CheckFailed(f"the result claims {objective} {claimed}, but its plan has {value}")
    return oracle


def assert_bound_sound(
    problem: Problem,
    bound: Any,
    *,
    schedules: Iterable[Schedule] = (),
    objective: str | None = None,
    oracle: OracleResult | None = None,
    max_tasks: int = 10,
    node_limit: int = 2_000_000,
) -> int | None:
    """A lower bound is never above the optimum.

    ``bound`` is an int, a bound object (its ``value``) or a search result
    (its ``lower_bound``); None is trivially sound. It is compared with the
    value of every plan of ``schedules`` (each must be valid) and with the
    oracle's optimum. Returns the optimum (None when infeasible or when the
    oracle was not run). When the problem is beyond the oracle the plans
    alone decide; without plans
    :class:`~schedsearch.testing.oracle.OracleTooLarge` is raised. Pass
    ``oracle`` (an earlier answer for this problem and objective) to skip
    the search.

    Examples
    --------
    >>> from schedsearch.bounds import analytic_lower_bound
    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.testing import CheckFailed, assert_bound_sound
    >>> problem = vshape(2, 2)
    >>> assert_bound_sound(problem, analytic_lower_bound(problem))  # returns the optimum
    9
    >>> try:
    ...     assert_bound_sound(problem, 10, schedules=[gpipe(problem)])
    ... except CheckFailed as failure:
    ...     print(str(failure).splitlines()[0])
    lower bound 10 is above the makespan 9 of a valid plan of problem 'vshape-2x2':
    4 blocks x 2 micro-batches on 2 device(s)
    """
    objective = objective or problem.objective
    value = _bound_value(bound)
    plans = list(schedules)
    for i, plan in enumerate(plans):
        assert_valid(problem, plan, f"plan {i}")
        v = _value(plan, objective)
        if value is not None and value > v:
            raise CheckFailed(f"lower bound {value} is above the {objective} {v} of a valid plan of "
                              f"{_problem_line(problem)}\n  plan:\n"
                              f"{describe_schedule(plan, problem.cluster.device_names)}")
    try:
        oracle = _checked_oracle(problem, objective, oracle, max_tasks, node_limit)
    except OracleTooLarge:
        if plans:
            return None
        raise
    if value is not None and oracle.value is not None and value > oracle.value:
        raise CheckFailed(
            f"lower bound {value} is above the optimal {objective} {oracle.value} of {_problem_line(problem)}\n"
            f"  an optimal plan:\n{describe_schedule(oracle.schedule, problem.cluster.device_names)}"
        )
    return oracle.value


def assert_never_worse(
    problem: Problem,
    schedule: Any,
    baseline: Any,
    *,
    objective: str | None = None,
) -> None:
    """``schedule`` is valid and its objective is at most ``baseline``'s.

    Both may be plans or search results. A baseline of None (the baseline
    found nothing) only requires ``schedule`` to be valid when given; a
    ``schedule`` of None with a baseline plan fails (a plan existed).

    Examples
    --------
    A search warm-started from a handcrafted plan must not lose it:

    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> from schedsearch.search import list_schedule
    >>> from schedsearch.testing import assert_never_worse
    >>> problem = vshape(2, 2)
    >>> assert_never_worse(problem, list_schedule(problem), gpipe(problem))
    """
    objective = objective or problem.objective
    plan, base = _schedule_of(schedule), _schedule_of(baseline, "baseline")
    if base is not None:
        assert_valid(problem, base, "baseline")
    if plan is None:
        if base is not None:
            raise CheckFailed(f"no plan, but the baseline has one ({objective} {_value(base, objective)}) for "
                              f"{_problem_line(problem)}")
        return
    assert_valid(problem, plan)
    if base is not None:
        v, b = _value(plan, objective), _value(base, objective)
        if v > b:
            raise CheckFailed(
                f"{objective} {v} is worse than the baseline's {b} on {_problem_line(problem)}\n"
                f"  plan:\n{describe_schedule(plan, problem.cluster.device_names)}\n"
                f"  baseline:\n{describe_schedule(base, problem.cluster.device_names)}"
            )
