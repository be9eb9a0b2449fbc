"""Overlapped groups in the exact search (DualPipe's F&B pairs, fused I+W)."""

from __future__ import annotations

import pytest
from hypothesis import given

from schedsearch.placements import chain_pipelines
from schedsearch.problem import Block, Cluster, Graph, Option, Overlap, Problem
from schedsearch.result import Status
from schedsearch.search import optimal
from schedsearch.testing import overlap_problems
from schedsearch.validate import validate

BACKENDS = ["cpsat", "z3"]
LIMIT = dict(time_limit_s=30, seed=0, workers=2)


def one_device(blocks, edges=(), overlaps=(), n=1) -> Problem:
    return Problem(graph=Graph(blocks=blocks, edges=edges), num_microbatches=n,
                   cluster=Cluster(devices=["d0"]), overlaps=overlaps)


def blk(name, dur, kind="F"):
    return Block(name=name, kind=kind, options=[Option(devices=("d0",), duration=dur)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_pair_shorter_than_its_members_is_used(backend):
    # f (1) and b (2) on one device: 3 apart, 2 as an overlapped pair
    p = one_device([blk("f", 1), blk("b", 2, "B")], overlaps=[Overlap(blocks=("f", "b"), duration=2, name="F&B")])
    r = optimal(p, backend=backend, **LIMIT)
    assert r.status is Status.OPTIMAL and r.objective == 2
    assert {t.overlap for t in r.schedule.tasks} == {"F&B"}
    assert optimal(p.with_(overlaps=()), backend=backend, **LIMIT).objective == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_internal_edge_is_the_groups_order(backend):
    # i -> w fused into one unit: 1 instead of 2; two micro-batches: 2 instead of 4
    p = one_device([blk("i", 1, "I"), blk("w", 1, "W")], edges=[("i", "w")],
                   overlaps=[Overlap(blocks=("i", "w"), duration=1, name="B")], n=2)
    r = optimal(p, backend=backend, **LIMIT)
    assert r.objective == 2
    # a group only pairs i and w of the same micro-batch
    for t in r.schedule.tasks:
        partner = [u for u in r.schedule.tasks if u.start == t.start and u is not t]
        assert [u.microbatch for u in partner] == [t.microbatch]


@pytest.mark.parametrize("backend", BACKENDS)
def test_longer_group_is_not_forced(backend):
    p = one_device([blk("f", 1), blk("b", 2, "B")], overlaps=[Overlap(blocks=("f", "b"), duration=4, name="slow")])
    r = optimal(p, backend=backend, **LIMIT)
    assert r.objective == 3 and all(t.overlap is None for t in r.schedule.tasks)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dualpipe_shaped_pairs_beat_plain_search(backend):
    # two opposite pipelines on 2 devices with F&B pairs lasting 2 (< F + B = 3)
    p = chain_pipelines([[0, 1], [1, 0]], 2, 2, forward=1, backward=2, split_backward=True, weight_grad=1,
                        full_backward=True, overlap_forward_backward=2, suffixes=[".down", ".up"])
    with_pairs = optimal(p, backend=backend, **LIMIT)
    plain = optimal(p.with_(overlaps=()), backend=backend, **LIMIT)
    assert with_pairs.status is Status.OPTIMAL and plain.status is Status.OPTIMAL
    assert with_pairs.objective < plain.objective
    assert validate(p, with_pairs.schedule) == ()


@given(overlap_problems())
def test_backends_agree_with_overlaps(problem):
    a = optimal(problem, backend="cpsat", **LIMIT)
    b = optimal(problem, backend="z3", **LIMIT)
    for r in (a, b):
        if r.schedule is not None:
            assert validate(problem, r.schedule) == ()
    if a.status is Status.OPTIMAL and b.status is Status.OPTIMAL:
        assert a.objective == b.objective
    # overlaps only add ways to run: never worse than without them
    plain = optimal(problem.with_(overlaps=()), **LIMIT)
    if a.status is Status.OPTIMAL and plain.status is Status.OPTIMAL:
        assert a.objective <= plain.objective
    # ordering micro-batches stays safe with groups
    nosym = optimal(problem, symmetry_breaking=False, **LIMIT)
    if a.status is Status.OPTIMAL and nosym.status is Status.OPTIMAL:
        assert a.objective == nosym.objective
