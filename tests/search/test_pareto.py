"""Pareto fronts and memory walks, cross-checked by an independent capacity sweep."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.placements import bidirectional, vshape
from schedsearch.result import Status
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import peak_memory
from schedsearch.search import min_memory, optimal, pareto
from schedsearch.validate import validate

LIMIT = dict(time_limit_s=30, seed=0, workers=2)


def sweep_front(problem, max_capacity):
    """Independent check: T*(M) for every capacity M; the front is where T* drops."""
    best = {}
    for m in range(1, max_capacity + 1):
        try:
            sub = with_capacities(problem, m)
        except InvalidProblemError:
            continue
        r = optimal(sub, **LIMIT)
        assert r.status in (Status.OPTIMAL, Status.INFEASIBLE)
        if r.status is Status.OPTIMAL:
            best[m] = r.objective
    front = []
    for m in sorted(best):
        if m - 1 not in best or best[m] < best[m - 1]:
            front.append((best[m], m))
    return sorted(front, key=lambda p: -p[1])


@pytest.mark.parametrize("build,d,n", [(vshape, 3, 4), (bidirectional, 2, 4), (vshape, 4, 6)])
def test_front_equals_capacity_sweep(build, d, n):
    problem = build(d, n)
    front = pareto(problem, **LIMIT)
    got = [(p.makespan, p.peak_memory) for p in front.points]
    assert got == sweep_front(problem, max_capacity=2 * n + 2)
    assert all(p.proven for p in front.points)
    for p in front.points:
        sub = with_capacities(problem, p.peak_memory)
        assert validate(sub, p.schedule) == ()
        assert max(peak_memory(sub, p.schedule).values()) == p.peak_memory
    # strictly better in one objective as the other gets worse
    makespans = [p.makespan for p in front.points]
    assert makespans == sorted(makespans) and len(set(makespans)) == len(makespans)


def test_more_memory_never_lengthens_the_optimum():
    problem = vshape(3, 5)
    values = [optimal(with_capacities(problem, m), **LIMIT).objective for m in range(1, 7)]
    assert values == sorted(values, reverse=True)


def test_min_memory_for_the_unbounded_optimum():
    # 1F1B's makespan (m+p-1)(F+B) needs p activations on device 0 and no fewer
    walk = min_memory(vshape(4, 8), target_makespan=33, **LIMIT)
    assert walk.capacity == 4 and walk.proven
    assert walk.steps[-1][1] == "INFEASIBLE"


def test_objectives_are_checked():
    with pytest.raises(ValueError, match="'objectives' must be"):
        pareto(vshape(2, 2), objectives=("makespan", "energy"))


@pytest.mark.parametrize("limit, step, points", [
    (4, 1, 1), pytest.param(20, 4, 4, marks=pytest.mark.slow)])
def test_deterministic_fronts_are_equal_when_steps_stop_at_their_limit(limit, step, points):
    """Deterministic mode: the walk's budget and each step's limit are solver work, so two runs give the same
    front even where steps stop at their limit (uneven stage times make the steps hard)."""
    from schedsearch.placements import stage_pipeline
    from schedsearch.search.dualpipe import list_heuristic

    problem = stage_pipeline([0, 1, 2, 3, 3, 2, 1, 0], 4, 8, forward=[1, 2, 1, 3, 2, 1, 2, 1],
                             backward=[2, 3, 2, 4, 3, 2, 3, 2], forward_memory=[1] * 8)

    def walk():
        front = pareto(problem, time_limit_s=limit, step_time_limit_s=step, deterministic=True, workers=1,
                       heuristic=list_heuristic())
        for p in front:
            assert not validate(with_capacities(problem, p.peak_memory), p.schedule)
        return [(p.objective, p.peak_memory, p.how, p.status) for p in front], front.stop_reason

    first, second = walk(), walk()
    assert first == second
    assert len(first[0]) >= points
    assert any(status is not Status.OPTIMAL for *_, status in first[0]) or points == 1  # some step was cut
