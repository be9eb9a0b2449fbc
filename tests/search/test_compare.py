"""Search against the handcrafted baselines under the same memory.

Solver runs: fixed seed, 2 workers at most, time limits; sizes small enough to
be proven in about a second each on two cores.
"""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted import SCHEDULES, reproduce
from schedsearch.rewrite import flatten_overlaps
from schedsearch.search.compare import search_against
from schedsearch.validate import validate

SMALL = {
    "gpipe": dict(devices=3, microbatches=4),
    "1f1b": dict(devices=3, microbatches=4),
    "interleaved": dict(devices=2, chunks=2, microbatches=4),
    "interleaved-zb": dict(devices=2, chunks=2, microbatches=4),
    "zb-h1": dict(devices=3, microbatches=4),
    "zb-v": dict(devices=2, microbatches=4),
    "v-half": dict(devices=2, microbatches=4),
    "v-min": dict(devices=3, microbatches=4),
    "chimera": dict(devices=4, microbatches=4),
    "dualpipe": dict(devices=4, microbatches=8),
    "dualpipev": dict(devices=2, microbatches=4),
}


def test_every_named_schedule_has_small_settings_here():
    assert set(SMALL) == set(SCHEDULES)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_search_is_never_worse_and_says_by_how_much(name):
    rep = reproduce(name, **SMALL[name])
    cmp = search_against(rep.problem, rep.schedule, time_limit_s=20, workers=2, seed=0, time_scale=rep.time_scale)
    # same memory: the limits are the handcrafted peaks, and the searched schedule keeps them
    assert dict(cmp.memory_limits) == dict(rep.metrics.peak_memory)
    assert validate(cmp.problem, cmp.handcrafted) == ()
    best = cmp.best
    assert best.makespan <= rep.schedule.makespan
    assert cmp.improvement["makespan"] == rep.schedule.makespan - best.makespan >= 0
    if cmp.searched is not None:
        assert validate(cmp.searched_problem, cmp.searched) == ()
        for d, peak in cmp.searched_metrics.peak_memory.items():
            assert peak <= cmp.memory_limits[d]
    assert cmp.verdict in ("beats", "ties")
    doc = cmp.to_dict()
    assert doc["improvement"] == cmp.improvement and doc["verdict"] == cmp.verdict
    assert cmp.verdict in str(cmp)


def test_dualpipe_bubble_halves_under_the_same_memory():
    # PP = 4, 8 micro-batches (4 each way), F = I = W = 1, F&B = 3: DualPipe's bubble (PP/2-1)(F&B+B-3W) = 2;
    # the exact search without overlapped pairs reaches PP/2 - 1 = 1 under the same peak memory.
    # Proven: the makespan (OPTIMAL), hence the bubble (each device's work is fixed). Not proven: which of the
    # optimal plans the search returns, and so its peak memory, which only the limits cap.
    rep = reproduce("dualpipe", devices=4, microbatches=8)
    cmp = search_against(rep.problem, rep.schedule, time_limit_s=30, workers=2, seed=0)
    assert cmp.overlaps_dropped and cmp.warm_started
    assert cmp.result.proven_optimal
    assert cmp.verdict == "beats"
    assert (cmp.improvement["makespan"], cmp.improvement["bubble"]) == (1, 1)
    assert cmp.improvement["peak_memory"] >= 0
    assert all(peak <= cmp.memory_limits[d] for d, peak in cmp.searched_metrics.peak_memory.items())


def test_shorter_overlapped_pairs_cannot_be_flattened_and_the_baseline_stands():
    rep = reproduce("dualpipev", devices=2, microbatches=4, overlap=2)
    assert flatten_overlaps(rep.problem, rep.schedule) is None
    cmp = search_against(rep.problem, rep.schedule, time_limit_s=10, workers=2, seed=0)
    assert not cmp.warm_started
    assert cmp.best.makespan <= rep.schedule.makespan
    if cmp.verdict != "beats":
        assert cmp.best is cmp.handcrafted


def test_memory_limits_can_be_given():
    rep = reproduce("1f1b", devices=2, microbatches=3)
    cmp = search_against(rep.problem, rep.schedule, memory={"d0": 5, "d1": 5}, time_limit_s=10)
    assert cmp.memory_limits == {"d0": 5, "d1": 5}
    with pytest.raises(InvalidProblemError, match="'memory' must be"):
        search_against(rep.problem, rep.schedule, memory="lots")
