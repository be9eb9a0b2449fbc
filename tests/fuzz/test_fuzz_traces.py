"""Fuzzing campaign: torch profiler traces and measured traces (their readers and the order checks).

The valid inputs are written here from a plan's own actions (:func:`planned_actions`): per rank, one
``PP:`` event per action at its planned time, with the sends and receives torch's runtime adds; the
measured trace is the plan's stage calls at their planned times. Each is then mutated record by
record (numbers pushed to extremes, big stage and micro-batch numbers in labels, fields dropped,
wrong types, NaN and infinity, duplicated and reordered events) and read: every mutation is answered
or refused by the library's own error, within the campaign's bounds (``tests/fuzzing.py``).
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import attempt, attempt_cli, examples, mutated
from schedsearch.actions import Action
from schedsearch.errors import FormatError
from schedsearch.handcrafted import reproduce
from schedsearch.plan.pipeline import Pipeline
from schedsearch.runtime.calibrate import calibration_from_trace
from schedsearch.runtime.profiler_traces import pipeline_from_traces
from schedsearch.runtime.trace import (Compute, MeasuredTrace, StepTrace, compare, measured_schedule,
                                       order_violations, planned_actions)

UNIT_S = 1e-3
FAMILIES = ("1f1b", "zb-h1", "dualpipev")
#: Numbers a label's stage or micro-batch is pushed to.
BIG = ("2", "7", "1000", "1000000", "1000000000", str(2**63), "1" + "0" * 30, "1" + "0" * 5000)


@functools.cache
def _plan(name: str):
    rep = reproduce(name, devices=2, microbatches=4)
    return rep.problem.with_(time_unit_s=UNIT_S), rep.schedule


def _profiler_events(name: str) -> list[list[dict]]:
    """Per rank, the ``PP:`` events of one step of the plan, as torch's runtime labels them (us)."""
    problem, schedule = _plan(name)
    planned = planned_actions(problem, schedule)
    ranks: list[list[dict]] = [[] for _ in problem.cluster.device_names]
    last = len(planned.rank_of) - 1
    for action, (start, end) in sorted(planned.spans.items(), key=lambda kv: kv[1]):
        rank = planned.rank_of[action.stage]
        ts, dur = start * 1000.0, (end - start) * 1000.0
        ranks[rank].append({"ph": "X", "cat": "user_annotation", "name": f"PP:{action}", "ts": ts, "dur": dur})
        peer = action.stage + 1 if action.kind == "F" else action.stage - 1
        if action.kind in ("F", "B", "I") and 0 <= peer <= last and planned.rank_of[peer] != rank:
            way = "F" if action.kind == "F" else "B"
            ranks[rank].append({"ph": "X", "name": f"PP:{action.stage}SEND_{way}{action.microbatch}",
                                "ts": ts + dur, "dur": 5.0})
            ranks[planned.rank_of[peer]].append({"ph": "X", "name": f"PP:{peer}RECV_{way}{action.microbatch}",
                                                 "ts": ts + dur, "dur": 20.0})
    return ranks


@st.composite
def _big_label(draw, events: list[dict]) -> tuple[list[dict], str]:
    """``events`` with one label's stage or micro-batch replaced by a big number."""
    events = [dict(e) for e in events]
    i = draw(st.integers(0, len(events) - 1))
    action = Action.parse(events[i]["name"][3:])
    member = action.members[0]
    number = draw(st.sampled_from(BIG))
    if draw(st.booleans()):
        text = f"{number}{member.kind}{member.microbatch if member.microbatch is not None else ''}"
    else:
        text = f"{member.stage}{member.kind}{number}"
    events[i]["name"] = "PP:" + text
    return events, f"label {i} -> {text[:40]}"


@st.composite
def _traces(draw) -> tuple[list, str]:
    name = draw(st.sampled_from(FAMILIES))
    ranks = _profiler_events(name)
    r = draw(st.integers(0, len(ranks) - 1))
    if draw(st.booleans()):
        events, what = draw(_big_label(ranks[r]))
        ranks = [events if k == r else e for k, e in enumerate(ranks)]
        return ranks, f"{name}: rank {r}: {what}"
    document = {"traceEvents": ranks[r], "distributedInfo": {"rank": r}}
    tree, moves = draw(mutated(document))
    ranks = [tree if k == r else {"traceEvents": e} for k, e in enumerate(ranks)]
    return ranks, f"{name}: rank {r}: {moves}"


