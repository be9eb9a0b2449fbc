"""Execute a plan with PyTorch's own pipeline runtime and prove the gradients equal.

:func:`run` takes a compute-only plan (see :mod:`schedsearch.runtime.plan`)
and a :class:`~schedsearch.runtime.models.Workload`, and

1. checks everything before any process starts: this library's checks
   (placement, counts, order, deadlock, in user terms), PyTorch's own
   (``_validate_schedule``, ``_add_send_recv``; see
   :mod:`schedsearch.runtime.torch_checks`), and that the workload has the
   plan's stage count and enough samples for its micro-batches;
2. computes a one-process *reference*: the stages chained into one model,
   the whole batch, ``loss_fn(model(inputs), target)``, backward, for each
   step (then an SGD update with ``learning_rate`` when it is > 0);
3. starts one process per rank (``fork`` by default; ``spawn`` needs
   picklable modules and loss), which join a gloo group through a file in a
   fresh temporary directory (``init_method="file://..."``, loopback only:
   ``GLOO_SOCKET_IFNAME=lo``), build ``PipelineStage`` objects for their
   stages in ascending order, load the CSV with
   ``_PipelineScheduleRuntime._load_csv(path, format="compute_only")`` and
   run ``steps`` training steps; each rank compares the gradient of every
   parameter it holds with the reference and reports the largest absolute
   difference, its step times and (on the last stage's rank) the losses;
4. stops every process, on success and on failure alike: a rank that
   raises, dies or does not report within ``timeout_s`` ends the run with an
   :class:`~schedsearch.errors.ExecutionError` naming the rank, and the
   other ranks are terminated (then killed); children also die with the
   parent (Linux ``PR_SET_PDEATHSIG``).

Gradient scaling and micro-batches of different sizes. The runtime divides
the accumulated gradients by the micro-batch count ``M`` (``scale_grads``),
which is right for a mean-reducing loss when all micro-batches are equal.
For sizes ``n_m`` summing to ``N``, the loss of micro-batch ``m`` is
multiplied by ``w_m = n_m M / N``; then ``(1/M) sum_m w_m grad(mean_m) =
sum_m (n_m / N) grad(mean_m) = grad(mean over the batch)``, the reference's
gradient. ``w_m = 1`` for equal sizes. The reported whole-batch loss is
``(1/M) sum_m w_m mean_m``, the reference's loss. ``scale_grads=False`` is a
negative control: the gradients are then ``M`` times too large and the
comparison fails.

Micro-batch order at the last stage. PyTorch 2.13's runtime appends the
last stage's losses to a list in the order its forwards run and looks a
loss up by micro-batch index, so it needs the last stage to run its
forwards in micro-batch order (a searched schedule need not: micro-batches
of different sizes are not interchangeable). Labels only bind data to the
plan, so :func:`run` relabels the micro-batches in the last stage's forward
order (:meth:`~schedsearch.runtime.plan.CsvPlan.relabelled`), hands PyTorch
that plan with the micro-batches' data permuted alike (the same
computation), and reports the losses under the plan's own labels.

Step time: each rank times its ``step`` call after a barrier; a step's time
is the slowest rank's. The first step also infers shapes and warms up
communication, so :attr:`RunResult.step_time_s` is the median of the
following steps when there are several.

The measured trace: every rank times each action of the runtime's dispatch
loop and each stage call inside it (see :mod:`schedsearch.runtime.trace`),
after measuring its clock offset to rank 0; :attr:`RunResult.trace` holds
them on one clock, and :attr:`RunResult.row_order` names every rank that
ran its compute actions in another order than its plan row. Given the
plan's ``problem`` and ``schedule``, :attr:`RunResult.fidelity` compares
each step after the first with the prediction and puts the measured
schedule through the validator's order checks. ``emulate=True`` runs the
stages of :mod:`schedsearch.runtime.emulate`, whose calls sleep their
planned durations.
"""

from __future__ import annotations

import copy
import math
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from schedsearch.actions import Action
from schedsearch.errors import ExecutionError, PlanError
from schedsearch.runtime._torch import (
    ActionRecorder,
    infer_stage_shapes,
    instrument_stages,
    load_compute_csv,
    pipelining_internals,
    recording,
    require_torch,
    step_microbatches,
)
from schedsearch.runtime.models import Workload
from schedsearch.runtime.plan import CsvPlan, read_plan
from schedsearch.runtime.torch_checks import torch_check
from schedsearch.runtime.trace import (
    Fidelity,
    MeasuredTrace,
    Prediction,
    seconds_per_unit,
    compare,
    planned_seconds,
    row_order_violations,
)
from schedsearch.runtime.convert import plan_from_schedule
from schedsearch.runtime.emulate import DEFAULT_MAX_BYTES, emulated_workload
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["RankReport", "RunResult", "run", "run_schedule", "microbatch_split", "DEFAULT_TOLERANCE"]

#: Largest accepted absolute gradient difference per dtype.
DEFAULT_TOLERANCE: dict[str, float] = {"float64": 1e-12, "float32": 1e-5}

START_METHODS = ("fork", "spawn", "forkserver")


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RankReport:
    """What one rank measured."""

    rank: int
    stages: tuple[int, ...]
    step_times_s: tuple[float, ...]
    startup_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "stages": list(self.stages),
            "step_times_s": list(self.step_times_s),
            "startup_s": self.startup_s,
        }


