"""The runtime on PyTorch: its own checks agree with ours, the profiler, and
execution on 4 gloo processes with gradients equal to a one-process reference.

Default run: the checks and the profiler (no processes, about a second) and
the two CI executions (1F1B and PyTorch's DualPipeV artifact, fork). The
rest of the matrix, the negative control and the failure drills are
``slow``; ``benchmarks/bench_runtime.py`` runs the full matrix.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest
from hypothesis import given

from optional import require

torch = require("torch")

from runtime_strategies import linearised_plans, shuffled_plans  # noqa: E402

from schedsearch.errors import ExecutionError, InvalidProblemError, PlanError  # noqa: E402
from schedsearch.handcrafted import reproduce  # noqa: E402
from schedsearch.plan.pipeline import Pipeline  # noqa: E402
from schedsearch.problem import Problem  # noqa: E402
from schedsearch.runtime import (  # noqa: E402
    Workload,
    build_workload,
    microbatch_split,
    parse_plan,
    plan_from_schedule,
    profile,
    read_plan,
    run,
    torch_check,
)
from schedsearch.runtime.plan import check_progress  # noqa: E402
from schedsearch.validate import validate  # noqa: E402

pytestmark = pytest.mark.torch

ONE_F_ONE_B_2x3 = "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n"


def _no_children_left() -> bool:
    return not multiprocessing.active_children()


def _check_run(result, plan, workload) -> None:
    params = sum(1 for st in workload.stages for _ in st.parameters())
    assert result.grads_equal, result
    assert result.max_grad_diff <= 1e-12
    assert len(result.grad_diffs) == params  # every parameter compared
    assert not result.missing_grads
    assert result.max_loss_diff <= 1e-12
    assert [r.rank for r in result.ranks] == list(range(plan.num_ranks))
    assert all(r.stages == plan.stages_of(r.rank) for r in result.ranks)
    assert all(t > 0 for r in result.ranks for t in r.step_times_s)
    assert len(result.losses[0]) == plan.num_microbatches
    assert _no_children_left()


# -- PyTorch's own checks ---------------------------------------------------------


def test_torch_accepts_the_dualpipev_artifact_with_the_v_map(dualpipev_csv):
    plan = read_plan(dualpipev_csv)
    assert torch_check(plan) == dict(enumerate(plan.stage_to_rank))


def test_torch_rejects_the_deadlock_our_check_explains():
    text = "4F0,0F0,4B0,0B0\n1F0,5F0,5B0,1B0\n2F0,6F0,6B0,2B0\n3F0,7F0,7B0,3B0\n"
    plan = parse_plan(text, progress=False)
    with pytest.raises(PlanError, match="_add_send_recv rejects the plan: Malformed compute schedule"):
        torch_check(plan)
    with pytest.raises(PlanError, match="rank 0 is stuck at action 0 '4F0'"):
        check_progress(plan)


@given(shuffled_plans())
def test_our_deadlock_verdict_is_pytorchs(text):
    plan = parse_plan(text, progress=False)
    try:
        check_progress(plan)
        ours = True
    except PlanError:
        ours = False
    try:
        torch_check(plan)
        theirs = True
    except PlanError:
        theirs = False
    assert ours == theirs


@given(linearised_plans())
def test_pytorch_accepts_every_linearised_plan(text):
    torch_check(parse_plan(text))


def test_microbatch_split():
    assert microbatch_split(10, 4) == (3, 3, 2, 2)
    assert microbatch_split(10, 3, [5, 3, 2]) == (5, 3, 2)
    with pytest.raises(PlanError, match="cannot fill 4 micro-batches"):
        microbatch_split(3, 4)
    with pytest.raises(PlanError, match="sum to 9, the batch holds 10"):
        microbatch_split(10, 3, [5, 2, 2])


def test_run_rejects_a_workload_with_another_stage_count():
    wl = build_workload("mlp:4x8", 4, batch_size=6)
    with pytest.raises(PlanError, match="the plan has 2 stages but the workload mlp:4x8 is split into 4"):
        run(parse_plan(ONE_F_ONE_B_2x3), wl)
    assert _no_children_left()


def test_workload_builders():
    wl = build_workload("mlp:10x8", 4, batch_size=3)
    assert wl.layers_per_stage == (3, 3, 2, 2)
    assert [len(st) for st in wl.stages] == [3, 3, 2, 2]
    again = build_workload("mlp:10x8", 4, batch_size=3)
    assert all(torch.equal(a, b) for a, b in zip(wl.sequential().parameters(), again.sequential().parameters()))
    tr = build_workload("transformer:2x16", 2, batch_size=2)
    assert tr.loss_fn(tr.sequential()(tr.inputs), tr.target).dim() == 0
    with pytest.raises(InvalidProblemError, match="2 layers cannot fill 4 stages"):
        build_workload("mlp:2x8", 4, batch_size=2)
    with pytest.raises(InvalidProblemError, match="must be KIND:LAYERSxWIDTH"):
        build_workload("cnn:2x8", 2, batch_size=2)


# -- profiler ---------------------------------------------------------------------------


def test_profile_builds_a_problem_with_integer_figures_and_units():
    wl = build_workload("mlp:4x32", 2, batch_size=8)
    prof = profile(wl.stages, wl.inputs, target=wl.target, loss_fn=wl.loss_fn, sizes=[4, 2], repeats=3)
    assert prof.sizes == (4, 2)
    for kind in "FBIW":
        assert all(isinstance(d, int) and d >= 1 for d in prof.units(kind))
    assert prof.units("I")[0] == 1  # stage 0 computes no input gradient in PyTorch 2.13
    # activations: 2 layers x (linear output + tanh output) x 4 x 32 float64, stage input included
    act = [r.activation_bytes for r in prof.stages[4]]
    assert all(a >= 2 * 4 * 32 * 8 for a in act)
    assert prof.stages[4][0].parameter_bytes == 2 * (32 * 32 + 32) * 8
    assert prof.stages[2][1].activation_bytes < prof.stages[4][1].activation_bytes
    # what stage 0 sends on is its output alone: 4 x 32 float64, far less than what it holds for its backward
    assert prof.stages[4][0].send_bytes == 4 * 32 * 8 < prof.stages[4][0].activation_bytes
    assert Pipeline.from_profile(prof, num_ranks=2, num_microbatches=4).stages[0].p2p_bytes == 4 * 32 * 8
    problem = prof.to_problem(2, microbatch_sizes=[4, 2, 4], memory=3 * max(prof.memory_units()))
    assert problem.num_microbatches == 3
    # the units are data of the problem (not of its name), and they survive JSON
    assert "unit" not in problem.name
    assert (problem.time_unit_s, problem.memory_unit_bytes) == (prof.time_unit_s, prof.memory_unit_bytes)
    assert Problem.from_json(problem.to_json()) == problem
    b = problem.graph.block
    assert b("F0").options[0].duration == prof.units("F")[0]
    assert b("B1").options[0].duration == prof.units("B")[1]
    assert b("F1").memory == prof.memory_units()[1] and b("B1").memory == -prof.memory_units()[1]
    assert problem.durations("F1", 1) == (prof.units("F", 2)[1],)
    assert problem.durations("F1", 2) == (prof.units("F", 4)[1],)
    split = prof.to_problem(2, 4, split_backward=True)
    assert b("F0").options[0].duration == split.graph.block("F0").options[0].duration
    assert split.graph.block("W0").options[0].duration == prof.units("W")[0]
    with pytest.raises(InvalidProblemError, match="micro-batch size 3 was not profiled"):
        prof.to_problem(2, microbatch_sizes=[4, 3])
    with pytest.raises(InvalidProblemError, match="need a 'mapping'"):
        prof.to_problem(4, 4)


# -- execution (CI) -----------------------------------------------------------------------


def test_ci_1f1b_on_4_processes_has_equal_gradients():
    rep = reproduce("1f1b", devices=4, microbatches=8)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    wl = build_workload("mlp:8x32", plan.num_stages, batch_size=32)
    t0 = time.perf_counter()
    result = run(plan, wl, steps=2, timeout_s=60)
    assert time.perf_counter() - t0 < 60
    _check_run(result, plan, wl)
    assert result.steps == 2 and len(result.loss) == 2


def test_ci_dualpipev_artifact_on_4_processes_has_equal_gradients(dualpipev_csv):
    path = dualpipev_csv
    plan = read_plan(path, num_ranks=4, stage_to_rank=[0, 1, 2, 3, 3, 2, 1, 0])
    wl = build_workload("mlp:8x32", plan.num_stages, batch_size=40)
    result = run(path, wl, num_processes=4, steps=2, timeout_s=60)
    _check_run(result, plan, wl)
    assert result.stage_to_rank == (0, 1, 2, 3, 3, 2, 1, 0)


# -- execution (slow) -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, params",
    [
        ("gpipe", {}),
        ("interleaved", {}),
        ("interleaved-zb", {}),
        ("zb-h1", {}),
        ("zb-v", {}),
        ("dualpipev", {}),
        ("1f1b", {"microbatches": 2}),  # fewer micro-batches than stages
    ],
)
def test_handcrafted_schedules_run_with_equal_gradients(name, params):
    rep = reproduce(name, **params)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    wl = build_workload("mlp:8x16", plan.num_stages, batch_size=3 * plan.num_microbatches)
    _check_run(run(plan, wl, steps=2, timeout_s=60), plan, wl)


@pytest.mark.slow
def test_searched_schedule_runs_with_equal_gradients():
    from schedsearch.placements import vshape
    from schedsearch.search import optimal

    problem = vshape(4, 6, memory=2)
    result = optimal(problem, time_limit_s=20, workers=2, seed=0)
    assert result.schedule is not None and not validate(problem, result.schedule)
    plan = plan_from_schedule(problem, result.schedule)
    wl = build_workload("transformer:4x16", 4, batch_size=12)
    _check_run(run(plan, wl, steps=2, timeout_s=60), plan, wl)


@pytest.mark.slow
def test_microbatches_of_different_sizes_run_with_equal_gradients():
    rep = reproduce("zb-h1", devices=2, microbatches=4)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    wl = build_workload("transformer:2x16", 2, batch_size=10)
    result = run(plan, wl, microbatch_sizes=[1, 4, 2, 3], steps=2, timeout_s=60)
    _check_run(result, plan, wl)
    assert result.microbatch_sizes == (1, 4, 2, 3)


@pytest.mark.slow
def test_last_stage_out_of_microbatch_order_runs_and_reports_losses_by_label():
    # the last stage runs micro-batch 2 first: PyTorch needs forward order = label order
    text = "0F2,0F0,0F1,0B2,0B0,0B1\n1F2,1B2,1F0,1B0,1F1,1B1\n"
    plan = parse_plan(text)
    wl = build_workload("mlp:2x8", 2, batch_size=6)
    result = run(plan, wl, microbatch_sizes=[1, 2, 3], steps=1, timeout_s=60)
    _check_run(result, plan, wl)
    model = wl.sequential()
    chunks = zip(torch.split(wl.inputs, [1, 2, 3]), torch.split(wl.target, [1, 2, 3]))
    with torch.no_grad():
        # the reported loss of micro-batch m is its mean loss weighted by n_m M / N
        want = [float(wl.loss_fn(model(x), y)) * len(x) * 3 / 6 for x, y in chunks]
    assert result.losses[0] == pytest.approx(want, abs=1e-12)


@pytest.mark.slow
def test_profiled_uneven_microbatches_search_export_and_run():
    from schedsearch.search import optimal

    sizes = [2, 4, 2, 4]
    wl = build_workload("transformer:2x16", 2, batch_size=sum(sizes))
    prof = profile(wl.stages, wl.inputs, target=wl.target, loss_fn=wl.loss_fn, sizes=[2, 4], repeats=3)
    problem = prof.to_problem(2, microbatch_sizes=sizes, memory=2 * max(prof.memory_units()))
    assert problem.duration_overrides  # the size-4 micro-batches have their own durations
    result = optimal(problem, time_limit_s=20, workers=2, seed=0)
    assert result.schedule is not None and not validate(problem, result.schedule)
    plan = plan_from_schedule(problem, result.schedule)
    _check_run(run(plan, wl, microbatch_sizes=sizes, steps=2, timeout_s=60), plan, wl)


@pytest.mark.slow
def test_negative_control_unscaled_gradients_fail_the_comparison():
    plan = parse_plan(ONE_F_ONE_B_2x3)
    wl = build_workload("mlp:2x8", 2, batch_size=6)
    result = run(plan, wl, scale_grads=False, timeout_s=60)
    assert not result.grads_equal
    assert result.max_grad_diff > 1e-3
    # the loss itself is unaffected: only the gradients are 3 times too large
    assert result.max_loss_diff <= 1e-12


class _Saboteur(torch.nn.Module):
    """Wraps a stage; inside a worker (a process group exists) it fails on the
    ``at``-th forward, by ``how``: "kill" (SIGKILL itself), "raise" or "hang"."""

    def __init__(self, inner, how: str, at: int = 2) -> None:
        super().__init__()
        self.inner = inner
        self.how = how
        self.at = at
        self.calls = 0

    def forward(self, x):
        if torch.distributed.is_initialized():
            self.calls += 1
            if self.calls == self.at:
                if self.how == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if self.how == "raise":
                    raise RuntimeError("injected failure")
                if self.how == "hang":
                    time.sleep(3600)
        return self.inner(x)


def _sabotaged(how: str) -> Workload:
    wl = build_workload("mlp:4x8", 4, batch_size=8)
    stages = list(wl.stages)
    stages[2] = _Saboteur(stages[2], how)
    return Workload(stages=stages, inputs=wl.inputs, target=wl.target, loss_fn=wl.loss_fn)


@pytest.mark.slow
@pytest.mark.parametrize(
    "how, fragment",
    [
        ("kill", "rank 2 killed by signal SIGKILL (step 0) without reporting"),
        ("raise", "rank 2 failed (step 0): RuntimeError: injected failure"),
        ("hang", "did not finish within 8 s (rank 0: step 0; rank 1: step 0; rank 2: step 0; rank 3: step 0)"),
    ],
)
def test_a_failing_rank_ends_the_run_with_an_error_and_no_process_left(how, fragment):
    rep = reproduce("1f1b", devices=4, microbatches=4)
    plan = plan_from_schedule(rep.problem, rep.schedule)
    t0 = time.perf_counter()
    with pytest.raises(ExecutionError) as info:
        run(plan, _sabotaged(how), timeout_s=8)
    elapsed = time.perf_counter() - t0
    assert elapsed < 8 + 10  # the timeout plus the grace to stop the processes
    assert fragment in str(info.value)
    if how != "hang":
        assert info.value.rank == 2
        assert elapsed < 8
    assert info.value.details
    assert _no_children_left()


@pytest.mark.slow
def test_spawned_processes_run_too():
    plan = parse_plan(ONE_F_ONE_B_2x3)
    wl = build_workload("transformer:2x16", 2, batch_size=6)
    _check_run(run(plan, wl, start_method="spawn", timeout_s=120), plan, wl)
