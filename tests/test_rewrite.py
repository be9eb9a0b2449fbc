"""Problem and schedule rewrites: capacities, redundant overlaps, flattening and regrouping groups."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted import dualpipe as dualpipe_schedule, reproduce
from schedsearch.placements import dualpipe, vshape
from schedsearch.problem import Overlap
from schedsearch.rewrite import flatten_overlaps, overlaps_redundant, reduced_problem, regroup_overlaps, with_capacities
from schedsearch.schedule import metrics, overlap_groups
from schedsearch.validate import validate


def capacities(problem):
    return [d.memory for d in problem.cluster.devices]


def test_one_capacity_replaces_every_device_s_own():
    p = vshape(3, 4, memory=4)
    assert capacities(with_capacities(p, 6)) == [6, 6, 6]
    assert capacities(with_capacities(p, None)) == [None, None, None]
    # everything else is the same problem
    assert with_capacities(p, 4) == p


def test_capping_keeps_the_smaller_capacity():
    p = with_capacities(vshape(3, 4), {"d0": 3, "d1": 9})  # d2 unbounded
    assert capacities(p) == [3, 9, None]
    assert capacities(with_capacities(p, 5, cap_existing=True)) == [3, 5, 5]
    assert capacities(with_capacities(p, None, cap_existing=True)) == [3, 9, None]
    assert capacities(with_capacities(p, {"d1": 4, "d2": None}, cap_existing=True)) == [3, 4, None]


def test_a_mapping_changes_only_the_devices_it_names():
    p = vshape(2, 4, memory=4)
    assert capacities(with_capacities(p, {"d1": None})) == [4, None]
    assert capacities(with_capacities(p, {})) == [4, 4]


def test_bad_capacities_name_the_device_and_the_value():
    p = vshape(2, 4, memory=4)
    with pytest.raises(InvalidProblemError, match=r"names unknown devices \['d7'\]"):
        with_capacities(p, {"d7": 3})
    with pytest.raises(InvalidProblemError, match="device 'd0'.*memory.*-1"):
        with_capacities(p, -1)
    with pytest.raises(InvalidProblemError, match="does not fit on any device"):
        with_capacities(p, 0)


def test_redundant_overlaps():
    # F&B = F + B and B = I + W: the groups save nothing and flatten frees first
    assert overlaps_redundant(dualpipe(4, 8, overlap=3))
    assert not overlaps_redundant(dualpipe(4, 8, overlap=2))  # a pair saves a unit
    assert not overlaps_redundant(vshape(2, 2))  # nothing declared
    # a group whose allocating member must run before a freeing one cannot be flattened frees first
    p = vshape(1, 1).with_(overlaps=[Overlap(blocks=("F0", "B0"), duration=3)])
    assert not overlaps_redundant(p)
    assert reduced_problem(dualpipe(4, 8)).overlaps == () and reduced_problem(p) is p


def test_flattening_keeps_validity_and_never_raises_memory():
    rep = reproduce("dualpipev", devices=4, microbatches=10)
    flat = flatten_overlaps(rep.problem, rep.schedule)
    plain = rep.problem.with_(overlaps=())
    assert validate(plain, flat) == ()
    assert all(t.overlap is None for t in flat.tasks)
    assert flat.makespan == rep.schedule.makespan
    assert metrics(plain, flat).peak_memory == rep.metrics.peak_memory


def test_groups_shorter_than_their_members_cannot_be_flattened():
    p = dualpipe(4, 8, overlap=2)
    assert flatten_overlaps(p, dualpipe_schedule(p)) is None


def test_regrouping_undoes_flattening():
    p = dualpipe(4, 8)
    hand = dualpipe_schedule(p)
    assert overlap_groups(hand)
    flat = flatten_overlaps(p, hand)
    assert flat.makespan == hand.makespan and not overlap_groups(flat)
    grouped = regroup_overlaps(p, flat)
    assert validate(p, grouped) == () and grouped.makespan == hand.makespan
    assert len(overlap_groups(grouped)) >= len(overlap_groups(hand))
    # nothing declared: nothing to regroup
    plain = p.with_(overlaps=())
    assert regroup_overlaps(plain, flat) is flat
