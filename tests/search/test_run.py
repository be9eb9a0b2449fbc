"""One search run (:mod:`schedsearch.search.run`): the budget, the facts, the pool and the door."""

from __future__ import annotations

import importlib

import attrs
import pytest

from schedsearch.errors import InvalidOptionsError
from schedsearch.placements import vshape, vshape_chunks
from schedsearch.result import SearchResult, Status
from schedsearch.schedule import Schedule, peak_memory
from schedsearch.search.list_scheduling import heft
from schedsearch.search import solve
from schedsearch.search.exact import exact_search
from schedsearch.search.run import Budget, Provenance, Run, Source
from schedsearch.validate import validate

DET = {"workers": 1, "seed": 0, "deterministic": True}


def test_a_child_budget_charges_every_budget_above_it():
    outer = Budget(10.0, deterministic=True)
    middle = outer.child(outer.left())
    inner = middle.child(3.0)
    inner.charge_search(SearchResult(status=Status.TIMEOUT, deterministic_s=2.5, wall_guard_hit=True))
    assert (inner.left(), middle.left(), outer.left()) == (0.5, 7.5, 7.5)
    assert inner.wall_guard_hit and middle.wall_guard_hit and outer.wall_guard_hit
    assert outer.metered and outer.reported_s == 2.5
    # a search that reports no deterministic time charges nothing and meters nothing
    other = outer.child(1.0)
    other.charge_search(SearchResult(status=Status.TIMEOUT))
    assert not other.metered and outer.left() == 7.5


def test_on_the_wall_clock_a_charge_does_not_shorten_the_budget():
    budget = Budget(100.0, deterministic=False)
    budget.child(50.0).charge(60.0)
    assert budget.left() > 99.0


def test_the_backend_search_of_a_child_run_is_charged_to_the_run_that_opened_it():
    problem = vshape(2, 4, memory=2)
    run = Run.open(problem, None, {"time_limit_s": 10, **DET}, "test")
    child = run.child(time_limit_s=run.budget.left())
    result = exact_search(child)
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()
    used = result.deterministic_s  # what the backend reported
    assert used > 0
    assert child.budget.reported_s == pytest.approx(used) and run.budget.reported_s == pytest.approx(used)
    assert run.budget.left() == pytest.approx(10 - used)


def test_facts_are_computed_once_per_problem(monkeypatch):
    analytic = importlib.import_module("schedsearch.bounds.analytic")
    calls = []
    real = analytic.objective_lower_bound
    monkeypatch.setattr(analytic, "objective_lower_bound", lambda p: calls.append(p) or real(p))
    problem = vshape(2, 4, memory=2)
    run = Run.open(problem, None, {}, "test")
    child = run.child(time_limit_s=1.0)
    assert run.analytic is child.analytic is run.facts.analytic(problem)
    assert calls == [problem]
    other = problem.with_(name="other")  # an equal problem that is another object: computed for itself
    assert run.facts.analytic(other).value == run.analytic.value and len(calls) == 2
    assert run.reduced is run.facts.reduced(problem) is child.reduced


def test_the_pool_keeps_only_valid_plans_with_their_provenance():
    problem = vshape(2, 4, memory=2)
    run = Run.open(problem, None, {}, "test")
    plan = heft(problem).schedule
    broken = Schedule(tasks=plan.tasks[1:], transfers=plan.transfers)  # a task missing
    assert run.offer(broken, Provenance(source=Source.LIST, engine="broken")) is None
    kept = run.offer(plan, Provenance(source=Source.LIST, engine="HEFT"))
    assert kept is not None and run.best == kept and run.best.provenance.source is Source.LIST
    assert run.last(Source.EXACT) is None and run.last(Source.LIST) == kept


def test_a_strategy_is_one_function_that_offers_plans_and_raises_bounds():
    # the whole of a strategy: a plan offered, the analytic bound raised; the run says when they meet
    def strategy(run: Run) -> None:
        run.offer(heft(run.problem).schedule, Provenance(source=Source.LIST, engine="HEFT"))
        run.raise_bound(run.analytic.value, "analytic")

    problem = vshape(2, 4)  # no memory limit: 1F1B's order meets (4 + 2 - 1) x 3 = 15
    run = Run.open(problem, None, {}, "test")
    strategy(run)
    assert run.bound == 15 and run.bound_by == "analytic"
    assert run.best is not None and run.best.value >= run.bound
    assert run.closed == (run.best.value == 15)


def test_a_warm_start_is_offered_as_one_and_checked_once(monkeypatch):
    problem = vshape(2, 4, memory=2)
    plan = heft(problem).schedule
    validate_module = importlib.import_module("schedsearch.validate")
    calls = []
    real = validate_module.validate
    monkeypatch.setattr(validate_module, "validate", lambda p, s: calls.append(s) or real(p, s))
    run = Run.open(problem, None, {"warm_starts": [plan]}, "test")
    run.offer_warm_starts("test")
    assert [s is plan for s in calls] == [True]
    assert run.best.provenance == Provenance.warm_start(0) and str(run.best.provenance) == "warm start 0"
    bad = attrs.evolve(plan, tasks=plan.tasks[1:])
    with pytest.raises(InvalidOptionsError, match="test: warm start 0 is not a valid plan"):
        Run.open(problem, None, {"warm_starts": [bad]}, "test").offer_warm_starts("test")


