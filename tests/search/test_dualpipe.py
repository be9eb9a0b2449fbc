"""DualPipe and DualPipeV in the searched model: the handcrafted schedules' figures, the
search under the same activation limit, the least activation limit for the same bubble,
and overlapped pairs in the PyTorch CSV."""

from __future__ import annotations

import csv
import io

import pytest

from optional import require

from schedsearch.export.torch_csv import to_torch_csv
from schedsearch.handcrafted import reproduce
from schedsearch.placements import dualpipe, dualpipev
from schedsearch.result import Status
from schedsearch.rewrite import flatten_overlaps, regroup_overlaps, with_capacities
from schedsearch.schedule import metrics
from schedsearch.search.dualpipe import activation_walk
from schedsearch.search.scale import scale_search
from schedsearch.validate import validate

CASES = [(PP, k * PP) for PP in (4, 8) for k in (2, 3, 4)]


@pytest.mark.parametrize("PP, chunks", CASES)
def test_dualpipe_bubble_halved_under_its_own_memory(PP, chunks):
    rep = reproduce("dualpipe", devices=PP, microbatches=chunks)
    # the handcrafted schedule in the searched model: the README's bubble (PP/2-1)(F&B+B-3W)
    # = 2(PP/2-1) on every device, PP+1 activations on the two middle devices
    assert rep.matches["bubble"] and rep.measured["bubble_per_device"] == [PP - 2] * PP
    assert max(rep.measured["peak_memory"]) == PP + 1
    for limits in (dict(rep.metrics.peak_memory), {d: PP + 1 for d in rep.problem.cluster.device_names}):
        problem = with_capacities(rep.problem, limits)
        r = scale_search(problem, warm_starts=[rep.schedule], time_limit_s=60)
        # proven: the middle devices cannot start before PP/2 - 1
        assert r.status is Status.OPTIMAL and r.lower_bound == r.objective
        mt = metrics(problem, r.schedule)
        assert mt.bubble_global == PP // 2 - 1
        assert all(mt.peak_memory[d] <= limits[d] for d in limits)


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16)])
def test_dualpipev_bubble_halved_with_fewer_activations(p, m):
    rep = reproduce("dualpipev", devices=p, microbatches=m)
    assert rep.metrics.bubble_global == 2 * (p - 1) and max(rep.measured["peak_memory"]) == 2 * p + 1
    problem = with_capacities(rep.problem, 2 * p)
    r = scale_search(problem, warm_starts=[rep.schedule], time_limit_s=60)
    assert r.status is Status.OPTIMAL and metrics(problem, r.schedule).bubble_global == p - 1


def test_least_activation_limit_for_the_same_bubble():
    # PP = 4, 8 chunks: bubble PP/2-1 = 1 (makespan 25) needs PP = 4 activations per device,
    # and 3 is proven too few (one below 1F1B's PP, one below DualPipe's PP + 1)
    walk = activation_walk(dualpipe(4, 8), 1 + 3 * 8, start_capacity=5, time_limit_s=60, seed=0, workers=2)
    assert walk.capacity == 4 and walk.proven
    assert [s[0] for s in walk.steps] == [5, 4, 3]
    assert walk.steps[-1][1] == "INFEASIBLE" and walk.steps[-1][3] == "exact"
    assert validate(with_capacities(dualpipe(4, 8), 4), walk.schedule) == ()


@pytest.mark.slow
def test_least_activation_limit_pp8():
    walk = activation_walk(dualpipe(8, 16), 3 + 3 * 16, start_capacity=9, time_limit_s=300, seed=0, workers=2)
    assert walk.capacity == 8 and walk.proven


def test_dualpipe_figure_with_overlapped_pairs():
    # DualPipe's README figure: PP=8, 20 chunks, F&B = 3: makespan 66, bubble 6 everywhere
    rep = reproduce("dualpipe", devices=8, microbatches=20, overlap=3)
    assert rep.measured["makespan"] == 66 and rep.measured["bubble_per_device"] == [6] * 8
    assert sum(t.overlap == "F&B" for t in rep.schedule.tasks) > 0
    # the same per-device memory, searched: bubble 3, and the declarations cannot matter
    problem = with_capacities(rep.problem, dict(rep.metrics.peak_memory))
    r = scale_search(problem, warm_starts=[rep.schedule], time_limit_s=60)
    assert r.objective == 63 and r.status is Status.OPTIMAL and r.stats["overlaps_dropped"]


def test_regrouped_pairs_export_to_torch_csv():
    # DualPipeV with F&B = 2 on 2 devices: the searched schedule (21 < 22) uses pairs; they
    # export as OVERLAP_F_B cells and read back through the project's importer
    rep = reproduce("dualpipev", devices=2, microbatches=4, overlap=2)
    r = scale_search(rep.problem, warm_starts=[rep.schedule], time_limit_s=60)
    text = to_torch_csv(rep.problem, r.schedule)
    assert "OVERLAP_F_B" in text
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == 2
    # a schedule run without pairs gets them back where they fit: flattening DualPipe's own
    # schedule and regrouping it
    from schedsearch.schedule import overlap_groups

    problem = dualpipe(4, 8)
    hand = reproduce("dualpipe", devices=4, microbatches=8).schedule
    grouped = regroup_overlaps(problem, flatten_overlaps(problem, hand))
    assert validate(problem, grouped) == () and grouped.makespan == hand.makespan
    # the pairs come back (a forward followed by a fused backward may become a pair too)
    def pairs(schedule):
        return sum(g[0] == "F&B" for g in overlap_groups(schedule))

    assert pairs(grouped) >= pairs(hand) > 0


@pytest.mark.torch
def test_searched_pairs_pass_torchs_checks():
    schedules = require("torch.distributed.pipelining.schedules")
    rep = reproduce("dualpipev", devices=2, microbatches=4, overlap=2)
    r = scale_search(rep.problem, warm_starts=[rep.schedule], time_limit_s=60)
    text = to_torch_csv(rep.problem, r.schedule)
    actions = {rank: [schedules._Action.from_str(cell) for cell in row]
               for rank, row in enumerate(csv.reader(io.StringIO(text)))}
    assert any(a.computation_type == schedules.OVERLAP_F_B for acts in actions.values() for a in acts)
    stage_to_rank = schedules._validate_schedule(actions, 2, 4, 4)
    lowered = {rank: schedules._add_reduce_grad(schedules._add_unshard_reshard(acts), 4)
               for rank, acts in actions.items()}
    comms = schedules._add_send_recv(lowered, stage_to_rank=lambda s: stage_to_rank[s], num_stages=4)
    skip = (schedules.UNSHARD, schedules.RESHARD, schedules.REDUCE_GRAD)
    flat = {rank: [sub for a in acts for sub in (a.sub_actions if a.sub_actions is not None else (a,))
                   if sub.computation_type not in skip] for rank, acts in comms.items()}
    simulated = schedules._simulate_comms_compute(flat, lambda s: stage_to_rank[s], 4)
    assert all(simulated[rank] for rank in simulated)
