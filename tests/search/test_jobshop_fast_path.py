"""The job-shop planner's fast path: the quick pass and the automatic redundant bounds."""

from __future__ import annotations

import pytest

from schedsearch.loaders import flexible_jobshop_problem, jobshop_problem, read_jobshop
from schedsearch.placements import vshape
from schedsearch.result import Status
from schedsearch.search import jobshop
from schedsearch.validate import validate

_COMMON = dict(time_limit_s=30, workers=2, seed=0)


def _classic():
    return jobshop_problem([[(0, 3), (1, 2), (2, 2)], [(1, 4), (0, 1), (2, 3)], [(2, 2), (0, 4), (1, 1)]], 3).problem


def test_quick_pass_proves_an_easy_classic_instance(shared_data):
    # ft06's optimum (55) meets its lower bound: the quick pass alone proves it. Deterministic mode, so
    # the pass's wall-clock cap is deterministic time too and the outcome is the same under any load
    problem = read_jobshop(shared_data / "jsp" / "ft" / "ft06.txt").problem
    fast = jobshop(problem, deterministic=True, **_COMMON)
    slow = jobshop(problem, quick_pass=False, deterministic=True, **_COMMON)
    assert fast.stats["quick"]["status"] == "OPTIMAL" and "exact" not in fast.stats
    assert "quick" not in slow.stats
    for result in (fast, slow):
        assert result.status is Status.OPTIMAL
        assert validate(problem, result.schedule) == ()
    assert fast.objective == slow.objective == fast.lower_bound == 55


def test_quick_pass_hands_over_when_it_proves_nothing(shared_data):
    # la02's optimum (655) meets its lower bound, but the short quick pass rarely reaches it
    problem = read_jobshop(shared_data / "jsp" / "la" / "la02.txt").problem
    result = jobshop(problem, **_COMMON)
    quick = result.stats["quick"]
    assert quick["status"] in ("FEASIBLE", "OPTIMAL")
    if quick["status"] == "FEASIBLE":
        assert quick["lower_bound"] <= result.lower_bound and quick["makespan"] >= result.objective
        # the plain step (when the gap is wide) or the exact search proves it
        proved_by = "exact" if "exact" in result.stats else "quick_plain"
        assert result.stats[proved_by]["status"] == "OPTIMAL"
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound == 655
    assert validate(problem, result.schedule) == ()


@pytest.mark.parametrize(
    ("kwargs", "runs"),
    [
        ({}, True),
        ({"strong_disjunctive": True}, False),  # the caller chose the propagation
        ({"strong_disjunctive": False}, False),
        ({"backend_params": {"use_strong_propagation_in_disjunctive": True}}, False),
        ({"quick_pass": False}, False),
        ({"backend": "z3"}, False),
        ({"time_limit_s": 0.5}, False),  # too little time for a pass that may prove nothing
    ],
)
def test_quick_pass_runs_only_where_it_applies(kwargs, runs):
    # deterministic (except on Z3, which has no such mode): proving OPTIMAL within 0.5 s of wall clock is not
    # guaranteed on a loaded machine
    deterministic = kwargs.get("backend") != "z3"
    result = jobshop(_classic(), list_baseline=False, deterministic=deterministic, **{**_COMMON, **kwargs})
    assert ("quick" in result.stats) is runs
    assert result.status is Status.OPTIMAL and validate(_classic(), result.schedule) == ()


def test_no_quick_pass_on_flexible_or_non_plain_problems():
    flexible = flexible_jobshop_problem([[[(0, 3), (1, 4)], [(1, 2)]], [[(1, 4)], [(0, 1)]]], 2).problem
    assert "quick" not in jobshop(flexible, list_baseline=False, **_COMMON).stats
    assert "quick" not in jobshop(vshape(2, 2, memory=2), list_baseline=False, **_COMMON).stats


