"""``schedsearch bound FILE``: a proven lower bound, the best known plan and the gap.

FILE is either a partitioning workload (the dnn-partitioning JSON layout:
``nodes``, ``edges``, ``maxFPGAs``, ...) or a scheduling problem
(``schedsearch.problem`` JSON). The command prints the lower bound, the
best plan it knows, the gap between them and which bound is tight.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from schedsearch._io import read_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError

PARTITION_MODELS = ("noncontiguous", "contiguous", "latency")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bound",
        help="prove a lower bound for a partitioning workload or a scheduling problem",
        description="Compute a proven lower bound, the best known plan and the gap. For a partitioning workload "
        "(dnn-partitioning JSON) the plan is split by an integer program (HiGHS/SCIP/CBC); for a scheduling "
        "problem (schedsearch.problem JSON) the bound combines the analytic, memory and LP bounds and the plan "
        "comes from the exact CP-SAT search.",
    )
    p.add_argument("file", metavar="FILE", help="workload or problem JSON")
    p.add_argument("--model", choices=PARTITION_MODELS, default="noncontiguous",
                   help="partitioning model (default: noncontiguous max-load; 'latency' for latency inputs)")
    p.add_argument("--solver", choices=("highs", "scip", "cbc"), default="highs", help="MIP solver (default: highs)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS", help="limit per solve (default: 60)")
    p.add_argument("--gap", type=float, default=1e-4, help="relative MIP gap to stop at (default: 1e-4)")
    p.add_argument("--threads", type=int, default=1, help="solver threads (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--mip-bound", type=float, default=None, metavar="SECONDS",
                   help="scheduling problems: also run the DiviML MILP for this long for its bound")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=run)


def _load(path: Path) -> tuple[str, Any]:
    doc = load_document(read_text(path, str(path)), str(path))
    if isinstance(doc, dict) and doc.get("format") == "schedsearch.problem":
        from schedsearch.problem import Problem

        return "schedule", Problem.from_dict(doc)
    if isinstance(doc, dict) and "nodes" in doc and "maxFPGAs" in doc:
        from schedsearch.loaders.opgraph import parse_dnn_partitioning

        return "partition", parse_dnn_partitioning(doc, name=path.stem)
    raise FormatError(
        f"{path}: neither a partitioning workload (keys 'nodes', 'edges', 'maxFPGAs') "
        "nor a scheduling problem ('format': 'schedsearch.problem')"
    )


def _gap(value: float | None, bound: float | None) -> float | None:
    if value is None or bound is None or value <= 0:
        return None
    return max(0.0, (value - bound) / value)


def _partition(workload, args: argparse.Namespace) -> dict[str, Any]:
    from schedsearch.bounds.mip import MipOptions
    from schedsearch.partition import contiguous_ip, latency_ip, noncontiguous_ip

    options = MipOptions(solver=args.solver, time_limit_s=args.time_limit, relative_gap=args.gap,
                         threads=args.threads, seed=args.seed)
    if args.model == "latency":
        res = latency_ip(workload, options=options)
        what = "latency"
    elif args.model == "contiguous":
        res = contiguous_ip(workload, options=options)
        what = "max-load over contiguous splits"
    else:
        res = noncontiguous_ip(workload, options=options)
        what = "max-load over all splits"
    # the solver-free floor: one unit per device cannot beat the work spread evenly
    g, d = workload.graph, workload.devices
    floor = None
    if args.model != "latency" and d.num_accelerators + d.num_cpus:
        total = math.fsum(min(op.accel_latency if op.supported_on_accel else math.inf, op.cpu_latency)
                          for op in g.operators)
        floor = total / (d.num_accelerators + d.num_cpus)
    bound = res.lower_bound
    tight = f"{res.method} dual bound ({res.mip.solver if res.mip else '-'})"
    if floor is not None and (bound is None or floor > bound):
        bound, tight = floor, "total work / devices"
    plan = None
    if res.split is not None:
        plan = [{"device": str(slot), "operators": len(ops)} for slot, ops in res.split.stages if ops]
    return {
        "kind": "partition", "workload": str(workload), "objective": what, "status": res.status.value,
        "best_value": res.value, "lower_bound": bound, "gap": _gap(res.value, bound), "tight": tight,
        "plan": plan, "wall_time_s": res.wall_time_s,
    }


def _schedule(problem, args: argparse.Namespace) -> dict[str, Any]:
    from schedsearch.bounds import lower_bound
    from schedsearch.search import optimal
    from schedsearch.search.diviml import diviml_lower_bound

    if args.mip_bound is None:
        bound = lower_bound(problem, solver=args.solver)
    else:
        bound = diviml_lower_bound(problem, time_limit_s=args.mip_bound, solver=args.solver)
    res = optimal(problem, time_limit_s=args.time_limit, seed=args.seed, workers=min(2, max(1, args.threads)))
    value = res.objective
    best = bound.value
    tight = bound.tight_part
    if res.lower_bound is not None and res.lower_bound > best:
        best, tight = res.lower_bound, "CP-SAT search bound"
    if value is not None:
        best = min(best, value)
    return {
        "kind": "schedule", "problem": str(problem), "objective": "makespan", "status": res.status.value,
        "best_value": value, "lower_bound": best, "gap": _gap(value, best), "tight": tight,
        "bound_parts": dict(bound.parts), "wall_time_s": res.wall_time_s,
    }


def run(args: argparse.Namespace) -> int:
    kind, obj = _load(Path(args.file))
    out = _partition(obj, args) if kind == "partition" else _schedule(obj, args)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(out.get("workload") or out.get("problem"))
    print(f"objective:   {out['objective']}")
    value = out["best_value"]
    print(f"best plan:   {'none found' if value is None else f'{value:.6g}'} ({out['status']})")
    if out.get("plan"):
        print("             " + ", ".join(f"{p['device']}: {p['operators']} ops" for p in out["plan"]))
    lb = out["lower_bound"]
    print(f"lower bound: {'none' if lb is None else f'{lb:.6g}'}  (tight: {out['tight']})")
    gap = out["gap"]
    print(f"gap:         {'-' if gap is None else f'{100 * gap:.3g}%'}")
    if out.get("bound_parts"):
        parts = ", ".join(f"{k} {v}" for k, v in sorted(out["bound_parts"].items(), key=lambda kv: -kv[1])[:6])
        print(f"bound parts: {parts}")
    return 0