@pytest.mark.parametrize("entry", ["solve", "optimal", "scale_search", "jobshop", "repetend", "pareto"])
def test_every_public_entry_checks_the_backend_name_at_its_door(entry):
    import schedsearch.search as search
    from schedsearch import solve

    fn = solve if entry == "solve" else getattr(search, entry)
    with pytest.raises(InvalidOptionsError, match=r"'backend' must be one of .*did you mean 'cpsat'"):
        fn(vshape(2, 2), backend="cpsatt", time_limit_s=1)


def test_min_memory_checks_the_backend_name_at_its_door():
    from schedsearch.search import min_memory

    with pytest.raises(InvalidOptionsError, match=r"min_memory: .*'backend'.*did you mean 'cpsat'"):
        min_memory(vshape(2, 2), 10, backend="cpsatt", time_limit_s=1)


def test_the_backend_options_are_the_runs():
    run = Run.open(vshape(2, 2), None, {"time_limit_s": 5, "seed": 7, "workers": 1, "deterministic": True,
                                        "backend_params": {"num_workers": 1}}, "test")
    options = run.solve_options(upper_bound=9)
    assert (options.seed, options.workers, options.deterministic, dict(options.backend_params), options.upper_bound) \
        == (7, 1, True, {"num_workers": 1}, 9)
    assert 0 < options.time_limit_s <= 5
    modulo = run.repetend_options(period=3, max_offset=1)
    assert (modulo.seed, modulo.workers, modulo.deterministic, dict(modulo.backend_params)) \
        == (7, 1, True, {"num_workers": 1})


def test_a_search_that_reports_no_deterministic_time_is_charged_its_limit():
    # Z3 reports no deterministic time: its search is charged the whole limit it was given, whatever it took
    problem = vshape(2, 2)
    run = Run.open(problem, None, {"time_limit_s": 10, "backend": "z3", **DET}, "test")
    silent = run.child(time_limit_s=4.0)
    result = exact_search(silent)
    assert result.status is Status.OPTIMAL and validate(problem, result.schedule) == ()
    assert not silent.budget.metered and run.budget.left() == pytest.approx(6.0)
    # a search that reports its deterministic time is charged that, not its limit
    metered = run.child(time_limit_s=3.0)
    metered.budget.charge_search(SearchResult(status=Status.TIMEOUT, deterministic_s=0.5), unmetered_s=3.0)
    assert run.budget.left() == pytest.approx(5.5)


def test_a_sub_search_that_runs_no_backend_search_is_charged_nothing():
    # the capped V greedy's plan meets the bound inside the exact phase's sub-search, which then starts no
    # backend search; it once was charged its whole share in deterministic mode, which left the memory level
    # no time at all (its bound stayed unproven)
    problem = vshape_chunks(2, 4)
    first = solve(problem, engines=["exact"], time_limit_s=5, **DET)
    assert first.levels[0].proven and first.levels[0].engine == "analytic"
    assert first.status is Status.OPTIMAL and first.levels[1].bound == first.levels[1].value
    assert validate(problem, first.schedule) == ()
    assert first.levels[1].value == max(peak_memory(problem, first.schedule).values())
    # the same result again (deterministic mode)
    again = solve(problem, engines=["exact"], time_limit_s=5, **DET)
    assert (again.levels, again.objective) == (first.levels, first.objective)


@pytest.mark.parametrize("problem", [vshape(4, 8), vshape(4, 8, memory=3)], ids=["V 4x8", "V 4x8 memory 3"])
def test_a_level_without_a_bound_names_no_proof(problem):
    # without the exact search the memory walk proves nothing here: what proved the level is "" (it once
    # named the last list schedule tried)
    result = solve_deterministic(problem, engines=["handcrafted", "list"])
    for level in result.levels:
        assert level.bound is not None or level.engine == "", level
        assert not level.proven or level.engine, level
    assert result.levels[1].bound is None


def solve_deterministic(problem, **kwargs):
    from schedsearch import solve

    return solve(problem, time_limit_s=10, **DET, **kwargs)


def test_the_facts_a_caller_reads_are_typed_fields():
    # solve's exact sub-search status is a Status, its notes a tuple; the JSON document carries them,
    # the exported plan's meta does not (a plan does not depend on how the search ran)
    import json

    problem = vshape(2, 4, memory=2)
    result = solve(problem, time_limit_s=10, engines=["exact"], **DET)
    assert result.status is Status.OPTIMAL and result.exact_status is Status.OPTIMAL
    assert result.notes == () and result.ties == 0 and result.restricted_status is None
    assert "exact_status" not in result.stats and "notes" not in result.stats
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["exact_status"] == "OPTIMAL" and doc["notes"] == [] and doc["wall_guard_hit"] is False
    meta = json.loads(result.export("json"))["meta"]["result"]
    assert "exact_status" not in meta and "notes" not in meta and meta["status"] == "OPTIMAL"
