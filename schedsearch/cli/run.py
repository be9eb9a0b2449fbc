"""``schedsearch run PLAN``: execute a plan with PyTorch's pipeline runtime and check the gradients.

PLAN is a compute-only CSV (one row per rank, as PyTorch's
``_PipelineScheduleRuntime._load_csv`` reads it), a plan document
(``schedsearch.plan`` JSON with problem and schedule, e.g. from
``schedsearch reproduce --out``), which is exported to the CSV first, or
a folder that ``schedsearch plan --out`` wrote (its ``plan.json``).
The plan is checked before anything starts (this library's checks, then
PyTorch's own); ``--check-only`` stops there and needs no torch.

PLAN may also be a search result (``NAME.result.json``); ``run``,
``report`` and ``export`` read the same plans, and a file of another kind
(a pipeline description, a problem document) is refused naming what it is
and what to do with it.

The model of a real-compute run is the one the plan's pipeline was
profiled from (its ``model_spec``, which ``schedsearch profile`` records),
so that the prediction is of the model that runs. A plan that names none,
and a CSV, need ``--model``; a ``--model`` that differs from the recorded
one is refused (export the schedule as a CSV to run it on another model).

Running needs the optional extra ``schedsearch[torch]``: one process per
rank (gloo on loopback, rendezvous through a file in a temporary
directory) trains the model for ``--steps`` steps and every gradient is
compared with a one-process reference step. Every action on every rank is
timed on one clock; each rank's order is checked against the plan's. With
a plan document, each step after the first is compared with the plan's
prediction (the plan table's makespan, plus the cost per step a
calibration measured when the pipeline was calibrated; ``run.json``'s
``prediction`` names the parts; with ``--emulate``, the problem's rounded
makespan, which the emulated actions sleep): predicted and measured step time, their ratio, the error of
the actions' start times and the difference by cause (compute,
communication, waiting on a receive, runtime overhead), and the measured
schedule goes through the validator's order checks. ``--emulate`` makes
every compute action sleep its planned duration (no core used) while the
runtime still orders, sends and receives real tensors: the runtime's own
behaviour, measured at many ranks on a small machine. The result
(timings, losses, gradient check, predicted against measured) is written
to ``--out DIR`` (default ``out``; ``''`` writes nothing) as ``run.json``,
with ``trace.measured.json`` (the median step's measured actions, a
Chrome/Perfetto trace; for a plan document with the prediction beside them
as a second process), and for a plan document ``trace.predicted.json``
and ``overlay.png`` (the measured Gantt over the predicted one). Exit status: 0 when every
gradient is equal within the tolerance, 1 when not, 2 on an error (a plan
that cannot run, a rank that fails or times out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from schedsearch.cli._common import add_out_argument, add_retired_flag
from schedsearch.cli._inputs import PLAN_INPUTS, InputKind, open_input, plan_of
from schedsearch.errors import FormatError, PlanError, SchedSearchError, UnsupportedFeatureError
from schedsearch.runtime.emulate import DEFAULT_MAX_BYTES
from schedsearch.runtime import (
    DEFAULT_TOLERANCE,
    CsvPlan,
    ModelSpec,
    build_workload,
    parse_model_spec,
    parse_plan,
    plan_from_schedule,
    run as run_plan,
    torch_available,
    torch_check,
)

__all__ = ["add_parser", "run", "load_plan", "int_list", "OUT_NAME", "MEASURED_TRACE", "PREDICTED_TRACE",
           "OVERLAY"]

#: what ``run`` reads: a plan folder, plan document or search result (as ``report`` and ``export``), or a CSV
RUN_INPUTS = (*PLAN_INPUTS, InputKind.CSV)

#: the file ``--out DIR`` holds: the run's result (timings, losses, gradient check, predicted against measured)
OUT_NAME = "run.json"
#: the median step's measured actions on every rank (Chrome / Perfetto trace)
MEASURED_TRACE = "trace.measured.json"
#: the plan's prediction (Chrome / Perfetto trace; plan documents only)
PREDICTED_TRACE = "trace.predicted.json"
#: the measured Gantt chart over the predicted one (plan documents only, with matplotlib)
OVERLAY = "overlay.png"


def int_list(text: str) -> list[int]:
    """``"0,1,2,3"`` -> ``[0, 1, 2, 3]`` (argparse type)."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        help="execute a plan (PyTorch CSV or plan JSON) on PyTorch processes and check the gradients",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", type=Path, help="compute-only CSV, plan document (JSON), search result (NAME.result.json), "
                   "or a folder schedsearch plan wrote (its plan.json)")
    p.add_argument("--model", default=None, help="model spec: mlp:LAYERSxWIDTH or transformer:LAYERSxWIDTH, split "
                   "evenly into the plan's stages (default: the model the plan's pipeline was profiled from; a plan "
                   "that records none, and a CSV, need it; one that differs from the recorded model is refused)")
    p.add_argument("--processes", type=int, help="processes (must equal the plan's rows)")
    p.add_argument("--steps", type=int, default=1, help="training steps (default 1)")
    p.add_argument("--microbatches", type=int, help="micro-batches of the run (default: the plan's)")
    p.add_argument("--batch-size", type=int, help="samples per step (default: 4 per micro-batch)")
    p.add_argument("--microbatch-sizes", type=int_list, help="sizes of the micro-batches, e.g. 4,4,2 (default: even)")
    p.add_argument("--stage-map", type=int_list, help="rank of each stage, e.g. 0,1,2,3,3,2,1,0 (checked against the CSV)")
    p.add_argument("--dtype", choices=sorted(DEFAULT_TOLERANCE), default="float64", help="parameter dtype (default float64)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate between steps (default 0.01)")
    p.add_argument("--tolerance", type=float, help="largest accepted gradient difference (default by dtype)")
    p.add_argument("--timeout", type=float, default=120.0, help="bound on the whole run in seconds (default 120)")
    p.add_argument("--start-method", choices=("fork", "spawn", "forkserver"), default="fork",
                   help="process start method (default fork)")
    p.add_argument("--seed", type=int, default=0, help="model and batch seed (default 0)")
    p.add_argument("--emulate", action="store_true", help="each compute action sleeps its planned duration (plan "
                   "documents: the problem's times); the runtime still orders, sends and receives real tensors")
    p.add_argument("--emulate-max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                   help=f"largest activation an emulated stage sends per micro-batch (default {DEFAULT_MAX_BYTES})")
    p.add_argument("--check-only", action="store_true", help="check the plan and stop (no torch needed)")
    add_out_argument(p, f"the run's result as JSON ({OUT_NAME}; not with --check-only)")
    add_retired_flag(p, "--json", f"--out DIR (writes DIR/{OUT_NAME}; --out '' writes nothing)")
    p.set_defaults(func=run)
    return p


def load_plan(args: argparse.Namespace) -> CsvPlan:
    """Read the plan named on the command line and run this library's checks."""
    return load_plan_document(args)[0]


def load_plan_document(args: argparse.Namespace) -> tuple[CsvPlan, Any, Any]:
    """The plan named on the command line, checked, with its problem and schedule (None for a CSV)."""
    return _load_plan(args)[:3]


def _load_plan(args: argparse.Namespace) -> tuple[CsvPlan, Any, Any, Any, dict[str, Any]]:
    """:func:`load_plan_document`, the prediction the plan document records (None for a CSV, or a document
    without one: then the schedule's makespan in its problem's unit is the prediction) and its metadata
    (``{}`` for a CSV)."""
    inp = open_input(args.plan, "run", RUN_INPUTS)
    num_mb = args.microbatches
    if args.microbatch_sizes is not None:
        if num_mb is not None and num_mb != len(args.microbatch_sizes):
            raise PlanError(
                f"run: --microbatches {num_mb} but --microbatch-sizes gives {len(args.microbatch_sizes)} sizes"
            )
        num_mb = len(args.microbatch_sizes)
    if inp.syntax in ("json", "toml"):
        from schedsearch.runtime.trace import Prediction

        problem, schedule, meta = plan_of(inp)
        prediction = Prediction.from_plan_document(meta, f"run: plan document {str(inp.path)!r}")
        plan = plan_from_schedule(problem, schedule, name=inp.path.name)
        if num_mb is not None and num_mb != plan.num_microbatches:
            raise PlanError(f"run: the plan runs {plan.num_microbatches} micro-batches, the run asks for {num_mb}")
        if args.processes is not None and args.processes != plan.num_ranks:
            raise PlanError(f"run: the plan has {plan.num_ranks} ranks but --processes is {args.processes}")
        if args.stage_map is not None and tuple(args.stage_map) != plan.stage_to_rank:
            raise PlanError(
                f"run: --stage-map {args.stage_map} differs from the placement's {list(plan.stage_to_rank)}"
            )
        return plan, problem, schedule, prediction, meta
    if getattr(args, "emulate", False):
        raise PlanError(
            f"run: --emulate needs the planned durations, which a CSV does not hold: run the plan document "
            f"(plan.json, or the folder schedsearch plan --out wrote) instead of {str(inp.given)!r}"
        )
    plan = parse_plan(inp.text, num_ranks=args.processes, num_microbatches=num_mb, stage_to_rank=args.stage_map,
                      name=inp.path.name)
    return plan, None, None, None, {}


def model_to_run(given: str | None, meta: dict[str, Any], where: str) -> ModelSpec:
    """The model a real-compute run builds: the one the plan records (``meta['pipeline']['model_spec']``, what
    ``schedsearch profile`` measured), or ``--model`` (``given``) when the plan records none.

    A ``--model`` that differs from the recorded one is refused: the plan's times and its prediction are of
    the recorded model. A plan that records none needs ``--model``.
    """
    pipeline = meta.get("pipeline")
    recorded = pipeline.get("model_spec") if isinstance(pipeline, dict) else None
    if recorded is not None:
        try:
            spec = parse_model_spec(recorded)
        except SchedSearchError as exc:
            raise FormatError(f"{where}: 'meta.pipeline.model_spec': {exc}") from None
        if given is not None and parse_model_spec(given) != spec:
            raise PlanError(
                f"run: --model {given} differs from the model the plan was profiled from ({spec}): the plan's "
                f"times and its prediction are of {spec}; leave out --model to run {spec}, or export the schedule "
                f"(schedsearch export PLAN --format csv) and run that CSV with --model {given}")
        return spec
    if given is not None:
        return parse_model_spec(given)
    if not meta:
        why = "a compute-only CSV names none"
    elif "pipeline" in meta:
        why = "its pipeline description has no model_spec; schedsearch profile records the model it measured"
    else:
        why = "it records no pipeline description"
    raise PlanError(f"run: {where} names no model to run ({why}): pass --model KIND:LAYERSxWIDTH, e.g. --model "
                    f"mlp:8x64{'' if not meta else ', or --emulate to sleep the planned times'}")


def run(args: argparse.Namespace) -> int:
    if args.model is not None:
        parse_model_spec(args.model)  # a malformed --model is refused before anything is read
    if args.emulate and args.microbatch_sizes is not None:
        raise PlanError("run: --emulate runs one sample per micro-batch; leave out --microbatch-sizes")
    plan, problem, schedule, prediction, meta = _load_plan(args)
    print(f"plan: {plan}")
    if args.check_only:
        if torch_available():
            torch_check(plan)
            print("checks: this library's and PyTorch's (_validate_schedule, _add_send_recv) pass")
        else:
            print("checks: this library's pass (PyTorch is not installed: its own checks were skipped)")
        return 0
    sizes = args.microbatch_sizes
    if args.emulate:
        workload = None
        print(f"model: emulated (each compute action sleeps its planned duration; activations up to "
              f"{args.emulate_max_bytes} bytes)")
    else:
        spec = model_to_run(args.model, meta, repr(str(args.plan)))
        batch = args.batch_size if args.batch_size is not None else (sum(sizes) if sizes else 4 * plan.num_microbatches)
        workload = build_workload(spec, plan.num_stages, batch_size=batch, dtype=args.dtype, seed=args.seed)
        print(f"model: {workload}{' (the model the plan was profiled from)' if args.model is None else ''}")
    result = run_plan(
        plan,
        workload,
        problem=problem,
        schedule=schedule,
        emulate=args.emulate,
        emulate_max_bytes=args.emulate_max_bytes,
        steps=args.steps,
        microbatch_sizes=sizes,
        learning_rate=args.lr,
        tolerance=args.tolerance,
        timeout_s=args.timeout,
        start_method=args.start_method,
        # an emulated run sleeps the problem's rounded times and has no step overhead of the real runtime's
        prediction=None if args.emulate else prediction,
    )
    print(f"micro-batch sizes: {list(result.microbatch_sizes)}")
    print(f"{'rank':>4}  {'stages':<10} {'startup ms':>10}  step times ms")
    for r in result.ranks:
        times = " ".join(f"{1e3 * t:.1f}" for t in r.step_times_s)
        print(f"{r.rank:>4}  {','.join(map(str, r.stages)):<10} {1e3 * r.startup_s:>10.1f}  {times}")
    for k, (loss, ref) in enumerate(zip(result.loss, result.reference_loss)):
        print(f"step {k}: loss {loss:.10g} (one-process reference {ref:.10g})")
    _print_fidelity(result)
    print(f"result: {result}")
    if args.out:
        for path in write_run_outputs(result, args.out, problem, schedule):
            print(f"wrote {path}")
    return 0 if result.grads_equal else 1


def _print_fidelity(result: Any) -> None:
    for msg in result.row_order:
        print(f"order: {msg}")
    fid = result.fidelity
    if fid is None:
        print("predicted against measured: needs the plan document (the CSV holds no planned times)")
        return
    print(f"{'step':>4}  {'predicted ms':>12} {'measured ms':>11} {'ratio':>6}  {'start error ms (median, p95)':>28}"
          f"  {'compute':>8} {'comm':>8} {'recv wait':>9} {'overhead':>8}  (ms, measured less planned, rank)")
    for s in fid.steps:
        b = s.breakdown
        print(f"{s.step:>4}  {1e3 * s.predicted_s:>12.2f} {1e3 * s.measured_s:>11.2f} {s.ratio:>6.3f}  "
              f"{1e3 * s.start_error_median_s:>13.2f}, {1e3 * s.start_error_p95_s:>12.2f}  "
              f"{1e3 * b.compute_s:>+8.2f} {1e3 * b.communication_s:>+8.2f} {1e3 * b.receive_wait_s:>+9.2f} "
              f"{1e3 * b.overhead_s:>+8.2f}  rank {b.rank}")
        for v in s.order_violations:
            print(f"      order: {v}")
    print(f"predicted against measured: {fid}")


def write_run_outputs(result: Any, out: str | Path, problem: Any = None, schedule: Any = None) -> list[Path]:
    """Write ``run.json``, the measured trace and, with the plan's problem and schedule, the predicted
    trace and the overlay chart into ``out``; return the paths written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    target = folder / OUT_NAME
    target.write_text(json.dumps(result.to_dict(), indent=2))
    paths.append(target)
    if result.trace is not None and result.trace.steps:
        step = result.fidelity.median_step.step if result.fidelity is not None else len(result.trace.steps) - 1
        doc = result.trace.chrome_trace(step, name=f"measured step {step}")
        if problem is not None and problem.time_unit_s:
            from schedsearch.export.chrome import chrome_trace, write_chrome_trace

            unit_us = 1e6 * problem.time_unit_s
            path = write_chrome_trace(problem, schedule, folder / PREDICTED_TRACE, time_unit_us=unit_us)
            # the prediction also rides in the measured trace as a second process: one file shows both, aligned
            predicted = chrome_trace(problem, schedule, time_unit_us=unit_us, name="predicted")
            doc["traceEvents"] += [{**e, "pid": 1} for e in predicted["traceEvents"]]
        else:
            path = None
        measured = folder / MEASURED_TRACE
        measured.write_text(json.dumps(doc))
        paths.append(measured)
        if path is not None:
            paths.append(path)
            try:
                from schedsearch.export.overlay import save_overlay

                paths.append(save_overlay(problem, schedule, result.trace.steps[step], folder / OVERLAY))
            except UnsupportedFeatureError as exc:
                print(f"not written: {OVERLAY} ({exc})")
    return paths