@attrs.frozen(kw_only=True)
class RunResult:
    """The outcome of :func:`run`.

    ``grad_diffs`` maps every parameter (``stage{s}.{name}``) to its largest
    absolute gradient difference from the reference over all steps;
    ``missing_grads`` lists parameters whose gradient the pipeline left
    unset while the reference has one.
    """

    plan: Mapping[str, Any]
    num_processes: int
    num_stages: int
    num_microbatches: int
    microbatch_sizes: tuple[int, ...]
    stage_to_rank: tuple[int, ...]
    steps: int
    ranks: tuple[RankReport, ...]
    losses: tuple[tuple[float, ...], ...]
    loss: tuple[float, ...]
    reference_loss: tuple[float, ...]
    grad_diffs: tuple[tuple[str, float], ...]
    missing_grads: tuple[str, ...]
    tolerance: float
    wall_time_s: float
    start_method: str
    dtype: str
    scale_grads: bool = True
    trace: MeasuredTrace | None = None
    fidelity: Fidelity | None = None
    row_order: tuple[str, ...] = ()
    emulated: bool = False
    emulated_bytes: tuple[int, ...] | None = None

    @property
    def order_as_planned(self) -> bool:
        """Every rank ran its compute actions in the plan's order in every step (and, with a
        problem, the measured schedules pass the validator's order checks)."""
        return not self.row_order and (self.fidelity is None or self.fidelity.order_ok)

    @property
    def max_grad_diff(self) -> float:
        """Largest absolute gradient difference (``inf`` with a missing gradient)."""
        if self.missing_grads:
            return math.inf
        return max((d for _, d in self.grad_diffs), default=0.0)

    @property
    def grads_equal(self) -> bool:
        """Every gradient present and within ``tolerance`` of the reference."""
        return not self.missing_grads and self.max_grad_diff <= self.tolerance

    @property
    def max_loss_diff(self) -> float:
        return max((abs(a - b) for a, b in zip(self.loss, self.reference_loss)), default=0.0)

    @property
    def step_times_s(self) -> tuple[float, ...]:
        """Per step, the slowest rank's time."""
        return tuple(max(r.step_times_s[k] for r in self.ranks) for k in range(self.steps))

    @property
    def step_time_s(self) -> float:
        """Median step time, the first (warm-up) step left out when there are several."""
        times = self.step_times_s
        return statistics.median(times[1:] if len(times) > 1 else times)

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": dict(self.plan),
            "num_processes": self.num_processes,
            "num_stages": self.num_stages,
            "num_microbatches": self.num_microbatches,
            "microbatch_sizes": list(self.microbatch_sizes),
            "stage_to_rank": list(self.stage_to_rank),
            "steps": self.steps,
            "ranks": [r.to_dict() for r in self.ranks],
            "losses": [list(x) for x in self.losses],
            "loss": list(self.loss),
            "reference_loss": list(self.reference_loss),
            "max_grad_diff": self.max_grad_diff,
            "grads_equal": self.grads_equal,
            "tolerance": self.tolerance,
            "grad_diffs": dict(self.grad_diffs),
            "missing_grads": list(self.missing_grads),
            "step_times_s": list(self.step_times_s),
            "step_time_s": self.step_time_s,
            "wall_time_s": self.wall_time_s,
            "start_method": self.start_method,
            "dtype": self.dtype,
            "scale_grads": self.scale_grads,
            "emulated": self.emulated,
            "emulated_bytes": None if self.emulated_bytes is None else list(self.emulated_bytes),
            "predicted_step_s": None if self.fidelity is None else self.fidelity.predicted_step_s,
            # which parts make the prediction: the plan's makespan (the plan table's, or the problem's) and the
            # calibrated cost per step
            "prediction": None if self.fidelity is None or self.fidelity.prediction is None
            else self.fidelity.prediction.to_dict(),
            "ratio": None if self.fidelity is None else self.step_time_s / self.fidelity.predicted_step_s,
            "breakdown": None if self.fidelity is None else self.fidelity.median_step.breakdown.to_dict(),
            "order_as_planned": self.order_as_planned,
            "row_order_violations": list(self.row_order),
            "fidelity": None if self.fidelity is None else self.fidelity.to_dict(),
            "clock_offsets_s": None if self.trace is None else list(self.trace.clock_offsets_s),
        }

    def __str__(self) -> str:
        verdict = "EQUAL" if self.grads_equal else "DIFFERENT"
        missing = f", {len(self.missing_grads)} gradients missing" if self.missing_grads else ""
        return (
            f"{self.num_processes} processes, {self.num_stages} stages, {self.num_microbatches} micro-batches, "
            f"{self.steps} step(s): gradients {verdict} to the one-process reference (max difference "
            f"{self.max_grad_diff:.3g}, tolerance {self.tolerance:g}{missing}); loss {self.loss[-1]:.6g} "
            f"(reference {self.reference_loss[-1]:.6g}); step time {1e3 * self.step_time_s:.1f} ms"
            f"{'' if self.fidelity is None else f' (predicted {1e3 * self.fidelity.predicted_step_s:.1f} ms)'}; "
            f"action order {'as planned' if self.order_as_planned else 'NOT as planned'}"
        )


# --------------------------------------------------------------------------
# Helpers shared by parent and workers
# --------------------------------------------------------------------------


