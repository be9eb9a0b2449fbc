"""Predicted against measured on PyTorch's runtime: emulated compute, the measured trace, run.json.

Order properties are asserted always. Timing is asserted only where it is
a consequence of the emulation itself (a stage call sleeps at least its
planned duration, so a plan that is as soon as possible in its orders
cannot run faster than predicted); the upper bound on the ratio depends on
how late sleeping processes wake up, so it is a slow (not default) test,
and skipped even then when the machine is loaded beyond its cores.
"""

from __future__ import annotations

import json
import os

import pytest

from optional import require

torch = require("torch")

from schedsearch.actions import Action
from schedsearch.cli import main  # noqa: E402
from schedsearch.errors import PlanError  # noqa: E402
from schedsearch.export.json import write_json  # noqa: E402
from schedsearch.handcrafted import reproduce  # noqa: E402
from schedsearch.runtime import run_schedule  # noqa: E402
from schedsearch.runtime.trace import Compute, StepTrace, order_violations  # noqa: E402

pytestmark = pytest.mark.torch

UNIT_S = 4e-3  # a forward lasts one unit: 4 ms


def _loaded() -> bool:
    return os.getloadavg()[0] > (os.cpu_count() or 1)


@pytest.fixture(scope="module")
def zbh1():
    rep = reproduce("zb-h1", devices=2, microbatches=4)
    problem = rep.problem.with_(time_unit_s=UNIT_S)
    return problem, rep.schedule, run_schedule(problem, rep.schedule, emulate=True, steps=3, timeout_s=120)


def test_an_emulated_run_keeps_the_plan_order_and_each_call_its_planned_time(zbh1):
    problem, schedule, result = zbh1
    assert result.grads_equal and result.emulated
    assert result.order_as_planned and result.row_order == ()
    durations = {b.name: problem.durations(b.name, 0)[0] for b in problem.graph.blocks}
    planned = {(b.stage, b.kind): durations[b.name] * UNIT_S for b in problem.graph.blocks}
    for step in result.trace.steps:
        assert len(step.computes) == len(schedule.tasks)
        for c in step.computes:
            assert c.end_s - c.start_s >= planned[(c.stage, c.kind)] - 1e-6, c
    fid = result.fidelity
    assert fid is not None and [s.step for s in fid.steps] == [1, 2]
    # as soon as possible in its orders, with every call at least its planned length: never faster
    assert fid.ratio >= 1 - 1e-6
    for s in fid.steps:
        assert s.breakdown.total_s == pytest.approx(s.measured_s - s.predicted_s, abs=1e-9)


@pytest.mark.slow
def test_an_emulated_run_is_near_its_prediction_on_an_idle_machine(zbh1):
    if _loaded():
        pytest.skip(f"load average {os.getloadavg()[0]:.1f} above {os.cpu_count()} cores: timing not meaningful")
    assert zbh1[2].fidelity.ratio <= 1.25


def test_a_reordered_measured_trace_of_a_real_run_is_caught(zbh1):
    problem, schedule, result = zbh1
    step = result.trace.steps[-1]
    assert order_violations(problem, schedule, step) == ()
    # rank 1 (the last stage) claims it ran micro-batch 1's forward before micro-batch 0's
    a = next(c for c in step.computes if c.action == Action(1, "F", 0))
    b = next(c for c in step.computes if c.action == Action(1, "F", 1))
    swapped = []
    for c in step.computes:
        if c.action in (Action(1, "F", 0), Action(1, "F", 1)):
            other = b if c is a else a
            c = Compute(rank=c.rank, action=c.action, start_s=other.start_s,
                        end_s=other.end_s)
        swapped.append(c)
    bad = StepTrace(rank_spans=step.rank_spans, events=step.events, computes=tuple(swapped))
    kinds = {v.kind for v in order_violations(problem, schedule, bad)}
    assert "fixed_order" in kinds


def test_emulation_needs_the_planned_times():
    rep = reproduce("1f1b", devices=2, microbatches=2)
    with pytest.raises(PlanError, match="no time unit in seconds"):
        run_schedule(rep.problem, rep.schedule, emulate=True)


