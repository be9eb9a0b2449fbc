"""Options are checked at the door of every public entry point.

A bad option of any strategy, of ``plan`` or of a partitioner raises
:class:`~schedsearch.errors.InvalidOptionsError` whose message names the
entry, the option and the value, before any work: no backend is asked to
solve, no solver is loaded, no progress is reported, no partitioner reads
its graph. "No work" is observed, not timed: a recording backend object and
a recording progress callback for the strategies, recording stand-ins of
the loaders and of the partitioners' first step elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import schedsearch.encode.backends as backends_module
import schedsearch.partition.dp as dp_module
import schedsearch.partition.heuristics as heuristics_module
import schedsearch.partition.modules as modules_module
import schedsearch.partition.slicegraph as slicegraph_module
from schedsearch.plan import planner as planner_module
import schedsearch.executors as sweep_module
from schedsearch import Pipeline, SearchOptions, plan, solve
from schedsearch.errors import InvalidOptionsError
from schedsearch.partition import (
    DeviceLimits,
    Operator,
    OperatorGraph,
    partition,
    partition_annealing,
    partition_dp,
    partition_dpl,
    partition_evolutionary,
    partition_greedy,
    partition_heft,
    partition_met,
    partition_modules,
    partition_and_schedule,
    partition_slicegraph,
)
from schedsearch.placements import vshape
from schedsearch.search import jobshop, min_memory, optimal, pareto, repetend, scale_search
from schedsearch.search.diviml import diviml

SMALL = vshape(2, 4, memory=2)


class Recorder:
    """A backend object (and progress callback) that records every call made to it."""

    name = "cpsat"
    features = frozenset(backends_module.FEATURES)

    def __init__(self) -> None:
        self.calls: list[str] = []

    def solve(self, problem, options):
        self.calls.append("solve")
        raise AssertionError("a backend was asked to solve although an option was bad")

    def solve_repetend(self, problem, options):
        self.calls.append("solve_repetend")
        raise AssertionError("a repetend backend was asked to solve although an option was bad")

    def __call__(self, event) -> None:  # the progress callback
        self.calls.append(f"progress {event.phase}")


#: entry name -> a call of it on a small problem with the given keywords
STRATEGIES: dict[str, Callable[..., Any]] = {
    "solve": lambda **kw: solve(kw.pop("problem", SMALL), **kw),
    "optimal": lambda **kw: optimal(kw.pop("problem", SMALL), **kw),
    "scale_search": lambda **kw: scale_search(kw.pop("problem", SMALL), **kw),
    "jobshop": lambda **kw: jobshop(kw.pop("problem", SMALL), **kw),
    "repetend": lambda **kw: repetend(kw.pop("problem", SMALL), **kw),
    "pareto": lambda **kw: pareto(kw.pop("problem", SMALL), **kw),
    "min_memory": lambda **kw: min_memory(kw.pop("problem", SMALL), kw.pop("target_makespan", 15), **kw),
    "diviml": lambda **kw: diviml(kw.pop("problem", SMALL), **kw),
}

#: (entry, bad keywords, fragment of the message after "<entry>: ")
BAD_STRATEGY_OPTIONS = [
    *[(name, {"backend": "cpsatt"}, "'backend' must be one of 'auto', 'cpsat', 'z3' or a backend object "
                                    "(did you mean 'cpsat'?), got 'cpsatt'")
      for name in ("solve", "optimal", "scale_search", "jobshop", "repetend", "pareto", "min_memory")],
    *[(name, {"seed": -1}, "'seed' must be an integer in 0..") for name in STRATEGIES],
    *[(name, {"workers": 1.5}, "'workers' must be an integer in 1..") for name in STRATEGIES],
    *[(name, {"time_limit_s": float("inf")}, "'time_limit_s' must be a finite number") for name in STRATEGIES],
    *[(name, {"deterministic": "yes"}, "'deterministic' must be True or False, got 'yes'") for name in STRATEGIES],
    *[(name, {"time_limt_s": 5}, "unknown option 'time_limt_s'") for name in STRATEGIES],
    *[(name, {"backend_params": {"num_search_worker": 2}},
       "'backend_params': 'num_search_worker' is not a CP-SAT parameter (did you mean 'num_search_workers'")
      for name in ("solve", "optimal", "scale_search", "jobshop", "repetend", "pareto", "min_memory")],
    ("optimal", {"backend": "z3", "backend_params": {"randomseed": 3}},
     "'backend_params': 'randomseed' is not a Z3 solver parameter (did you mean 'random_seed'?)"),
    ("optimal", {"backend_params": {"num_workers": "two"}}, "'backend_params': CP-SAT's 'num_workers' cannot be 'two'"),
    ("solve", {"objective": "makespam"}, "'objective' must be one of"),
    *[(name, {"problem": "vshape-2x4"}, "'problem' must be a Problem, got 'vshape-2x4'") for name in STRATEGIES],
    ("solve", {"objective": ("makespan", "max_span")}, "'objective' may hold one time objective"),
    ("solve", {"engines": ("list", "exactt")}, "'engines' must be a non-empty subset"),
    ("optimal", {"upper_bound": -1}, "'upper_bound' must be an integer >= 0, or None, got -1"),
    ("optimal", {"symmetry_breaking": 1}, "'symmetry_breaking' must be True or False, got 1"),
    ("optimal", {"ties": [("F0", 0)]}, "'ties' must be a list of ((block, micro-batch), (block, micro-batch), offset)"),
    ("scale_search", {"ties": "periodc"}, "'ties' must be 'auto', 'periodic', None or a list of ties "
                                          "(did you mean 'periodic'?), got 'periodc'"),
    ("scale_search", {"periodic_window": (0.75, 0.25)}, "'periodic_window' must be a pair (a, b) of numbers with "
                                                        "0 <= a < b <= 1, got (0.75, 0.25)"),
    ("scale_search", {"period": 0}, "'period' must be an integer >= 1, or None, got 0"),
    ("scale_search", {"rules": ["I > F > W"]}, "'rules' must be a list of PipelineRule"),
    ("scale_search", {"exact": "no"}, "'exact' must be True or False, got 'no'"),
    ("jobshop", {"coarse_share": 0}, "'coarse_share' must be a number in (0, 1], got 0"),
    ("jobshop", {"coarsen_to": 0}, "'coarsen_to' must be an integer >= 1, or None, got 0"),
    ("jobshop", {"coarsen_options": {"max_durations": 3}}, "'coarsen_options' must be None or a mapping of coarsen()"),
    ("jobshop", {"strong_disjunctive": "auto"}, "'strong_disjunctive' must be True or False, or None"),
    ("jobshop", {"heuristic": False}, "unknown option 'heuristic'; its meaning is now 'list_baseline'"),
    ("repetend", {"completion": "bets"}, "'completion' must be one of 'best', 'solved', 'truncated' "
                                         "(did you mean 'best'?), got 'bets'"),
    ("repetend", {"memory_encoding": "event"}, "'memory_encoding' must be one of 'auto', 'cumulative', 'events', "
                                               "'both' (did you mean 'events'?)"),
    ("repetend", {"prover": "z4"}, "'prover' must be one of 'cpsat', 'z3', a backend object or None "
                                   "(did you mean 'z3'?), got 'z4'"),
    ("repetend", {"prover": "auto"}, "'prover' must be one of 'cpsat', 'z3'"),
    ("repetend", {"max_fold": 0}, "'max_fold' must be an integer >= 1, got 0"),
    ("repetend", {"candidates": 2.0}, "'candidates' must be an integer >= 1, got 2.0"),
    ("repetend", {"fold_time_limit_s": -1.0}, "'fold_time_limit_s' must be a number > 0, got -1.0"),
    ("repetend", {"repetend_size": 0}, "'repetend_size' must be an integer >= 1, or None"),
    ("pareto", {"objectives": ("makespan", "memory")}, "'objectives' must be ('makespan', 'peak_memory')"),
    ("pareto", {"max_points": 0}, "'max_points' must be an integer >= 1, got 0"),
    ("pareto", {"step_time_limit_s": 0}, "'step_time_limit_s' must be a number > 0, or None, got 0"),
    ("pareto", {"heuristic": "list"}, "'heuristic' must be a callable, or None, got 'list'"),
    ("pareto", {"start_capacity": -2}, "'start_capacity' must be an integer >= 0, or None, got -2"),
    ("min_memory", {"target_makespan": -1}, "'target_makespan' must be an integer >= 0, got -1"),
    ("min_memory", {"reduce": None}, "'reduce' must be True or False, got None"),
    ("diviml", {"solver": "hihgs"}, "'solver' must be one of 'highs', 'scip', 'cbc' (did you mean 'highs'?)"),
    ("diviml", {"threads": 0}, "'threads' must be an integer >= 1, got 0"),
    ("diviml", {"relative_gap": -0.1}, "'relative_gap' must be a number >= 0, got -0.1"),
]


@pytest.fixture
def solver_calls(monkeypatch) -> list[str]:
    """Record every solve asked of a registered backend or repetend encoder (none may happen)."""
    from schedsearch.encode.cpsat import repetend as cpsat_repetend
    from schedsearch.encode.cpsat.model import CpSatBackend
    from schedsearch.encode.z3 import repetend as z3_repetend
    from schedsearch.encode.z3.model import Z3Backend

    calls: list[str] = []

    def recording(name):
        def solve(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} was asked to solve although an option was bad")
        return solve

    monkeypatch.setattr(CpSatBackend, "solve", recording("cpsat"))
    monkeypatch.setattr(Z3Backend, "solve", recording("z3"))
    monkeypatch.setattr(cpsat_repetend, "solve_repetend", recording("cpsat modulo"))
    monkeypatch.setattr(z3_repetend, "solve_repetend", recording("z3 modulo"))
    return calls


@pytest.mark.parametrize("entry,bad,fragment", BAD_STRATEGY_OPTIONS,
                         ids=[f"{e}-{'-'.join(b)}" for e, b, _ in BAD_STRATEGY_OPTIONS])
def test_a_bad_strategy_option_is_refused_before_any_work(entry, bad, fragment, solver_calls):
    progress = Recorder()
    with pytest.raises(InvalidOptionsError) as caught:
        STRATEGIES[entry](progress=progress, **bad)
    message = str(caught.value)
    assert message.startswith(f"{entry}: "), message
    assert fragment in message, message
    assert progress.calls == [], f"{entry} reported progress before refusing {bad}: {progress.calls}"
    assert solver_calls == [], f"{entry} asked a solver before refusing {bad}: {solver_calls}"


def test_a_backend_object_is_not_asked_before_the_options_are_checked():
    recorder = Recorder()
    for entry in ("solve", "optimal", "scale_search", "jobshop", "repetend", "pareto", "min_memory"):
        with pytest.raises(InvalidOptionsError, match=rf"^{entry}: .*'seed' must be"):
            STRATEGIES[entry](backend=recorder, progress=recorder, seed=-1)
    assert recorder.calls == []


def test_a_misspelt_backend_no_longer_passes_with_an_explicit_objective(solver_calls):
    # the regression: it returned OPTIMAL with result.backend == 'cpsatt'
    for objective in ("makespan", None, ("makespan", "peak_memory"), "peak_memory"):
        with pytest.raises(InvalidOptionsError, match=r"^solve: .*'backend' .*did you mean 'cpsat'\?"):
            solve(SMALL, backend="cpsatt", objective=objective)
    with pytest.raises(InvalidOptionsError, match="'backend' must be one of 'auto', 'cpsat', 'z3'"):
        SearchOptions(backend="Z3")
    with pytest.raises(InvalidOptionsError, match=r"^optimal: .*got 'gurobi'"):
        optimal(SMALL, options=SearchOptions(), backend="gurobi")
    assert solver_calls == []


def test_good_backend_params_pass_the_door():
    # the door refuses only what the backend would refuse: a real parameter of each backend is taken
    cpsat = optimal(SMALL, time_limit_s=30, workers=1, deterministic=True, backend_params={"linearization_level": 2})
    z3 = optimal(SMALL, time_limit_s=60, backend="z3", backend_params={"random_seed": 3})
    assert cpsat.objective == z3.objective == 15  # (4 + 2 - 1) x 3: 1F1B on 2 devices, 4 micro-batches


# ---------------------------------------------------------------------------------------------- plan


PIPELINE = Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b"],
                    stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
                             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}] * 2)

BAD_PLAN_OPTIONS = [
    ({"time_limit_s": 0}, "'time_limit_s' must be a number in (0, "),
    ({"parallel": 0}, "'parallel' must be an integer in 1..4096, or None, got 0"),
    ({"seed": -1}, "'seed' must be an integer in 0.."),
    ({"deterministic": 1}, "'deterministic' must be True or False, got 1"),
    ({"address": 6379}, "'address' must be an address string, or None, got 6379"),
    ({"executor": "rey"}, "'executor' must be one of"),
]


@pytest.mark.parametrize("bad,fragment", BAD_PLAN_OPTIONS, ids=[next(iter(b)) for b, _ in BAD_PLAN_OPTIONS])
def test_a_bad_plan_option_is_refused_before_any_work(bad, fragment, monkeypatch):
    prepared: list[Any] = []
    monkeypatch.setattr(planner_module, "_prepare", lambda *a, **k: prepared.append(a) or pytest.fail("prepared"))
    real_executor = sweep_module.get_executor

    def executor(name, **kw):  # the executor's name is checked here; nothing else may run
        if name in ("local", "ray"):
            prepared.append(name)
            pytest.fail("an executor was started although an option was bad")
        return real_executor(name, **kw)

    monkeypatch.setattr(sweep_module, "get_executor", executor)
    with pytest.raises(InvalidOptionsError) as caught:
        plan(PIPELINE, **bad)
    assert str(caught.value).startswith("plan: ") and fragment in str(caught.value), str(caught.value)
    assert prepared == []


# -------------------------------------------------------------------------------------- partitioners


#: a good call of partition_and_schedule, less the graph and the devices
GOOD_PIPELINE = {"search": optimal, "num_microbatches": 4, "time_unit": 1.0}

GRAPH = OperatorGraph(operators=[Operator(id=i, accel_latency=t, output_cost=1.0) for i, t in enumerate([4, 2, 3, 3])],
                      edges=[(0, 1), (1, 2), (2, 3)])
DEVICES = DeviceLimits(num_accelerators=2)

BAD_PARTITION_OPTIONS = [
    (partition_dp, {"ideal_limit": 0}, "partition_dp: 'ideal_limit' must be an integer >= 1, or None, got 0"),
    (partition_dp, {"upper_bound": float("nan")}, "partition_dp: 'upper_bound' must be a number >= 0"),
    (partition_dpl, {"order": "0123"}, "partition_dpl: 'order' must be a list of operator ids, or None"),
    (partition_dpl, {"merge_trivial": "yes"}, "partition_dpl: 'merge_trivial' must be True or False"),
    (partition_slicegraph, {"search": "brkgaa"}, "partition_slicegraph: 'search' must be one of 'brkga', 'random', "
                                                 "'dfs' (did you mean 'brkga'?)"),
    (partition_slicegraph, {"restarts": -1}, "partition_slicegraph: 'restarts' must be an integer >= 0, got -1"),
    (partition_slicegraph, {"time_limit_s": 0.0}, "partition_slicegraph: 'time_limit_s' must be a number > 0"),
    (partition_modules, {"channels": 0}, "partition_modules: 'channels' must be an integer >= 1, got 0"),
    (partition_modules, {"module_ideal_limit": 1.5}, "partition_modules: 'module_ideal_limit' must be an integer"),
    (partition_met, {"merge_trivial": 0}, "partition_met: 'merge_trivial' must be True or False, got 0"),
    (partition_greedy, {"merge_trivial": None}, "partition_greedy: 'merge_trivial' must be True or False"),
    (partition_heft, {"merge_trivial": "no"}, "partition_heft: 'merge_trivial' must be True or False"),
    (partition_annealing, {"iterations": -5}, "partition_annealing: 'iterations' must be an integer >= 0, got -5"),
    (partition_annealing, {"start_temperature": 0}, "partition_annealing: 'start_temperature' must be a number > 0"),
    (partition_evolutionary, {"neighbour_bias": 1.5}, "partition_evolutionary: 'neighbour_bias' must be a number "
                                                      "in [0, 1], got 1.5"),
    (partition_evolutionary, {"seed": "0"}, "partition_evolutionary: 'seed' must be an integer, got '0'"),
    (partition, {"method": "slicegrpah"}, "partition: 'method' must be one of 'annealing', 'dp', 'dpl', "
                                          "'evolutionary', 'greedy', 'heft', 'met', 'modules', 'slicegraph' "
                                          "(did you mean 'slicegraph'?)"),
    (partition, {"method": "dp", "ideal_limt": 10}, "partition (method 'dp'): unknown option 'ideal_limt' "
                                                    "(did you mean 'ideal_limit'?)"),
    (partition, {"method": "slicegraph", "restarts": -1}, "partition (method 'slicegraph'): 'restarts' must be"),
    *[(lambda graph, devices, **kw: partition_and_schedule(graph, devices, **{**GOOD_PIPELINE, **kw}), bad, fragment)
      for bad, fragment in [
          ({"num_microbatches": 0}, "partition_and_schedule: 'num_microbatches' must be an integer >= 1, got 0"),
          ({"search": None}, "partition_and_schedule: 'search' must be a callable, got None"),
          ({"method": "dpp"}, "partition_and_schedule: 'method' must be one of 'annealing', 'dp'"),
          ({"partition_options": {"ideal_limit": 0}}, "partition_and_schedule (method 'dp'): 'ideal_limit' must be"),
          ({"resolution": 0}, "partition_and_schedule: 'resolution' must be an integer >= 1, got 0"),
          ({"time_unit": -1.0}, "partition_and_schedule: 'time_unit' must be a number > 0, or None, got -1.0"),
          ({"time_limt_s": 5}, "partition_and_schedule: unknown search option 'time_limt_s' "
                               "(did you mean 'time_limit_s'"),
          ({"symetry_breaking": False}, "unknown search option 'symetry_breaking' "
                                        "(did you mean 'symmetry_breaking'?)"),
      ]],
]


@pytest.mark.parametrize("entry,bad,fragment", BAD_PARTITION_OPTIONS,
                         ids=[f"{getattr(e, '__name__', 'partition_and_schedule')}-{'-'.join(b)}"
                              for e, b, _ in BAD_PARTITION_OPTIONS])
def test_a_bad_partitioner_option_is_refused_before_any_work(entry, bad, fragment, monkeypatch):
    # every partitioner starts by resolving its graph and devices: record that first step
    resolved: list[Any] = []

    def recording_resolve(graph, devices):
        resolved.append(graph)
        pytest.fail("a partitioner read its graph although an option was bad")

    for module in (dp_module, heuristics_module, modules_module, slicegraph_module):
        monkeypatch.setattr(module, "resolve_workload", recording_resolve)
    with pytest.raises(InvalidOptionsError) as caught:
        entry(GRAPH, DEVICES, **bad)
    assert fragment in str(caught.value), str(caught.value)
    assert resolved == []


def test_good_partitioner_options_pass_the_door():
    assert partition(GRAPH, DEVICES, method="dp", ideal_limit=100).max_load == 7.0
    assert partition(GRAPH, DEVICES, method="slicegraph", search="random", restarts=3, seed=1).max_load == 7.0
    # its example: 4 x 6 + 1 + 6 = 31, proven
    result = partition_and_schedule(GRAPH, DEVICES, **GOOD_PIPELINE, time_limit_s=30, workers=1, deterministic=True)
    assert result.search.objective == 31