def microbatch_split(batch_size: int, num_microbatches: int, sizes: Sequence[int] | None = None) -> tuple[int, ...]:
    """Micro-batch sizes: ``sizes`` checked, or an even split (the first
    ``batch_size mod M`` micro-batches one sample larger)."""
    if sizes is None:
        if batch_size < num_microbatches:
            raise PlanError(
                f"run: a batch of {batch_size} samples cannot fill {num_microbatches} micro-batches; "
                "use a larger batch or fewer micro-batches"
            )
        base, extra = divmod(batch_size, num_microbatches)
        return tuple(base + (1 if m < extra else 0) for m in range(num_microbatches))
    sizes = tuple(sizes)
    if len(sizes) != num_microbatches:
        raise PlanError(
            f"run: 'microbatch_sizes' gives {len(sizes)} sizes, the plan runs {num_microbatches} micro-batches"
        )
    for m, n in enumerate(sizes):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise PlanError(f"run: micro-batch {m}: size must be an integer >= 1, got {n!r}")
    if sum(sizes) != batch_size:
        raise PlanError(f"run: 'microbatch_sizes' sum to {sum(sizes)}, the batch holds {batch_size} samples")
    return sizes


class SizeWeightedLoss:
    """``loss_fn`` times ``n_m * M / N`` (see the module docstring); picklable."""

    def __init__(self, loss_fn: Any, num_microbatches: int, batch_size: int) -> None:
        self.loss_fn = loss_fn
        self.num_microbatches = num_microbatches
        self.batch_size = batch_size

    def __call__(self, output: Any, target: Any) -> Any:
        loss = self.loss_fn(output, target)
        n = int(target.shape[0])
        if n * self.num_microbatches == self.batch_size:
            return loss
        return loss * (n * self.num_microbatches / self.batch_size)


def _param_key(stage: int, name: str) -> str:
    return f"stage{stage}.{name}"


@attrs.frozen(kw_only=True)
class _Reference:
    grads: tuple[Mapping[str, Any], ...]  # per step: key -> tensor or None
    losses: tuple[float, ...]


def _reference(workload: Workload, steps: int, learning_rate: float) -> _Reference:
    torch = require_torch()
    model = copy.deepcopy(torch.nn.Sequential(*workload.stages))
    keyed = [(_param_key(s, n), p) for s, st in enumerate(model) for n, p in st.named_parameters()]
    opt = torch.optim.SGD([p for _, p in keyed], lr=learning_rate) if learning_rate else None
    grads, losses = [], []
    for _ in range(steps):
        for _, p in keyed:
            p.grad = None
        loss = workload.loss_fn(model(workload.inputs), workload.target)
        loss.backward()
        grads.append({k: (None if p.grad is None else p.grad.detach().clone()) for k, p in keyed})
        losses.append(float(loss.detach()))
        if opt is not None:
            opt.step()
    return _Reference(grads=tuple(grads), losses=tuple(losses))


@attrs.frozen(kw_only=True)
class _Job:
    """Everything a worker needs (inherited by fork, pickled by spawn)."""

    plan: CsvPlan
    csv_path: str
    init_method: str
    log_dir: str
    stages: tuple[Any, ...]
    input_chunks: tuple[Any, ...]
    target_chunks: tuple[Any, ...]
    loss: Any
    reference: _Reference
    steps: int
    learning_rate: float
    scale_grads: bool
    timeout_s: float
    threads: int
    #: (stage, kind, micro-batch label) -> seconds each stage call lasts (emulated compute), or None
    emulate: Mapping[Action, float] | None = None


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (best effort)."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _pipeline_step(schedule: Any, stages: Sequence[Any], arg_chunks: list, target_chunks: list, losses: list) -> None:
    """One schedule step on pre-split micro-batches (what ``step()`` does
    after splitting the batch evenly; here the split is ours)."""
    step_microbatches(schedule, stages, arg_chunks, target_chunks, losses)


def _fit_recv_buffers(torch: Any, stages: Sequence[Any], sizes: Sequence[int]) -> None:
    """Give each micro-batch's receive buffers that micro-batch's size.

    PyTorch allocates every micro-batch's activation and gradient receive
    buffers with the shape it inferred from micro-batch 0; for micro-batches
    of different sizes, each buffer's batch dimension (0) is set to its
    micro-batch's size after that inference, before the first step runs.
    """
    for st in stages:
        for table in (st.args_recv_info, getattr(st, "grad_recv_info", {})):
            for m, n in enumerate(sizes):
                for info in table.get(m, ()):
                    buf = info.buffer
                    if info.is_root_arg or buf is None or buf.dim() == 0 or buf.shape[0] == n:
                        continue
                    info.buffer = torch.empty((n, *buf.shape[1:]), dtype=buf.dtype, device=buf.device).requires_grad_(
                        buf.requires_grad
                    )


def _clock_offsets(torch: Any, dist: Any, rank: int, n: int, rounds: int = 8) -> tuple[list[float], list[float]]:
    """Each rank's ``perf_counter`` minus rank 0's, measured by ping-pong with rank 0 (on rank 0; empty elsewhere).

    Of ``rounds`` round trips, the one with the least delay gives the
    offset: the other rank's reading minus the midpoint of rank 0's send and
    receive.
    """
    offsets, rtts = [0.0] * n, [0.0] * n
    buf = torch.zeros(1, dtype=torch.float64)
    for other in range(1, n):
        if rank == 0:
            best = (math.inf, 0.0)
            for _ in range(rounds):
                a = time.perf_counter()
                dist.send(buf, dst=other)
                dist.recv(buf, src=other)
                b = time.perf_counter()
                if b - a < best[0]:
                    best = (b - a, float(buf[0]) - (a + b) / 2)
            rtts[other], offsets[other] = best
        elif rank == other:
            for _ in range(rounds):
                dist.recv(buf, src=0)
                buf[0] = time.perf_counter()
                dist.send(buf, dst=0)
    return (offsets, rtts) if rank == 0 else ([], [])


