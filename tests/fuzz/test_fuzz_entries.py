"""The fuzzing campaign of the public entries' keyword arguments (``tests/fuzzing.py`` holds the rule).

Each call draws a small valid problem (the suite's strategies) and one to three of the entry's
keywords, each either a value of the right type and range or one of the campaign's extremes and
wrong types (numbers pushed to extremes, NaN and infinity, strings, None, containers, callables of
the wrong shape). Searches run in deterministic mode with a small limit, so the outcome never
depends on the machine's speed: a keyword that sets a count or a limit beyond reason is drawn
alone beside that limit. Every call must be answered or refused by the library's own error,
within the CPU-time and message bounds.

Options that only help: a heuristic that does not apply to a problem (list scheduling on a block
with two placement options, or a fixed order) is skipped with a note, so ``pareto`` and
``min_memory`` answer the same with and without it.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schedsearch
from fuzzing import EXTREMES, WRONG_TYPES, attempt, examples, tally
from pipeline_strategies import pipeline_problems
from schedsearch import Schedule, solve
from schedsearch.errors import SchedSearchError
from schedsearch.partition import (
    DeviceLimits,
    Operator,
    OperatorGraph,
    partition_annealing,
    partition_dp,
    partition_dpl,
    partition_evolutionary,
    partition_greedy,
    partition_heft,
    partition_met,
    partition_modules,
    partition_slicegraph,
)
from schedsearch.search import jobshop, min_memory, optimal, pareto, repetend, scale_search
from schedsearch.search.dualpipe import activation_walk, list_heuristic
from schedsearch.testing import problems

#: Values of the wrong type or beyond range, tried for every keyword.
WRONG: tuple[Any, ...] = (*EXTREMES, *WRONG_TYPES, lambda *a: None, lambda *a: 5, object())

#: The common options (SearchOptions' fields) with values of the right type and range.
COMMON: dict[str, list[Any]] = {
    "seed": [0, 1, 2**31 - 1], "workers": [1, 2], "backend": ["auto", "cpsat", "z3"],
    "backend_params": [{}, {"num_workers": 1}], "warm_starts": [None, ()], "progress": [None, lambda event: None],
    "log": [False],
}

#: entry -> (the call, its own keywords with right values)
ENTRIES: dict[str, tuple[Callable[..., Any], dict[str, list[Any]]]] = {
    "solve": (solve, {"objective": ["makespan", "max_span", "peak_memory", ("makespan", "peak_memory"), None],
                      "engines": [("list",), ["list", "exact"], ("handcrafted", "exact")]}),
    "optimal": (optimal, {"symmetry_breaking": [True, False], "redundant": [True, False],
                          "upper_bound": [None, 0, 10, 100], "ties": [(), []]}),
    "scale_search": (scale_search, {"exact": [True, False], "ties": ["auto", "periodic", None],
                                    "periodic_window": [(0.25, 0.75), (0.0, 1.0)], "period": [None, 1, 3],
                                    "extra_ties": [()], "reduce": [True, False]}),
    "repetend": (repetend, {"repetend_size": [None, 1, 2], "max_fold": [1, 2], "max_period": [None, 5, 50],
                            "fold_time_limit_s": [0.2, 0.5], "completion_time_limit_s": [0.2, 0.5],
                            "memory_encoding": ["auto", "cumulative", "events", "both"],
                            "prover": [None, "cpsat", "z3"], "candidates": [1, 3],
                            "completion": ["best", "solved", "truncated"]}),
    "jobshop": (jobshop, {"list_baseline": [True, False], "list_baseline_only": [True, False],
                          "coarsen_to": [None, 1, 3], "coarsen_options": [None, {}], "coarse_share": [0.5, 1.0],
                          "refine": [True, False], "strong_disjunctive": [None, True, False],
                          "redundant": [None, True, False], "quick_pass": [True, False]}),
    "pareto": (pareto, {"objectives": [("makespan", "peak_memory"), ["peak_memory", "max_span"]],
                        "max_points": [1, 3], "start_capacity": [None, 0, 2, 5], "step_time_limit_s": [None, 0.2],
                        "heuristic": [None, list_heuristic()], "reduce": [True, False]}),
    "min_memory": (min_memory, {"target_makespan": [0, 5, 20, 100], "start_capacity": [None, 0, 3],
                                "heuristic": [None, list_heuristic()], "reduce": [True, False]}),
    "activation_walk": (activation_walk, {"target_makespan": [0, 5, 20, 100], "start_capacity": [None, 0, 3]}),
}

#: Positional parameters after the problem, by entry.
POSITIONAL = {"min_memory": ("target_makespan",), "activation_walk": ("target_makespan",), "pareto": ("objectives",)}

#: Keywords whose extreme values ask for unbounded work (a time limit, a count of steps): drawn alone beside the
#: campaign's time limit, never beside one another.
UNBOUNDED = {"time_limit_s", "deterministic", "max_points", "max_period", "max_fold", "candidates",
             "fold_time_limit_s", "completion_time_limit_s", "step_time_limit_s", "repetend_size", "coarsen_to",
             "iterations", "generations", "restarts", "population", "ideal_limit", "module_ideal_limit", "channels"}


def _small_problems() -> st.SearchStrategy:
    return st.one_of(problems(max_tasks=5), pipeline_problems(max_microbatches=2))


@st.composite
def _keywords(draw, own: dict[str, list[Any]], common: dict[str, list[Any]]) -> dict[str, Any]:
    table = {**own, **common}
    names = draw(st.lists(st.sampled_from(sorted(table)), min_size=1, max_size=3, unique=True))
    if any(n in UNBOUNDED for n in names):
        names = [next(n for n in names if n in UNBOUNDED)]
    chosen = {}
    for name in names:
        right = draw(st.integers(0, 2)) > 0
        chosen[name] = draw(st.sampled_from(table[name])) if right else draw(st.sampled_from(WRONG))
    return chosen


def _call(name: str, problem: Any, keywords: dict[str, Any]) -> tuple[str, Any]:
    fn, own = ENTRIES[name]
    keywords = dict(keywords)
    args = [problem]
    for position in POSITIONAL.get(name, ()):
        if position in keywords:
            args.append(keywords.pop(position))
        elif position == "target_makespan":
            args.append(20)
    limits = {"time_limit_s": 1.0, "deterministic": True, "workers": 1}
    return attempt(name, fn, *args, describe=(str(problem)[:120], keywords), **{**limits, **keywords})


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_keyword_of_an_entry_is_answered_or_refused(name) -> None:
    _, own = ENTRIES[name]
    common = {**COMMON, "time_limit_s": [0.2, 1.0], "deterministic": [True]}

    @examples(ci=8)
    @given(_small_problems(), _keywords(own, common), st.integers(0, 9))
    def run(problem, keywords, wrong_problem) -> None:
        if wrong_problem == 0:  # the problem itself of the wrong type
            problem = WRONG[wrong_problem % len(WRONG)] if not keywords else "vshape-2x4"
        _call(name, problem, keywords)

    run()
    assert tally(name).tracebacks == 0


# ---------------------------------------------------------------------------------------------
# Options that only help


def _outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except SchedSearchError as exc:
        return type(exc).__name__
    return "answered"


@examples(ci=10)
@given(problems(max_tasks=5))
def test_a_heuristic_that_does_not_apply_is_skipped_with_a_note(problem) -> None:
    limits = {"time_limit_s": 1.0, "deterministic": True, "workers": 1}
    heuristic = list_heuristic()
    for name, call in (("pareto", lambda h: pareto(problem, heuristic=h, **limits)),
                       ("min_memory", lambda h: min_memory(problem, 20, heuristic=h, **limits))):
        assert _outcome(lambda: call(None)) == _outcome(lambda: call(heuristic)), name
    covered = problem.graph.blocks and all(b.is_fixed for b in problem.graph.blocks) and not problem.fixed_orders
    if not covered:  # list scheduling needs a fixed placement and no fixed orders: skipped, and said so
        try:
            front = pareto(problem, heuristic=heuristic, **limits)
        except SchedSearchError:
            return
        assert any("heuristic was skipped" in note for note in front.notes), front.notes


def test_a_heuristic_that_answers_what_is_not_a_plan_is_refused_by_name() -> None:
    from schedsearch.errors import InvalidOptionsError
    from schedsearch.placements import vshape

    problem = vshape(2, 3)
    for call in (lambda h: pareto(problem, heuristic=h, time_limit_s=5),
                 lambda h: min_memory(problem, 12, heuristic=h, time_limit_s=5)):
        with pytest.raises(InvalidOptionsError, match="'heuristic' must return a Schedule or None, got 5"):
            call(lambda p: 5)
        assert call(lambda p: None) is not None  # None: no plan from the heuristic, the walk goes on


# ---------------------------------------------------------------------------------------------
# The planner's keywords


PIPELINE = schedsearch.Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b"],
                                stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0,
                                         "weight_grad_ms": 1.0, "activation_bytes": "1 GiB",
                                         "parameter_bytes": "1 GiB"}] * 2)
PLAN_KEYWORDS: dict[str, list[Any]] = {"time_limit_s": [0.2, 1.0], "executor": ["local"], "parallel": [None, 1],
                                       "address": [None], "deterministic": [True], "seed": [0, 5],
                                       "runtime": ["torch", "any"], "progress": [None, print]}


@examples(ci=12)
@given(_keywords(PLAN_KEYWORDS, {}))
def test_every_keyword_of_plan_is_answered_or_refused(keywords) -> None:
    keywords = {"time_limit_s": 0.5, "deterministic": True, "parallel": 1, **keywords}
    if keywords.get("parallel") is None or keywords.get("parallel") not in (1,):
        keywords.setdefault("executor", "local")
        if isinstance(keywords.get("parallel"), int) and not isinstance(keywords["parallel"], bool) \
                and keywords["parallel"] > 1:
            keywords["parallel"] = 1  # one process: the campaign measures this process's CPU time
    attempt("plan (keywords)", schedsearch.plan, PIPELINE, describe=keywords, **keywords)


# ---------------------------------------------------------------------------------------------
# The partitioners' keywords


@st.composite
def _operator_graphs(draw) -> OperatorGraph:
    """A chain of 1 to 4 operators with small costs (some with a side edge), acyclic by construction."""
    n = draw(st.integers(1, 4))
    ops = [Operator(id=i, name=f"op{i}", accel_latency=float(draw(st.integers(0, 4))),
                    cpu_latency=float(draw(st.integers(0, 8))), size=float(draw(st.integers(0, 2))),
                    output_cost=float(draw(st.integers(0, 2)))) for i in range(n)]
    edges = [(i, i + 1) for i in range(n - 1)] + ([(0, n - 1)] if n > 2 and draw(st.booleans()) else [])
    return OperatorGraph(operators=ops, edges=edges, name="fuzz")


PARTITIONERS: dict[str, tuple[Callable[..., Any], dict[str, list[Any]]]] = {
    "partition_dp": (partition_dp, {"upper_bound": [None, 10.0], "merge_trivial": [True, False],
                                    "ideal_limit": [None, 100]}),
    "partition_dpl": (partition_dpl, {"order": [None], "merge_trivial": [True, False]}),
    "partition_greedy": (partition_greedy, {"merge_trivial": [True, False]}),
    "partition_heft": (partition_heft, {"merge_trivial": [True, False]}),
    "partition_met": (partition_met, {"merge_trivial": [True, False]}),
    "partition_modules": (partition_modules, {"channels": [1, 2], "module_ideal_limit": [100],
                                              "merge_trivial": [True, False]}),
    "partition_annealing": (partition_annealing, {"iterations": [10, 200], "seed": [0, 3],
                                                  "start_temperature": [0.05], "end_temperature": [0.0001],
                                                  "acyclic": [True, False], "merge_trivial": [True, False],
                                                  "time_limit_s": [0.2]}),
    "partition_evolutionary": (partition_evolutionary, {"generations": [5, 50], "seed": [0, 3],
                                                        "neighbour_bias": [0.0, 0.5, 1.0], "acyclic": [True, False],
                                                        "merge_trivial": [True, False], "time_limit_s": [0.2]}),
    "partition_slicegraph": (partition_slicegraph, {"search": ["brkga", "random", "dfs"], "restarts": [0, 2],
                                                    "population": [1, 4], "generations": [0, 3], "seed": [0, 3],
                                                    "time_limit_s": [0.2], "merge_trivial": [True, False]}),
}

#: The partitioners with a time limit of their own: it bounds every draw that does not set it.
TIMED = {"partition_annealing", "partition_evolutionary", "partition_slicegraph"}


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_every_keyword_of_a_partitioner_is_answered_or_refused(name) -> None:
    fn, own = PARTITIONERS[name]

    @examples(ci=6)
    @given(_operator_graphs(), st.integers(1, 3), _keywords(own, {}))
    def run(graph, accelerators, keywords) -> None:
        if name in TIMED:
            keywords = {"time_limit_s": 0.2, **keywords}
        attempt(name, fn, graph, DeviceLimits(num_accelerators=accelerators, num_cpus=1),
                describe=(graph.name, len(graph.operators), keywords), **keywords)

    run()


def test_a_schedule_is_what_the_campaign_counts_as_a_plan() -> None:
    # the heuristic property above decides on types: a Schedule is the plan type the walks take
    from schedsearch.placements import vshape

    front = pareto(vshape(2, 3), heuristic=list_heuristic(), time_limit_s=10)
    assert all(isinstance(point.schedule, Schedule) for point in front) and not front.notes
