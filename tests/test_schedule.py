"""Schedule model and metrics, checked on hand-built schedules."""

from __future__ import annotations

import pytest

from schedsearch.errors import FormatError, InvalidScheduleError
from schedsearch.placements import vshape
from schedsearch.schedule import Schedule, TaskInstance, Transfer, bubble, busy_time, metrics, peak_memory, repetend_bubble


def one_f_one_b(p: int, m: int, f: int = 1, b: int = 2) -> Schedule:
    """1F1B built by list-scheduling its per-device order (warmup p-1-r forwards)."""
    orders = {}
    for r in range(p):
        warm = min(p - 1 - r, m)
        seq = [("F", i) for i in range(warm)]
        fi, bi = warm, 0
        while bi < m:
            if fi < m:
                seq.append(("F", fi))
                fi += 1
            seq.append(("B", bi))
            bi += 1
        orders[r] = seq
    end = {}
    free = [0] * p
    pos = [0] * p
    tasks = []
    while any(pos[r] < len(orders[r]) for r in range(p)):
        progressed = False
        for r in range(p):
            if pos[r] >= len(orders[r]):
                continue
            kind, i = orders[r][pos[r]]
            dep = ("F", r - 1, i) if kind == "F" and r > 0 else ("F", r, i) if kind == "B" and r == p - 1 else ("B", r + 1, i) if kind == "B" else None
            if dep is not None and dep not in end:
                continue
            start = max(free[r], end[dep] if dep else 0)
            dur = f if kind == "F" else b
            tasks.append(TaskInstance(block=f"{kind}{r}", microbatch=i, devices=(f"d{r}",), start=start, end=start + dur))
            end[(kind, r, i)] = free[r] = start + dur
            pos[r] += 1
            progressed = True
        assert progressed
    return Schedule(tasks=tasks)


@pytest.mark.parametrize("p,m", [(4, 8), (8, 20), (2, 1), (3, 5)])
def test_1f1b_closed_forms(p, m):
    # makespan (m+p-1)(F+B), global bubble (p-1)(F+B), peak activations p - rank (at most m)
    problem = vshape(p, m)
    s = one_f_one_b(p, m)
    from schedsearch.validate import validate

    assert validate(problem, s) == ()
    mt = metrics(problem, s)
    assert mt.makespan == (m + p - 1) * 3
    assert mt.bubble_global == (p - 1) * 3
    assert mt.peak_memory == {f"d{r}": min(p - r, m) for r in range(p)}
    assert mt.busy == {f"d{r}": 3 * m for r in range(p)}
    assert mt.bubble_rate == pytest.approx((p - 1) / (m + p - 1))


def test_span_bubble_ignores_leading_and_trailing_idle():
    s = Schedule(tasks=[
        TaskInstance(block="a", microbatch=0, devices="d0", start=0, end=2),
        TaskInstance(block="b", microbatch=0, devices="d1", start=3, end=4),
        TaskInstance(block="c", microbatch=0, devices="d1", start=6, end=7),
    ])
    assert s.makespan == 7
    assert busy_time(s) == {"d0": 2, "d1": 2}
    assert bubble(s, "global") == 5  # d0: 7 - 2
    assert bubble(s, "span") == 2  # d1: (7 - 3) - 2
    assert bubble(s, "global", devices=["d0", "d1", "d2"]) == 7  # idle d2 counts in full
    with pytest.raises(ValueError, match="'definition'"):
        bubble(s, "other")


def test_repetend_bubble():
    assert repetend_bubble(6, {"d0": 6, "d1": 4}) == 2
    assert repetend_bubble(4, {}) == 4


def test_peak_memory_counts_initial_and_workspace():
    from schedsearch.problem import Block, Cluster, Device, Graph, Option, Problem

    problem = Problem(
        graph=Graph(blocks=[Block(name="a", options=[Option(devices=("d0",), duration=2)], memory=1, workspace=2)]),
        num_microbatches=2,
        cluster=Cluster(devices=[Device(name="d0")]),
        initial_memory={"d0": 5},
    )
    s = Schedule(tasks=[
        TaskInstance(block="a", microbatch=0, devices="d0", start=0, end=2),
        TaskInstance(block="a", microbatch=1, devices="d0", start=2, end=4),
    ])
    # 5 initial; at 0: +1 +2 = 8; at 2: -2 (workspace) +1 +2 = 9; at 4: -2 = 7
    assert peak_memory(problem, s) == {"d0": 9}


def test_invalid_instances_are_rejected():
    with pytest.raises(InvalidScheduleError, match="'end' must be > 'start'"):
        TaskInstance(block="a", microbatch=0, devices="d0", start=3, end=3)
    with pytest.raises(InvalidScheduleError, match="'start' must be >= 0, got -1"):
        TaskInstance(block="a", microbatch=0, devices="d0", start=-1, end=3)
    with pytest.raises(InvalidScheduleError, match="'microbatch' must be an integer"):
        Transfer(src="a", dst="b", microbatch="x", channel="c", start=0, end=1)


