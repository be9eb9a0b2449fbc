"""One options type, one progress event, one result family for every strategy.

Each strategy takes its common settings as one ``SearchOptions`` or as
keywords of the same names, rejects an unknown keyword by name, keeps its
time limit for the whole call, reports ``ProgressEvent`` events naming a
phase, honours a backend object, and returns a ``SearchResult`` (or a
sequence of them) that exports itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from schedsearch.encode import get_backend
from schedsearch.errors import InvalidOptionsError
from schedsearch.graphs import machine_cluster, random_dag
from schedsearch.options import ProgressEvent, SearchOptions
from schedsearch.placements import bidirectional, dualpipe, vshape, vshape_chunks
from schedsearch.result import SearchResult, Status
from schedsearch.rewrite import with_capacities
from schedsearch.search import (
    MemoryWalk,
    ParetoFront,
    ParetoPoint,
    heft,
    jobshop,
    list_plan,
    list_schedule,
    min_memory,
    optimal,
    pareto,
    repetend,
    scale_search,
)
from schedsearch.search.list_scheduling import PipelineRule, best_list_schedule
from schedsearch.validate import validate

SMALL = vshape(2, 4, memory=2)  # 1F1B, 2 devices, 4 micro-batches: makespan (4 + 2 - 1) x 3 = 15

#: strategy name -> a call on SMALL with the given options and keywords
RUNS: dict[str, Callable[..., Any]] = {
    "optimal": lambda **kw: optimal(SMALL, **kw),
    "scale_search": lambda **kw: scale_search(SMALL, rules=(), **kw),
    "repetend": lambda **kw: repetend(SMALL, **kw),
    "jobshop": lambda **kw: jobshop(SMALL, list_baseline=False, **kw),
    "pareto": lambda **kw: pareto(SMALL, **kw),
    "min_memory": lambda **kw: min_memory(SMALL, 15, **kw),
}


def results(outcome: Any) -> Sequence[SearchResult]:
    """A strategy's results: the points of a front, else the one result."""
    return list(outcome) if isinstance(outcome, ParetoFront) else [outcome]


def summary(outcome: Any) -> list[tuple]:
    return [(r.status, r.objective, r.lower_bound) for r in results(outcome)]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_options_object_and_keywords_are_the_same(name):
    run = RUNS[name]
    by_keywords = run(time_limit_s=30, seed=3, workers=1, deterministic=True)
    by_object = run(options=SearchOptions(time_limit_s=30, seed=3, workers=1, deterministic=True))
    # keywords override the object's fields
    mixed = run(options=SearchOptions(time_limit_s=30, seed=9, workers=2), seed=3, workers=1, deterministic=True)
    assert summary(by_keywords) == summary(by_object) == summary(mixed)
    for result in results(by_keywords):
        assert result.status is Status.OPTIMAL and result.schedule is not None
        assert validate(result.problem, result.schedule) == ()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_unknown_keyword_is_named(name):
    with pytest.raises(InvalidOptionsError, match=rf"^{name}: unknown option 'time_limt_s'; the common options are"):
        RUNS[name](time_limt_s=5)
    with pytest.raises(InvalidOptionsError, match=rf"^{name}: 'options' must be a SearchOptions"):
        RUNS[name](options={"time_limit_s": 5})


def test_a_former_knob_name_points_to_the_present_one():
    with pytest.raises(InvalidOptionsError, match="jobshop: unknown option 'heuristic'; its meaning is now "
                                                  "'list_baseline'"):
        jobshop(SMALL, heuristic=False)


def test_warm_start_and_warm_starts_are_one_option():
    hand = list_plan(SMALL)
    assert optimal(SMALL, warm_start=hand, time_limit_s=30).objective == 15
    assert optimal(SMALL, warm_starts=[hand], time_limit_s=30).objective == 15
    with pytest.raises(InvalidOptionsError, match="give 'warm_start' or 'warm_starts', not both"):
        optimal(SMALL, warm_start=hand, warm_starts=[hand])
    # a warm start does not apply to a repetend: left aside with a note, the same answer as without it
    with_hand = repetend(SMALL, warm_start=hand, time_limit_s=30, deterministic=True)
    without = repetend(SMALL, time_limit_s=30, deterministic=True)
    assert (with_hand.status, with_hand.objective) == (without.status, without.objective)
    assert any("warm starts (1 given) were left aside" in note for note in with_hand.notes), with_hand.notes
    assert not any("warm starts" in note for note in without.notes)


