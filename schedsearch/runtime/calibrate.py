"""Calibrate the cost model on this machine: the point-to-point link and the runtime's overhead per action.

:func:`calibrate` measures what a :class:`~schedsearch.pipeline.Pipeline`
needs beside the stage times (which :func:`~schedsearch.runtime.profile.profile`
measures) and returns a :class:`~schedsearch.calibration.Calibration`:

* :func:`measure_link`: two processes joined in a gloo group (the
  runtime's backend on CPU, loopback) send tensors of several sizes back
  and forth with the point-to-point operations torch's pipeline runtime
  uses (``batch_isend_irecv``); a size's one-way time is half the median
  round trip; :func:`~schedsearch.calibration.fit_link` fits a latency and
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

from schedsearch.calibration import Calibration, LinkFit, fit_link
from schedsearch.errors import InvalidPipelineError
from schedsearch.pipeline import Pipeline
from schedsearch.problem import Problem
from schedsearch.runtime._ranks import run_ranks
from schedsearch.runtime._torch import pipelining_internals, require_torch
from schedsearch.schedule import Schedule

__all__ = ["DEFAULT_LINK_SIZES", "OverheadFit", "calibrate", "family_plan", "fit_overhead", "measure_link",
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
    times (the schedule's order re-timed, :func:`~schedsearch.real_ms.retime_ms`):
    the step time the model predicts for it.
    """
    from schedsearch.real_ms import real_times, retime_ms

    candidate, stages, units, problem, schedule = _family_problem(pipeline, family)
    makespan = retime_ms(schedule, real_times(pipeline, candidate, stages, problem, units))
    return problem, schedule, float(makespan)


def _family_problem(pipeline: Pipeline, family: str) -> tuple[Any, tuple[Any, ...], Any, Problem, Schedule]:
    from schedsearch.handcrafted import one_f_one_b, zb_h1
    from schedsearch.planner import Candidate, build_problem
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
    times = {f"stage {k} {f}": getattr(s, f) for k, s in enumerate(stages)
             for f in ("forward_ms", "backward_ms", "input_grad_ms", "weight_grad_ms") if getattr(s, f)}
    if not pipeline.p2p.free:
        times.update({f"stage {k} transfer": pipeline.p2p.transfer_ms(s.p2p_bytes) for k, s in enumerate(stages)})
    amounts = [a for s in stages for a in (s.activation_bytes, s.parameter_bytes)]
    units = choose_units(times, amounts, tolerance=pipeline.time_tolerance)
    problem = build_problem(pipeline, candidate, stages, units)
    return candidate, stages, units, problem, build(problem)


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
    from schedsearch.real_ms import real_times, retime_ms
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
        candidate, _, units, problem, schedule = _family_problem(base, "1F1B")
        plans[m] = (base, candidate, units, problem, schedule)
        small = build_workload("mlp:2x1", 2, batch_size=m, dtype="float32")
        measured[m] = 1e3 * run(plan_from_schedule(problem, schedule), small, steps=steps,
                                timeout_s=timeout_s).step_time_s

    def predict(m: int, o: float) -> float:
        # the plan's order (1F1B's does not depend on the times) re-timed with the overhead
        base, candidate, units, problem, schedule = plans[m]
        pipeline = attrs.evolve(base, action_overhead_ms=o)
        stages = pipeline.stages_for(2)[0]
        return float(retime_ms(schedule, real_times(pipeline, candidate, stages, problem, units)))

    return fit_overhead(measured, predict)


# ------------------------------------------------------------------ both
def calibrate(*, link_sizes: Sequence[int] = DEFAULT_LINK_SIZES, link_repeats: int = 20,
              overhead_microbatches: Sequence[int] = (4, 8, 16), overhead_steps: int = 11,
              timeout_s: float = 120.0) -> tuple[Calibration, OverheadFit]:
    """Measure the link (:func:`measure_link`) and the runtime's overhead (:func:`measure_overhead`) here.

    Returns the :class:`~schedsearch.calibration.Calibration` (link,
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

