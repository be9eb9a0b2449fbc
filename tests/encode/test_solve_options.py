"""Solver options out of range raise the library's error naming the option and
its allowed range, before any solver sees them (never a raw OR-tools or Z3
exception)."""

from __future__ import annotations

import math

import pytest

from schedsearch.encode import SolveOptions
from schedsearch.encode.repetend import RepetendOptions
from schedsearch.errors import InvalidOptionsError, SchedSearchError
from schedsearch.options import MAX_SEED, MAX_WORKERS
from schedsearch.placements import vshape

# (id, keywords, message fragment)
BAD_OPTIONS = [
    ("seed a string", {"seed": "x"}, "'seed' must be an integer in 0..2147483647 (CP-SAT takes an int32 seed, "
                                     "Z3 an unsigned 32-bit one), got 'x'"),
    ("seed 2**40", {"seed": 2**40}, "'seed' must be an integer in 0..2147483647"),
    ("seed 2**31", {"seed": 2**31}, "got 2147483648"),
    ("seed negative", {"seed": -1}, "'seed' must be an integer in 0..2147483647 (CP-SAT"),
    ("seed a bool", {"seed": True}, "'seed' must be an integer in 0..2147483647"),
    ("seed a float", {"seed": 1.0}, "'seed' must be an integer"),
    ("workers negative", {"workers": -2}, "'workers' must be an integer in 1..1024, got -2"),
    ("workers zero", {"workers": 0}, "'workers' must be an integer in 1..1024, got 0"),
    ("workers huge", {"workers": 10**6}, "'workers' must be an integer in 1..1024, got 1000000"),
    ("workers a float", {"workers": 2.0}, "'workers' must be an integer in 1..1024, got 2.0"),
    ("time limit negative", {"time_limit_s": -1}, "'time_limit_s' must be a finite number of seconds > 0, or None"),
    ("time limit zero", {"time_limit_s": 0}, "'time_limit_s' must be a finite number of seconds > 0"),
    ("time limit NaN", {"time_limit_s": math.nan}, "'time_limit_s' must be a finite number of seconds > 0, or None for no "
                                                   "limit, got nan"),
    ("time limit inf", {"time_limit_s": math.inf}, "or None for no limit, got inf"),
    ("time limit a string", {"time_limit_s": "10"}, "'time_limit_s' must be a finite number"),
    ("time limit a bool", {"time_limit_s": True}, "'time_limit_s' must be a finite number"),
    ("deterministic an int", {"deterministic": 1}, "'deterministic' must be True or False, got 1"),
    ("deterministic a string", {"deterministic": "no"}, "'deterministic' must be True or False, got 'no'"),
    ("log None", {"log": None}, "'log' must be True or False, got None"),
    ("symmetry breaking a string", {"symmetry_breaking": "yes"}, "'symmetry_breaking' must be True or False"),
    ("redundant an int", {"redundant": 0}, "'redundant' must be True or False"),
    ("upper bound negative", {"upper_bound": -3}, "'upper_bound' must be an integer >= 0 or None, got -3"),
    ("lower bound a float", {"lower_bound": 2.5}, "'lower_bound' must be an integer >= 0 or None, got 2.5"),
    ("backend params a list", {"backend_params": [("x", 1)]}, "'backend_params' must be a mapping from parameter names"),
    ("backend params int key", {"backend_params": {1: 2}}, "'backend_params' must be a mapping"),
    ("warm start not a schedule", {"warm_start": 5}, "'warm_start' must be a Schedule or None, got 5"),
    ("progress not callable", {"progress": 3}, "'progress' must be a callable or None, got 3"),
    ("ties a string", {"ties": "x"}, "'ties' must be a list of triples"),
    ("tie without keys", {"ties": [("F0", 0, 1)]}, "'ties' must hold ((block, micro-batch), (block, micro-batch), offset)"),
    ("tie float micro-batch", {"ties": [(("F0", 0.5), ("F0", 1), 1)]}, "with block names and integer micro-batches"),
    ("tie float offset", {"ties": [(("F0", 0), ("F0", 1), 1.5)]}, "tie offset must be an integer, got 1.5"),
]