#: (name, call with a tight limit, what says the call was cut short); each
#: would run much longer without its limit
TIGHT = [
    ("optimal", lambda s: optimal(dualpipe(8, 24, memory=5), time_limit_s=s, workers=1),
     lambda r: r.status in (Status.TIMEOUT, Status.FEASIBLE)),
    ("scale_search", lambda s: scale_search(dualpipe(8, 24, memory=5), rules=(), time_limit_s=s, workers=1),
     lambda r: r.status is not Status.OPTIMAL),
    ("scale_search_capped_v", lambda s: scale_search(vshape_chunks(8, 32, memory=9), time_limit_s=s, workers=1),
     lambda r: r.status is not Status.OPTIMAL),
    ("repetend", lambda s: repetend(bidirectional(4, 16, memory=3), time_limit_s=s, workers=1),
     lambda r: not r.period_optimal),
    ("jobshop", lambda s: jobshop(random_dag(80, seed=4).on_machines(machine_cluster(2, channels=2, directed=True)),
                                  coarsen_to=20, time_limit_s=s, workers=1),
     lambda r: r.status is Status.FEASIBLE),
    ("pareto", lambda s: pareto(dualpipe(6, 12).with_(overlaps=()), time_limit_s=s, workers=1),
     # the limit is reached between two steps ("time limit") or in a step that found no plan before it ("timeout")
     lambda front: front.stop_reason in ("time limit", "timeout")),
    ("min_memory", lambda s: min_memory(dualpipe(6, 12).with_(overlaps=()), 40, time_limit_s=s, workers=1),
     lambda walk: walk.status is not Status.OPTIMAL),
]


@pytest.mark.parametrize("name,call,cut", TIGHT, ids=[t[0] for t in TIGHT])
def test_the_time_limit_covers_the_whole_call(name, call, cut):
    # The work a call does stays within its limit: measured as the process's CPU time (all its threads), which
    # other processes on a busy machine do not inflate, as they inflate wall time (a search stopped by its
    # wall-clock limit on a loaded machine has done less work, never more). What no solver limit counts (model
    # building, validation) is measured as what the same call spends beyond a short limit that still lets every
    # phase start (scale_search starts its exact search with 1 s left, not less). The wall time against the
    # limit under load is the deadline benchmark's figure.
    probe = 1.2
    c0 = time.process_time()
    call(probe)
    overhead = max(0.0, time.process_time() - c0 - probe)
    limit = 3.0
    slack = 1.0 + 2 * overhead
    c0 = time.process_time()
    outcome = call(limit)
    cpu = time.process_time() - c0
    assert cut(outcome), f"{name} finished within its limit: the problem is too easy to test the limit"
    assert cpu <= limit + slack, (f"{name} worked {cpu:.1f} s of CPU under a limit of {limit} s "
                                  f"(under a limit of {probe} s it worked {overhead:.1f} s over)")


#: strategy name -> the phase of its first event
FIRST_PHASE = {"optimal": "bound", "scale_search": "bound", "repetend": "bound", "jobshop": "bound",
               "pareto": "pareto capacity unbounded", "min_memory": "peak memory capacity unbounded"}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_strategy_reports_progress_events_naming_their_phase(name):
    events: list[ProgressEvent] = []
    RUNS[name](time_limit_s=30, progress=events.append)
    assert events and all(isinstance(e, ProgressEvent) and e.phase for e in events)
    assert events[0].phase == FIRST_PHASE[name]
    states = [(e.phase, e.incumbent, e.bound) for e in events]
    assert all(a != b for a, b in zip(states, states[1:])), "an event repeats the one before it"
    assert [e.elapsed_s for e in events] == sorted(e.elapsed_s for e in events)
    if name != "min_memory":  # the walk's incumbent is a memory capacity, its bounds are per step
        assert any(e.incumbent == 15 for e in events)


def test_backends_name_their_phase():
    for backend in ("cpsat", "z3"):
        events: list[ProgressEvent] = []
        optimal(vshape(3, 4, memory=3), backend=backend, time_limit_s=30, progress=events.append)
        assert f"exact search ({backend})" in {e.phase for e in events}


