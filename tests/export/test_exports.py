"""Chrome trace, plan JSON, ASCII timeline, Gantt pictures and the export() dispatcher."""

from __future__ import annotations

import json

import pytest

from optional import require

from schedsearch.errors import FormatError, InvalidScheduleError
from schedsearch.export import EXPORT_FORMATS, chrome_trace, export, read_json, render_ascii, write_json
from schedsearch.export.bundle import write_bundle
from schedsearch.export.json import plan_document
from schedsearch.handcrafted import reproduce, schedule_from_orders
from schedsearch.placements import chain_pipelines
from schedsearch.problem import Channel, Cluster, Graph


def test_chrome_trace_has_real_durations_rows_and_args():
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    trace = chrome_trace(rep.problem, rep.schedule, time_unit_us=10.0)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {"rank0", "rank1"}  # a pipeline's rows are its ranks
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert len(slices) == len(rep.schedule.tasks)
    durs = {(e["args"]["kind"], e["dur"]) for e in slices}
    assert ("F", 10.0) in durs  # a plain forward: 1 unit
    assert ("F", 30.0) in durs  # a forward inside an F&B pair: the pair's 3 units
    pair = [e for e in slices if e["args"].get("overlap") == "F&B"]
    assert pair and all({"microbatch", "stage", "block"} <= set(e["args"]) for e in pair)


def test_chrome_trace_has_channel_rows():
    base = chain_pipelines([[0, 1]], 2, 1, backward=None)
    p = base.with_(graph=Graph(blocks=base.graph.blocks, edges=[("F0", "F1", 2)]),
                   cluster=Cluster(devices=base.cluster.devices, channels=[Channel(name="nv", endpoints=("d0", "d1"))]))
    s = schedule_from_orders(p, {"d0": [("F0", 0)], "d1": [("F1", 0)]})
    trace = chrome_trace(p, s)
    rows = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert "link rank0-rank1" in rows  # channel nv between d0 and d1
    assert any(e.get("cat") == "transfer" and e["dur"] == 2000.0 for e in trace["traceEvents"])


def test_plan_json_round_trip(tmp_path):
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    path = write_json(rep.problem, rep.schedule, tmp_path / "plan.json", meta={"time_scale": 1})
    problem, schedule, meta = read_json(path)
    assert problem == rep.problem and schedule == rep.schedule and meta == {"time_scale": 1}
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"]) == ("schedsearch.plan", 1)
    assert doc["metrics"]["makespan"] == rep.schedule.makespan


def test_plan_json_rejects_bad_documents(tmp_path):
    rep = reproduce("1f1b", devices=2, microbatches=2)
    doc = plan_document(rep.problem, rep.schedule)
    bad = dict(doc, version=99)
    with pytest.raises(FormatError, match="'version' 99 is not supported"):
        read_json(json.dumps(bad))
    broken = dict(doc, schedule=dict(doc["schedule"], tasks=doc["schedule"]["tasks"][1:]))
    with pytest.raises(InvalidScheduleError, match="missing_task"):
        read_json(json.dumps(broken))
    assert read_json(json.dumps(broken), validate=False)[1].makespan == rep.schedule.makespan
    with pytest.raises(FormatError, match="'format'"):
        read_json(json.dumps({"format": "other"}))


def test_ascii_timeline_draws_devices_labels_and_groups():
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    text = render_ascii(rep.problem, rep.schedule)
    lines = text.splitlines()
    assert lines[1].startswith("rank0: Fm0") and lines[2].startswith("rank1: ")
    assert "/Bm" in text  # an overlapped forward-and-backward pair, e.g. Fm3/Bm0
    assert f"makespan {rep.schedule.makespan}" in lines[-1]
    timed = render_ascii(rep.problem.with_(time_unit_s=0.00025), rep.schedule).splitlines()
    # ms first when the problem knows its unit, the solver's units after
    assert f"makespan {rep.schedule.makespan * 0.25:.6g} ms = {rep.schedule.makespan} time units" in timed[-1]
    staged = render_ascii(rep.problem, rep.schedule, labels="stage")
    assert "rank0: F0m0" in staged and "I3m0" in staged
    with pytest.raises(ValueError, match="'labels' must be one of"):
        render_ascii(rep.problem, rep.schedule, labels="colour")