@pytest.mark.parametrize("kwargs,fragment", [c[1:] for c in BAD_OPTIONS], ids=[c[0] for c in BAD_OPTIONS])
def test_bad_solve_options_are_named(kwargs, fragment):
    with pytest.raises(InvalidOptionsError) as info:
        SolveOptions(**kwargs)
    assert fragment in str(info.value)
    assert str(info.value).startswith("SolveOptions: ")
    assert isinstance(info.value, (SchedSearchError, ValueError))


@pytest.mark.parametrize("kwargs", [{"seed": 2**40}, {"workers": -1}, {"time_limit_s": math.nan}, {"log": "x"},
                                    {"backend_params": None}, {"period": 0}],
                         ids=["seed", "workers", "time limit", "log", "backend params", "period"])
def test_modulo_options_share_the_checks(kwargs):
    base = {"period": 4, "max_offset": 1}
    with pytest.raises(InvalidOptionsError, match=r"^RepetendOptions: '"):
        RepetendOptions(**{**base, **kwargs})


def test_the_edges_of_the_ranges_are_accepted():
    SolveOptions(seed=0, workers=1, time_limit_s=1e-3)
    SolveOptions(seed=MAX_SEED, workers=MAX_WORKERS, time_limit_s=None, lower_bound=0, upper_bound=0)
    RepetendOptions(period=1, max_offset=0, seed=MAX_SEED, workers=MAX_WORKERS)


@pytest.mark.parametrize("backend", ["cpsat", "z3"])
@pytest.mark.parametrize("kwargs", [{"seed": MAX_SEED + 1}, {"seed": -1}, {"seed": "x"}, {"workers": -1},
                                    {"time_limit_s": math.nan}, {"time_limit_s": -5}, {"deterministic": "no"}],
                         ids=["seed 2**31", "seed -1", "seed 'x'", "workers -1", "time limit NaN", "time limit -5",
                              "deterministic 'no'"])
def test_optimal_checks_before_any_solver(backend, kwargs):
    from schedsearch.search import optimal

    with pytest.raises(InvalidOptionsError, match="SearchOptions: '"):
        optimal(vshape(2, 2, memory=2), backend=backend, **kwargs)


def test_the_largest_seed_reaches_both_solvers():
    from schedsearch.search import optimal

    p = vshape(2, 2, memory=2)
    assert optimal(p, seed=MAX_SEED, time_limit_s=20).objective == 9
    assert optimal(p, backend="z3", seed=MAX_SEED, time_limit_s=20).objective == 9


def test_every_strategy_checks_the_options_it_passes_to_a_solver():
    """Every strategy reads its common options into one SearchOptions, which
    checks them before any phase runs."""
    from schedsearch.search import jobshop, pareto, repetend, scale_search

    p = vshape(2, 2, memory=2)
    calls = [
        lambda: jobshop(p, list_baseline=False, seed=2**40),
        lambda: repetend(vshape(2, 4, memory=2), workers=0),
        lambda: scale_search(p, rules=(), seed=-1),
        lambda: pareto(p, seed="x"),
    ]
    for call in calls:
        with pytest.raises(InvalidOptionsError, match=r"Options: '(seed|workers)' must be an integer in"):
            call()


@pytest.mark.parametrize("strategy", ["jobshop", "scale_search", "repetend"])
@pytest.mark.parametrize("bad", [dict(seed="x"), dict(seed=2**40), dict(workers=-1), dict(time_limit_s=float("nan")),
                                 dict(time_limit_s=-1.0)])
def test_every_strategy_checks_its_solver_options_first(strategy, bad):
    from schedsearch.errors import InvalidOptionsError
    from schedsearch.placements import vshape
    from schedsearch import search

    with pytest.raises(InvalidOptionsError):
        getattr(search, strategy)(vshape(2, 2), **bad)