def test_run_json_reports_predicted_against_measured(tmp_path, capsys):
    rep = reproduce("1f1b", devices=2, microbatches=4)
    path = write_json(rep.problem.with_(time_unit_s=UNIT_S), rep.schedule, tmp_path / "plan.json")
    out = tmp_path / "out"
    assert main(["run", str(tmp_path), "--emulate", "--steps", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "predicted against measured: predicted" in text and path.exists()
    doc = json.loads((out / "run.json").read_text())
    assert doc["emulated"] and doc["grads_equal"] and doc["order_as_planned"]
    assert doc["predicted_step_s"] == pytest.approx(rep.schedule.makespan * UNIT_S)
    assert doc["ratio"] == pytest.approx(doc["step_time_s"] / doc["predicted_step_s"])
    assert doc["step_time_s"] == pytest.approx(sorted(doc["step_times_s"][1:])[0] / 2 + sorted(
        doc["step_times_s"][1:])[1] / 2)
    b = doc["breakdown"]
    median = next(s for s in doc["fidelity"]["steps"] if s["step"] == b_step(doc))
    assert b["compute_s"] + b["communication_s"] + b["receive_wait_s"] + b["overhead_s"] == pytest.approx(
        median["measured_s"] - doc["predicted_step_s"], abs=1e-9)
    for name in ("trace.measured.json", "trace.predicted.json", "overlay.png"):
        assert (out / name).is_file(), name
    trace = json.loads((out / "trace.measured.json").read_text())
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert {"0F0", "1B3", "0SEND_F0", "1RECV_F0"} <= names
    # the prediction rides along as a second process, one event per planned task
    predicted = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["pid"] == 1]
    assert len(predicted) == len(rep.schedule.tasks)


def b_step(doc: dict) -> int:
    """The step whose breakdown run.json reports: the median one (lower middle for an even count)."""
    steps = sorted(doc["fidelity"]["steps"], key=lambda s: s["measured_s"])
    return steps[(len(steps) - 1) // 2]["step"]


def test_emulate_refuses_a_csv_before_starting(tmp_path, capsys):
    csv = tmp_path / "plan.csv"
    csv.write_text("0F0,0B0\n1F0,1B0\n")
    assert main(["run", str(csv), "--emulate"]) == 2
    assert "--emulate needs the planned durations" in capsys.readouterr().err


@pytest.mark.slow
def test_emulation_runs_sixteen_ranks(tmp_path):
    rep = reproduce("1f1b", devices=16, microbatches=16)
    problem = rep.problem.with_(time_unit_s=1e-3)
    result = run_schedule(problem, rep.schedule, emulate=True, steps=2, timeout_s=300)
    assert result.grads_equal and result.order_as_planned
    assert result.fidelity.ratio >= 1 - 1e-6


@pytest.mark.slow
def test_a_plan_folder_from_schedsearch_plan_runs_emulated(tmp_path, capsys):
    from pathlib import Path

    toml = Path(__file__).resolve().parents[2] / "models" / "pipeline.toml"
    assert main(["plan", str(toml), "--out", str(tmp_path / "plan"), "--time-limit", "20"]) == 0
    assert main(["run", str(tmp_path / "plan"), "--emulate", "--steps", "2", "--out", str(tmp_path / "run")]) == 0
    doc = json.loads((tmp_path / "run" / "run.json").read_text())
    assert doc["num_processes"] == 4 and doc["order_as_planned"] and doc["predicted_step_s"] > 0


def test_a_plan_whose_last_stage_runs_its_forwards_out_of_label_order_is_traced_under_its_own_labels():
    # the runtime runs such a plan relabelled (see execute): the trace must come back under the plan's labels
    from schedsearch.schedule import Schedule, TaskInstance

    rep = reproduce("zb-h1", devices=2, microbatches=3)
    perm = {0: 2, 1: 0, 2: 1}
    schedule = Schedule(tasks=[TaskInstance(block=t.block, microbatch=perm[t.microbatch], devices=t.devices,
                                            start=t.start, end=t.end) for t in rep.schedule.tasks])
    problem = rep.problem.with_(time_unit_s=UNIT_S)
    result = run_schedule(problem, schedule, emulate=True, steps=2, timeout_s=120)
    assert result.grads_equal and result.order_as_planned
    first = min(result.trace.steps[-1].computes, key=lambda c: c.start_s)
    assert first.action == Action(0, "F", perm[0])


def test_the_emulated_stages_send_the_planned_activation_bytes_up_to_the_cap():
    from schedsearch.plan.pipeline import Pipeline
    from schedsearch.plan.planner import Candidate, build_problem
    from schedsearch.runtime.emulate import emulated_workload
    from schedsearch.units import choose_units

    sizes = [4096, 65536, 8192]
    pipeline = Pipeline.from_dict({"num_ranks": 3, "num_microbatches": 2, "p2p": {"time_ms": 0.5},
                                   "stages": [{"forward_ms": 2.0, "backward_ms": 4.0, "activation_bytes": b}
                                              for b in sizes]})
    units = choose_units({"f": 2.0, "b": 4.0, "p2p": 0.5}, sizes)
    problem = build_problem(pipeline, Candidate(family="1f1b"), pipeline.stages, units)
    workload, sent = emulated_workload(problem)
    assert sent.planned_bytes == (4096, 65536, None) and sent.sent_bytes[:2] == (4096, 65536)
    out = workload.stages[1](workload.stages[0](workload.inputs[:1]))
    assert out.numel() * out.element_size() == 65536
    _, capped = emulated_workload(problem, max_bytes=8192)
    assert capped.sent_bytes[:2] == (4096, 8192) and capped.capped == (1,)
    with pytest.raises(PlanError, match="max_bytes"):
        emulated_workload(problem, max_bytes=0)


def test_an_emulated_run_with_overlapped_pairs_finds_every_call_planned_and_in_order():
    # DualPipeV overlaps a forward with a backward: every stage call the runtime makes, pair members
    # included, must have a planned time (else the run stops), and the measured order is the plan's
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    problem = rep.problem.with_(time_unit_s=1e-3)
    result = run_schedule(problem, rep.schedule, emulate=True, steps=2, timeout_s=120)
    assert result.grads_equal and result.order_as_planned and result.row_order == ()
    assert result.fidelity is not None and result.fidelity.order_ok
    for step in result.trace.steps:
        assert order_violations(problem, rep.schedule, step) == ()
