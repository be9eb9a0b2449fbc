"""plan(): families, units, memory as a runtime holds it, the ranked table, outputs, user-facing errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs
import pytest

from optional import require

from schedsearch.result import Status
import schedsearch
from schedsearch import Pipeline, validate
from schedsearch.errors import NoFittingPlanError
from schedsearch.plan.planner import Candidate, build_problem, candidates
from schedsearch.units import choose_units
from schedsearch.plan import pipeline as pipeline_module

GIB = 2**30


def _uniform(num_ranks=2, num_microbatches=4, budget=None, families=("1f1b",), stages=2, **extra):
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    return Pipeline(num_ranks=num_ranks, num_microbatches=num_microbatches, memory_budget_bytes=budget,
                    families=list(families), stages=[stage] * stages, **extra)


def test_1f1b_family_against_the_formulas():
    # p=2, m=4, F=1, B=2 ms: 1F1B makespan (m+p-1)(F+B) = 15 ms; ZB-H1 (F=I=W=1) m(F+I+W)+(p-1)(F+I-W) = 13 ms
    result = schedsearch.plan(_uniform(budget="6 GiB"), time_limit_s=20, parallel=1)
    rows = {r.family: r for r in result.rows}
    assert rows["1F1B"].makespan_ms == 15.0 and rows["1F1B"].handcrafted_ms == 15.0
    assert rows["ZB-H1"].makespan_ms == 13.0 and rows["ZB-H1"].status is Status.OPTIMAL
    assert result.best.family == "ZB-H1"
    # 1F1B's global bubble: (p-1)(F+B) = 3 of 15 ms
    assert rows["1F1B"].bubble_pct == 20.0
    assert not validate(result.problem, result.schedule)
    for r in result.rows:
        assert r.bound_ms <= r.makespan_ms


def test_memory_held_until_the_freeing_block_ends():
    # 1F1B rank 0 holds p = 2 activations: with free-at-end, the second forward starts before
    # the first backward ends, so 1 GiB parameters + 2 GiB of activations = 3 GiB
    result = schedsearch.plan(_uniform(families=["1f1b"]), time_limit_s=20, parallel=1)
    one = next(r for r in result.rows if r.family == "1F1B")
    assert one.peak_gib[0] == 3.0
    problem = build_problem(result.pipeline, Candidate(family="1f1b"), result.pipeline.stages, result.units)
    assert dict(problem.initial_memory) == {"d0": GIB // result.units.memory_unit_bytes,
                                            "d1": GIB // result.units.memory_unit_bytes}
    assert any(b.workspace > 0 for b in problem.graph.blocks if b.kind == "B")


def test_budget_binds_and_no_family_fits_says_why():
    # 2.5 GiB: parameters (1) + one activation (1) fit, but no rank can hold 3 GiB: 1F1B must run
    # with at most one micro-batch in flight per rank and still gets a plan
    result = schedsearch.plan(_uniform(budget="2.5 GiB", families=["1f1b"]), time_limit_s=20, parallel=1)
    one = next(r for r in result.rows if r.family == "1F1B")
    assert max(one.peak_gib) <= 2.5 and one.handcrafted_fits is False
    with pytest.raises(NoFittingPlanError) as info:
        schedsearch.plan(_uniform(budget="1.5 GiB"), time_limit_s=5, parallel=1)
    text = str(info.value)
    assert "rank 0 holds its parameters (1 GiB) and one micro-batch's activations of its stages (1 GiB)" in text
    assert "2 GiB > budget 1.5 GiB" in text


def test_units_keep_every_time_within_the_tolerance():
    times = {"a": 1.234, "b": 0.37, "c": 12.9}
    units = choose_units(times, [], tolerance=0.01)
    for t in times.values():
        assert abs(units.ticks(t) * units.time_unit_ms - t) / t <= 0.01
    assert units.max_time_error <= 0.01
    coarse = choose_units(times, [], tolerance=0.2)
    assert coarse.time_unit_ms > units.time_unit_ms


def test_candidates_cover_the_families():
    p = _uniform(families=list(pipeline_module.FAMILIES), fb_overlap_ms=1.0)
    labels = [c.label for c in candidates(p)]
    assert labels[:2] == ["1F1B", "ZB-H1"]
    assert "interleaved ZB v=4" in labels and "ZB-V" in labels
    assert "DualPipeV (F&B)" in labels and "DualPipe (F&B)" in labels


def test_a_fixed_description_with_more_stages_per_rank_gets_interleaved_at_its_count():
    # 10 stages on 2 ranks: interleaved runs any count, so v=5 is tried; v=2..4 stay listed (and are skipped)
    p = _uniform(families=["1f1b", "interleaved", "zb-v"], stages=10, num_microbatches=4)
    labels = [c.label for c in candidates(p)]
    assert labels.count("interleaved 1F1B v=5") == 1 and "interleaved ZB v=5" in labels
    assert "interleaved 1F1B v=4" in labels and not any("v=3" in x and "ZB-V" in x for x in labels)
    result = schedsearch.plan(p, time_limit_s=20, deterministic=True)
    assert result.best.family == "interleaved ZB v=5", result.table()
    assert not validate(result.problem, result.schedule)
    # 9 stages on 2 ranks: no count per rank, nothing added; a model split by the planner (dp) adds nothing
    assert not any("v=5" in c.label for c in candidates(_uniform(families=["interleaved"], stages=9)))
    dp = attrs.evolve(_uniform(families=["interleaved"], stages=10), partition="dp")
    assert not any("v=5" in c.label for c in candidates(dp))


def test_transfers_cost_time():
    free = schedsearch.plan(_uniform(families=["1f1b"]), time_limit_s=20, parallel=1)
    paid = schedsearch.plan(_uniform(families=["1f1b"], p2p={"time_ms": 0.5}), time_limit_s=20, parallel=1)
    one_free = next(r for r in free.rows if r.family == "1F1B")
    one_paid = next(r for r in paid.rows if r.family == "1F1B")
    assert one_paid.makespan_ms > one_free.makespan_ms
    assert paid.problem.cluster.channels


def _transfer_ms(pipeline):
    """The time of each transfer between ranks in the built 1F1B problem, in ms (its channel's time for its size,
    times the unit)."""
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1)
    problem = build_problem(pipeline, Candidate(family="1f1b"), pipeline.stages, result.units)
    (channel,) = problem.cluster.channels
    return {channel.transfer_time(e.size) * result.units.time_unit_ms for e in problem.graph.edges if e.size}, result


def test_transfers_are_sized_by_what_a_stage_sends_not_by_its_activation():
    # 1 GiB/s: a stage sending 16 MiB takes 1000 * 16 / 1024 = 15.625 ms; its 1 GiB of activations would take 1 s
    def pipeline(**stage):
        return Pipeline(num_ranks=2, num_microbatches=4, families=["1f1b"], p2p={"bandwidth_bytes_per_s": "1 GiB"},
                        stages=[{"forward_ms": 1.0, "backward_ms": 2.0, **stage}] * 2)

    sends = pipeline(activation_bytes="1 GiB", send_bytes="16 MiB")
    small = pipeline(activation_bytes="16 MiB")
    large = pipeline(activation_bytes="1 GiB")
    (sent,), by_send = _transfer_ms(sends)
    assert sent == pytest.approx(15.625, rel=sends.time_tolerance)
    (held,), _ = _transfer_ms(large)
    assert held == pytest.approx(1000.0, rel=large.time_tolerance)
    # the same transfers, edge for edge, as a stage whose activation is what it sends
    units = by_send.units
    edges = [{(e.src, e.dst, e.size) for e in build_problem(p, Candidate(family="1f1b"), p.stages, units).graph.edges}
             for p in (sends, small)]
    assert edges[0] == edges[1]


def test_outputs(tmp_path):
    result = schedsearch.plan(_uniform(families=["1f1b", "interleaved"], stages=4, num_microbatches=4),
                              time_limit_s=30, parallel=1)
    paths = result.write(tmp_path)
    assert {"csv", "torchtitan", "trace", "json", "table"} <= set(paths)
    doc = json.loads(paths["json"].read_text())
    assert doc["meta"]["units"]["time_unit_ms"] == result.units.time_unit_ms
    assert "units" not in result.problem.name
    trace = json.loads(paths["trace"].read_text())
    assert trace["otherData"]["units"]["memory_unit_bytes"] == result.units.memory_unit_bytes
    assert {"train"} <= set(paths) and os.access(paths["train"], os.X_OK)
    lines = paths["torchtitan"].read_text().splitlines()
    args = dict(line.split("=", 1) for line in lines if "=" in line and " " not in line)
    assert args["--parallelism.pipeline_parallel_degree"] == "2"
    assert Path(args["--parallelism.pipeline_parallel_schedule_csv"]) == paths["csv"].resolve()
    assert "--training.disable_cuda_graphs" in lines
    stages_per_rank = len(result.stages) // 2
    layout = result.best.candidate.layout
    assert args["--parallelism.pipeline_parallel_schedule"] == (
        "ZBVZeroBubble" if layout == "v" else "PipelineScheduleSingle" if stages_per_rank == 1
        else "PipelineScheduleMulti")
    m, mbs = 4, int(args["--parallelism.pipeline_parallel_microbatch_size"])
    assert int(args["--training.local_batch_size"]) == m * mbs
    assert ("activation_checkpoint:none" in lines) == result.best.candidate.split_backward
    if "activation_checkpoint:none" in lines:
        assert lines[-1] == "activation_checkpoint:none"  # a subcommand ends torchtitan's options
    script = paths["train"].read_text()
    assert "-m torchtitan.train" in script and f"--nproc_per_node=2" in script
    for line in lines:
        assert line in script


def test_microbatch_size_sets_the_real_batch(tmp_path):
    result = schedsearch.plan(_uniform(families=["1f1b"], stages=2, num_microbatches=4), time_limit_s=30, parallel=1)
    lines = result.write(tmp_path, microbatch_size=3)["torchtitan"].read_text().splitlines()
    assert "--parallelism.pipeline_parallel_microbatch_size=3" in lines
    assert "--training.local_batch_size=12" in lines
    for bad in (0, -1, 1.5, True):
        with pytest.raises(schedsearch.errors.InvalidOptionsError, match="microbatch_size must be a positive integer"):
            result.write(tmp_path / "bad", microbatch_size=bad)
        assert not (tmp_path / "bad").exists()


def test_uneven_microbatches_write_no_torchtitan_args(tmp_path):
    pipeline = attrs.evolve(_uniform(families=["1f1b"], stages=2, num_microbatches=4), microbatch_sizes=[8, 8, 7, 7])
    result = schedsearch.plan(pipeline, time_limit_s=30, parallel=1)
    paths = result.write(tmp_path)
    assert "csv" in paths and "torchtitan" not in paths and "train" not in paths
    from schedsearch.plan.torchtitan import not_written

    (why,) = not_written(paths["table"])
    assert why.startswith("torchtitan.args, train.sh:") and "8, 8, 7, 7" in why


def test_the_runtime_chooses_the_plan_written():
    """DualPipe's plan may be faster, but torch's CSV runtime cannot hold its two copies: it stays, with why."""
    pipeline = _uniform(families=["1f1b", "dualpipe"], stages=2, num_microbatches=4)
    torch_rt = schedsearch.plan(pipeline, time_limit_s=30, parallel=1)
    any_rt = schedsearch.plan(pipeline, time_limit_s=30, parallel=1, runtime="any")
    dual = next(r for r in torch_rt.rows if r.family.startswith("DualPipe"))
    assert dual.makespan_ms is not None
    assert torch_rt.best.candidate.family == "1f1b"
    assert "needs two copies of every stage's parameters; torch's CSV runtime holds one" in dual.note
    assert any_rt.best.makespan_ms == min(r.makespan_ms for r in any_rt.rows if r.makespan_ms is not None)
    assert all("not the plan written" not in r.note for r in any_rt.rows)
    with pytest.raises(schedsearch.errors.SchedSearchError, match="runtime must be one of"):
        schedsearch.plan(pipeline, time_limit_s=30, parallel=1, runtime="deepspeed")


def test_csv_loads_in_torch(tmp_path):
    schedules = require("torch.distributed.pipelining.schedules")
    import csv

    result = schedsearch.plan(_uniform(families=["1f1b", "interleaved"], stages=4), time_limit_s=30, parallel=1)
    text = result.write(tmp_path)["csv"].read_text()
    actions = {rank: [schedules._Action.from_str(cell) for cell in row]
               for rank, row in enumerate(csv.reader(text.splitlines()))}
    stages = len(result.stages)
    stage_to_rank = schedules._validate_schedule(actions, 2, stages, 4)
    schedules._add_send_recv(actions, stage_to_rank=lambda s: stage_to_rank[s], num_stages=stages)


@pytest.mark.parametrize("family", ["1f1b", "dualpipe"])
def test_smaller_microbatches_take_proportionally_less_time(family):
    """Micro-batches of 8, 8, 6, 4 samples: the smaller ones' blocks last 3/4 and 1/2 of the full ones', each
    rounded within the tolerance; the plan is valid and no longer than with four full micro-batches."""
    sizes = [8, 8, 6, 4]
    uneven = _uniform(num_microbatches=4, families=[family], microbatch_sizes=sizes)
    even = _uniform(num_microbatches=4, families=[family])
    # runtime="any": DualPipe's plan, which torch's CSV runtime cannot execute, is the one looked at here
    result = schedsearch.plan(uneven, time_limit_s=20, parallel=1, runtime="any")
    problem = result.problem
    assert problem.time_unit_s == result.units.time_unit_ms / 1e3  # the units are data of the problem
    half = uneven.num_microbatches // 2 if family == "dualpipe" else 0  # .up carries the second half
    for block in problem.graph.blocks:
        full = block.options[0].duration * result.units.time_unit_ms
        for m in range(problem.num_microbatches):
            real = m + (half if block.name.endswith(".up") else 0)
            got = problem.durations(block.name, m)[0] * result.units.time_unit_ms
            want = full * sizes[real] / 8
            assert abs(got - want) <= 0.011 * want, (block.name, m, got, want)
    assert not validate(problem, result.schedule)
    alone = schedsearch.plan(even, time_limit_s=20, parallel=1, runtime="any")
    assert result.best.makespan_ms <= alone.best.makespan_ms
    if result.best.makespan_proven and alone.best.makespan_proven:
        assert result.best.makespan_ms < alone.best.makespan_ms


def test_a_plan_for_any_runtime_says_why_torch_files_are_missing(tmp_path):
    from schedsearch.plan.torchtitan import not_written

    result = schedsearch.plan(_uniform(families=["dualpipe"], stages=2, num_microbatches=4), time_limit_s=30,
                              parallel=1, runtime="any")
    assert result.best.family.startswith("DualPipe")
    paths = result.write(tmp_path)
    assert not {"csv", "torchtitan", "train"} & set(paths) and {"trace", "json", "table"} <= set(paths)
    assert not_written(paths["table"])[0] == (
        f"schedule.csv, torchtitan.args, train.sh: {result.best.family} needs two copies of every stage's "
        "parameters; torch's CSV runtime holds one")


def test_the_8_rank_table_keeps_its_columns_aligned_and_names_ranks():
    layer = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    pipeline = Pipeline(num_ranks=8, num_microbatches=8, partition="dp", families=["1f1b", "interleaved"],
                        stages=[layer] * 16)
    result = schedsearch.plan(pipeline, time_limit_s=6, parallel=1)
    lines = result.table().splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    header = lines[head]
    assert lines[head + 1] == "-" * len(header)
    names = ["#", "family", "makespan ms", *(f"rank{d}" for d in range(8)), "status", "bound ms", "gap", "bubble %",
             "handcrafted", "its ms", "fits"]
    spans, at = [], 0
    for name in names:  # each header name in order, as its own word
        start = header.index(name, at)
        assert start == 0 or header[start - 1] == " "
        spans.append((start, start + len(name)))
        at = start + len(name)
    rows = [line for line in lines[head + 2:] if line[:2].strip().isdigit()]
    assert len(rows) == len(result.rows)
    for line, row in zip(rows, result.rows):
        assert len(line) <= len(header)
        left = {"family", "status", "handcrafted"}
        for k, (start, end) in enumerate(spans):  # a left-aligned cell starts under its name, a right-aligned ends
            if names[k] in left:
                assert line[start] != " " and (start == 0 or line[start - 1] == " "), (names[k], line)
            else:
                assert line[end - 1] != " " and (end == len(line) or line[end] == " "), (names[k], line)
        # every peak sits under its rank's name, right-aligned, the same figure as the row's
        for d in range(8):
            cell = line[:spans[3 + d][1]].split()[-1]
            assert cell == ("-" if not row.peak_gib else f"{row.peak_gib[d]:.2f}"), (d, line)
        makespan = line[:spans[2][1]].split()[-1]
        assert makespan == ("-" if row.makespan_ms is None else f"{row.makespan_ms:.3f}")
    assert "units:" in result.table().split("details:")[1]


def test_a_search_that_raised_is_told_in_the_users_terms():
    from schedsearch.executors import TaskOutcome, TaskStatus

    class Failing:
        name = "failing"
        workers = 1

        def run(self, fn, tasks, timeout_s=None):
            return [TaskOutcome(status=TaskStatus.RAISED, error="ZeroDivisionError: division by zero") for _ in tasks]

    result = schedsearch.plan(_uniform(budget="6 GiB"), time_limit_s=5, executor=Failing())
    for row in result.rows:  # the handcrafted plans fit: each row keeps one, and says why the search gave none
        assert row.note.startswith("the search stopped on an error inside the library, please report it: "), row.note
        assert "the plan is" in row.note and row.makespan_ms is not None
    table = result.table()
    assert not any(line.lstrip().startswith("ZeroDivisionError") for line in table.splitlines())
    assert "True" not in table and "False" not in table
