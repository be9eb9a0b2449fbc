"""Compute-only plans read and checked without torch: the DualPipeV artifact,
a table of bad plans (each naming rank, action, stage, micro-batch), deadlock
explanations, placements torch cannot run, and the torch-free import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given

from schedsearch.errors import MissingDependencyError, PlanError
from schedsearch.handcrafted import reproduce
from schedsearch.problem import Block, Cluster, Device, Edge, Graph, Option, Problem
from schedsearch.runtime import check_problem, parse_plan, plan_from_schedule, read_plan
from schedsearch.runtime.plan import check_progress
from runtime_strategies import linearised_plans

ROOT = Path(__file__).resolve().parents[2]

# 1F1B on 2 ranks, 2 stages, 3 micro-batches
ONE_F_ONE_B_2x3 = "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n"


def test_reads_pytorchs_dualpipev_artifact(dualpipev_csv):
    path = dualpipev_csv
    plan = read_plan(path)
    assert plan.num_ranks == 4
    assert plan.num_stages == 8
    assert plan.num_microbatches == 10
    assert plan.stage_to_rank == (0, 1, 2, 3, 3, 2, 1, 0)
    assert plan.style == "v"
    assert plan.num_overlapped == path.read_text().count("OVERLAP_F_B")
    assert plan.split_backward  # it uses I and W
    assert plan.stages_of(0) == (0, 7)
    # every stage runs a forward of each micro-batch, on its own rank
    forwards = {(a.stage, a.microbatch) for r, _, a in plan.actions() if a.kind == "F"}
    assert forwards == {(s, m) for s in range(8) for m in range(10)}
    assert all(plan.stage_to_rank[a.stage] == r for r, _, a in plan.actions())


def test_plan_text_is_handed_over_row_for_row():
    plan = parse_plan(ONE_F_ONE_B_2x3 + "\n\n")  # trailing blank lines are not ranks
    assert plan.num_ranks == 2
    assert plan.text == ONE_F_ONE_B_2x3
    assert str(plan.rows[0][2]) == "0B0" and plan.rows[0][2].column == 2


def test_empty_cells_keep_their_column():
    plan = parse_plan("0F0,,0B0\n,1F0,1B0\n")
    assert [c.column for c in plan.rows[0]] == [0, 2]
    assert [c.column for c in plan.rows[1]] == [1, 2]


def test_fewer_microbatches_than_stages_is_a_plan():
    text = "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n2F0,2F1,2B0,2B1\n3F0,3B0,3F1,3B1\n"
    plan = parse_plan(text, num_ranks=4, num_microbatches=2)
    assert (plan.num_stages, plan.num_microbatches) == (4, 2)


BAD_PLANS = [
    # (csv, keyword arguments, fragments of the message)
    ("0F0,0SEND_F0,0B0\n", {}, ["rank 0, action 1 '0SEND_F0'", "not a compute action"]),
    ("0F0,0X0\n", {}, ["rank 0, action 1 '0X0'", "unknown action kind 'X'"]),
    ("0F,0B0\n", {}, ["rank 0, action 0 '0F'", "names no micro-batch"]),
    ("F0\n", {}, ["rank 0, action 0 'F0'", "is not an action"]),
    ("(0F0;1B0)OVERLAP_X\n", {}, ["group type 'OVERLAP_X' is not supported"]),
    ("()OVERLAP_F_B\n", {}, ["empty overlapped group"]),
    ("0F0,0B0\n1F0,0F1,1B0\n", {}, ["rank 1, action 1 '0F1'", "stage 0 also runs on rank 0", "exactly one rank"]),
    ("0F0,0B0\n\n2F0,2B0\n", {}, ["rank 1: its row holds no action"]),
    ("0F0,0B0\n2F0,2B0\n", {}, ["stage 1 appears in no rank's row"]),
    (ONE_F_ONE_B_2x3, {"num_ranks": 4}, ["2 rows", "4 processes"]),
    (ONE_F_ONE_B_2x3, {"num_microbatches": 2}, ["rank 0, action 3 '0F2'", "micro-batch 2 is out of range"]),
    (ONE_F_ONE_B_2x3, {"num_microbatches": 4}, ["rank 0: stage 0 never runs the forward of micro-batch 3"]),
    (ONE_F_ONE_B_2x3, {"num_stages": 3}, ["stage 2 appears in no rank's row"]),
    (ONE_F_ONE_B_2x3, {"num_stages": 1}, ["stage 1 is out of range"]),
    ("0F0,0F0,0B0\n", {}, ["rank 0, action 1 '0F0'", "forward of stage 0, micro-batch 0 is already run at rank 0, action 0"]),
    ("0F0,0B0,0I0,0W0\n", {}, ["stage 0, micro-batch 0 runs a full backward ('0B0') and a split one"]),
    ("0F0,0I0\n", {}, ["rank 0: stage 0, micro-batch 0 has a split backward without its weight gradient (no action '0W0')"]),
    ("0F0\n", {}, ["rank 0: stage 0 never runs the backward of micro-batch 0"]),
    ("0B0,0F0\n", {}, ["rank 0, action 0 '0B0'", "full backward of stage 0, micro-batch 0 comes before its forward"]),
    ("0F0,0W0,0I0\n", {}, ["rank 0, action 1 '0W0'", "weight gradient of stage 0, micro-batch 0 comes before its input gradient"]),
    (ONE_F_ONE_B_2x3, {"stage_to_rank": [1, 0]}, ["stage 0 is mapped to rank 1 by the stage-to-rank map", "rank 0's row"]),
    (ONE_F_ONE_B_2x3, {"stage_to_rank": [0, 1, 1]}, ["stage-to-rank map gives 3 stages, the CSV holds 2"]),
]


@pytest.mark.parametrize("text, kwargs, fragments", BAD_PLANS, ids=range(len(BAD_PLANS)))
def test_bad_plans_are_rejected_naming_rank_and_action(text, kwargs, fragments):
    with pytest.raises(PlanError) as info:
        parse_plan(text, **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"num_ranks": 0}, "'num_ranks' must be an integer >= 1, got 0"),
    ({"num_microbatches": True}, "'num_microbatches' must be an integer >= 1, got True"),
    ({"num_stages": "2"}, "'num_stages' must be an integer >= 1, got '2'"),
    ({"stage_to_rank": {0: 0, 2: 1}}, "'stage_to_rank' must give a rank to each stage"),
    ({"stage_to_rank": [0, "1"]}, "'stage_to_rank' must hold integer ranks, got [0, '1']"),
])
def test_bad_arguments_are_refused_at_the_door_naming_them(kwargs, fragment):
    with pytest.raises(PlanError) as info:
        parse_plan(ONE_F_ONE_B_2x3, **kwargs)
    assert fragment in str(info.value)


def test_a_blank_line_inside_is_a_rank_and_a_row_of_empty_cells_at_the_end_too():
    with pytest.raises(PlanError, match="rank 1: its row holds no action"):
        parse_plan("0F0,0B0\n\n1F0,1B0\n")
    with pytest.raises(PlanError, match="rank 2: its row holds no action"):
        parse_plan(ONE_F_ONE_B_2x3 + " , \n\n")


def test_deadlock_names_the_cycle_of_ranks_and_their_actions():
    # loop map, 8 stages on 4 ranks: rank 0 runs stage 4's forward before stage 0's
    text = "4F0,0F0,4B0,0B0\n1F0,5F0,5B0,1B0\n2F0,6F0,6B0,2B0\n3F0,7F0,7B0,3B0\n"
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    msg = str(info.value)
    assert "deadlock" in msg
    assert "rank 0 -> rank 3 -> rank 2 -> rank 1 -> rank 0" in msg
    assert "rank 0 is stuck at action 0 '4F0' (forward of stage 4, micro-batch 0)" in msg
    assert "waiting for the forward of stage 3, micro-batch 0 from rank 3" in msg
    assert "rank 3 is stuck at action 0 '3F0' (forward of stage 3, micro-batch 0), waiting for the forward of " \
           "stage 2, micro-batch 0 from rank 2" in msg
    # the first two ranks of the cycle in full, the rest counted: the message stays short on any cycle
    assert msg.endswith("; and 2 more ranks of the cycle") and len(msg) < 600


def test_deadlock_on_one_rank_is_explained():
    with pytest.raises(PlanError, match=r"rank 0 itself runs only later \(action 1 '0F0'\)"):
        parse_plan("1F0,0F0,1B0,0B0\n")


def test_backward_deadlock_names_the_gradient_it_waits_for():
    # rank 0 runs 0B0 before 0F1; rank 1 runs 1F1 before 1B0: each waits for the other
    text = "0F0,0B0,0F1,0B1\n1F0,1F1,1B1,1B0\n"
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    msg = str(info.value)
    assert "rank 0 -> rank 1 -> rank 0" in msg
    assert "rank 0 is stuck at action 1 '0B0' (full backward of stage 0, micro-batch 0)" in msg
    assert "input gradient or full backward of stage 1, micro-batch 0 from rank 1 (its action 3 '1B0')" in msg
    assert "rank 1 is stuck at action 1 '1F1' (forward of stage 1, micro-batch 1)" in msg


def test_progress_check_can_be_left_to_the_caller():
    plan = parse_plan("1F0,0F0,1B0,0B0\n", progress=False)
    with pytest.raises(PlanError, match="deadlock"):
        check_progress(plan)


@given(linearised_plans())
def test_orders_taken_from_one_global_order_never_deadlock(text):
    plan = parse_plan(text)
    assert plan.num_ranks >= 1


# -- placements ---------------------------------------------------------------


@pytest.mark.parametrize("name, style", [("1f1b", "loop"), ("zb-v", "v"), ("dualpipev", "v"), ("interleaved", "loop")])
def test_handcrafted_schedules_become_plans_with_their_stage_map(name, style):
    rep = reproduce(name)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    assert plan.style == style
    assert plan.num_microbatches == rep.problem.num_microbatches
    assert plan.num_ranks == len(rep.problem.cluster.devices)


@pytest.mark.parametrize("name", ["chimera", "dualpipe"])
def test_two_replica_placements_are_rejected_before_anything_runs(name):
    rep = reproduce(name)
    with pytest.raises(PlanError, match="two model replicas"):
        plan_from_schedule(rep.problem, rep.schedule)


def _tiny(options_f0, *, backward=True) -> Problem:
    blocks = [Block(name="F0", kind="F", options=options_f0, stage=0)]
    edges = []
    if backward:
        blocks.append(Block(name="B0", kind="B", options=[Option(devices=("d0",), duration=1)], stage=0))
        edges.append(Edge(src="F0", dst="B0"))
    return Problem(
        graph=Graph(blocks=blocks, edges=edges),
        num_microbatches=1,
        cluster=Cluster(devices=[Device(name="d0"), Device(name="d1")]),
        name="tiny",
    )


@pytest.mark.parametrize(
    "problem, fragment",
    [
        (_tiny([Option(devices=("d0", "d1"), duration=1)]), "runs on devices ['d0', 'd1'] at once"),
        (_tiny([Option(devices=("d0",), duration=1), Option(devices=("d1",), duration=1)]), "may run on 2 devices"),
        (_tiny([Option(devices=("d0",), duration=1)], backward=False), "inference problem"),
    ],
    ids=["two-devices-at-once", "open-choice", "inference"],
)
def test_placements_torch_cannot_run_get_a_reason(problem, fragment):
    with pytest.raises(PlanError) as info:
        check_problem(problem)
    assert "PyTorch pipelining cannot run this placement" in str(info.value)
    assert fragment in str(info.value)


# -- without torch --------------------------------------------------------------


def test_require_torch_names_the_extra(monkeypatch):
    from schedsearch.runtime import require_torch

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"schedsearch\[torch\]"):
        require_torch()


def test_package_and_cli_work_without_torch(tmp_path):
    csv = tmp_path / "plan.csv"
    csv.write_text(ONE_F_ONE_B_2x3)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import schedsearch.runtime\n"
        "from schedsearch.cli import main\n"
        f"assert main(['run', {str(csv)!r}, '--check-only']) == 0\n"
        f"assert main(['run', {str(csv)!r}, '--model', 'mlp:8x64', '--steps', '1']) == 2\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "PyTorch is not installed: its own checks were skipped" in proc.stdout
    assert "schedsearch[torch]" in proc.stderr


def test_relabelled_permutes_microbatches_and_keeps_columns():
    plan = parse_plan("0F1,,0F0,0B1,0B0\n1F1,1B1,1F0,1B0\n")
    assert plan.forward_order(1) == (1, 0)
    swapped = plan.relabelled([1, 0])
    assert swapped.text == "0F0,,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"
    assert swapped.forward_order(1) == (0, 1)
    assert swapped.relabelled([1, 0]).text == plan.text
    with pytest.raises(PlanError, match="must be a permutation of 0..1"):
        plan.relabelled([0, 0])


def test_profile_to_problem_takes_num_devices_by_keyword_or_from_the_mapping():
    from schedsearch.errors import InvalidProblemError
    from schedsearch.runtime.profile import Profile, StageProfile

    rows = tuple(
        StageProfile(stage=s, microbatch_size=4, forward_s=1e-3, backward_s=2e-3, input_grad_s=1e-3,
                     weight_grad_s=1e-3, activation_bytes=2048, parameter_bytes=0)
        for s in range(4)
    )
    prof = Profile(sizes=(4,), stages={4: rows}, repeats=1, time_unit_s=1e-4, memory_unit_bytes=1024)

    def devices(problem):
        return [b.options[0].devices[0] for b in problem.graph.blocks if b.name[0] == "F"]

    assert devices(prof.to_problem(num_microbatches=2))[:4] == ["d0", "d1", "d2", "d3"]
    assert devices(prof.to_problem(num_devices=2, num_microbatches=2, mapping="v"))[:4] == ["d0", "d1", "d1", "d0"]
    assert len(prof.to_problem(num_microbatches=2, mapping=[0, 1, 0, 1]).cluster.devices) == 2
    assert prof.to_problem(4, 2) == prof.to_problem(num_devices=4, num_microbatches=2)
    with pytest.raises(InvalidProblemError, match="mapping style 'v' needs 'num_devices'"):
        prof.to_problem(num_microbatches=2, mapping="v")


def test_the_csv_plan_keeps_its_old_name():
    import schedsearch.runtime as runtime
    from schedsearch.runtime.plan import CsvPlan, Plan

    assert Plan is CsvPlan is runtime.CsvPlan is runtime.Plan
    assert isinstance(parse_plan(ONE_F_ONE_B_2x3), CsvPlan)