class CountingBackend:
    """CP-SAT under another name, counting its calls: it only works if the object itself is used."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = get_backend("cpsat")
        self.features = self.inner.features
        self.calls = 0

    def solve(self, problem, options):
        self.calls += 1
        return self.inner.solve(problem, options)

    def solve_repetend(self, problem, options):
        from schedsearch.encode.cpsat.repetend import solve_repetend

        self.calls += 1
        return solve_repetend(problem, options)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_backend_object_is_used_as_given(name):
    backend = CountingBackend()
    outcome = RUNS[name](time_limit_s=30, backend=backend)
    assert backend.calls > 0
    assert all(r.status is Status.OPTIMAL for r in results(outcome))


def _engines(outcome: Any) -> set[str]:
    return {r.engine for r in results(outcome)}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_result_names_its_engines_carries_its_problem_and_exports(name):
    outcome = RUNS[name](time_limit_s=30)
    for result in results(outcome):
        assert isinstance(result, SearchResult)
        assert result.engine and result.bound_engine and result.strategy
        assert result.problem is not None and validate(result.problem, result.schedule) == ()
        document = json.loads(result.export("json"))
        assert document["meta"]["result"]["strategy"] == result.strategy
        assert document["meta"]["result"]["engine"] == result.engine
        assert len(document["schedule"]["tasks"]) == len(result.schedule.tasks)
    if name == "optimal":
        assert _engines(outcome) == {"exact search (cpsat)"}
    if name == "repetend":
        assert outcome.engine == "repetend period 3 (cpsat)"


def test_list_schedulers_return_results():
    # FEASIBLE with the analytic bound (15 here), OPTIMAL when the plan meets it
    for result in (heft(SMALL), list_schedule(SMALL), list_schedule(SMALL, PipelineRule()), best_list_schedule(SMALL)):
        assert isinstance(result, SearchResult) and result.problem is SMALL
        assert result.status in (Status.FEASIBLE, Status.OPTIMAL) and result.lower_bound == 15
        assert (result.status is Status.OPTIMAL) == (result.objective == 15)
        assert result.bound_engine == "analytic" and result.engine.startswith("list scheduling (")
        assert json.loads(result.export("json"))["meta"]["result"]["objective"] == result.objective
    assert best_list_schedule(SMALL).status is Status.OPTIMAL  # the portfolio reaches the bound
    # a memory deadlock proves nothing: UNKNOWN, with the bound
    blocked = dualpipe(4, 8, memory=3).with_(overlaps=())
    result = list_schedule(blocked, PipelineRule())
    if result.schedule is None:
        assert result.status is Status.UNKNOWN and result.lower_bound is not None


def test_a_pareto_front_is_a_sequence_of_results():
    front = pareto(vshape(3, 4), time_limit_s=30)
    assert isinstance(front, Sequence) and len(front) == len(front.points) == 3
    assert list(front) == list(front.points) and front[0] is front.points[0] and front[-2:] == front.points[-2:]
    for point in front:
        assert isinstance(point, ParetoPoint) and isinstance(point, SearchResult)
        assert point.proven and point.how == "proven" and point.status is Status.OPTIMAL
        assert point.objective == point.makespan and point.objective_name == "makespan"
        assert point.peak_memory == max(point.peak_per_device.values())
        assert point.problem == with_capacities(vshape(3, 4), point.capacity)
    assert [(p.objective, p.peak_memory) for p in front] == [(18, 3), (21, 2), (36, 1)]


def test_a_memory_walk_is_a_result_whose_objective_is_the_memory():
    # 1F1B's makespan (m + p - 1)(F + B) = 33 needs p = 4 activations on device 0, and no fewer
    walk = min_memory(vshape(4, 8), 33, time_limit_s=60)
    assert isinstance(walk, MemoryWalk) and isinstance(walk, SearchResult)
    assert walk.objective_name == "peak_memory" and walk.objective == walk.capacity == walk.lower_bound == 4
    assert walk.status is Status.OPTIMAL and walk.proven and walk.bound_engine == "analytic bound"  # the memory bound
    assert walk.schedule.makespan <= 33 and validate(walk.problem, walk.schedule) == ()
    assert "peak memory 4" in str(walk)


def test_a_foreign_warm_start_is_skipped_not_an_error():
    # the validator reports a plan of another problem (unknown and missing tasks); it never raises
    foreign = list_plan(vshape(3, 3))
    assert {v.kind for v in validate(SMALL, foreign)} >= {"unknown_task", "missing_task"}
    result = scale_search(SMALL, warm_starts=[foreign], time_limit_s=30)
    assert result.status is Status.OPTIMAL and not result.engine.startswith("warm start")