def _write(folder: Path, ranks: list) -> Path:
    for r, doc in enumerate(ranks):
        (folder / f"rank{r}_trace.json").write_text(json.dumps(doc))
    return folder


@examples(ci=40)
@given(_traces())
def test_profiler_traces_are_read_or_refused(case) -> None:
    ranks, what = case
    with tempfile.TemporaryDirectory() as folder:
        attempt("pipeline_from_traces", pipeline_from_traces, _write(Path(folder), ranks), describe=what)


@examples(ci=8)
@given(_traces())
def test_profile_traces_command_answers_or_refuses_in_one_line(case) -> None:
    ranks, what = case
    with tempfile.TemporaryDirectory() as folder:
        attempt_cli("cli:profile --traces", ["profile", "--traces", str(_write(Path(folder), ranks)),
                                             "--out", ""], describe=what)


def test_the_unmutated_traces_are_read() -> None:
    for name in FAMILIES:
        with tempfile.TemporaryDirectory() as folder:
            pipeline = pipeline_from_traces(_write(Path(folder), [{"traceEvents": e}
                                                                   for e in _profiler_events(name)]))
        assert pipeline.num_microbatches == 4 and pipeline.num_ranks == 2


# --------------------------------------------------------------------------- measured traces

def _measured(name: str) -> dict:
    """The plan's stage calls at their planned times, as one step's records (a tree to mutate)."""
    problem, schedule = _plan(name)
    planned = planned_actions(problem, schedule)
    computes = [{"rank": planned.rank_of[a.stage], "stage": a.stage, "kind": str(a.kind),
                 "microbatch": a.microbatch, "start_s": s * UNIT_S, "end_s": e * UNIT_S}
                for a, (s, e) in sorted(planned.spans.items(), key=lambda kv: kv[1])]
    end = max(c["end_s"] for c in computes)
    return {"rank_spans": [[0.0, end] for _ in problem.cluster.device_names], "computes": computes}


def _build(tree: dict, steps: int) -> MeasuredTrace:
    """The records of ``tree`` as a measured trace of ``steps`` identical steps (the library's types refuse
    what is malformed)."""
    records = tree.get("computes", [])
    computes = tuple(Compute(rank=c.get("rank"), action=Action(c.get("stage"), c.get("kind"), c.get("microbatch")),
                             start_s=c.get("start_s"), end_s=c.get("end_s")) if isinstance(c, dict) else c
                     for c in records) if isinstance(records, list) else records
    spans = tree.get("rank_spans", [])
    spans = tuple(tuple(s) if isinstance(s, list) else s for s in spans) if isinstance(spans, list) else spans
    step = StepTrace(rank_spans=spans, events=(), computes=computes)
    n = len(spans)
    return MeasuredTrace(num_ranks=n, steps=(step,) * steps, clock_offsets_s=(0.0,) * n, clock_rtt_s=(0.0,) * n)


@st.composite
def _measured_case(draw):
    name = draw(st.sampled_from(FAMILIES))
    tree = _measured(name)
    computes = tree["computes"]
    i = draw(st.integers(0, len(computes) - 1))
    record = computes[i]
    move = draw(st.sampled_from(["rank", "zero length", "swap", "stage", "microbatch", "time", "tree"]))
    if move == "rank":
        record["rank"] = draw(st.sampled_from((-1, -2, 2, 5, 10**9, 2**63, 0.5, None, True, "0")))
    elif move == "zero length":
        record["end_s"] = record["start_s"]
    elif move == "swap":
        j = draw(st.integers(0, len(computes) - 1))
        for key in ("start_s", "end_s"):
            record[key], computes[j][key] = computes[j][key], record[key]
    elif move in ("stage", "microbatch"):
        record[move] = draw(st.sampled_from((-1, 4, 10**6, 10**9, 2**63)))
    elif move == "time":
        record[draw(st.sampled_from(("start_s", "end_s")))] = draw(
            st.sampled_from((math.nan, math.inf, -math.inf, -1.0, 1e308, -1e-9, None, "0")))
    else:
        tree, moves = draw(mutated(tree, most=2))
        move = f"tree {moves}"
    steps = draw(st.integers(1, 2))
    step = draw(st.sampled_from((-1, 0, -1, 0, -1, 0, 1, 5, -3)))  # mostly a step the trace holds
    return name, tree, steps, step, f"{name}: call {i}: {move}; {steps} step(s), step={step}"


def _check(name: str, tree: dict, steps: int, step: int) -> tuple:
    problem, schedule = _plan(name)
    trace = _build(tree, steps)
    found = order_violations(problem, schedule, trace, step=step)
    measured_schedule(problem, schedule, trace, step=step)
    compare(problem, schedule, trace)
    return found


