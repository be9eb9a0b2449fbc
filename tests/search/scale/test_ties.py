"""Start-time ties (encoder family 10) and the tie builders."""

from __future__ import annotations

import pytest

from schedsearch.encode import SolveOptions, solve
from schedsearch.errors import InvalidProblemError
from schedsearch.placements import dualpipe, vshape
from schedsearch.result import Status
from schedsearch.search import optimal
from schedsearch.search.dualpipe import mirror_pairs
from schedsearch.search.scale import mirror_ties, periodic_ties, steady_period
from schedsearch.validate import validate

BACKENDS = ["cpsat", "z3"]
LIMIT = dict(time_limit_s=30, seed=0, workers=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ties_are_kept(backend):
    p = vshape(2, 3)
    ties = [(("F0", 0), ("F0", 1), 5), (("B0", 1), ("B0", 2), 4)]
    r = solve(p, backend, SolveOptions(time_limit_s=30, ties=ties))
    assert r.schedule is not None and validate(p, r.schedule) == ()
    start = {t.key: t.start for t in r.schedule.tasks}
    assert start[("F0", 1)] == start[("F0", 0)] + 5
    assert start[("B0", 2)] == start[("B0", 1)] + 4
    # the unrestricted optimum (1F1B, (3+1)*3 = 12) is shorter than the tied one
    assert r.objective > optimal(p, backend=backend, **LIMIT).objective


@pytest.mark.parametrize("backend", BACKENDS)
def test_impossible_ties_say_nothing_about_the_problem(backend):
    # F1 after F0 in the same micro-batch: a tie asking F1 to start with F0 cannot hold
    p = vshape(2, 1)
    r = optimal(p, backend=backend, ties=[(("F0", 0), ("F1", 0), 0)], **LIMIT)
    assert r.status is Status.UNKNOWN and r.schedule is None
    assert r.restricted_status is Status.INFEASIBLE and r.ties == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_tied_optimum_is_optimal_only_at_the_analytic_bound(backend):
    # period 3 ties on 1F1B's placement leave the optimum (m+p-1)(F+B) reachable
    p = vshape(2, 4)
    r = optimal(p, backend=backend, ties=periodic_ties(p, 1, 2, period=3), **LIMIT)
    assert r.objective == 15 and r.status is Status.OPTIMAL and r.lower_bound == 15
    # a period that is too long: a schedule, but no claim of optimality
    r = optimal(p, backend=backend, ties=periodic_ties(p, 0, 3, period=6), **LIMIT)
    assert r.schedule is not None and r.objective > 15 and r.status is Status.FEASIBLE
    assert r.lower_bound == 15


def test_tie_errors_name_the_tie():
    with pytest.raises(ValueError, match="'ties' must hold"):
        SolveOptions(ties=[("F0", 0, 1)])
    with pytest.raises(ValueError, match="offset must be an integer"):
        SolveOptions(ties=[(("F0", 0), ("F0", 1), 1.5)])
    with pytest.raises(ValueError, match="no task instance 'F9'"):
        solve(vshape(2, 2), "cpsat", SolveOptions(ties=[(("F9", 0), ("F0", 1), 1)]))
    with pytest.raises(InvalidProblemError, match="first <= last"):
        periodic_ties(vshape(2, 2), 1, 5)
    with pytest.raises(InvalidProblemError, match="no block 'X'"):
        mirror_ties(vshape(2, 2), [("F0", "X")])


def test_builders():
    p = vshape(3, 4)
    assert steady_period(p) == 3  # F + B on every device
    ties = periodic_ties(p, 1, 3)
    assert len(ties) == 2 * len(p.graph.blocks) and ties[0] == (("F0", 1), ("F0", 2), 3)
    dp = dualpipe(4, 8)
    pairs = mirror_pairs(dp)
    assert ("F0.down", "F0.up") in pairs and ("W3.down", "W3.up") in pairs and len(pairs) == 12
    assert len(mirror_ties(dp, pairs)) == 12 * dp.num_microbatches
    with pytest.raises(InvalidProblemError, match="no blocks ending"):
        mirror_pairs(vshape(2, 2))


def test_mirror_symmetric_optimum_of_dualpipe():
    # DualPipe, PP=4, 8 chunks, PP+1 activations: the optimum 25 (bubble PP/2-1 = 1 on
    # 3 x 8 units of work per device) is reached by a mirror-symmetric schedule
    p = dualpipe(4, 8, memory=5).with_(overlaps=())
    r = optimal(p, ties=mirror_ties(p, mirror_pairs(p)), **LIMIT)
    assert r.status is Status.OPTIMAL and r.objective == 25
    start = {t.key: t.start for t in r.schedule.tasks}
    assert all(start[(a, m)] == start[(b, m)] for a, b in mirror_pairs(p) for m in range(4))