def test_json_round_trip_and_errors():
    s = one_f_one_b(3, 4)
    s2 = Schedule.from_json(s.to_json())
    assert s2 == s
    with pytest.raises(FormatError, match="'version' 7 is not supported"):
        Schedule.from_dict({"format": "schedsearch.schedule", "version": 7})
    with pytest.raises(FormatError, match="not valid JSON"):
        Schedule.from_json("{")


def test_device_orders_and_shift():
    s = one_f_one_b(2, 2)
    orders = s.device_orders()
    assert orders["d1"][:2] == (("F1", 0), ("B1", 0))
    shifted = s.shifted(10, microbatch_offset=2)
    assert shifted.makespan == s.makespan + 10
    assert {t.microbatch for t in shifted.tasks} == {2, 3}


def _schedule_document() -> dict:
    s = Schedule(
        tasks=[TaskInstance(block="a", microbatch=0, devices="d0", start=0, end=2),
               TaskInstance(block="b", microbatch=0, devices="d1", start=3, end=4)],
        transfers=[Transfer(src="a", dst="b", microbatch=0, channel="c", start=2, end=3)],
        name="s",
    )
    return s.to_dict()


def _edit(path, value=None, delete=False):
    def mutate(d):
        *head, last = path
        for key in head:
            d = d[key]
        if delete:
            del d[last]
        else:
            d[last] = value
    return mutate


# (id, mutation, error type, message fragment)
BAD_SCHEDULE_DOCUMENTS = [
    ("unknown top field", _edit(("tasks_",), []), FormatError,
     "schedule document: unknown field 'tasks_' (known: format, version, name, makespan, tasks, transfers)"),
    ("unknown task field", _edit(("tasks", 0, "device"), "d0"), FormatError,
     "schedule: task 0: unknown field 'device' (known: block, microbatch, devices, start, end, overlap)"),
    ("unknown transfer field", _edit(("transfers", 0, "bytes"), 3), FormatError,
     "schedule: transfer 0: unknown field 'bytes' (known: src, dst, microbatch, channel, start, end)"),
    ("missing tasks", _edit(("tasks",), delete=True), FormatError, "schedule document: missing field 'tasks'"),
    ("missing task end", _edit(("tasks", 1, "end"), delete=True), FormatError, "schedule: task 1: missing field 'end'"),
    ("missing transfer channel", _edit(("transfers", 0, "channel"), delete=True), FormatError,
     "schedule: transfer 0: missing field 'channel'"),
    ("tasks null", _edit(("tasks",), None), InvalidScheduleError, "schedule: 'tasks' must be a list, got None"),
    ("transfers an object", _edit(("transfers",), {}), InvalidScheduleError, "schedule: 'transfers' must be a list, got {}"),
    ("task a list", _edit(("tasks", 0), ["a", 0]), InvalidScheduleError, "schedule: task 0: must be an object"),
    ("task devices a number", _edit(("tasks", 0, "devices"), 3), InvalidScheduleError,
     "task 'a' (micro-batch 0): 'devices' must be a list of device names, got 3"),
    ("task block null", _edit(("tasks", 0, "block"), None), InvalidScheduleError,
     "task None (micro-batch 0): 'block' must be a non-empty string, got None"),
    ("task start a string", _edit(("tasks", 0, "start"), "0"), InvalidScheduleError, "'start' must be an integer, got '0'"),
    ("transfer channel a number", _edit(("transfers", 0, "channel"), 1), InvalidScheduleError,
     "transfer 'a' -> 'b' (micro-batch 0): 'channel' must be a non-empty string, got 1"),
    ("name a number", _edit(("name",), 1), InvalidScheduleError, "schedule: 'name' must be a string, got 1"),
    ("makespan stale", _edit(("makespan",), 3), InvalidScheduleError,
     "schedule: 'makespan' 3 disagrees with its tasks and transfers, whose last end is 4"),
    ("makespan a string", _edit(("makespan",), "4"), InvalidScheduleError, "schedule: 'makespan' must be an integer, got '4'"),
    ("version true", _edit(("version",), True), FormatError, "'version' True is not supported"),
    ("version string", _edit(("version",), "1"), FormatError, "'version' '1' is not supported"),
]


@pytest.mark.parametrize("mutate,error,fragment", [c[1:] for c in BAD_SCHEDULE_DOCUMENTS],
                         ids=[c[0] for c in BAD_SCHEDULE_DOCUMENTS])
def test_bad_schedule_document_is_named(mutate, error, fragment):
    import json

    document = _schedule_document()
    mutate(document)
    with pytest.raises(error) as info:
        Schedule.from_json(json.dumps(document))
    assert fragment in str(info.value)


def test_schedule_document_round_trip_and_unreadable_text():
    import json

    document = _schedule_document()
    assert Schedule.from_json(json.dumps(document)).to_dict() == document
    for text, fragment in (("[" * 100_000 + "]" * 100_000, "nested too deeply"), ("[]", "must be a JSON object"),
                           ('{"tasks": [], "tasks": []}', "the field 'tasks' appears twice")):
        with pytest.raises(FormatError, match=fragment):
            Schedule.from_json(text)
