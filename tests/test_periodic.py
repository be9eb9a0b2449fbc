"""PeriodicSchedule and Repetend (schedule layer, no solver).

The fixture is a repetend derived by hand for the V-shape on 2 devices
(F = 1, B = 2, F +1 / B -1), period 3 = the work per device:

    block  device  phase  offset  start of micro-batch 0 = phase - 3 * offset
    F0     d0      0      1       -3
    F1     d1      1      1       -2
    B1     d1      2      1       -1   (runs phases 2, 0: wraps into the next period)
    B0     d0      1      0        1

d0 is busy on phases 0 (F0) and 1-2 (B0); d1 on 1 (F1) and 2, 0 (B1). The
entry level is 1 on d0 (one micro-batch between F0 and B0) and 0 on d1, so
the peak is 2 on d0 and 1 on d1. The latency is 1 + 2 - (-3) = 6, the
critical path, so the truncated schedule of n micro-batches is 1F1B:
makespan (n + 1) * 3.
"""

from __future__ import annotations

import pytest

from schedsearch.errors import FormatError, InvalidScheduleError
from schedsearch.periodic import (
    PeriodicSchedule,
    Repetend,
    RepetendTask,
    check_repetend,
    cooldown_keys,
    tighten,
    warmup_keys,
)
from schedsearch.placements import vshape
from schedsearch.schedule import peak_memory
from schedsearch.search.repetend_completion import assemble
from schedsearch.validate import validate


def v2_repetend(fold: int = 1) -> Repetend:
    rows = [("F0", "d0", 0, 1, 1), ("F1", "d1", 1, 1, 1), ("B1", "d1", 2, 1, 2), ("B0", "d0", 1, 0, 2)]
    if fold == 1:
        tasks = [RepetendTask(block=b, devices=(d,), phase=t, offset=o, duration=p) for b, d, t, o, p in rows]
        return Repetend(period=3, tasks=tasks)
    # fold 2 by doubling: copy c at offset o + c and phase t + 3c, period 6
    tasks = [
        RepetendTask(block=b, devices=(d,), phase=t + 3 * c, offset=o + c, duration=p)
        for b, d, t, o, p in rows
        for c in range(2)
    ]
    return Repetend(period=6, tasks=tasks, fold=2)


def test_hand_derived_repetend_is_valid_and_its_figures_follow() -> None:
    problem = vshape(2, 4, memory=2)
    rep = v2_repetend()
    assert check_repetend(problem, rep) == ()
    assert rep.offsets == {"F0": (1,), "F1": (1,), "B1": (1,), "B0": (0,)}
    assert rep.latency() == 6
    assert rep.span == 4  # B1 runs phases 2..4
    assert rep.entry_memory(problem) == {"d0": 1, "d1": 0}
    assert rep.bubble(problem.cluster.device_names) == 0
    assert rep.num_microbatches == 2
    assert sorted(warmup_keys(rep)) == [("B1", 0), ("F0", 0), ("F1", 0)]
    assert sorted(cooldown_keys(rep)) == [("B0", 1)]


@pytest.mark.parametrize(
    "change, kind",
    [
        ({"B0": {"phase": 0}}, "device_overlap"),  # B0 on phases 0-1 meets F0
        ({"F1": {"offset": 0}}, "dependency"),  # F1 of micro-batch 0 at 1, B1 at -1
    ],
)
def test_check_repetend_reports_broken_rules(change, kind) -> None:
    problem = vshape(2, 4, memory=2)
    tasks = []
    for t in v2_repetend().tasks:
        fields = {"block": t.block, "devices": t.devices, "phase": t.phase, "offset": t.offset, "duration": t.duration}
        fields.update(change.get(t.block, {}))
        tasks.append(RepetendTask(**fields))
    rep = Repetend(period=3, tasks=tasks)
    kinds = {v.kind for v in check_repetend(problem, rep)}
    assert kind in kinds


def test_check_repetend_reports_memory_over_capacity() -> None:
    # peak 2 on d0 (derived above): capacity 1 is exceeded, capacity 2 is not
    assert {v.kind for v in check_repetend(vshape(2, 4, memory=1), v2_repetend())} == {"memory"}
    assert check_repetend(vshape(2, 4, memory=2), v2_repetend()) == ()


