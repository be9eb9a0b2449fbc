"""The MIP layer: the same model gives the same answer on every solver."""

from __future__ import annotations

import re

import attrs
import pytest

from schedsearch.bounds.mip import MipModel, MipOptions, available_solvers, solve_mip
from schedsearch.errors import InvalidOptionsError, InvalidProblemError
from schedsearch.result import Status

SOLVERS = available_solvers()


def knapsack() -> MipModel:
    # items (weight, value): best within 10 is items 1, 2, 3 -> weight 10, value 19
    items = [(5, 10), (4, 7), (3, 6), (3, 6), (2, 1)]
    m = MipModel("knapsack")
    xs = [m.new_binary(f"x{i}") for i in range(len(items))]
    m.add_le([(x, w) for x, (w, _) in zip(xs, items)], 10)
    m.maximize([(x, v) for x, (_, v) in zip(xs, items)])
    return m


def test_the_three_solvers_ship_with_ortools():
    assert set(SOLVERS) == {"highs", "scip", "cbc"}


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_proves_the_same_optimum(solver):
    res = solve_mip(knapsack(), solver=solver, time_limit_s=10)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(19)
    assert res.best_bound == pytest.approx(19, rel=1e-4)
    assert res.gap is not None and res.gap <= 1e-4
    assert knapsack().violations(res.values) == []


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible_is_a_status(solver):
    m = MipModel("infeasible")
    x = m.new_binary("x")
    m.add_ge([(x, 1.0)], 2.0)
    m.minimize([(x, 1.0)])
    assert solve_mip(m, solver=solver, time_limit_s=10).status is Status.INFEASIBLE


def test_highs_reports_a_dual_bound_not_the_objective():
    # min T with T >= sum of a partition side: LP bound 6.5, integer optimum 7
    m = MipModel("partition")
    sizes = [3, 3, 3, 2, 2]
    xs = [m.new_binary() for _ in sizes]
    t = m.new_continuous(0.0)
    m.add_ge([(t, 1.0)] + [(x, -s) for x, s in zip(xs, sizes)], 0.0)
    m.add_ge([(t, 1.0)] + [(x, s) for x, s in zip(xs, sizes)], float(sum(sizes)))
    m.minimize([(t, 1.0)])
    res = solve_mip(m, solver="highs", time_limit_s=10)
    assert res.objective == pytest.approx(7)
    assert 6.5 - 1e-9 <= res.best_bound <= 7 + 1e-9


def test_a_complete_hint_is_kept_when_the_solver_finds_nothing_better():
    m = knapsack()
    m.set_hint({0: 0, 1: 1, 2: 1, 3: 1, 4: 0})  # the optimum
    res = solve_mip(m, solver="cbc", time_limit_s=5)
    assert res.objective == pytest.approx(19)


def test_hint_fallback_when_solver_returns_worse():
    from schedsearch.bounds.mip import MipResult, _keep_incumbent

    m = knapsack()
    m.set_hint({0: 0, 1: 1, 2: 1, 3: 1, 4: 0})
    poor = MipResult(status=Status.TIMEOUT, objective=None, best_bound=25.0, values=None, wall_time_s=1.0,
                     solver="highs")
    kept = _keep_incumbent(m, poor)
    assert kept.status is Status.FEASIBLE and kept.objective == pytest.approx(19)
    assert kept.best_bound == 25.0
    # an infeasible hint is ignored
    m.set_hint({0: 1, 1: 1, 2: 1, 3: 1, 4: 1})
    assert _keep_incumbent(m, poor).values is None


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"solver": "gurobi"}, "MipOptions: 'solver' must be one of 'highs', 'scip', 'cbc', got 'gurobi'"),
        ({"solver": "higs"}, "did you mean 'highs'"),
        ({"time_limit_s": 0}, "MipOptions: 'time_limit_s' must be a finite number of seconds > 0, or None for no "
                              "limit, got 0"),
        ({"relative_gap": -1}, "MipOptions: 'relative_gap' must be a number >= 0, got -1"),
        ({"threads": 0}, "MipOptions: 'threads' must be an integer >= 1, got 0"),
        ({"seed": -1}, "MipOptions: 'seed' must be an integer in 0..2147483647"),
        ({"log": "yes"}, "MipOptions: 'log' must be True or False, got 'yes'"),
        ({"pass_hint": 1}, "MipOptions: 'pass_hint' must be True, False or None, got 1"),
    ],
)
def test_bad_options_are_named(kwargs, fragment):
    with pytest.raises(InvalidOptionsError, match=re.escape(fragment)):
        MipOptions(**kwargs)


def test_the_mip_options_share_the_solver_options():
    # time limit, seed and log are declared once, in the options hierarchy, and mean the same everywhere
    from schedsearch.options import BaseSolverOptions, SolverSettings

    assert issubclass(MipOptions, BaseSolverOptions) and issubclass(SolverSettings, BaseSolverOptions)
    own = {f.name for f in attrs.fields(MipOptions)} - {f.name for f in attrs.fields(BaseSolverOptions)}
    assert own == {"solver", "relative_gap", "threads", "pass_hint"}


def test_an_unknown_mip_option_is_named():
    m = MipModel("one")
    m.minimize([(m.new_continuous(0, 1, "x"), 1.0)])
    with pytest.raises(InvalidOptionsError, match=re.escape("solve_mip: unknown MIP option 'time_limit' "
                                                            "(did you mean 'time_limit_s'?)")):
        solve_mip(m, time_limit=1)
    with pytest.raises(InvalidOptionsError, match="'options' must be a MipOptions"):
        solve_mip(m, {"solver": "highs"})


def test_bad_model_input_is_named():
    m = MipModel("bad")
    with pytest.raises(InvalidProblemError, match="unknown variable 3"):
        m.add_le([(3, 1.0)], 1.0, "row")
    with pytest.raises(InvalidProblemError, match="'lb' 2 > 'ub' 1"):
        m.new_var(2, 1, name="v")
