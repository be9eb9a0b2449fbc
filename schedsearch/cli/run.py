"""``schedsearch run PLAN``: execute a plan with PyTorch's pipeline runtime and check the gradients.

PLAN is a compute-only CSV (one row per rank, as PyTorch's
``_PipelineScheduleRuntime._load_csv`` reads it) or a plan document
(``schedsearch.plan`` JSON with problem and schedule, e.g. from
``schedsearch reproduce --out``), which is exported to the CSV first.
The plan is checked before anything starts (this library's checks, then
PyTorch's own); ``--check-only`` stops there and needs no torch.

Running needs the optional extra ``schedsearch[torch]``: one process per
rank (gloo on loopback, rendezvous through a file in a temporary
directory) trains the model for ``--steps`` steps and every gradient is
compared with a one-process reference step. The result (timings, losses,
gradient check) is written to ``--out DIR`` (default ``out``; ``''``
writes nothing) as ``run.json``. Exit status: 0 when every
gradient is equal within the tolerance, 1 when not, 2 on an error (a plan
that cannot run, a rank that fails or times out).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedsearch.cli._common import add_out_argument, add_retired_flag
from schedsearch.errors import PlanError
from schedsearch.runtime import (
    DEFAULT_TOLERANCE,
    Plan,
    build_workload,
    parse_model_spec,
    plan_from_schedule,
    read_plan,
    run as run_plan,
    torch_available,
    torch_check,
)

__all__ = ["add_parser", "run", "load_plan", "int_list", "OUT_NAME"]

#: the file ``--out DIR`` holds: the run's result (timings, losses, gradient check)
OUT_NAME = "run.json"


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
    p.add_argument("plan", type=Path, help="compute-only CSV, or plan document (JSON)")
    p.add_argument("--model", default="mlp:8x64", help="model spec: mlp:LAYERSxWIDTH or transformer:LAYERSxWIDTH "
                   "(default mlp:8x64), split evenly into the plan's stages")
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
    p.add_argument("--check-only", action="store_true", help="check the plan and stop (no torch needed)")
    add_out_argument(p, f"the run's result as JSON ({OUT_NAME}; not with --check-only)")
    add_retired_flag(p, "--json", f"--out DIR (writes DIR/{OUT_NAME}; --out '' writes nothing)")
    p.set_defaults(func=run)
    return p


def load_plan(args: argparse.Namespace) -> Plan:
    """Read the plan named on the command line and run this library's checks."""
    num_mb = args.microbatches
    if args.microbatch_sizes is not None:
        if num_mb is not None and num_mb != len(args.microbatch_sizes):
            raise PlanError(
                f"run: --microbatches {num_mb} but --microbatch-sizes gives {len(args.microbatch_sizes)} sizes"
            )
        num_mb = len(args.microbatch_sizes)
    if args.plan.suffix.lower() == ".json":
        from schedsearch.export.json import read_json

        problem, schedule, _ = read_json(args.plan)
        plan = plan_from_schedule(problem, schedule, name=args.plan.name)
        if num_mb is not None and num_mb != plan.num_microbatches:
            raise PlanError(f"run: the plan runs {plan.num_microbatches} micro-batches, the run asks for {num_mb}")
        if args.processes is not None and args.processes != plan.num_ranks:
            raise PlanError(f"run: the plan has {plan.num_ranks} ranks but --processes is {args.processes}")
        if args.stage_map is not None and tuple(args.stage_map) != plan.stage_to_rank:
            raise PlanError(
                f"run: --stage-map {args.stage_map} differs from the placement's {list(plan.stage_to_rank)}"
            )
        return plan
    return read_plan(args.plan, num_ranks=args.processes, num_microbatches=num_mb, stage_to_rank=args.stage_map)


def run(args: argparse.Namespace) -> int:
    spec = parse_model_spec(args.model)
    plan = load_plan(args)
    print(f"plan: {plan}")
    if args.check_only:
        if torch_available():
            torch_check(plan)
            print("checks: this library's and PyTorch's (_validate_schedule, _add_send_recv) pass")
        else:
            print("checks: this library's pass (PyTorch is not installed: its own checks were skipped)")
        return 0
    sizes = args.microbatch_sizes
    batch = args.batch_size if args.batch_size is not None else (sum(sizes) if sizes else 4 * plan.num_microbatches)
    workload = build_workload(spec, plan.num_stages, batch_size=batch, dtype=args.dtype, seed=args.seed)
    print(f"model: {workload}")
    result = run_plan(
        plan,
        workload,
        steps=args.steps,
        microbatch_sizes=sizes,
        learning_rate=args.lr,
        tolerance=args.tolerance,
        timeout_s=args.timeout,
        start_method=args.start_method,
    )
    print(f"micro-batch sizes: {list(result.microbatch_sizes)}")
    print(f"{'rank':>4}  {'stages':<10} {'startup ms':>10}  step times ms")
    for r in result.ranks:
        times = " ".join(f"{1e3 * t:.1f}" for t in r.step_times_s)
        print(f"{r.rank:>4}  {','.join(map(str, r.stages)):<10} {1e3 * r.startup_s:>10.1f}  {times}")
    for k, (loss, ref) in enumerate(zip(result.loss, result.reference_loss)):
        print(f"step {k}: loss {loss:.10g} (one-process reference {ref:.10g})")
    print(f"result: {result}")
    if args.out:
        target = Path(args.out) / OUT_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(result.to_dict(), indent=2))
        print(f"wrote {target}")
    return 0 if result.grads_equal else 1