def test_ascii_matches_the_papers_1f1b_figure():
    rep = reproduce("1f1b", devices=2, microbatches=2)
    # F = 1, B = 2: 4 chars per unit (label Fm0 + separator); d0 waits 2-4 for Bm0 and 6-7 for Bm1
    assert render_ascii(rep.problem, rep.schedule, legend=False).splitlines()[1:] == [
        "rank0: Fm0 Fm1 ........Bm0====|....Bm1====|",
        "rank1: ....Fm0 Bm0====|Fm1 Bm1====|........",
    ]


def test_pictures(tmp_path):
    require("matplotlib")
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    png = export(rep.problem, rep.schedule, "png", tmp_path / "s.png")
    svg = export(rep.problem, rep.schedule, "svg", tmp_path / "s")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert svg.suffix == ".svg" and "<svg" in svg.read_text()[:500]
    with pytest.raises(FormatError, match="needs an output path"):
        export(rep.problem, rep.schedule, "png")


@pytest.mark.parametrize("fmt", [f for f in EXPORT_FORMATS if f not in ("png", "svg")])
def test_export_dispatcher_text_formats(fmt, tmp_path):
    rep = reproduce("zb-h1", devices=2, microbatches=2)
    text = export(rep.problem, rep.schedule, fmt)
    assert isinstance(text, str) and text
    path = export(rep.problem, rep.schedule, fmt, tmp_path / f"out.{fmt}")
    assert path.read_text() == text
    with pytest.raises(FormatError, match="'format' must be one of"):
        export(rep.problem, rep.schedule, "xlsx")


def test_bundle_skips_what_a_format_cannot_express(tmp_path):
    rep = reproduce("chimera")
    names = {p.name for p in write_bundle(rep.problem, rep.schedule, tmp_path, "chimera")}
    assert {"chimera.trace.json", "chimera.plan.json", "chimera.txt"} <= names
    assert "chimera.csv" not in names


def test_every_export_reads_the_units_of_the_problem(tmp_path):
    """A profiled problem at 100 us per unit: the trace, the report, the timeline and the picture show real
    times from the problem's own units, with no flag; a JSON round trip keeps them."""
    from schedsearch.export.html import report_html
    from schedsearch.problem import Problem
    from schedsearch.runtime.profile import Profile, StageProfile

    rows = tuple(StageProfile(stage=s, microbatch_size=4, forward_s=0.001, backward_s=0.002, input_grad_s=0.001,
                              weight_grad_s=0.001, activation_bytes=2048, parameter_bytes=0) for s in range(2))
    prof = Profile(sizes=(4,), stages={4: rows}, repeats=1, time_unit_s=1e-4, memory_unit_bytes=1024)
    problem = prof.to_problem(num_microbatches=2)
    assert (problem.time_unit_s, problem.memory_unit_bytes) == (1e-4, 1024.0) and "unit" not in problem.name
    again = Problem.from_json(problem.to_json())
    assert again == problem and again.time_unit_s == 1e-4
    from schedsearch.handcrafted import one_f_one_b

    schedule = one_f_one_b(problem)
    trace = chrome_trace(problem, schedule)
    first = next(e for e in trace["traceEvents"] if e["ph"] == "X")
    assert first["dur"] == pytest.approx(1000.0)  # 10 units of 100 us = 1 ms, not 10 ms
    assert "1 time unit = 0.1 ms" in report_html(problem, schedule)
    assert "(0.1 ms)" in render_ascii(problem, schedule)
    require("matplotlib")
    from schedsearch.export import plot_schedule

    assert "ms" in plot_schedule(problem, schedule).axes[0].get_xlabel()
    with pytest.raises(Exception, match="'time_unit_s' must be a positive finite number"):
        problem.with_(time_unit_s=0)