def _calibrate(tree: dict, steps: int):
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, stages=[{"forward_ms": 1.0, "backward_ms": 2.0}] * 2)
    return calibration_from_trace(pipeline, _build(tree, steps), warmup=0)


@examples(ci=60)
@given(_measured_case())
def test_measured_traces_are_checked_or_refused(case) -> None:
    name, tree, steps, step, what = case
    attempt("order_violations", _check, name, tree, steps, step, describe=what)
    if name != "dualpipev":  # one stage per rank, as a calibration run has
        attempt("calibration_from_trace", _calibrate, tree, steps, describe=what)


def test_the_unmutated_measured_trace_is_in_order() -> None:
    for name in FAMILIES:
        problem, schedule = _plan(name)
        assert order_violations(problem, schedule, _build(_measured(name), 1)) == ()


# --------------------------------------------------------------------------- the cases that once broke a reader

def test_a_big_stage_number_in_a_label_is_refused_at_once_in_a_short_message() -> None:
    for number in (10**6, 10**9, 10**18 - 1):
        ranks = _profiler_events("1f1b")
        ranks[0].append({"ph": "X", "name": f"PP:{number}F0", "ts": 0.0, "dur": 1.0})
        with tempfile.TemporaryDirectory() as folder:
            outcome, error = attempt("_examples", pipeline_from_traces,
                                     _write(Path(folder), [{"traceEvents": e} for e in ranks]), cpu_limit_s=5)
        assert outcome == "refused" and len(str(error)) < 400
        assert f"no compute action of stage(s) [2, 3, 4, 5, 6 and {number - 7} more]" in str(error)
    # more digits than any stage number has: the label is no action's (as 'PP:unknown'), the rest is read
    ranks = _profiler_events("1f1b")
    ranks[0].append({"ph": "X", "name": "PP:1" + "0" * 5000 + "F0", "ts": 0.0, "dur": 1.0})
    with tempfile.TemporaryDirectory() as folder:
        assert pipeline_from_traces(_write(Path(folder), [{"traceEvents": e} for e in ranks])).num_ranks == 2


def test_a_nan_timestamp_is_blamed_on_the_file_and_the_event() -> None:
    ranks = _profiler_events("1f1b")
    ranks[1][2]["ts"] = math.nan
    with tempfile.TemporaryDirectory() as folder:
        outcome, error = attempt("_examples", pipeline_from_traces,
                                 _write(Path(folder), [{"traceEvents": e} for e in ranks]))
        assert outcome == "refused"
        assert f"trace '{folder}/rank1_trace.json': event 2 ('{ranks[1][2]['name']}')" in str(error)
        assert "ts=nan" in str(error) and "forward_ms" not in str(error)


def _one_call_changed(name: str, **change) -> dict:
    tree = _measured(name)
    tree["computes"][0].update(change)
    return tree


def test_a_call_on_a_rank_the_run_does_not_have_is_refused_naming_it() -> None:
    problem, schedule = _plan("1f1b")
    for rank in (5, -1):
        with pytest.raises(FormatError, match=f"stage call '0F0' on rank {rank}"):
            order_violations(problem, schedule, _build(_one_call_changed("1f1b", rank=rank), 1))


def test_a_zero_length_call_is_checked_not_raised() -> None:
    problem, schedule = _plan("1f1b")
    tree = _one_call_changed("1f1b")
    tree["computes"][0]["end_s"] = tree["computes"][0]["start_s"]
    assert order_violations(problem, schedule, _build(tree, 1)) == ()  # its order is still the plan's
    # the same call at the instant its successor on the rank started: after it in time, so out of order
    first, second = [c for c in tree["computes"] if c["rank"] == 0][:2]
    first["start_s"] = first["end_s"] = second["start_s"] + 1e-4
    kinds = {v.kind for v in order_violations(problem, schedule, _build(tree, 1))}
    assert "fixed_order" in kinds


def test_a_step_the_trace_does_not_hold_is_refused_naming_it() -> None:
    problem, schedule = _plan("1f1b")
    trace = _build(_measured("1f1b"), 1)
    for step in (5, 1, -2):
        with pytest.raises(FormatError, match=f"no step {step}: it holds 1 step"):
            order_violations(problem, schedule, trace, step=step)
    assert order_violations(problem, schedule, trace, step=-1) == order_violations(problem, schedule, trace, step=0)
