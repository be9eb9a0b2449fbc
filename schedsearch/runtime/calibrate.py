"""Calibrate the cost model on this machine: the point-to-point link and the runtime's overhead per action.

:func:`calibrate` measures what a :class:`~schedsearch.plan.pipeline.Pipeline`
needs beside the stage times (which :func:`~schedsearch.runtime.profile.profile`
measures) and returns a :class:`~schedsearch.plan.calibration.Calibration`:

* :func:`measure_link`: two processes joined in a gloo group (the
  runtime's backend on CPU, loopback) send tensors of several sizes back
  and forth with the point-to-point operations torch's pipeline runtime
  uses (``batch_isend_irecv``); a size's one-way time is half the median
  round trip; :func:`~schedsearch.plan.calibration.fit_link` fits a latency and
  a bandwidth to them by least squares and reports the residual;
* :func:`measure_overhead`: torch's pipeline runtime runs 1F1B plans of
  near-empty actions (a model of two ``Linear(1, 1)`` stages, one sample
  per micro-batch) at several micro-batch counts; the model (the measured
  stage times, the link just fitted) predicts each plan's makespan
  ``p(M, o)`` for an overhead ``o`` per action, and ``(c, o)`` are the
  least-squares fit of ``measured(M) = c + p(M, o)`` (:func:`fit_overhead`),
  ``c`` being what a step costs once (its set-up, the gradient reduction).

What is measured is the machine as it is while measuring: on a machine
shared with other work, the overheads include waiting to be scheduled
again after a blocking receive, and move with the load.

Every process is stopped on success and on failure; a rank that fails or
does not finish within the time limit raises
:class:`~schedsearch.errors.ExecutionError`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from schedsearch.actions import COMPUTE_KINDS, Action, Kind
from schedsearch.plan.calibration import P2P, Calibration, LinkFit, fit_link
from schedsearch.errors import InvalidPipelineError
from schedsearch.plan.pipeline import Pipeline
from schedsearch.problem import Problem
from schedsearch.runtime._ranks import run_ranks
from schedsearch.runtime._torch import pipelining_internals, require_torch
from schedsearch.schedule import Schedule

__all__ = ["DEFAULT_LINK_SIZES", "OverheadFit", "RunCalibration", "calibrate", "calibrate_from_run",
           "calibration_from_trace", "family_plan", "fit_overhead", "measure_link",
           "measure_overhead"]

#: Tensor sizes (bytes) :func:`measure_link` times by default: 4 B to 4 MiB.
DEFAULT_LINK_SIZES = (4, 4 * 2**10, 64 * 2**10, 512 * 2**10, 2 * 2**20, 4 * 2**20)


# ------------------------------------------------------------------ the link
def _ping_pong(rank: int, torch: Any, dist: Any, sizes: Sequence[int], repeats: int,
               warmup: int) -> list[list[float]]:  # pragma: no cover - runs in a child process
    peer = 1 - rank
    out = []
    for size in sizes:
        buf = torch.zeros(max(1, size // 4), dtype=torch.float32)
        times = []
        for k in range(warmup + repeats):
            dist.barrier()
            t0 = time.perf_counter()
            if rank == 0:
                for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, peer)]):
                    work.wait()
                for work in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, peer)]):
                    work.wait()
            else:
                for work in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, peer)]):
                    work.wait()
                for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, peer)]):
                    work.wait()
            if k >= warmup:
                times.append(time.perf_counter() - t0)
        out.append(times)
    return out


def _positive_int(where: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidPipelineError(f"{where}: {field!r} must be an integer >= 1, got {value!r}")
    return value


def measure_link(sizes: Sequence[int] = DEFAULT_LINK_SIZES, *, repeats: int = 20, warmup: int = 3,
                 timeout_s: float = 120.0) -> LinkFit:
    """Time point-to-point transfers of ``sizes`` bytes between two gloo processes and fit latency and bandwidth.

    Each size is sent from rank 0 to rank 1 and back ``warmup + repeats``
    times (after a barrier each time); its one-way time is half the median
    round trip of the last ``repeats``. Sizes are rounded up to whole
    float32 elements (4 bytes).
    """
    sizes = [4 * max(1, -(-int(s) // 4)) for s in sizes]
    if len(set(sizes)) < 2 or any(s > 2**30 for s in sizes):
        raise InvalidPipelineError(f"measure_link: 'sizes' must give at least two sizes of at most 1 GiB, got {sizes}")
    _positive_int("measure_link", "repeats", repeats)
    pipelining_internals()  # torch present and usable
    rounds = run_ranks("measure_link", _ping_pong, 2, timeout_s, sizes, repeats, warmup)[0]
    samples = [(s, 1e3 * statistics.median(times) / 2) for s, times in zip(sizes, rounds)]
    return fit_link(samples)


# ------------------------------------------------------------------ a family's plan and its prediction
def family_plan(pipeline: Pipeline, family: str) -> tuple[Problem, Schedule, float]:
    """The published ``family`` schedule (``"1F1B"`` or ``"ZB-H1"``) of a one-stage-per-rank ``pipeline``.

    Returns its integer problem (as :func:`~schedsearch.plan` builds it),
    the schedule and its makespan in milliseconds of the pipeline's own
    times (the schedule's order re-timed, :func:`~schedsearch.plan.times.retime_ms`):
    the step time the model predicts for it.
    """
    from schedsearch.plan.times import retime_ms

    candidate, stages, units, times, schedule = _family_problem(pipeline, family)
    return times.problem, schedule, float(retime_ms(schedule, times))


def _family_problem(pipeline: Pipeline, family: str) -> tuple[Any, tuple[Any, ...], Any, Any, Schedule]:
    """(candidate, stages, units, its :class:`~schedsearch.plan.times.CandidateTimes`, the published schedule)."""
    from schedsearch.handcrafted import one_f_one_b, zb_h1
    from schedsearch.plan.planner import Candidate
    from schedsearch.plan.times import candidate_times, named_times
    from schedsearch.units import choose_units

    builders = {"1F1B": (False, one_f_one_b), "ZB-H1": (True, zb_h1)}
    if family not in builders:
        raise InvalidPipelineError(f"family_plan: 'family' must be one of {sorted(builders)}, got {family!r}")
    split, build = builders[family]
    candidate = Candidate(family="1f1b", split_backward=split)
    staged = pipeline.stages_for(pipeline.num_ranks)
    if staged is None:
        raise InvalidPipelineError(f"{pipeline}: {family} needs {pipeline.num_ranks} stages (one per rank)")
    stages = staged[0]
    if split and not all(s.has_split for s in stages):
        raise InvalidPipelineError(f"{pipeline}: {family} needs every stage's 'input_grad_ms' and 'weight_grad_ms'")
    amounts = [a for s in stages for a in (s.activation_bytes, s.parameter_bytes)]
    units = choose_units(named_times(pipeline, [stages]), amounts, tolerance=pipeline.time_tolerance)
    times = candidate_times(pipeline, candidate, stages, units)
    return candidate, stages, units, times, build(times.problem)


# ------------------------------------------------------------------ the runtime's overhead
@attrs.frozen(kw_only=True)
class OverheadFit:
    """The runtime's overhead per action and per step, and the runs it was fitted to.

    ``samples`` are ``(micro-batches, measured step ms, the model's
    makespan ms with the fitted overhead per action)``; ``residual_ms`` is
    the root mean square of ``measured - (step_ms + makespan)``.
    """

    action_ms: float
    step_ms: float
    residual_ms: float
    samples: tuple[tuple[int, float, float], ...]


def fit_overhead(measured: Mapping[int, float], predict: Callable[[int, float], float]) -> OverheadFit:
    """The overheads ``(o, c) >= 0`` minimising the squares of ``measured[M] - c - predict(M, o)``.

    ``measured`` maps a micro-batch count to a measured step time (ms);
    ``predict(M, o)`` is the model's makespan (ms) of the same plan with an
    overhead of ``o`` ms per action: a maximum over paths of sums of
    durations, so piecewise linear and non-decreasing in ``o``. For each
    ``o`` the best ``c`` is the mean residual (0 when negative); ``o`` is
    searched on a grid of 64 values from 0 to the largest measured time per
    micro-batch (every micro-batch runs at least one action on the path of a
    rank, so a larger ``o`` predicts more than measured), then refined by a
    golden-section search between the grid neighbours of the best.

    Examples
    --------
    >>> from schedsearch.runtime.calibrate import fit_overhead
    >>> predict = lambda m, o: 0.5 * m + max(2 * m * o, 3.0)       # a model: a maximum of linear pieces
    >>> truth = {m: 1.25 + predict(m, 0.2) for m in (4, 8, 16)}    # 1.25 ms per step, 0.2 ms per action
    >>> fit = fit_overhead(truth, predict)
    >>> round(fit.action_ms, 6), round(fit.step_ms, 6), fit.residual_ms < 1e-9
    (0.2, 1.25, True)
    """
    counts = sorted(measured)
    if len(counts) < 2:
        raise InvalidPipelineError(f"fit_overhead: needs step times at two micro-batch counts at least, got {counts}")
    for m in counts:
        y = measured[m]
        if not (isinstance(y, (int, float)) and math.isfinite(y) and y >= 0):
            raise InvalidPipelineError(f"fit_overhead: the step time at {m} micro-batches must be >= 0 ms, got {y!r}")

    def solve(o: float) -> tuple[float, float, list[float]]:
        pred = [predict(m, o) for m in counts]
        resid = [measured[m] - p for m, p in zip(counts, pred)]
        c = max(0.0, math.fsum(resid) / len(resid))
        return math.fsum((r - c) ** 2 for r in resid), c, pred

    top = max(measured[m] / m for m in counts)
    grid = [0.0] + [top * 2.0 ** (k / 4 - 15) for k in range(61)] + [top]
    grid = sorted(set(g for g in grid if g <= top))
    errors = [solve(o)[0] for o in grid]
    k = min(range(len(grid)), key=lambda i: (errors[i], i))
    lo, hi = grid[max(0, k - 1)], grid[min(len(grid) - 1, k + 1)]
    ratio = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f1, f2 = solve(x1)[0], solve(x2)[0]
    for _ in range(60):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - ratio * (hi - lo)
            f1 = solve(x1)[0]
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + ratio * (hi - lo)
            f2 = solve(x2)[0]
    best = min([(errors[k], grid[k]), (f1, x1), (f2, x2)])[1]
    sse, c, pred = solve(best)
    return OverheadFit(action_ms=best, step_ms=c, residual_ms=math.sqrt(sse / len(counts)),
                       samples=tuple((m, float(measured[m]), p) for m, p in zip(counts, pred)))


def measure_overhead(link: LinkFit | None = None, *, microbatches: Sequence[int] = (4, 8, 16), steps: int = 11,
                     timeout_s: float = 120.0) -> OverheadFit:
    """Run 1F1B plans of near-empty actions on torch's pipeline runtime and fit its overheads.

    The model: two stages of ``Linear(1, 1)`` (float32), one sample per
    micro-batch, its stage times profiled here, the transfers of ``link``
    (free when None). For each count in ``microbatches`` the plan runs
    ``steps`` steps (:func:`~schedsearch.runtime.run`; the step time is the
    median after the first); :func:`fit_overhead` fits the overheads per
    action and per step to them with the model's makespan of the same plan
    (:func:`family_plan`, the order re-timed with each overhead tried).
    """
    from schedsearch.plan.times import candidate_times, retime_ms
    from schedsearch.runtime.convert import plan_from_schedule
    from schedsearch.runtime.execute import run
    from schedsearch.runtime.models import build_workload
    from schedsearch.runtime.profile import profile

    counts = sorted({_positive_int("measure_overhead", "microbatches", m) for m in microbatches})
    _positive_int("measure_overhead", "steps", steps)
    if len(counts) < 2:
        raise InvalidPipelineError(f"measure_overhead: 'microbatches' must give two counts at least, got {counts}")
    workload = build_workload("mlp:2x1", 2, batch_size=max(counts), dtype="float32")
    prof = profile(workload.stages, workload.inputs, target=workload.target, loss_fn=workload.loss_fn, sizes=[1],
                   repeats=21, warmup=3)
    p2p = {} if link is None else {"p2p": {"latency_ms": link.latency_ms,
                                           "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s}}
    measured: dict[int, float] = {}
    plans: dict[int, tuple[Any, ...]] = {}
    for m in counts:
        base = Pipeline.from_profile(prof, num_ranks=2, num_microbatches=m, families=["1f1b"], **p2p)
        candidate, _, units, times, schedule = _family_problem(base, "1F1B")
        problem = times.problem
        plans[m] = (base, candidate, units, problem, schedule)
        small = build_workload("mlp:2x1", 2, batch_size=m, dtype="float32")
        measured[m] = 1e3 * run(plan_from_schedule(problem, schedule), small, steps=steps,
                                timeout_s=timeout_s).step_time_s

    def predict(m: int, o: float) -> float:
        # the plan's order (1F1B's does not depend on the times) re-timed with the overhead
        base, candidate, units, problem, schedule = plans[m]
        pipeline = attrs.evolve(base, action_overhead_ms=o)
        times = candidate_times(pipeline, candidate, pipeline.stages_for(2)[0], units)
        return float(retime_ms(schedule, times))

    return fit_overhead(measured, predict)


# ------------------------------------------------------------------ both
def calibrate(*, link_sizes: Sequence[int] = DEFAULT_LINK_SIZES, link_repeats: int = 20,
              overhead_microbatches: Sequence[int] = (4, 8, 16), overhead_steps: int = 11,
              timeout_s: float = 120.0) -> tuple[Calibration, OverheadFit]:
    """Measure the link (:func:`measure_link`) and the runtime's overhead (:func:`measure_overhead`) here.

    Returns the :class:`~schedsearch.plan.calibration.Calibration` (link,
    overhead per action and per step) and the
    overhead fit with its runs.
    """
    torch = require_torch("calibration")
    link = measure_link(link_sizes, repeats=link_repeats, timeout_s=timeout_s)
    overhead = measure_overhead(link, microbatches=overhead_microbatches, steps=overhead_steps, timeout_s=timeout_s)
    note = (f"torch {torch.__version__}, gloo on loopback, one thread per rank; the link fitted to {len(link.samples)} "
            f"sizes; the overheads fitted to 1F1B runs of near-empty actions at {[s[0] for s in overhead.samples]} "
            f"micro-batches (residual {1e3 * overhead.residual_ms:.1f} us)")
    return Calibration.from_fit(link, action_overhead_ms=overhead.action_ms, step_overhead_ms=overhead.step_ms,
                                backend="gloo", note=note), overhead



# ------------------------------------------------------------------ from a measured run
@attrs.frozen(kw_only=True)
class RunCalibration:
    """What a measured pipelined run says the model should be, and the pipeline that says it.

    ``pipeline`` is the pipeline given with each stage's ``forward_ms``,
    ``backward_ms``, ``input_grad_ms`` and ``weight_grad_ms`` as the run
    computed them (:func:`calibration_from_trace`), its ``p2p`` the measured
    transfer time, its ``action_overhead_ms`` the measured gap per
    action and its ``step_overhead_ms`` the cost per step; ``calibration``
    holds the link, the overheads per action and per step
    (:meth:`~schedsearch.plan.calibration.Calibration.step_ms` gives the
    step time to expect of a makespan). ``measured[(stage, kind)]`` is the stage
    call's time (ms; see :func:`calibration_from_trace`) and
    ``samples[(stage, kind)]`` how many calls it was read from; a kind the
    run did not compute (I and W in a 1F1B run, B in
    a ZB-H1 run) is the given pipeline's time scaled by the run's over the
    given of the kind it splits or joins, and is not in ``measured``.
    ``transfer_samples``, ``gap_samples`` and ``step_samples`` count the
    receives, gaps and steps read; ``transfer_measured`` is False when no
    action waited for its data (the transfer was then taken from the link
    given or the pipeline's); ``step_time_ms`` is the median step time
    read and ``matched`` the family whose plan the cost per step was matched
    to (None: the cost per step was read from the steps' ends).
    """

    pipeline: Pipeline
    calibration: Calibration
    measured: Mapping[tuple[int, str], float]
    samples: Mapping[tuple[int, str], int]
    transfer_ms: float
    transfer_measured: bool
    transfer_samples: int
    gap_samples: int
    step_samples: int
    step_time_ms: float = 0.0
    matched: str | None = None

    def table(self) -> str:
        """Each stage and kind's time in the run and how many calls it was read from; the transfer and overheads."""
        lines = [f"{'stage':<8}{'kind':<6}{'run ms':>10}{'calls':>7}"]
        for (stage, kind), ms in sorted(self.measured.items()):
            lines.append(f"{stage:<8}{kind:<6}{ms:>10.3f}{self.samples[(stage, kind)]:>7}")
        how = f"from {self.transfer_samples} waited receives" if self.transfer_measured else "not measured"
        fit = f"from {self.step_samples} steps" if self.matched is None else \
            f"matched to the {self.matched} steps' median {self.step_time_ms:.3f} ms"
        lines.append(f"transfer {self.transfer_ms:.3f} ms ({how}); overhead {self.calibration.action_overhead_ms:.3f} "
                     f"ms per action (from {self.gap_samples} gaps), {self.calibration.step_overhead_ms:.3f} ms per "
                     f"step ({fit})")
        return "\n".join(lines)


_KIND_FIELD = {"F": "forward_ms", "B": "backward_ms", "I": "input_grad_ms", "W": "weight_grad_ms"}


def _producer(action: Action, kinds: Mapping[int, set[str]]) -> Action | None:
    """The compute action whose output ``action`` receives (None when it takes nothing from another stage)."""
    stage, mb = action.stage, action.microbatch
    if action.kind is Kind.FORWARD:
        return Action(stage - 1, Kind.FORWARD, mb)
    if action.kind in (Kind.FULL_BACKWARD, Kind.BACKWARD_INPUT):
        return Action(stage + 1, "B" if "B" in kinds.get(stage + 1, set()) else "I", mb)
    return None


def calibration_from_trace(pipeline: Pipeline, trace: Any, *, warmup: int = 1, link: LinkFit | None = None,
                           family: str | None = None, note: str = "") -> RunCalibration:
    """Calibrate ``pipeline`` (one stage per rank) on a measured run of it: the run's own times.

    ``trace`` is a :class:`~schedsearch.runtime.trace.MeasuredTrace` of a
    run with stage ``k`` on rank ``k``, or a list of them (runs of the same
    pipeline, for example spread over time so that a passing load does not
    decide the calibration); of each, the steps after the first ``warmup``
    (all when there are no more) are read. Every figure is the
    median over those steps (over steps and ranks for the gap) of the
    step's mean: the mean keeps what a step really spends (a stall that
    hits a few calls of every step counts in full, as it does in the step
    time), the median over steps leaves out a step that the machine's other
    work slowed.

    * a stage's F, B, I, W: the duration of its stage calls of that kind
      (the computation alone: the wait for a receive happens before the
      call and is not in it);
    * the overhead per action ``o``: on each rank, for each stage call,
      the time since the rank's previous stage call ended (since the step
      began for the first) less, for an action that receives a tensor, the
      time from the action's start to its call (which holds the wait):
      the sends and receives posted between calls and the runtime's
      bookkeeping;
    * the transfer time: for each call whose action had started before
      the call it takes its input from ended (the receiver was certainly
      waiting for the data), the time from that call's end to this one's
      start; less ``o`` (the model puts one ``o`` between two calls on the
      path), at least 0. When no action waited, the transfer is ``link``'s
      for the stage's bytes, or the pipeline's own;
    * the overhead per step: the step time less the span from the first
      stage call's start to the last one's end; less ``o``, at least 0.

    ``family``: the published schedule the runs ran (``"1F1B"`` or
    ``"ZB-H1"``, as :func:`family_plan` makes it). Then the cost per step
    is what the median of the steps read takes beyond the calibrated
    pipeline's plan of that family (at least 0), so that the plan predicts
    its runs: it holds, beside the step's set-up and end, what the figures
    above leave out of a step's critical path (the slower calls of a step
    that the path picks up and a mean does not; a send that stalls while
    both ranks send at once).

    A kind the run did not compute keeps the pipeline's time scaled as the
    kind it splits or joins was measured (a 1F1B run gives I and W as the
    given split of the measured B; a ZB-H1 run gives B as the given B times
    the measured I + W over the given).

    Raises
    ------
    InvalidPipelineError
        When the pipeline does not hold one stage per rank, or the trace
        has another number of ranks or a stage it never computed.
    """
    steps = _steps_read(pipeline, trace, warmup)
    n = pipeline.num_ranks
    figures = _RunFigures()
    for st in steps:
        figures.read_step(st, n)
    missing = [k for k in range(n) if not any(s == k for s, _ in figures.durations)]
    if missing:
        raise InvalidPipelineError(f"calibration_from_trace: the trace computes nothing of stage(s) {missing}")

    overhead = statistics.median(figures.gaps) if figures.gaps else 0.0
    measured = {key: statistics.median(ds) for key, ds in figures.durations.items()}
    stages = _measured_stages(pipeline, measured)
    transfer, p2p, fit = _measured_link(pipeline, figures.waited, overhead, link)
    latency, bandwidth, residual, samples = fit
    step = max(0.0, statistics.median(figures.step_rest) - overhead) if figures.step_rest else 0.0
    calibrated = attrs.evolve(pipeline, stages=tuple(stages), p2p=p2p, action_overhead_ms=overhead)
    measured_step = statistics.median(1e3 * st.step_time_s for st in steps)
    if family is not None:
        step = max(0.0, measured_step - family_plan(calibrated, family)[2])
    calibrated = attrs.evolve(calibrated, step_overhead_ms=step)  # a run's prediction adds it to the makespan
    calibration = Calibration(latency_ms=latency, bandwidth_bytes_per_s=bandwidth, action_overhead_ms=overhead,
                              step_overhead_ms=step, residual_ms=residual, samples=samples, backend="gloo",
                              note=note or f"from a measured run: medians over {len(steps)} step(s)")
    return RunCalibration(pipeline=calibrated, calibration=calibration, measured=measured,
                          samples=figures.counts, transfer_ms=transfer,
                          transfer_measured=bool(figures.waited), transfer_samples=figures.waited_read,
                          gap_samples=figures.gaps_read, step_samples=len(figures.step_rest),
                          step_time_ms=measured_step, matched=family)


def _steps_read(pipeline: Pipeline, trace: Any, warmup: int) -> list[Any]:
    """The steps :func:`calibration_from_trace` reads (those after ``warmup`` of each trace, all when there
    are no more), the pipeline and the traces checked."""
    from schedsearch.runtime.trace import MeasuredTrace

    if not isinstance(pipeline, Pipeline):
        raise InvalidPipelineError(f"calibration_from_trace: needs a Pipeline, got {type(pipeline).__name__}")
    traces = [trace] if isinstance(trace, MeasuredTrace) else list(trace) if isinstance(trace, (list, tuple)) else None
    if not traces or not all(isinstance(t, MeasuredTrace) for t in traces):
        raise InvalidPipelineError(f"calibration_from_trace: needs a MeasuredTrace or a list of them, got "
                                   f"{type(trace).__name__}")
    n = pipeline.num_ranks
    if len(pipeline.stages) != n:
        raise InvalidPipelineError(f"{pipeline}: calibrating from a run needs one stage per rank, got "
                                   f"{len(pipeline.stages)} stages on {n} ranks")
    steps = []
    for t in traces:
        if t.num_ranks != n:
            raise InvalidPipelineError(f"calibration_from_trace: the trace has {t.num_ranks} ranks, the pipeline {n}")
        if not t.steps:
            raise InvalidPipelineError("calibration_from_trace: the trace has no step")
        steps.extend(t.steps[warmup:] if len(t.steps) > warmup else t.steps)
    return steps


@attrs.define
class _RunFigures:
    """What :func:`calibration_from_trace` reads of each step (per step, the means it takes medians of)."""

    #: per stage and kind: each step's mean call (ms)
    durations: dict[tuple[int, str], list[float]] = attrs.field(factory=dict)
    #: per step and rank: the mean gap per call (ms)
    gaps: list[float] = attrs.field(factory=list)
    #: per step: the mean (consumer call start - producer call end) of waited receives (ms)
    waited: list[float] = attrs.field(factory=list)
    #: per step: the step time less the span of its stage calls (ms)
    step_rest: list[float] = attrs.field(factory=list)
    #: per stage and kind: the calls read
    counts: dict[tuple[int, str], int] = attrs.field(factory=dict)
    gaps_read: int = 0
    waited_read: int = 0

    def read_step(self, st: Any, n: int) -> None:
        """Add step ``st`` (of ``n`` ranks): its calls' durations, its gaps per rank, its waited receives,
        the rest of its step time."""

        kinds: dict[int, set[str]] = {}
        for c in st.computes:
            kinds.setdefault(c.stage, set()).add(c.kind)
        calls = {c.action: c for c in st.computes}
        step_calls: dict[tuple[int, str], list[float]] = {}
        step_waited: list[float] = []
        for r in range(n):
            events, computes = st.on_rank(r)
            actions = [e for e in events if e.kind in COMPUTE_KINDS]
            prev_end = st.rank_spans[r][0]
            rank_gaps = []
            for c in sorted(computes, key=lambda c: c.start_s):
                if c.kind not in COMPUTE_KINDS:
                    continue
                step_calls.setdefault((c.stage, c.kind), []).append(1e3 * (c.end_s - c.start_s))
                action = next((e for e in actions if e.start_s <= c.start_s and c.end_s <= e.end_s), None)
                source = _producer(c.action, kinds)
                receives = source is not None and 0 <= source.stage < n and source.stage != c.stage and action is not None
                wait = c.start_s - action.start_s if receives else 0.0  # type: ignore[union-attr]
                rank_gaps.append(1e3 * max(0.0, c.start_s - prev_end - wait))
                prev_end = c.end_s
                producer = calls.get(source) if receives else None  # type: ignore[arg-type]
                if producer is not None and action.start_s < producer.end_s:  # type: ignore[union-attr]
                    step_waited.append(1e3 * (c.start_s - producer.end_s))
            if rank_gaps:
                self.gaps.append(math.fsum(rank_gaps) / len(rank_gaps))
                self.gaps_read += len(rank_gaps)
        for key, ds in step_calls.items():
            self.durations.setdefault(key, []).append(math.fsum(ds) / len(ds))
            self.counts[key] = self.counts.get(key, 0) + len(ds)
        if step_waited:
            self.waited.append(math.fsum(step_waited) / len(step_waited))
            self.waited_read += len(step_waited)
        if st.computes:
            span = max(c.end_s for c in st.computes) - min(c.start_s for c in st.computes)
            self.step_rest.append(1e3 * (st.step_time_s - span))


def _measured_stages(pipeline: Pipeline, measured: Mapping[tuple[int, str], float]) -> list[Any]:
    """The pipeline's stages with their measured times; a kind not run keeps the pipeline's time scaled as
    the kind it splits or joins was measured."""
    stages = []
    for k, stage in enumerate(pipeline.stages):
        times = {_KIND_FIELD[kind]: ms for (s, kind), ms in measured.items() if s == k}
        if "backward_ms" not in times and "input_grad_ms" in times and "weight_grad_ms" in times:
            split_given = (stage.input_grad_ms or 0.0) + (stage.weight_grad_ms or 0.0)
            scale = (times["input_grad_ms"] + times["weight_grad_ms"]) / split_given if split_given else 1.0
            times["backward_ms"] = stage.backward_ms * scale if split_given else \
                times["input_grad_ms"] + times["weight_grad_ms"]
        if "backward_ms" in times and stage.has_split and not ("input_grad_ms" in times and "weight_grad_ms" in times):
            scale = times["backward_ms"] / stage.backward_ms if stage.backward_ms else 1.0
            times.setdefault("input_grad_ms", stage.input_grad_ms * scale)  # type: ignore[operator]
            times.setdefault("weight_grad_ms", stage.weight_grad_ms * scale)  # type: ignore[operator]
        if "forward_ms" not in times or "backward_ms" not in times:
            raise InvalidPipelineError(f"calibration_from_trace: stage {k} ({stage.name!r}) was not run forward and "
                                       f"backward (measured kinds {sorted(kk for s, kk in measured if s == k)})")
        stages.append(attrs.evolve(stage, **times))
    return stages


def _measured_link(pipeline: Pipeline, waited: Sequence[float], overhead: float,
                   link: LinkFit | None) -> tuple[float, Any, tuple[float, int | None, float, tuple]]:
    """The transfer time, the calibrated pipeline's link and the calibration's ``(latency, bandwidth,
    residual, samples)``: the waited receives' median less the overhead when a receive waited, else
    ``link``'s time for the stage's bytes, else the pipeline's own."""
    if waited:
        transfer = max(0.0, statistics.median(waited) - overhead)
        return transfer, P2P(time_ms=transfer), (transfer, None, 0.0, ())
    if link is not None:
        transfer = link.time_ms(pipeline.stages[0].p2p_bytes)
        p2p = P2P(latency_ms=link.latency_ms, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s)
        return transfer, p2p, (link.latency_ms, link.bandwidth_bytes_per_s, link.residual_ms, link.samples)
    transfer = pipeline.p2p.transfer_ms(pipeline.stages[0].p2p_bytes)
    return transfer, pipeline.p2p, (transfer, None, 0.0, ())


def calibrate_from_run(pipeline: Pipeline, workload: Any, *, family: str = "1F1B", steps: int = 10,
                       warmup: int = 2, runs: int = 1, link: LinkFit | None = None, timeout_s: float = 300.0,
                       threads_per_process: int = 1) -> tuple[RunCalibration, list[Any]]:
    """Run ``workload`` pipelined under ``pipeline``'s ``family`` plan and calibrate the pipeline on what it measured.

    ``pipeline`` holds one stage per rank (as profiled:
    :meth:`~schedsearch.plan.pipeline.Pipeline.from_profile`); ``workload`` is
    the model split into those stages
    (:func:`~schedsearch.runtime.build_workload`, its batch ``pipeline.num_microbatches``
    micro-batches). The published ``family`` schedule (``"1F1B"``, the
    default, or ``"ZB-H1"``, which computes I and W apart) runs ``steps``
    steps on torch's pipeline runtime (:func:`~schedsearch.runtime.run`,
    one process per rank, ``threads_per_process`` threads each), ``runs``
    times; the measured traces give the calibration
    (:func:`calibration_from_trace`, the first ``warmup`` steps of each
    left out). Returns it and the runs'
    :class:`~schedsearch.runtime.RunResult` (the plan's prediction against
    each run, gradients checked).

    The stage times are those of the pipelined run, on this machine as
    loaded while it ran: the compute of two ranks sharing the machine's
    memory and cores, not of one stage profiled alone.
    """
    from schedsearch.runtime.execute import run_schedule

    if not isinstance(pipeline, Pipeline):
        raise InvalidPipelineError(f"calibrate_from_run: needs a Pipeline, got {type(pipeline).__name__}")
    _positive_int("calibrate_from_run", "steps", steps)
    _positive_int("calibrate_from_run", "runs", runs)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup < steps:
        raise InvalidPipelineError(f"calibrate_from_run: 'warmup' must be an integer from 0 to steps - 1 = "
                                   f"{steps - 1}, got {warmup!r}")
    if len(pipeline.stages) != pipeline.num_ranks:
        raise InvalidPipelineError(f"{pipeline}: calibrating from a run needs one stage per rank, got "
                                   f"{len(pipeline.stages)} stages on {pipeline.num_ranks} ranks")
    num_stages = len(getattr(workload, "stages", ()))
    if num_stages != pipeline.num_ranks:
        raise InvalidPipelineError(f"calibrate_from_run: the workload has {num_stages} stages, the pipeline "
                                   f"{pipeline.num_ranks}")
    problem, schedule, _ = family_plan(pipeline, family)
    results = [run_schedule(problem, schedule, workload, steps=steps, timeout_s=timeout_s,
                            threads_per_process=threads_per_process) for _ in range(runs)]
    torch = require_torch("calibration")
    note = (f"torch {torch.__version__}, gloo, {threads_per_process} thread(s) per rank; from {runs} {family} run(s) "
            f"of {steps} step(s) of {pipeline.num_microbatches} micro-batches (the first {warmup} left out)")
    traces = [r.trace for r in results]
    return calibration_from_trace(pipeline, traces, warmup=warmup, link=link, family=family, note=note), results