def test_redundant_bounds_off_only_for_plain_job_shops():
    flexible = flexible_jobshop_problem([[[(0, 3), (1, 4)], [(1, 2)]], [[(1, 4)], [(0, 1)]]], 2).problem
    pipeline = vshape(2, 2, memory=2)
    kwargs = dict(list_baseline=False, **_COMMON)
    assert jobshop(_classic(), **kwargs).stats["redundant"] is False
    assert jobshop(flexible, **kwargs).stats["redundant"] is False
    assert jobshop(pipeline, **kwargs).stats["redundant"] is True
    assert jobshop(flexible, redundant=True, **kwargs).stats["redundant"] is True
    assert jobshop(_classic(), backend="z3", **kwargs).stats["redundant"] is True
    # implied constraints only: the same optimum either way
    for problem in (_classic(), flexible, pipeline):
        on = jobshop(problem, redundant=True, **kwargs)
        off = jobshop(problem, redundant=False, **kwargs)
        assert on.status is off.status is Status.OPTIMAL and on.objective == off.objective


def test_plain_job_shop_bound_is_computed_once_with_the_assignment_lp():
    # four one-operation jobs, each 1 on m0 or 4 on m1: the analytic bound (average of the least work) is 2,
    # the assignment LP's 3.2, rounded up to the optimum 4
    from schedsearch.bounds.analytic import analytic_lower_bound

    problem = flexible_jobshop_problem([[[(0, 1), (1, 4)]] for _ in range(4)], 2).problem
    assert analytic_lower_bound(problem).value == 2
    result = jobshop(problem, list_baseline=False, **_COMMON)
    assert result.stats["analytic_bound"] == result.stats["bound_parts"]["assignment LP"] == 4
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound == 4
    assert result.bound_engine == "analytic" and validate(problem, result.schedule) == ()
    # a problem that is no plain job shop keeps the analytic bound at the start
    assert "bound_parts" not in jobshop(vshape(2, 2, memory=2), list_baseline=False, **_COMMON).stats


# -- the plan so far in the exact search; the whole-task interval of a flexible task ----------------

_FLEXIBLE = [
    [[(0, 3), (1, 5)], [(1, 2)], [(0, 2), (1, 3)]],
    [[(1, 4), (0, 4)], [(0, 1), (1, 2)], [(1, 3)]],
    [[(0, 2)], [(1, 3), (0, 5)], [(0, 2), (1, 1)]],
]


def _flexible():
    from schedsearch.loaders import flexible_jobshop_problem

    return flexible_jobshop_problem(_FLEXIBLE, 2).problem


def _exact_calls(monkeypatch):
    """Record the SolveOptions of every backend call jobshop() makes (every strategy calls the backend
    through its run)."""
    import importlib

    module = importlib.import_module("schedsearch.search.run")
    calls = []
    real = module.solve

    def recording(problem, backend, options):
        calls.append(options)
        return real(problem, backend, options)

    monkeypatch.setattr(module, "solve", recording)
    return calls


def test_exact_search_takes_the_plan_as_a_cap_not_a_hint_on_the_wall_clock(monkeypatch):
    problem = _flexible()
    calls = _exact_calls(monkeypatch)
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0)
    baseline = result.stats["baseline"]["makespan"]
    assert len(calls) == 1  # flexible: no quick pass, one exact search
    assert calls[0].warm_start is None and calls[0].upper_bound == baseline
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()
    # the cap removes no plan better than the baseline: Z3, given no plan, proves the same optimum
    other = jobshop(problem, backend="z3", list_baseline=False, time_limit_s=30, seed=0)
    assert other.status is Status.OPTIMAL and other.objective == result.objective <= baseline


def test_exact_search_keeps_the_hint_in_deterministic_mode(monkeypatch):
    problem = _flexible()
    calls = _exact_calls(monkeypatch)
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0, deterministic=True)
    assert len(calls) == 1
    assert calls[0].warm_start is not None and calls[0].upper_bound is None
    assert calls[0].warm_start.makespan == result.stats["baseline"]["makespan"]
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()


def test_flexible_tasks_have_a_whole_task_interval_and_the_hint_stays_complete():
    from schedsearch.encode import SolveOptions
    from schedsearch.encode.cpsat.model import build_model
    from schedsearch.search import heft

    problem = _flexible()
    plan = heft(problem).schedule
    model, st, var = build_model(problem, SolveOptions(warm_start=plan))
    intervals = [c for c in model.proto.constraints if c.WhichOneof("constraint") == "interval"]
    options = sum(len(op) for job in _FLEXIBLE for op in job)
    flexible = sum(len(op) > 1 for job in _FLEXIBLE for op in job)
    assert len(intervals) == options + flexible
    # every variable hinted, the chosen option's length included
    assert sorted(model.proto.solution_hint.vars) == list(range(len(model.proto.variables)))
    hint = dict(zip(model.proto.solution_hint.vars, model.proto.solution_hint.values))
    durations = {(t.block, t.microbatch): t.end - t.start for t in plan.tasks}
    for t, tv in zip(st.tasks, var.tasks):
        if tv.length is not None:
            assert hint[tv.length.index] == durations[t.key]


