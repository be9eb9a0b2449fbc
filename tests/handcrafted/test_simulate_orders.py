"""The as-soon-as-possible simulator of device orders, and the generators' preconditions."""

from __future__ import annotations

import pytest

from schedsearch.errors import InvalidProblemError, InvalidScheduleError
from schedsearch.handcrafted import (
    DeadlockError,
    Group,
    chimera,
    dualpipe,
    dualpipev,
    gpipe,
    interleaved_1f1b,
    interleaved_zero_bubble,
    one_f_one_b,
    schedule_from_orders,
    zb_h1,
    zb_v,
)
from schedsearch.placements import chain_pipelines, interleaved, vshape, zero_bubble
from schedsearch.placements import chimera as chimera_problem
from schedsearch.placements import dualpipe as dualpipe_problem
from schedsearch.placements import dualpipev as dualpipev_problem
from schedsearch.placements import vshape_chunks
from schedsearch.problem import Channel, Cluster
from schedsearch.schedule import metrics
from schedsearch.validate import validate


def test_asap_times_follow_orders_and_dependencies():
    p = vshape(2, 1)  # F0 d0 1, F1 d1 1, B1 d1 2, B0 d0 2
    s = schedule_from_orders(p, {"d0": [("F0", 0), ("B0", 0)], "d1": [("F1", 0), ("B1", 0)]})
    starts = {t.block: (t.start, t.end) for t in s.tasks}
    assert starts == {"F0": (0, 1), "F1": (1, 2), "B1": (2, 4), "B0": (4, 6)}


def test_deadlock_names_the_stuck_actions():
    p = vshape(2, 2)
    orders = {"d0": [("F0", 0), ("F0", 1), ("B0", 1), ("B0", 0)],
              "d1": [("F1", 0), ("F1", 1), ("B1", 0), ("B1", 1)]}
    # fine so far (B0 of micro-batch 1 may go first); now make d1 wait on something d0 never reaches
    orders["d1"] = [("F1", 1), ("F1", 0), ("B1", 0), ("B1", 1)]
    orders["d0"] = [("F0", 0), ("B0", 0), ("F0", 1), ("B0", 1)]
    with pytest.raises(DeadlockError, match=r"d0: B0#0.*d1: F1#1"):
        schedule_from_orders(p, orders)


@pytest.mark.parametrize(
    "orders, fragment",
    [
        ({"d9": []}, "not in the problem's cluster"),
        ({"d0": [("F0", 0), ("F0", 0)]}, "appears twice"),
        ({"d0": [("F1", 0)]}, "runs on"),
        ({"d0": [("Z", 0)]}, "unknown block"),
        ({"d0": [("F0", 5)]}, "micro-batch 5"),
        ({"d0": [("F0", 0), ("B0", 0)], "d1": [("F1", 0)]}, "not in any order"),
        ({"d0": [Group(members=[("F0", 0), ("B0", 0)], tag="x")]}, "not one of the problem's overlaps"),
    ],
)
def test_bad_orders_are_clear_errors(orders, fragment):
    with pytest.raises(InvalidScheduleError, match=fragment):
        schedule_from_orders(vshape(2, 1), orders)


def test_orders_over_memory_are_an_input_error_not_a_solver_bug():
    p = vshape(2, 2, memory=1)
    orders = {"d0": [("F0", 0), ("F0", 1), ("B0", 0), ("B0", 1)], "d1": [("F1", 0), ("F1", 1), ("B1", 0), ("B1", 1)]}
    with pytest.raises(InvalidScheduleError, match="memory") as info:
        schedule_from_orders(p, orders)
    assert info.value.violations


def test_transfers_take_the_channel_between_the_two_ends():
    base = chain_pipelines([[0, 1]], 2, 2, backward=None)
    p = base.with_(
        graph=base.graph.__class__(blocks=base.graph.blocks, edges=[("F0", "F1", 3)]),
        cluster=Cluster(devices=base.cluster.devices, channels=[Channel(name="link", endpoints=("d0", "d1"))]),
    )
    s = schedule_from_orders(p, {"d0": [("F0", 0), ("F0", 1)], "d1": [("F1", 0), ("F1", 1)]})
    assert validate(p, s) == ()
    tr = sorted((t.start, t.end) for t in s.transfers)
    assert tr == [(1, 4), (4, 7)]  # one at a time on the channel
    assert s.makespan == 8