def _describe(exc: BaseException) -> str:
    """``Type: first line`` of the innermost cause (PyTorch wraps stage errors)."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    lines = [x.strip() for x in str(root).splitlines() if x.strip()]
    return f"{type(root).__name__}: {lines[0]}" if lines else type(root).__name__


@attrs.frozen(kw_only=True)
class _WorkerReport:
    """What a rank sends its parent when its steps are done (it crosses the pipe: picklable)."""

    #: its rank, its stages, its step times and start-up time, as the result reports them
    ranked: RankReport
    #: per step, the loss of each micro-batch label (on the last stage's rank; None elsewhere)
    losses: tuple[tuple[float, ...], ...] | None
    #: parameter key -> largest absolute difference from the reference's gradient over the steps
    grad_diffs: Mapping[str, float]
    #: parameters the pipeline left without a gradient while the reference has one
    missing: tuple[str, ...]
    #: per step, the raw records :meth:`MeasuredTrace.from_reports` assembles (on this rank's clock)
    trace: tuple[Mapping[str, Any], ...]
    clock_offsets_s: tuple[float, ...]
    clock_rtt_s: tuple[float, ...]
    host: str


@attrs.frozen(kw_only=True)
class _WorkerFailure:
    """What a rank sends its parent when it raised: the phase it was in, the innermost error, when."""

    rank: int
    phase: str
    message: str
    traceback: str
    time: float


class _Phase:
    """Where a rank's process is (named when it fails); some phases are announced to the parent as they start
    (a plain string on the pipe), so that a rank that dies or hangs is reported with its phase."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.name = "starting"

    def enter(self, name: str, announce: bool = False) -> None:
        self.name = name
        if announce:
            self.conn.send(name)


