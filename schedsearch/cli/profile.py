"""``schedsearch profile``: measure a model's stages and write a placement problem.

Builds a model (``--model``, split evenly into ``--stages`` stages), runs
each stage on one micro-batch and measures the forward, full backward,
input-gradient and weight-gradient times (median of ``--repeats`` runs) and
the activation memory, with the functions PyTorch's pipeline runtime calls.
Prints the figures, then builds a one-pipeline placement Problem with them
as integer durations (the time unit is printed and recorded in the
problem's name) and activation-memory deltas, and writes it and the raw
profile to ``--out DIR`` (default ``out``; ``''`` writes nothing) as
``{name}.problem.json`` (for ``schedsearch search --problem``) and
``{name}.profile.json``. Needs ``schedsearch[torch]``.

``--calibrate`` (one stage per device) then runs the profiled model
pipelined, 1F1B on one process per stage, and calibrates the model on
that run (:func:`~schedsearch.runtime.calibrate.calibrate_from_run`): each
stage's F and B as the run computed them (I and W: the profiled split,
scaled alike), the transfer time of the receives that waited, the
runtime's gap per action and its cost per step. It writes
``calibration.toml`` and ``{name}.pipeline.toml`` (the run's stage times
as a pipeline for ``schedsearch plan``, naming the calibration, which
``plan`` merges: transfer, overhead per action and per step). ``--calibrate micro``
measures instead on micro-benchmarks, without running the model: the
point-to-point link (gloo, latency and bandwidth fitted to several tensor
sizes) and the runtime's overheads (1F1B plans of near-empty actions),
the pipeline keeping the profiled stage times.

``--traces`` reads the torch profiler traces of a pipelined run instead
(one Chrome trace JSON per rank, or their folder, as a torchtitan
profiling run leaves them) and writes ``{name}.pipeline.toml``: per stage
the median time of each action kind, the median transfer time; no model
is run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import attrs

from schedsearch.cli._common import byte_amount, plain_name
from schedsearch.cli._inputs import InputKind, open_input
from schedsearch.cli.run import int_list
from schedsearch.errors import InvalidPipelineError
from schedsearch.plan.pipeline import P2P
from schedsearch.runtime import build_workload, parse_model_spec, profile

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "profile",
        help="measure a model's stages (F, B, I, W, memory) and write a placement problem",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default="transformer:4x32", help="model spec (default transformer:4x32)")
    p.add_argument("--stages", type=int, default=4, help="pipeline stages (default 4)")
    p.add_argument("--microbatch-size", type=int, default=4, help="samples per micro-batch (default 4)")
    p.add_argument("--sizes", type=int_list, help="further micro-batch sizes to profile, e.g. 2,3")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per figure; the median is kept (default 5)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="parameter dtype")
    p.add_argument("--seed", type=int, default=0, help="model and batch seed (default 0)")
    p.add_argument("--time-unit", type=float, help="seconds per time unit (default: chosen from the figures)")
    p.add_argument("--memory-unit", type=int, default=1024, metavar="BYTES",
                   help="bytes per memory unit of the problem (default 1024)")
    problem = p.add_argument_group("problem")
    problem.add_argument("--devices", type=int, help="devices (default: one per stage)")
    problem.add_argument("--microbatches", type=int, dest="microbatches_given",
                         help="micro-batches (default 8; with --traces: the traces' count)")
    problem.add_argument("--microbatch-sizes", type=int_list, help="size of each micro-batch (overrides --microbatches)")
    problem.add_argument("--mapping", help="stage-to-device map: loop, v or a list such as 0,1,1,0")
    problem.add_argument("--split-backward", action="store_true", help="I and W blocks instead of B (zero bubble)")
    problem.add_argument("--memory-bytes", type=byte_amount, metavar="SIZE",
                         help="memory capacity per device for activations, e.g. 6GiB (rounded down to memory units)")
    p.add_argument("--calibrate", nargs="?", const="run", choices=("run", "micro"),
                   help="also calibrate the model: 'run' (the default) on a pipelined 1F1B run of the profiled model "
                   "(stage times, transfer, overhead per action as that run measured them), 'micro' on "
                   "micro-benchmarks (the link's latency and bandwidth, the runtime's overheads); write "
                   "calibration.toml and a pipeline naming it")
    p.add_argument("--layers", action="store_true",
                   help="also measure each module on its own (the embedding, every block, the head) at every size and "
                   "write the model in layers, {name}.layers.toml, for 'schedsearch plan' (split, stages per rank, "
                   "micro-batching and recomputation chosen with the schedule)")
    p.add_argument("--traces", nargs="+", metavar="TRACE",
                   help="build the pipeline from torch profiler traces (one JSON per rank, or their folder) instead "
                   "of running the model")
    p.add_argument("--out", metavar="DIR", default="out",
                   help="folder to write the problem and the raw profile into (default: out; '' writes nothing)")
    p.set_defaults(func=run)
    return p


def _from_traces(args: argparse.Namespace) -> int:
    from schedsearch.runtime.profiler_traces import pipeline_from_traces

    paths = args.traces[0] if len(args.traces) == 1 and Path(args.traces[0]).is_dir() else args.traces
    if paths is args.traces:  # each a file: a missing, empty or binary one, or a document of another kind, is refused
        for path in paths:
            open_input(path, "profile --traces", (InputKind.TRACE,))
    pipeline = pipeline_from_traces(paths, num_microbatches=args.microbatches_given)
    print(f"pipeline: {pipeline}")
    for s in pipeline.stages:
        split = f", I {s.input_grad_ms:.3f}, W {s.weight_grad_ms:.3f}" if s.has_split else ""
        print(f"  {s.name}: F {s.forward_ms:.3f} ms, B {s.backward_ms:.3f}{split} ms")
    if not pipeline.p2p.free:
        print(f"  transfer: {pipeline.p2p.transfer_ms(0):.3f} ms (median of the matched sends and receives)")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = pipeline.save(out / f"{plain_name(pipeline.name or 'traces')}.pipeline.toml")
        print(f"wrote {path}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.traces and args.layers:
        raise InvalidPipelineError("profile: --layers measures the model's modules one by one; profiler traces "
                                   "(--traces) give whole stages: give one or the other")
    if args.traces:
        return _from_traces(args)
    if args.calibrate == "run" and (args.mapping is not None or (args.devices or args.stages) != args.stages
                                    or args.microbatch_sizes):
        raise InvalidPipelineError(
            f"profile --calibrate: calibrating on a run needs one stage per device and micro-batches of one size, "
            f"got --stages {args.stages}, --devices {args.devices}, --mapping {args.mapping}, --microbatch-sizes "
            f"{args.microbatch_sizes} (--calibrate micro takes any)")
    spec = parse_model_spec(args.model)
    sizes = [args.microbatch_size] + [n for n in (args.sizes or []) if n != args.microbatch_size]
    for n in args.microbatch_sizes or []:
        if n not in sizes:
            sizes.append(n)
    workload = build_workload(spec, args.stages, batch_size=max(sizes), dtype=args.dtype, seed=args.seed)
    print(f"model: {workload}")
    prof = profile(
        workload.stages,
        workload.inputs,
        target=workload.target,
        loss_fn=workload.loss_fn,
        sizes=sizes,
        repeats=args.repeats,
        time_unit_s=args.time_unit,
        memory_unit_bytes=args.memory_unit,
        model_spec=str(spec),
    )
    print(prof.table())
    microbatches = 8 if args.microbatches_given is None else args.microbatches_given
    mapping = args.mapping
    if mapping is not None and mapping not in ("loop", "v"):
        mapping = int_list(mapping)
    problem = prof.to_problem(
        args.devices or args.stages,
        None if args.microbatch_sizes else microbatches,
        mapping=mapping,
        split_backward=args.split_backward,
        memory=None if args.memory_bytes is None else args.memory_bytes // prof.memory_unit_bytes,
        microbatch_sizes=args.microbatch_sizes,
    )
    print(f"problem: {problem}")
    print(f"durations (units of {prof.time_unit_s:g} s): F {list(prof.units('F'))}, B {list(prof.units('B'))}, "
          f"I {list(prof.units('I'))}, W {list(prof.units('W'))}; activation memory (units of "
          f"{prof.memory_unit_bytes} B) {list(prof.memory_units())}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = plain_name(problem.name or "profile")
        for path, text in ((out / f"{stem}.problem.json", problem.to_json()),
                           (out / f"{stem}.profile.json", json.dumps(prof.to_dict(), indent=2))):
            path.write_text(text)
            print(f"wrote {path}")
    if args.layers:
        _layers(args, spec, sizes, microbatches)
    if args.calibrate:
        _calibrate(args, prof, problem, microbatches)
    return 0


def _layers(args: argparse.Namespace, spec: Any, sizes: list[int], microbatches: int) -> None:
    """Profile every module of the model on its own and write the model in layers."""
    from schedsearch.plan.layers import LayerModel

    workload = build_workload(spec, spec.layers, batch_size=max(sizes), dtype=args.dtype, seed=args.seed)
    modules = [m for stage in workload.stages for m in stage.children()]
    if spec.kind == "transformer":  # the embeddings sit before the first block, the final norm and head after the last
        kinds = ["embedding"] + ["layer"] * spec.layers + ["head"]
        names = ["embedding"] + [f"block{i}" for i in range(spec.layers)] + ["head"]
    else:
        kinds, names = ["layer"] * spec.layers, [f"layer{i}" for i in range(spec.layers)]
    # the blocks also under per-operator selective checkpointing (torchtitan wraps the blocks only)
    prof = profile(modules, workload.inputs, target=workload.target, loss_fn=workload.loss_fn, sizes=sizes,
                   repeats=args.repeats, time_unit_s=args.time_unit, memory_unit_bytes=args.memory_unit,
                   model_spec=str(spec), selective=[kind == "layer" for kind in kinds])
    model = LayerModel.from_profile(prof, kinds=kinds, names=names, name=str(spec),
                                    global_batch=microbatches * args.microbatch_size,
                                    num_ranks=args.devices or args.stages)
    print(f"layers: {model}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = model.save(out / f"{plain_name(str(spec))}.layers.toml")
        print(f"wrote {path} (parameter bytes: the weights; add gradients and optimizer state as you count them, "
              f"and a memory_budget_bytes)")


def _calibrate(args: argparse.Namespace, prof: Any, problem: Any, microbatches: int) -> None:
    from schedsearch.plan.pipeline import Pipeline

    one_per_rank = args.mapping is None and (args.devices or args.stages) == args.stages
    sizes = args.microbatch_sizes
    pipeline = Pipeline.from_profile(prof, num_ranks=args.stages, num_microbatches=len(sizes) if sizes else microbatches,
                                     name=problem.name, microbatch_sizes=sizes,
                                     microbatch_size=max(sizes) if sizes else None)
    if args.calibrate == "run":
        from schedsearch.runtime.calibrate import calibrate_from_run

        workload = build_workload(parse_model_spec(args.model), args.stages,
                                  batch_size=microbatches * args.microbatch_size, dtype=args.dtype, seed=args.seed)
        calibrated, results = calibrate_from_run(pipeline, workload)
        for result in results:
            print(f"1F1B run of the profiled model: {result.fidelity}")
        print(calibrated.table())
        calibration = calibrated.calibration
        print(calibration)
        # the file merges them
        pipeline = attrs.evolve(calibrated.pipeline, p2p=P2P(), action_overhead_ms=0.0, step_overhead_ms=0.0)
    else:
        from schedsearch.runtime.calibrate import calibrate

        calibration, overhead = calibrate()
        print(calibration)
        for m, measured, predicted in overhead.samples:
            print(f"  near-empty 1F1B, {m} micro-batches: step {measured:.3f} ms measured, "
                  f"{predicted + overhead.step_ms:.3f} ms by the fit")
        if not one_per_rank:
            print("no pipeline written: it holds one stage per rank (no --mapping, --devices = --stages)")
            return
    if args.out:
        out = Path(args.out)
        stem = plain_name(problem.name or "profile")
        cal_path = calibration.save(out / "calibration.toml")
        path = out / f"{stem}.pipeline.toml"
        path.write_text(f"calibration = {json.dumps(cal_path.name)}  # merged when read: link, overhead per "
                        f"action and per step\n" + pipeline.to_toml())
        print(f"wrote {cal_path}")
        print(f"wrote {path}")
