"""The order checks against single mutations of a trace written down from the plan.

The trace is built here from the schedule's tasks alone (sharing no code
with :mod:`schedsearch.runtime.trace`): per rank, a plain task is one stage
call over its planned interval; an overlapped group is its forward over
the first half of the group's interval, then one full backward (its input
and weight gradients) over the second half, as the runtime runs a pair.
That trace must pass; swapping two adjacent calls of a rank, running a
call twice, dropping one, or adding a call the plan does not have must
each be reported, by :func:`order_violations` and by :func:`compare`.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedsearch.actions import Action
from schedsearch.handcrafted import reproduce
from schedsearch.runtime.trace import Compute, MeasuredTrace, StepTrace, compare, order_violations

UNIT_S = 1e-3
FAMILIES = ("1f1b", "zb-h1", "interleaved", "zb-v", "dualpipev")


@functools.cache
def _plan(name: str):
    rep = reproduce(name, devices=2, microbatches=4)
    problem, schedule = rep.problem.with_(time_unit_s=UNIT_S), rep.schedule
    kinds = {b.name: (b.kind, b.stage) for b in problem.graph.blocks}
    devices = list(problem.cluster.device_names)
    rows: list[list[Compute]] = []
    for d in devices:
        r = devices.index(d)
        row: list[Compute] = []
        groups: dict = {}
        for t in sorted(schedule.on_device(d), key=lambda t: t.start):
            if t.overlap is None:
                kind, stage = kinds[t.block]
                row.append(Compute(rank=r, action=Action(stage, kind, t.microbatch),
                                   start_s=t.start * UNIT_S, end_s=t.end * UNIT_S))
            else:
                groups.setdefault((t.overlap, t.start), []).append(t)
        for members in groups.values():
            start, end = members[0].start, members[0].end
            mid = (start + end) / 2
            fwd = [t for t in members if kinds[t.block][0] == "F"]
            back = [t for t in members if kinds[t.block][0] != "F"]
            for t in fwd:
                row.append(Compute(rank=r, action=Action(kinds[t.block][1], "F", t.microbatch),
                                   start_s=start * UNIT_S, end_s=(mid if back else end) * UNIT_S))
            if back:
                assert len({(kinds[t.block][1], t.microbatch) for t in back}) == 1
                row.append(Compute(rank=r, action=Action(kinds[back[0].block][1], "B", back[0].microbatch),
                                   start_s=(mid if fwd else start) * UNIT_S, end_s=end * UNIT_S))
        rows.append(sorted(row, key=lambda c: c.start_s))
    return problem, schedule, rows


def _step(rows: list[list[Compute]]) -> StepTrace:
    computes = tuple(c for row in rows for c in row)
    end = max(c.end_s for c in computes)
    return StepTrace(rank_spans=tuple((0.0, end) for _ in rows), events=(), computes=computes)


def _trace(step: StepTrace) -> MeasuredTrace:
    n = len(step.rank_spans)
    return MeasuredTrace(num_ranks=n, steps=(step,), clock_offsets_s=(0.0,) * n, clock_rtt_s=(0.0,) * n)


def _moved(c: Compute, start_s: float, end_s: float) -> Compute:
    return Compute(rank=c.rank, action=c.action, start_s=start_s, end_s=end_s)


@pytest.mark.parametrize("name", FAMILIES)
def test_the_trace_written_from_the_plan_passes(name):
    problem, schedule, rows = _plan(name)
    step = _step(rows)
    assert order_violations(problem, schedule, step) == ()
    assert compare(problem, schedule, _trace(step)).order_ok


@given(data=st.data())
def test_every_single_mutation_is_caught(data):
    name = data.draw(st.sampled_from(FAMILIES), label="family")
    problem, schedule, rows = _plan(name)
    rows = [list(row) for row in rows]
    r = data.draw(st.integers(0, len(rows) - 1), label="rank")
    row = rows[r]
    what = data.draw(st.sampled_from(["swap", "duplicate", "remove", "unknown"]), label="mutation")
    i = data.draw(st.integers(0, len(row) - 1), label="call")
    c = row[i]
    end = max(x.end_s for x in (y for rw in rows for y in rw))
    if what == "swap":
        i = min(i, len(row) - 2)
        a, b = row[i], row[i + 1]
        assert a.action != b.action
        row[i], row[i + 1] = _moved(b, a.start_s, a.end_s), _moved(a, b.start_s, b.end_s)
        kinds = None
    elif what == "duplicate":
        at = data.draw(st.sampled_from([c.end_s, end + UNIT_S]), label="again at")
        row.append(_moved(c, at, at + UNIT_S / 2))
        kinds = {"duplicate_task"}
    elif what == "remove":
        del row[i]
        kinds = {"missing_task"}
    else:
        mb = data.draw(st.sampled_from([7, -1, 4]), label="micro-batch")
        row.append(Compute(rank=r, action=Action(c.stage, c.kind, mb), start_s=end + UNIT_S,
                           end_s=end + 2 * UNIT_S))
        kinds = {"unknown_task"}
    step = _step(rows)
    found = order_violations(problem, schedule, step)
    assert found, (name, what, r, i)
    assert not compare(problem, schedule, _trace(step)).order_ok
    if kinds is not None:
        assert kinds <= {v.kind for v in found}, found
    if what in ("duplicate", "unknown"):
        v = next(v for v in found if v.kind in kinds)
        mb = c.microbatch if what == "duplicate" else row[-1].microbatch
        assert f"rank {r}" in v.message and f"stage {c.stage} {c.kind} of micro-batch {mb}" in v.message, v


@pytest.mark.parametrize(("a", "b"), [((2, "B", 0), (1, "F", 2)), ((1, "F", 3), (2, "B", 1))])
def test_dualpipev_swap_of_an_overlapped_member_with_its_neighbour_is_caught(a, b):
    problem, schedule, rows = _plan("dualpipev")
    row = next(row for row in rows if any(c.action == Action(*a) for c in row))
    i = next(i for i, c in enumerate(row) if c.action == Action(*a))
    j = next(i for i, c in enumerate(row) if c.action == Action(*b))
    assert abs(i - j) == 1
    swapped = list(row)
    swapped[i], swapped[j] = _moved(row[j], row[i].start_s, row[i].end_s), _moved(row[i], row[j].start_s, row[j].end_s)
    step = _step([swapped if rw is row else rw for rw in rows])
    assert any(v.kind == "fixed_order" for v in order_violations(problem, schedule, step))