def test_check_repetend_reports_missing_and_unknown_blocks() -> None:
    problem = vshape(2, 4)
    rep = Repetend(period=3, tasks=[RepetendTask(block="F0", devices=("d0",), phase=0, offset=0, duration=1),
                                    RepetendTask(block="X", devices=("d0",), phase=1, offset=0, duration=1)])
    kinds = {v.kind for v in check_repetend(problem, rep)}
    assert {"missing_task", "unknown_task"} <= kinds


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"period": 3, "tasks": [dict(block="a", devices=("d0",), phase=3, offset=0, duration=1)]}, "'phase' must be < the period"),
        ({"period": 3, "tasks": [dict(block="a", devices=("d0",), phase=0, offset=1, duration=1)]}, "smallest offset"),
        ({"period": 3, "tasks": [dict(block="a", devices=("d0",), phase=0, offset=0, duration=1)] * 2}, "equal modulo"),
        ({"period": 0, "tasks": [dict(block="a", devices=("d0",), phase=0, offset=0, duration=1)]}, "'period' must be >= 1"),
        ({"period": 4, "fold": 2, "tasks": [dict(block="a", devices=("d0",), phase=0, offset=0, duration=1)]}, "must appear 2"),
        ({"period": 3, "tasks": []}, "at least one task"),
    ],
)
def test_repetend_rejects_malformed_input(kwargs, fragment) -> None:
    with pytest.raises(InvalidScheduleError, match=fragment):
        Repetend(**kwargs)


@pytest.mark.parametrize("fold", [1, 2])
def test_truncated_unroll_is_1f1b_and_validates_for_every_n(fold) -> None:
    problem = vshape(2, 4, memory=2)
    periodic = assemble(problem, v2_repetend(fold), None, None)
    assert periodic.min_microbatches == (2 if fold == 1 else 3)
    for n in range(periodic.min_microbatches, 12):
        schedule = periodic.unroll(n)
        assert validate(periodic.problem_for(n), schedule) == ()
        assert schedule.makespan == 3 * (n + 1)  # 1F1B: (n + p - 1)(F + B)
        assert peak_memory(periodic.problem_for(n), schedule) == {"d0": 2, "d1": 1}
        assert len(schedule.tasks) == 4 * n


def test_unroll_below_the_minimum_is_an_error() -> None:
    periodic = assemble(vshape(2, 4), v2_repetend(), None, None)
    with pytest.raises(InvalidScheduleError, match="must be >= 2"):
        periodic.unroll(1)
    with pytest.raises(InvalidScheduleError, match="must be an integer"):
        periodic.unroll(2.0)


def test_parts_cover_every_task_once_and_marks_name_the_instance() -> None:
    periodic = assemble(vshape(2, 4), v2_repetend(), None, None)
    n = 6
    parts = periodic.parts(n)
    schedule = periodic.unroll(n)
    assert set(parts) == {t.key for t in schedule.tasks}
    layout = periodic.layout(n)
    assert layout == (n - 1, 0)
    instances = {j for part, j in parts.values() if part == "repetend"}
    assert instances == set(range(layout[0]))
    marks = periodic.marks(n)
    assert marks[("B0", 0)] == {"part": "repetend", "instance": 0}
    assert marks[("F0", 0)] == {"part": "warmup"}
    assert marks[("B0", n - 1)] == {"part": "cooldown"}


def test_tighten_keeps_device_orders_and_never_delays() -> None:
    problem = vshape(2, 6, memory=2)
    periodic = assemble(problem, v2_repetend(), None, None)
    loose = periodic.concatenated(6)
    tight = tighten(loose, problem)
    assert validate(problem, loose) == ()
    assert validate(problem, tight) == ()
    assert tight.device_orders() == loose.device_orders()
    before = loose.by_key()
    assert all(t.start <= before[t.key].start for t in tight.tasks)
    assert min(t.start for t in tight.tasks) == 0


def test_json_round_trip_gives_the_same_unrolled_schedules() -> None:
    periodic = assemble(vshape(2, 4, memory=2), v2_repetend(2), None, None)
    again = PeriodicSchedule.from_json(periodic.to_json())
    assert again == periodic
    for n in (3, 4, 9):
        assert again.unroll(n) == periodic.unroll(n)
    with pytest.raises(FormatError, match="'format'"):
        PeriodicSchedule.from_dict({"format": "x"})
    with pytest.raises(FormatError, match="not valid JSON"):
        PeriodicSchedule.from_json("{")


def test_periodic_schedule_rejects_parts_that_do_not_match_the_offsets() -> None:
    periodic = assemble(vshape(2, 4), v2_repetend(), None, None)
    with pytest.raises(InvalidScheduleError, match="'warmup' must hold exactly"):
        PeriodicSchedule(problem=periodic.problem, repetend=periodic.repetend, warmup=periodic.cooldown,
                         repetend_start=periodic.repetend_start, cooldowns=periodic.cooldowns)
    with pytest.raises(InvalidScheduleError, match="one schedule per residue"):
        PeriodicSchedule(problem=periodic.problem, repetend=periodic.repetend, warmup=periodic.warmup,
                         repetend_start=periodic.repetend_start, cooldowns=())


def test_repetend_window_lies_inside_the_schedule() -> None:
    periodic = assemble(vshape(2, 8), v2_repetend(), None, None)
    start, end = periodic.repetend_window(8)
    assert 0 <= start < end <= periodic.unroll(8).makespan
    assert end - start == periodic.repetend.latency() or end - start >= periodic.period
    with pytest.raises(InvalidScheduleError, match="'instance'"):
        periodic.repetend_window(8, instance=99)