def test_multi_device_tasks_start_when_they_head_every_device():
    from schedsearch.placements import tessel_m

    p = tessel_m(2, 1)
    order0 = [("FS", 0), ("F0", 0), ("B0", 0), ("BS", 0)]
    order1 = [("FS", 0), ("F1", 0), ("B1", 0), ("BS", 0)]
    s = schedule_from_orders(p, {"d0": order0, "d1": order1})
    assert s.makespan == 10 and validate(p, s) == ()


@pytest.mark.parametrize(
    "generate, problem, fragment",
    [
        (gpipe, chimera_problem(2, 2), "single pipeline"),
        (one_f_one_b, interleaved(2, 2, 4), "one stage per device"),
        (gpipe, chain_pipelines([[0, 1]], 2, 1, backward=None), "training problem"),
        (interleaved_1f1b, vshape(2, 4), None),  # one chunk is the loop mapping too: allowed
        (interleaved_1f1b, vshape_chunks(2, 4, split_backward=False), "'loop' stage-to-device mapping"),
        (lambda pr: interleaved_1f1b(pr, group_size=1), interleaved(2, 2, 4), "must be >= the number of devices"),
        (lambda pr: interleaved_1f1b(pr, group_size=5), interleaved(2, 2, 4), "must be <= the number of micro-batches"),
        (interleaved_1f1b, interleaved(4, 2, 2), "at least as many micro-batches as devices"),
        (zb_h1, vshape(2, 2), "split into I and W"),
        (interleaved_zero_bubble, interleaved(2, 2, 4), "split into I and W"),
        (zb_v, interleaved(2, 2, 4, split_backward=True), "'v' mapping"),
        (chimera, chimera_problem(3, 6), "even number of devices"),
        (chimera, chimera_problem(4, 6), "multiple of the number of stages"),
        (chimera, vshape(2, 2), "down and an up pipeline"),
        (dualpipe, dualpipe_problem(3, 6), "even number of devices"),
        (dualpipe, dualpipe_problem(4, 6), "chunks >= 2 PP"),
        (dualpipe, vshape(2, 2), "down and an up pipeline"),
        (dualpipev, dualpipev_problem(4, 7), "at least as many micro-batches as stages"),
        (dualpipev, vshape_chunks(2, 4, split_backward=False), "split into I and W"),
        (dualpipev, zero_bubble(4, 8), "'v' mapping"),
    ],
)
def test_preconditions_are_enforced_with_clear_errors(generate, problem, fragment):
    if fragment is None:
        assert validate(problem, generate(problem)) == ()
        return
    with pytest.raises(InvalidProblemError, match=fragment):
        generate(problem)


def test_megatron_group_size_changes_the_order_not_the_validity():
    p = interleaved(2, 2, 8)
    a, b = interleaved_1f1b(p), interleaved_1f1b(p, group_size=4)
    assert validate(p, a) == () and validate(p, b) == ()
    assert a.device_orders() != b.device_orders()
    assert metrics(p, a).bubble_global == (2 - 1) * (1 + 2)  # group = p: the closed form


def test_a_device_without_actions_needs_no_order():
    # a task on d0 and d1 of a three-device cluster: d2 runs nothing and is left out of the orders
    from schedsearch.problem import Block, Device, Graph, Option, Problem

    problem = Problem(graph=Graph(blocks=[Block(name="b", options=[Option(devices=("d0", "d1"), duration=2)])]),
                      num_microbatches=1, cluster=Cluster(devices=[Device(name=d) for d in ("d0", "d1", "d2")]))
    s = schedule_from_orders(problem, {"d0": [("b", 0)], "d1": [("b", 0)]})
    assert [(t.devices, t.start, t.end) for t in s.tasks] == [(("d0", "d1"), 0, 2)]