def test_exact_search_of_a_classic_job_shop_keeps_the_hint(monkeypatch):
    # every block on one machine: the stronger no-overlap propagation is on, and the plan is hinted
    # (a 4x4 instance whose list schedule stays above the lower bound, so the exact search runs)
    jobs = [[(1, 6), (2, 3), (3, 5), (0, 5)], [(3, 3), (0, 7), (2, 7), (1, 9)], [(0, 9), (1, 5), (3, 1), (2, 1)],
            [(0, 7), (3, 7), (1, 9), (2, 3)]]
    problem = jobshop_problem(jobs, 4).problem
    calls = _exact_calls(monkeypatch)
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0, quick_pass=False)
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()
    assert "exact" in result.stats and len(calls) == 1
    assert calls[0].warm_start is not None and calls[0].upper_bound is None
    assert calls[0].warm_start.makespan == result.stats["baseline"]["makespan"] > result.objective


def test_quick_pass_plain_step_runs_on_a_wide_gap_and_leaves_the_exact_search_alone(monkeypatch, shared_data):
    # la17 (optimum 784 by the collection's index): the warm-started step stops well above the bound, so the
    # plain model's search follows (no hint, the plan only as a cap, no stronger propagation); the exact
    # search, if one follows, starts from the warm-started step's plan and bound, not the plain step's
    problem = read_jobshop(shared_data / "jsp" / "la" / "la17.txt").problem
    calls = _exact_calls(monkeypatch)
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0)
    assert result.status is Status.OPTIMAL and result.objective == result.lower_bound == 784
    assert validate(problem, result.schedule) == ()
    stats, strong = result.stats, "use_strong_propagation_in_disjunctive"
    quick = stats["quick"]
    assert quick["status"] == "FEASIBLE" and calls[0].warm_start is not None and strong not in calls[0].backend_params
    bound = max(stats["analytic_bound"], quick["lower_bound"])
    plain_ran = quick["makespan"] > 1.15 * bound
    assert ("quick_plain" in stats) is plain_ran
    if plain_ran:
        assert calls[1].warm_start is None and calls[1].upper_bound == quick["makespan"]
        assert strong not in calls[1].backend_params
        assert stats["quick_plain"]["lower_bound"] <= result.lower_bound
    if "exact" in stats:
        exact = calls[-1]
        assert exact.backend_params[strong] is True
        assert exact.warm_start.makespan == quick["makespan"] and exact.lower_bound == bound
    assert len(calls) == 1 + plain_ran + ("exact" in stats)


def test_quick_pass_plain_step_skipped_on_a_narrow_gap(monkeypatch, shared_data):
    # la04 in deterministic mode: the warm-started step ends within 15% of the bound; the exact search follows
    # at once (deterministic, so the same under any load)
    problem = read_jobshop(shared_data / "jsp" / "la" / "la04.txt").problem
    calls = _exact_calls(monkeypatch)
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0, deterministic=True)
    quick = result.stats["quick"]
    assert quick["status"] == "FEASIBLE" and quick["makespan"] <= 1.15 * max(quick["lower_bound"],
                                                                             result.stats["analytic_bound"])
    assert "quick_plain" not in result.stats and len(calls) == 2
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()


def test_quick_pass_plain_step_not_in_deterministic_mode(shared_data):
    # la17's warm-started step leaves a wide gap, but in deterministic mode CP-SAT interleaves its subsolvers and
    # the plain step is no plain model's search: it does not run
    problem = read_jobshop(shared_data / "jsp" / "la" / "la17.txt").problem
    result = jobshop(problem, time_limit_s=30, workers=1, seed=0, deterministic=True)
    quick = result.stats["quick"]
    assert quick["makespan"] > 1.15 * max(quick["lower_bound"], result.stats["analytic_bound"])
    assert "quick_plain" not in result.stats
    assert result.status is Status.OPTIMAL and result.objective == 784 and validate(problem, result.schedule) == ()
