"""A Pipeline from torch profiler traces: synthetic traces whose contents are known, and real recorded ones.

The synthetic traces are Chrome JSON written here with chosen durations, so
the medians, the transfer time and the structure are known exactly. The
real traces are recorded with ``torch.profiler`` around torch's pipeline
runtime on two gloo processes; only their structure is asserted (which
actions, how many, which stage on which rank), never their timings.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from optional import require

from schedsearch import Pipeline
from schedsearch.actions import Action, Kind
from schedsearch.cli import main
from schedsearch.errors import InvalidPipelineError
from schedsearch.runtime.profiler_traces import parse_label, pipeline_from_traces, read_trace, read_traces


def span(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def write(folder: Path, rank: int, events: list, *, distributed: bool = True, name: str | None = None) -> Path:
    doc = {"traceEvents": events + [span("aten::mm", 0.0, 1.0)], "host_name": "host"}
    if distributed:
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": 2}
    path = folder / (name or f"rank{rank}_trace.json")
    path.write_text(json.dumps(doc))
    return path


# durations in microseconds, per (stage, kind), one per micro-batch (4 micro-batches, 2 steps)
F0 = [1000, 1100, 1200, 1300, 900, 1000, 1100, 1250]
I0 = [300, 310, 320, 330, 340, 350, 360, 370]
W0 = [2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700]
F1 = [1500, 1500, 1600, 1700, 1800, 1400, 1500, 1500]
I1 = [900, 950, 1000, 1050, 1100, 1150, 1200, 1250]
W1 = [700, 800, 900, 1000, 1100, 1200, 1300, 1400]


def zero_bubble_traces(folder: Path) -> list[Path]:
    """A ZB-H1-like run of 2 steps x 4 micro-batches whose every duration is chosen.

    Rank 0 runs stage 0 (F, SEND_F, RECV_B, I, W); rank 1 stage 1 (RECV_F, F, I, SEND_B, W). Transfers: stage 0's
    send of micro-batch m starts at a known time and rank 1's receive ends 80 + 10 m us later (activations), the
    gradients' 120 + 10 m us later; every receive starts before its send, so the transfer is end - send start.
    """
    rank0, rank1 = [], []
    for step in range(2):
        base = step * 100_000.0
        for m in range(4):
            k = 4 * step + m
            t0 = base + 20_000.0 * m
            rank0.append(span(f"PP:0F{m}", t0, F0[k]))
            send = t0 + F0[k]
            rank0.append(span(f"PP:0SEND_F{m}", send, 5))
            rank1.append(span(f"PP:1RECV_F{m}", send - 50, 50 + 80 + 10 * m))
            r1 = send + 80 + 10 * m
            rank1.append(span(f"PP:1F{m}", r1, F1[k]))
            rank1.append(span(f"PP:1I{m}", r1 + F1[k], I1[k]))
            gsend = r1 + F1[k] + I1[k]
            rank1.append(span(f"PP:1SEND_B{m}", gsend, 5))
            rank1.append(span(f"PP:1W{m}", gsend + 5, W1[k]))
            rank0.append(span(f"PP:0RECV_B{m}", gsend - 30, 30 + 120 + 10 * m))
            g0 = gsend + 120 + 10 * m
            rank0.append(span(f"PP:0I{m}", g0, I0[k]))
            rank0.append(span(f"PP:0W{m}", g0 + I0[k], W0[k]))
        rank0.append(span("PP:0REDUCE_GRAD", base + 90_000, 100))
        rank1.append(span("PP:1REDUCE_GRAD", base + 90_000, 100))
    # written in the opposite order: the ranks come from the traces' distributedInfo
    return [write(folder, 1, rank1), write(folder, 0, rank0)]


def median_ms(values: list[float]) -> float:
    return statistics.median(values) / 1e3


def test_the_import_reproduces_the_medians_of_a_trace_whose_contents_are_known(tmp_path):
    paths = zero_bubble_traces(tmp_path)
    pipeline = pipeline_from_traces(paths, stage_fields=[{"activation_bytes": "1 MiB"}, {"send_bytes": 4096}])
    assert pipeline.num_ranks == 2 and pipeline.num_microbatches == 4 and len(pipeline.stages) == 2
    s0, s1 = pipeline.stages
    assert (s0.forward_ms, s0.input_grad_ms, s0.weight_grad_ms) == (median_ms(F0), median_ms(I0), median_ms(W0))
    assert (s1.forward_ms, s1.input_grad_ms, s1.weight_grad_ms) == (median_ms(F1), median_ms(I1), median_ms(W1))
    # no full backward in the run: B = I + W
    assert s0.backward_ms == median_ms(I0) + median_ms(W0) and s1.backward_ms == median_ms(I1) + median_ms(W1)
    # transfers: 80..110 us for activations, 120..150 us for gradients, twice each: the median of the 16
    transfers = [80 + 10 * m for m in range(4)] * 2 + [120 + 10 * m for m in range(4)] * 2
    assert pipeline.p2p.time_ms == median_ms(transfers)
    assert s0.activation_bytes == 2**20 and s1.send_bytes == 4096 and s0.name == "stage0"


def test_full_backwards_and_overlapped_pairs(tmp_path):
    rank0 = [span("PP:0F0", 0, 1000), span("PP:0F1", 2000, 1400), span("PP:0B0", 4000, 3000),
             span("PP:0B1", 8000, 2000), span("PP:0SEND_F0", 1000, 1), span("PP:0SEND_F1", 3400, 1)]
    rank1 = [span("PP:1F0", 1500, 500), span("PP:(1F1;1B0)OVERLAP_F_B", 3500, 2500),
             span("PP:1B1", 6000, 700), span("PP:1RECV_F0", 1000, 500), span("PP:1RECV_F1", 3000, 600)]
    pipeline = pipeline_from_traces([write(tmp_path, 0, rank0), write(tmp_path, 1, rank1)])
    s0, s1 = pipeline.stages
    assert (s0.forward_ms, s0.backward_ms, s0.has_split) == (1.2, 2.5, False)
    assert (s1.forward_ms, s1.backward_ms) == (0.5, 0.7)  # the pair's members do not count as single actions
    assert pipeline.fb_overlap_ms == 2.5
    assert pipeline.p2p.time_ms == statistics.median([500, 200]) / 1e3  # receive end - send start


def test_ranks_without_distributed_info_follow_the_order_given(tmp_path):
    paths = zero_bubble_traces(tmp_path)
    docs = [json.loads(p.read_text()) for p in paths]
    plain = []
    for i, doc in enumerate(reversed(docs)):  # rank 0's trace first, as the ranks go
        del doc["distributedInfo"]
        plain.append(tmp_path / f"plain{i}.json")
        plain[-1].write_text(json.dumps(doc))
    assert [t.rank for t in read_traces(plain)] == [0, 1]
    assert pipeline_from_traces(plain) == pipeline_from_traces(paths)


@pytest.mark.parametrize("content,message", [
    ("{not json", "not JSON: expecting property name enclosed in double quotes at line 1, column 2$"),
    ('{"traceEvents": [\n  {"ph": "X",,}]}', "not JSON: expecting property name enclosed in double quotes at line 2, "
                                               "column 14$"),
    ('{"traceEvents": [' + "9" * 5000 + "]}", "holds an integer too long to read \\(more than \\d+ digits\\)$"),
    ('{"events": []}', "not a Chrome trace: expected a JSON object with a 'traceEvents' list"),
    (json.dumps({"traceEvents": [span("aten::mm", 0, 1)]}),
     "no action of torch's pipeline runtime \\(no event named 'PP:...' among 1 events\\)"),
    (json.dumps({"traceEvents": [span("PP:0SEND_F0", 0, 1)]}),
     "no action of torch's pipeline runtime \\(1 'PP:' events, none a compute action among 1 events\\)"),
    (json.dumps({"traceEvents": [{"ph": "X", "name": "PP:0F0", "ts": "0", "dur": 1}]}),
     "event 0 \\('PP:0F0'\\) needs a number 'ts' and a 'dur' >= 0"),
])
def test_a_file_that_is_not_a_pipeline_trace_is_refused_naming_it(tmp_path, content, message):
    path = tmp_path / "rank0.json"
    path.write_text(content)
    with pytest.raises(InvalidPipelineError, match=f"trace '{path}': {message}"):
        read_trace(path)


def test_incomplete_sets_of_traces_are_refused(tmp_path):
    rank0 = [span("PP:0F0", 0, 1000), span("PP:0B0", 2000, 1000)]
    rank2 = [span("PP:2F0", 0, 1000), span("PP:2B0", 2000, 1000)]
    only = write(tmp_path, 0, rank0)
    with pytest.raises(InvalidPipelineError, match="the ranks of the traces must be 0..1, one each"):
        read_traces([only, write(tmp_path, 2, rank2)])
    with pytest.raises(InvalidPipelineError, match="no compute action of stage\\(s\\) \\[1\\]"):
        pipeline_from_traces([only, write(tmp_path, 1, rank2, name="r1.json")])
    forward_only = write(tmp_path, 0, [span("PP:0F0", 0, 1000)], name="f.json")
    with pytest.raises(InvalidPipelineError, match="stage 0 \\(rank 0\\) runs no backward"):
        pipeline_from_traces([forward_only])
    with pytest.raises(InvalidPipelineError, match="is not a folder"):
        read_traces(str(only))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidPipelineError, match="holds no \\*.json trace"):
        read_traces(str(empty))


def test_labels_parse_as_torch_prints_its_actions():
    assert parse_label("PP:12W7") == Action(12, Kind.BACKWARD_WEIGHT, 7)
    assert parse_label("PP:3RECV_B10") == Action(3, Kind.RECV_B, 10)
    assert parse_label("PP:2REDUCE_GRAD") == Action(2, Kind.REDUCE_GRAD)
    pair = parse_label("PP:(0F2;1I1)OVERLAP_F_B")
    assert pair == Action.overlap(Action(0, "F", 2), Action(1, "I", 1)) and (pair.stage, pair.microbatch) == (-1, None)
    assert parse_label("PP:(0F2;oops)OVERLAP_F_B") is None
    assert parse_label("Forward 3") is None


def test_the_cli_writes_the_pipeline_of_traces(tmp_path, capsys):
    zero_bubble_traces(tmp_path)
    out = tmp_path / "out"
    assert main(["profile", "--traces", str(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "stage1: F 1.500 ms" in text and "transfer: 0.115 ms" in text
    (path,) = out.glob("*.pipeline.toml")
    assert Pipeline.load(path) == pipeline_from_traces(tmp_path)


@pytest.mark.torch
def test_traces_recorded_around_torch_pipeline_runtime(tmp_path):
    require("torch")
    from schedsearch.handcrafted import reproduce
    from schedsearch.runtime import build_workload, plan_from_schedule
    from schedsearch.runtime.profiler_traces import record_traces

    rep = reproduce("zb-h1", devices=2, microbatches=4)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    workload = build_workload("mlp:4x8", 2, batch_size=8, dtype="float32")
    paths = record_traces(plan, workload, tmp_path, steps=2, warmup_steps=0)
    assert [p.name for p in paths] == ["rank0_trace.json", "rank1_trace.json"]
    traces = read_traces(tmp_path)
    for t in traces:
        kinds = {}
        for s in t.spans:
            kinds.setdefault(s.kind, []).append((s.stage, s.microbatch))
        stage = t.rank
        for kind in ("F", "I", "W"):  # every micro-batch's action of each kind, once per step
            assert sorted(kinds[kind]) == sorted([(stage, m) for m in range(4)] * 2), (t.rank, kind)
        comm = ("SEND_F", "RECV_B") if stage == 0 else ("RECV_F", "SEND_B")
        for kind in comm:
            assert sorted(kinds[kind]) == sorted([(stage, m) for m in range(4)] * 2), (t.rank, kind)
        assert all(s.duration_us >= 0 for s in t.spans)
    pipeline = pipeline_from_traces(tmp_path)
    assert (pipeline.num_ranks, pipeline.num_microbatches, len(pipeline.stages)) == (2, 4, 2)
    assert all(s.has_split and s.forward_ms > 0 and s.backward_ms > 0 for s in pipeline.stages)
    assert pipeline.p2p.time_ms is not None


def test_a_compute_action_counts_from_the_arrival_of_the_data_it_waits_for(tmp_path):
    # torch's runtime posts a receive in RECV_F / RECV_B and waits for it inside the forward (backward) that uses
    # it; the backend's receive (gloo:recv, posted to completed) says when the data arrived
    def recv(ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": "gloo:recv", "ts": ts, "dur": dur}

    rank0 = [span("PP:0F0", 0, 1000), span("PP:0SEND_F0", 1000, 10),
             span("PP:0RECV_B0", 1100, 20), recv(1105, 4895),       # the gradient arrives at 6000
             span("PP:0B0", 1200, 6000)]                             # waits 4800 us, computes 1200
    rank1 = [span("PP:1RECV_F0", 500, 30), recv(510, 800),           # the activation arrives at 1310
             span("PP:1F0", 600, 1200),                              # waits 710 us, computes 490
             span("PP:1B0", 1800, 4000), span("PP:1SEND_B0", 5800, 10)]
    pipeline = pipeline_from_traces([write(tmp_path, 0, rank0), write(tmp_path, 1, rank1)])
    s0, s1 = pipeline.stages
    assert (s0.forward_ms, s0.backward_ms) == (1.0, 1.2)
    assert (s1.forward_ms, s1.backward_ms) == (0.49, 4.0)
    # transfers from the send's start to the arrival: 1310 - 1000 and 6000 - 5800
    assert pipeline.p2p.time_ms == statistics.median([310, 200]) / 1e3