def _stderr_to_log(log_dir: str, rank: int) -> None:
    """Send this process's stderr (fd 2, and whatever descriptor ``sys.stderr`` writes to) to ``rank{rank}.log``."""
    log = open(os.path.join(log_dir, f"rank{rank}.log"), "w")  # noqa: SIM115 - lives as long as the process
    targets = {2}
    try:
        targets.add(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    for fd in targets:
        os.dup2(log.fileno(), fd)


def _fold_grad_diffs(torch: Any, params: Sequence[tuple[str, Any]], reference: Mapping[str, Any],
                     diffs: dict[str, float], missing: set[str]) -> None:
    """Fold one step's gradients into ``diffs`` (per parameter, the largest absolute difference from the
    reference's gradient so far); a parameter without a gradient where the reference has one goes to
    ``missing``."""
    with torch.no_grad():
        for key, p in params:
            want = reference[key]
            if want is None:
                d = 0.0 if p.grad is None else float(p.grad.abs().max())
            elif p.grad is None:
                missing.add(key)
                continue
            else:
                d = float((p.grad - want).abs().max())
            diffs[key] = max(diffs.get(key, 0.0), d)


def _rank_steps(job: _Job, rank: int, tp: Any, phase: _Phase, started: float) -> _WorkerReport:
    """Rank ``rank``'s part of the run, in a process group already joined: build its stages in ascending
    order, load the plan into PyTorch's runtime, measure the clock offsets, run ``job.steps`` steps (each
    recorded and its gradients compared with the reference), then meet the other ranks at a barrier.
    ``started``: when the rank began to join the group (its start-up time counts from there)."""
    torch = tp.torch
    dist = torch.distributed
    plan = job.plan
    phase.enter("building its stages")
    mine = plan.stages_of(rank)
    modules = [job.stages[s] for s in mine]
    stages = [tp.PipelineStage(m, s, plan.num_stages, torch.device("cpu")) for s, m in zip(mine, modules)]
    schedule = tp.ScheduleRuntime(stages, plan.num_microbatches, loss_fn=job.loss, scale_grads=job.scale_grads)
    phase.enter("loading the plan")
    load_compute_csv(schedule, job.csv_path)
    phase.enter("measuring clock offsets")
    offsets, rtts = _clock_offsets(torch, dist, rank, plan.num_ranks)
    emulate = None
    if job.emulate is not None:
        emulate = {k: v for k, v in job.emulate.items() if k.stage in mine}
    instrument_stages(stages, emulate, rank=rank)
    recorder = ActionRecorder()
    trace: list[dict[str, Any]] = []
    params = [(_param_key(s, n), p) for s, m in zip(mine, modules) for n, p in m.named_parameters()]
    opt = torch.optim.SGD([p for _, p in params], lr=job.learning_rate) if job.learning_rate else None
    startup = time.perf_counter() - started
    args = [(c,) for c in job.input_chunks] if 0 in mine else [()] * plan.num_microbatches
    targets = list(job.target_chunks)
    sizes = [int(t.shape[0]) for t in targets]
    if len(set(sizes)) > 1:
        phase.enter("inferring shapes")
        infer_stage_shapes(schedule, stages, args[0], targets[0])
        _fit_recv_buffers(torch, stages, sizes)
    times: list[float] = []
    losses: list[tuple[float, ...]] = []
    diffs: dict[str, float] = {}
    missing: set[str] = set()
    for step in range(job.steps):
        phase.enter(f"step {step}", announce=True)
        for _, p in params:
            p.grad = None
        dist.barrier()
        mb_losses: list = []
        recorder.clear()
        t = time.perf_counter()
        with recording(recorder):
            _pipeline_step(schedule, stages, args, targets, mb_losses)
        t_end = time.perf_counter()
        times.append(t_end - t)
        trace.append({"span": (t, t_end), "actions": recorder.actions, "computes": recorder.computes})
        losses.append(tuple(float(x.detach()) for x in mb_losses))
        _fold_grad_diffs(torch, params, job.reference.grads[step], diffs, missing)
        if opt is not None:
            opt.step()
    phase.enter("finishing")
    dist.barrier()
    ranked = RankReport(rank=rank, stages=tuple(mine), step_times_s=tuple(times), startup_s=startup)
    return _WorkerReport(ranked=ranked,
                         losses=tuple(losses) if plan.num_stages - 1 in mine else None, grad_diffs=diffs,
                         missing=tuple(sorted(missing)), trace=tuple(trace), clock_offsets_s=tuple(offsets),
                         clock_rtt_s=tuple(rtts), host=socket.gethostname())


def _worker(job: _Job, rank: int, conn: Any) -> None:  # pragma: no cover - runs in a child process
    """The process of rank ``rank``: join the gloo group, run its part (:func:`_rank_steps`) and send the
    parent a :class:`_WorkerReport`, or a :class:`_WorkerFailure` naming the phase it failed in; then leave."""
    _die_with_parent()
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    _stderr_to_log(job.log_dir, rank)
    phase = _Phase(conn)
    try:
        tp = pipelining_internals()
        dist = tp.torch.distributed
        tp.torch.set_num_threads(job.threads)
        phase.enter("joining the process group", announce=True)
        started = time.perf_counter()
        dist.init_process_group(
            "gloo",
            init_method=job.init_method,
            rank=rank,
            world_size=job.plan.num_ranks,
            # a backstop only: the parent stops every process at its own deadline first
            timeout=timedelta(seconds=job.timeout_s + 30),
        )
        conn.send(_rank_steps(job, rank, tp, phase, started))
        dist.destroy_process_group()
    except BaseException as exc:  # report everything, then leave
        try:
            conn.send(_WorkerFailure(rank=rank, phase=phase.name, message=_describe(exc),
                                     traceback=traceback.format_exc(), time=time.time()))
        finally:
            os._exit(1)


# --------------------------------------------------------------------------
# The launcher
# --------------------------------------------------------------------------


def _signal_name(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _stop(processes: Sequence[Any], grace_s: float = 2.0) -> None:
    """Terminate every live process, then kill what is left; reap all."""
    for p in processes:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join(5.0)


def _launch(job: _Job, start_method: str, timeout_s: float) -> list[_WorkerReport]:
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context(start_method)
    n = job.plan.num_ranks
    readers, processes = [], []
    try:
        for rank in range(n):
            reader, writer = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(job, rank, writer), name=f"schedsearch-rank{rank}", daemon=True)
            with warnings.catch_warnings():
                # Python >= 3.12 warns on fork in a threaded process; the children only run torch
                warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
                p.start()
            writer.close()
            readers.append(reader)
            processes.append(p)
        deadline = time.monotonic() + timeout_s
        results: dict[int, _WorkerReport] = {}
        phases = {r: "starting" for r in range(n)}
        failures: list[tuple[float, int, str, str]] = []  # (time, rank, message, details)
        closed: set[int] = set()  # ranks whose pipe reached its end

        def read(rank: int) -> None:
            try:
                message = readers[rank].recv()
            except (EOFError, OSError):
                closed.add(rank)
                return
            if isinstance(message, str):  # the phase it enters
                phases[rank] = message
            elif isinstance(message, _WorkerReport):
                results[rank] = message
            else:
                failures.append((message.time, rank, f"rank {rank} failed ({message.phase}): {message.message}",
                                 message.traceback))

        def died(rank: int) -> None:
            while rank not in closed and readers[rank].poll():
                read(rank)
                if rank in results or any(f[1] == rank for f in failures):
                    return
            p = processes[rank]
            p.join(0.5)
            failures.append(
                (
                    # a death is the cause of what follows: order it first
                    -1.0,
                    rank,
                    f"rank {rank} {_signal_name(p.exitcode)} ({phases[rank]}) without reporting",
                    _tail(Path(job.log_dir) / f"rank{rank}.log"),
                )
            )

        while len(results) < n and not failures:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            pending = [r for r in range(n) if r not in results]
            objects = {readers[r]: ("read", r) for r in pending if r not in closed}
            objects.update({processes[r].sentinel: ("exit", r) for r in pending})
            for obj in wait(list(objects), timeout=remaining):
                what, rank = objects[obj]
                if rank in results:
                    continue
                if what == "read":
                    read(rank)
                elif rank not in results:
                    died(rank)
        if failures:
            # gather what the other ranks say for a moment, then name the first cause
            settle = time.monotonic() + 1.0
            while time.monotonic() < settle:
                live = [
                    r for r in range(n) if r not in results and r not in closed and not any(f[1] == r for f in failures)
                ]
                if not live:
                    break
                for obj in wait([readers[r] for r in live], timeout=max(0.0, settle - time.monotonic())):
                    read(readers.index(obj))
            failures.sort(key=lambda f: f[0])
            _, rank, message, details = failures[0]
            others = [r for r in range(n) if r != rank and r not in results]
            suffix = (
                f"; ranks {', '.join(map(str, others))} were stopped" if others else ""
            )
            raise ExecutionError(
                f"run failed: {message}{suffix}",
                rank=rank,
                details=tuple(f"rank {f[1]}: {f[2]}\n{f[3]}" for f in failures),
            )
        if len(results) < n:
            late = [r for r in range(n) if r not in results]
            where = "; ".join(f"rank {r}: {phases[r]}" for r in late)
            raise ExecutionError(
                f"run failed: ranks {', '.join(map(str, late))} did not finish within {timeout_s:g} s ({where}); "
                "every process was stopped",
                rank=None,
                details=tuple(f"rank {r}:\n{_tail(Path(job.log_dir) / f'rank{r}.log')}" for r in late),
            )
        return [results[r] for r in range(n)]
    finally:
        _stop(processes)
        for r in readers:
            r.close()


@attrs.frozen(kw_only=True)
class _Checked:
    """What :func:`run` runs, once every check at its door passed."""

    #: the plan as given (its micro-batch labels are the ones reported)
    plan: CsvPlan
    #: the plan PyTorch runs: its micro-batches relabelled in the last stage's forward order
    runnable: CsvPlan
    #: label ``k`` of ``runnable`` runs the plan's micro-batch ``order[k]``
    order: tuple[int, ...]
    workload: Workload
    microbatch_sizes: tuple[int, ...]
    #: the bytes each emulated stage sends (an emulated workload), else None
    emulated_bytes: tuple[int, ...] | None
    dtype: str
    tolerance: float

    @property
    def label(self) -> dict[int, int]:
        """The plan's micro-batch -> its label in ``runnable``."""
        return {m: k for k, m in enumerate(self.order)}


def _check_settings(steps: Any, start_method: Any, timeout_s: Any, problem: Problem | None,
                    schedule: Schedule | None, emulate: Any, prediction: Any = None) -> None:
    """The run's settings, alone and together (before the plan and the workload are read)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise PlanError(f"run: 'steps' must be an integer >= 1, got {steps!r}")
    if start_method not in START_METHODS:
        raise PlanError(f"run: 'start_method' must be one of {START_METHODS}, got {start_method!r}")
    if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise PlanError(f"run: 'timeout_s' must be > 0, got {timeout_s!r}")
    if (problem is None) != (schedule is None):
        raise PlanError("run: give 'problem' and 'schedule' together (the plan's placement problem and its schedule)")
    if not isinstance(emulate, bool):
        raise PlanError(f"run: 'emulate' must be True or False, got {emulate!r}")
    if emulate and problem is None:
        raise PlanError(
            "run: 'emulate' needs the planned durations: pass 'problem' and 'schedule' (or run a plan document, "
            "e.g. the plan.json that schedsearch plan writes)"
        )
    if prediction is not None and not isinstance(prediction, Prediction):
        raise PlanError(f"run: 'prediction' must be a Prediction, got {type(prediction).__name__}")
    if prediction is not None and problem is None:
        raise PlanError("run: a 'prediction' is compared with the run through the plan's 'problem' and 'schedule': "
                        "pass them too")
    if emulate and start_method != "fork":
        raise PlanError(f"run: an emulated run starts its processes with 'fork', got start_method {start_method!r}")


def _read_plan(plan: CsvPlan | str | os.PathLike, num_processes: int | None, num_microbatches: int | None,
               stage_to_rank: Sequence[int] | None) -> CsvPlan:
    """The plan (read from its file when a path), checked against the run's process count, micro-batch
    count and stage-to-rank map where given."""
    if not isinstance(plan, CsvPlan):
        return read_plan(plan, num_ranks=num_processes, num_microbatches=num_microbatches,
                         stage_to_rank=stage_to_rank)
    if num_processes is not None and num_processes != plan.num_ranks:
        raise PlanError(
            f"run: the plan has {plan.num_ranks} rows (one per rank) but the run uses {num_processes} processes"
        )
    if num_microbatches is not None and num_microbatches != plan.num_microbatches:
        raise PlanError(
            f"run: the plan runs {plan.num_microbatches} micro-batches, 'microbatch_sizes' gives {num_microbatches}"
        )
    if stage_to_rank is not None and tuple(stage_to_rank) != plan.stage_to_rank:
        raise PlanError(
            f"run: the stage-to-rank map {list(stage_to_rank)} differs from the plan's {list(plan.stage_to_rank)}"
        )
    return plan


def _check_workload(workload: Workload, plan: CsvPlan, microbatch_sizes: Sequence[int] | None) -> tuple[int, ...]:
    """The workload against the plan (its stage count, its batch); the micro-batch sizes."""
    if workload.num_stages != plan.num_stages:
        raise PlanError(
            f"run: the plan has {plan.num_stages} stages but the workload {workload.name or ''} is split into "
            f"{workload.num_stages}; split the model into {plan.num_stages} stages"
        )
    sizes = microbatch_split(workload.batch_size, plan.num_microbatches, microbatch_sizes)
    if int(workload.target.shape[0]) != workload.batch_size:
        raise PlanError(
            f"run: inputs hold {workload.batch_size} samples but the target {int(workload.target.shape[0])}"
        )
    return sizes


def _check_run(plan: CsvPlan | str | os.PathLike, workload: Workload | None, *, problem: Problem | None,
               schedule: Schedule | None, emulate: bool, emulate_max_bytes: int, num_processes: int | None,
               steps: int, microbatch_sizes: Sequence[int] | None, stage_to_rank: Sequence[int] | None,
               tolerance: float | None, timeout_s: float, start_method: str,
               schedule_plan: CsvPlan | None = None, prediction: Any = None) -> _Checked:
    """Every check of :func:`run` before anything starts, in one place: the settings, the workload (the
    emulated one made here), the plan against the run's counts, against the schedule it was written from
    (``schedule_plan``: that schedule's plan when the caller already holds it) and against PyTorch's own
    checks, the workload against the plan."""
    _check_settings(steps, start_method, timeout_s, problem, schedule, emulate, prediction)
    emulated_bytes = None
    if workload is None and emulate:
        workload, sizes_sent = emulated_workload(problem, max_bytes=emulate_max_bytes)
        emulated_bytes = sizes_sent.sent_bytes
    if not isinstance(workload, Workload):
        raise PlanError(f"run: 'workload' must be a Workload, got {type(workload).__name__}")
    plan = _read_plan(plan, num_processes, None if microbatch_sizes is None else len(microbatch_sizes),
                      stage_to_rank)
    if problem is not None:
        written = schedule_plan if schedule_plan is not None else plan_from_schedule(problem, schedule)
        if written.rows != plan.rows or written.stage_to_rank != plan.stage_to_rank:
            raise PlanError(
                f"run: the plan {plan.name!r} is not the one schedule {schedule.name!r} of problem {problem.name!r} "
                "writes (rows or stage-to-rank map differ)"
            )
        if emulate:
            seconds_per_unit(problem, "run (emulate)")
    # PyTorch keeps the last stage's losses in forward order and looks them up by
    # micro-batch index: run the plan with its micro-batches labelled in that order
    order = tuple(plan.forward_order(plan.num_stages - 1))
    label = {m: k for k, m in enumerate(order)}
    runnable = plan if list(order) == list(range(plan.num_microbatches)) else plan.relabelled(
        [label[m] for m in range(plan.num_microbatches)]
    )
    torch_check(runnable)
    sizes = _check_workload(workload, plan, microbatch_sizes)
    dtype = next((str(p.dtype).replace("torch.", "") for st in workload.stages for p in st.parameters()), "float64")
    tol = DEFAULT_TOLERANCE.get(dtype, 1e-5) if tolerance is None else float(tolerance)
    return _Checked(plan=plan, runnable=runnable, order=order, workload=workload, microbatch_sizes=sizes,
                    emulated_bytes=emulated_bytes, dtype=dtype, tolerance=tol)


def _result(checked: _Checked, reports: Sequence[_WorkerReport], reference: _Reference, *, problem: Problem | None,
            schedule: Schedule | None, steps: int, wall_time_s: float, start_method: str, scale_grads: bool,
            emulate: bool, prediction: Prediction | None = None) -> RunResult:
    """The ranks' reports assembled: the gradient differences, the losses under the plan's labels, the
    measured trace on one clock, the rows run out of order, and with a problem the comparison with the
    prediction."""
    plan, order, label = checked.plan, checked.order, checked.label
    diffs: dict[str, float] = {}
    missing: list[str] = []
    losses: tuple[tuple[float, ...], ...] = ()
    for rep in reports:
        diffs.update(rep.grad_diffs)
        missing.extend(rep.missing)
        if rep.losses is not None:
            # back to the plan's labels: the loss of label k is micro-batch order[k]'s
            losses = tuple(tuple(step[label[m]] for m in range(plan.num_microbatches)) for step in rep.losses)
    trace = MeasuredTrace.from_reports([rep.trace for rep in reports], reports[0].clock_offsets_s,
                                       reports[0].clock_rtt_s, relabel=order,
                                       one_host=len({rep.host for rep in reports}) == 1)
    rows = [[a for c in row for a in c.actions] for row in plan.rows]
    row_order = tuple(f"step {k}: {msg}" for k, st in enumerate(trace.steps) for msg in row_order_violations(rows, st))
    fidelity = None if problem is None else compare(problem, schedule, trace, prediction=prediction)
    return RunResult(
        plan=plan.to_dict(),
        num_processes=plan.num_ranks,
        num_stages=plan.num_stages,
        num_microbatches=plan.num_microbatches,
        microbatch_sizes=checked.microbatch_sizes,
        stage_to_rank=plan.stage_to_rank,
        steps=steps,
        ranks=tuple(rep.ranked for rep in reports),
        losses=losses,
        loss=tuple(sum(x) / plan.num_microbatches for x in losses),
        reference_loss=reference.losses,
        grad_diffs=tuple(sorted(diffs.items())),
        missing_grads=tuple(sorted(missing)),
        tolerance=checked.tolerance,
        wall_time_s=wall_time_s,
        start_method=start_method,
        dtype=checked.dtype,
        scale_grads=scale_grads,
        trace=trace,
        fidelity=fidelity,
        row_order=row_order,
        emulated=emulate,
        emulated_bytes=checked.emulated_bytes,
    )


# --------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------


def run(
    plan: CsvPlan | str | os.PathLike,
    workload: Workload | None = None,
    *,
    problem: Problem | None = None,
    schedule: Schedule | None = None,
    emulate: bool = False,
    emulate_max_bytes: int = DEFAULT_MAX_BYTES,
    num_processes: int | None = None,
    steps: int = 1,
    microbatch_sizes: Sequence[int] | None = None,
    stage_to_rank: Sequence[int] | None = None,
    learning_rate: float = 0.01,
    tolerance: float | None = None,
    timeout_s: float = 120.0,
    start_method: str = "fork",
    threads_per_process: int = 1,
    scale_grads: bool = True,
    prediction: Prediction | None = None,
    _schedule_plan: CsvPlan | None = None,
) -> RunResult:
    """Run ``steps`` training steps of ``workload`` under ``plan`` on one process per rank.

    Parameters
    ----------
    plan:
        A :class:`~schedsearch.runtime.plan.CsvPlan` or the path of a
        compute-only CSV (one row per rank).
    workload:
        The model split into the plan's stages, the batch and the loss
        (None with ``emulate``: the emulation's stages, see
        :func:`~schedsearch.runtime.emulate.emulated_workload`).
    problem, schedule:
        The placement problem and schedule the plan was written from (see
        :func:`~schedsearch.runtime.plan_from_schedule`; checked to give the
        plan's rows). With them the run is compared with the prediction
        (:attr:`RunResult.fidelity`: predicted and measured step time,
        action start errors, the difference by cause) and every step's
        measured schedule goes through the validator's order checks.
    emulate:
        Each stage call lasts its planned duration by sleeping (see
        :mod:`schedsearch.runtime.emulate`); needs ``problem`` and
        ``schedule`` and the ``fork`` start method.
    emulate_max_bytes:
        Largest activation an emulated stage sends per micro-batch.
    num_processes:
        Must equal the plan's rank count when given.
    steps:
        Training steps (each followed by an SGD update when
        ``learning_rate`` > 0, in the workers and in the reference alike).
    microbatch_sizes:
        Sizes of the micro-batches (summing to the batch size); default: an
        even split into the plan's micro-batch count.
    stage_to_rank:
        The placement's stage-to-rank map, when it travels with the CSV;
        checked against the CSV's rows.
    tolerance:
        Largest accepted absolute gradient difference; default by dtype
        (:data:`DEFAULT_TOLERANCE`).
    timeout_s:
        Bound on the whole run, from the first process started to the last
        report; then every process is stopped.
    start_method:
        ``"fork"`` (default, fast), ``"spawn"`` or ``"forkserver"`` (these
        pickle the workload: module classes and loss must be importable).
    threads_per_process:
        ``torch.set_num_threads`` in each worker.
    scale_grads:
        Passed to the runtime; ``False`` is a negative control (see the
        module docstring).
    prediction:
        The step time the plan is predicted to take and its parts (see
        :class:`~schedsearch.runtime.trace.Prediction`; a plan document
        records it: the plan table's makespan plus the calibrated cost per
        step); default: the schedule's makespan in the problem's time unit.
        Needs ``problem`` and ``schedule``.
    _schedule_plan:
        Internal (:func:`run_schedule`): the plan of ``schedule``, already
        written, so that it is not written a second time for the check.

    Returns
    -------
    RunResult
        Step times per rank, losses, gradient differences, the measured
        trace (:attr:`RunResult.trace`: every action on every rank, on one
        clock), whether each rank ran the plan's order, and with a problem
        the comparison with the prediction.

    Raises
    ------
    PlanError
        Before any process starts, when the plan cannot run (naming rank,
        action, stage, micro-batch) or does not fit the workload.
    ExecutionError
        When a rank raises, dies or times out (every process is stopped).
    """
    require_torch()
    checked = _check_run(plan, workload, problem=problem, schedule=schedule, emulate=emulate,
                         emulate_max_bytes=emulate_max_bytes, num_processes=num_processes, steps=steps,
                         microbatch_sizes=microbatch_sizes, stage_to_rank=stage_to_rank, tolerance=tolerance,
                         timeout_s=timeout_s, start_method=start_method, schedule_plan=_schedule_plan,
                         prediction=prediction)
    t0 = time.perf_counter()
    reference = _reference(checked.workload, steps, learning_rate)
    with tempfile.TemporaryDirectory(prefix="schedsearch-run-") as tmp:
        job = _job(checked, tmp, reference, steps=steps, learning_rate=learning_rate, scale_grads=scale_grads,
                   timeout_s=float(timeout_s), threads=threads_per_process,
                   emulate=None if not emulate else planned_seconds(problem, schedule))
        reports = _launch(job, start_method, float(timeout_s))
    return _result(checked, reports, reference, problem=problem, schedule=schedule, steps=steps,
                   wall_time_s=time.perf_counter() - t0, start_method=start_method, scale_grads=scale_grads,
                   emulate=emulate, prediction=prediction)


def _job(checked: _Checked, tmp: str, reference: _Reference, *, steps: int, learning_rate: float,
         scale_grads: bool, timeout_s: float, threads: int,
         emulate: Mapping[Action, float] | None) -> _Job:
    """What every worker gets: the runnable plan (also written as the CSV PyTorch loads, in ``tmp``), the
    rendezvous, the stages, the micro-batches' data in the runnable plan's labels, the size-weighted loss,
    the reference; ``emulate``: the planned seconds per compute action of an emulated run."""
    torch = require_torch()
    workload, runnable, order, label = checked.workload, checked.runnable, checked.order, checked.label
    inputs = torch.split(workload.inputs, list(checked.microbatch_sizes))
    targets = torch.split(workload.target, list(checked.microbatch_sizes))
    csv_path = Path(tmp) / "plan.csv"
    csv_path.write_text(runnable.text)
    return _Job(
        plan=runnable,
        csv_path=str(csv_path),
        init_method=f"file://{Path(tmp) / 'rendezvous'}",
        log_dir=tmp,
        stages=tuple(workload.stages),
        # label k runs the data of the plan's micro-batch order[k]
        input_chunks=tuple(inputs[m] for m in order),
        target_chunks=tuple(targets[m] for m in order),
        loss=SizeWeightedLoss(workload.loss_fn, runnable.num_microbatches, workload.batch_size),
        reference=reference,
        steps=steps,
        learning_rate=learning_rate,
        scale_grads=scale_grads,
        timeout_s=timeout_s,
        threads=threads,
        emulate=None if emulate is None else {attrs.evolve(a, microbatch=label[a.microbatch]): secs
                                              for a, secs in emulate.items()},
    )


def run_schedule(problem: Problem, schedule: Schedule, workload: Any = None, **kwargs: Any) -> RunResult:
    """:func:`run` the plan of ``schedule`` (see :func:`~schedsearch.runtime.plan_from_schedule`),
    compared with its prediction (``workload`` None with ``emulate=True``)."""
    plan = plan_from_schedule(problem, schedule)
    return run(plan, workload, problem=problem, schedule=schedule, _schedule_plan=plan, **kwargs)
