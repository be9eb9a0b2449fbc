"""The "max_span" objective (longest device span) in both backends."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError
from schedsearch.placements import vshape, zero_bubble
from schedsearch.problem import Block, Cluster, Graph, Option, Problem
from schedsearch.result import Status
from schedsearch.schedule import Schedule, TaskInstance, device_spans, max_span, objective_value
from schedsearch.search import optimal
from schedsearch.validate import validate

BACKENDS = ["cpsat", "z3"]
LIMIT = dict(time_limit_s=30, seed=0, workers=2)


def test_spans_are_computed_from_the_schedule():
    s = Schedule(tasks=[TaskInstance(block="a", microbatch=0, devices=("d0",), start=2, end=3),
                        TaskInstance(block="b", microbatch=0, devices=("d0",), start=5, end=7),
                        TaskInstance(block="c", microbatch=0, devices=("d1",), start=0, end=1)])
    assert device_spans(s) == {"d0": 5, "d1": 1}
    assert device_spans(s, ["d0", "d1", "d2"])["d2"] == 0
    assert max_span(s) == 5 and objective_value(s, "max_span") == 5
    assert objective_value(s, "makespan") == 7 == objective_value(s, "feasibility")
    with pytest.raises(ValueError, match="'objective' must be"):
        objective_value(s, "energy")


def test_problem_accepts_max_span_and_names_the_choices():
    p = vshape(2, 2).with_(objective="max_span")
    assert Problem.from_json(p.to_json()).objective == "max_span"
    with pytest.raises(InvalidProblemError, match="'objective' must be one of"):
        vshape(2, 2).with_(objective="span")


def two_devices_one_chain() -> Problem:
    # a (d0, 1) -> b (d1, 1) -> c (d0, 1): d0's span is at least 3 (a, wait for b, c) and
    # exactly 3 when b runs right after a
    blocks = [Block(name="a", options=[Option(devices=("d0",), duration=1)]),
              Block(name="b", options=[Option(devices=("d1",), duration=1)]),
              Block(name="c", options=[Option(devices=("d0",), duration=1)])]
    return Problem(graph=Graph(blocks=blocks, edges=[("a", "b"), ("b", "c")]), num_microbatches=1,
                   cluster=Cluster(devices=["d0", "d1"]), objective="max_span")


@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_span_optimum(backend):
    r = optimal(two_devices_one_chain(), backend=backend, **LIMIT)
    assert r.status is Status.OPTIMAL and r.objective == 3 and r.objective_name == "max_span"
    assert max_span(r.schedule) == 3 and validate(two_devices_one_chain(), r.schedule) == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_start_makespan_does_not_cap_a_span_search(backend):
    # the warm start is short (makespan 3) but its d0 span is 3 too; a later start of d0's
    # work cannot help here, yet the search must be free to return schedules longer than the
    # warm start: check with a problem whose span optimum needs a late start
    blocks = [Block(name="x", options=[Option(devices=("d1",), duration=3)]),
              Block(name="y", options=[Option(devices=("d0",), duration=1)]),
              Block(name="z", options=[Option(devices=("d0",), duration=1)])]
    # y has no predecessor, z waits for x: d0's span is 2 only when y starts at 2 (makespan 4)
    p = Problem(graph=Graph(blocks=blocks, edges=[("x", "z")]), num_microbatches=1,
                cluster=Cluster(devices=["d0", "d1"]), objective="max_span")
    warm = Schedule(tasks=[TaskInstance(block="x", microbatch=0, devices=("d1",), start=0, end=3),
                           TaskInstance(block="y", microbatch=0, devices=("d0",), start=0, end=1),
                           TaskInstance(block="z", microbatch=0, devices=("d0",), start=3, end=4)])
    assert max_span(warm) == 4
    r = optimal(p, backend=backend, warm_start=warm, **LIMIT)
    assert r.status is Status.OPTIMAL and r.objective == 3  # x on d1 is the longest span
    assert validate(p, r.schedule) == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree_on_a_zero_bubble_span(backend):
    # p=2, m=2, F=I=W=1, no memory limit: each device has 6 units of work; device 1 can run
    # F F I W I W with no gap (span 6) and device 0 waits for I0 from device 1: F0 F1 . I0 W0 I1 W1
    # gives span 7 and no order does better (I0 on d0 is ready at 3 at the earliest, after
    # which 4 units remain; before it d0 can only run 2 forwards)
    p = zero_bubble(2, 2).with_(objective="max_span")
    r = optimal(p, backend=backend, **LIMIT)
    assert r.status is Status.OPTIMAL and r.objective == 7
