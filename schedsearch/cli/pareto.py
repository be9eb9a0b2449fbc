"""``schedsearch pareto PLACEMENT``: the time-memory trade-off of a pipeline placement.

Walks the uniform activation limit down (exact epsilon-constraint search,
list scheduling first at each step) and prints every non-dominated
(bubble, peak activations) point with its proof status, beside the
handcrafted schedule of the placement. ``--out DIR`` (default ``out``)
receives the points (``{placement}-pareto.json``) and every searched
point's plan (``{placement}-m{makespan}-a{peak activations}.*`` in each
``--format``, default json), which ``export`` and ``run`` read.

Common unit. Every placement runs the same model cut into ``2 p`` equal
chunks on ``p`` devices: one chunk's forward, input gradient and weight
gradient take one time unit each and its activation is one memory unit.
Whole-stage placements (1F1B, ZB-H1, DualPipe) hold two chunks per stage:
their blocks last 2 (forward), 4 (full backward) and their activations
count 2. So makespans, bubbles and activations compare across placements
(a chunk forward is the time unit; the literature's ``F`` of a whole
stage is 2 of them). Bubble = makespan minus the busy time of the worst
device (every device has the same work).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedsearch.cli._common import ProgressPrinter, add_output_arguments, write_plan
from typing import Any

import attrs

from schedsearch.handcrafted import Reproduction, reproduce
from schedsearch.handcrafted.families import family_of_schedule
from schedsearch.schedule import metrics
from schedsearch.search.dualpipe import list_heuristic
from schedsearch.search.pareto_front import ParetoFront, pareto

__all__ = ["COMPARABLE", "Comparable", "comparable", "add_parser", "run"]


@attrs.frozen(kw_only=True)
class Comparable:
    """A named placement in the common unit (see the module docstring)."""

    name: str
    title: str
    #: parameters of :func:`~schedsearch.handcrafted.reproduce` besides devices and micro-batches
    params: dict[str, Any]
    #: memory units (chunk activations) per unit of the problem's memory
    memory_unit: int

    @property
    def param_copies(self) -> int:
        """Model parameter copies per device: two for a family of two opposite pipelines (DualPipe)."""
        return 2 if family_of_schedule(self.name).two_pipelines else 1


COMPARABLE: dict[str, Comparable] = {
    c.name: c
    for c in (
        Comparable(name="1f1b", title="1F1B", params=dict(forward=2, backward=4), memory_unit=2),
        Comparable(name="zb-h1", title="ZB-H1", params=dict(forward=2, input_grad=2, weight_grad=2), memory_unit=2),
        Comparable(name="interleaved", title="interleaved 1F1B (v=2)", params=dict(chunks=2, forward=1, backward=2),
                   memory_unit=1),
        Comparable(name="zb-v", title="ZB-V", params=dict(forward=1, input_grad=1, weight_grad=1), memory_unit=1),
        Comparable(name="dualpipe", title="DualPipe", params=dict(forward=2, backward=4, weight_grad=2, overlap=6),
                   memory_unit=2),
        Comparable(name="dualpipev", title="DualPipeV", params=dict(forward=1, backward=2, weight_grad=1, overlap=3),
                   memory_unit=1),
    )
}


def comparable(name: str, devices: int, microbatches: int) -> tuple[Comparable, Reproduction]:
    """The placement ``name`` in the common unit and its handcrafted schedule."""
    spec = COMPARABLE[name]
    return spec, reproduce(name, devices=devices, microbatches=microbatches, **spec.params)


def front_rows(spec: Comparable, rep: Reproduction, front: ParetoFront) -> list[dict[str, Any]]:
    """The front's points in the common unit, plus the handcrafted point."""
    busy = max(rep.metrics.busy.values())
    rows = [{
        "placement": spec.title, "schedule": "handcrafted", "makespan": rep.metrics.makespan,
        "bubble": rep.metrics.makespan - busy,
        "peak_activations": max(rep.metrics.peak_memory.values()) * spec.memory_unit,
        "peak_per_device": [v * spec.memory_unit for v in rep.metrics.peak_memory.values()],
        "status": "handcrafted", "time_s": None,
    }]
    for p in front:
        rows.append({
            "placement": spec.title, "schedule": "searched", "makespan": p.makespan, "bubble": p.makespan - busy,
            "peak_activations": p.peak_memory * spec.memory_unit,
            "peak_per_device": [v * spec.memory_unit for v in p.peak_per_device.values()],
            "status": p.how, "time_s": round(p.wall_time_s, 3),
        })
    return rows


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "pareto",
        help="time-memory Pareto front of a pipeline placement, beside its handcrafted schedule",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("placement", choices=sorted(COMPARABLE), help="placement (with its handcrafted schedule)")
    p.add_argument("--devices", type=int, default=4, help="pipeline devices p (default 4)")
    p.add_argument("--microbatches", type=int, default=8, help="micro-batches m (DualPipe: both directions; default 8)")
    p.add_argument("--time-limit", type=float, default=300.0, help="limit of the whole walk, seconds (default 300)")
    p.add_argument("--step-time-limit", type=float, default=10.0,
                   help="limit of each step (one activation limit), seconds (default 10)")
    p.add_argument("--workers", type=int, default=2, help="search workers (default 2)")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--deterministic", action="store_true",
                   help="limits read as solver work: the same front on every run (wall time depends on the machine)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--json", action="store_true", help="print the points as JSON")
    add_output_arguments(p, formats=("json",), what="the points and every searched plan")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    spec, rep = comparable(args.placement, args.devices, args.microbatches)
    settings = dict(time_limit_s=args.time_limit, step_time_limit_s=args.step_time_limit, warm_starts=[rep.schedule],
                    heuristic=list_heuristic(), workers=args.workers, seed=args.seed,
                    deterministic=args.deterministic)
    if args.quiet or args.json:
        front = pareto(rep.problem, **settings)
    else:
        with ProgressPrinter() as printer:
            front = pareto(rep.problem, progress=printer, **settings)
    rows = front_rows(spec, rep, front)
    payload = {"placement": spec.name, "devices": args.devices, "microbatches": args.microbatches,
               "stop_reason": front.stop_reason, "wall_time_s": front.wall_time_s, "points": rows}
    written = []
    if args.out:
        out = Path(args.out)
        for row, point in zip(rows[1:], front):
            stem = f"{spec.name}-m{point.makespan}-a{row['peak_activations']}"
            paths = write_plan(rep.problem, point.schedule, args.out, stem, args.formats, result=point, front=front,
                               meta={"table": rows})
            row["plan"] = str(paths[0]) if paths else None
            written += paths
        out.mkdir(parents=True, exist_ok=True)
        points = out / f"{spec.name}-pareto.json"
        points.write_text(json.dumps(payload, indent=2) + "\n")
        written.append(points)
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{spec.title}, {args.devices} devices, {args.microbatches} micro-batches "
          f"(common unit: chunk forward = 1 time unit, chunk activation = 1 memory unit)")
    print(f"{'schedule':<12} {'makespan':>8} {'bubble':>6} {'peak act.':>9}  status")
    for r in rows:
        print(f"{r['schedule']:<12} {r['makespan']:>8} {r['bubble']:>6} {r['peak_activations']:>9}  {r['status']}")
    print(f"(walk stopped: {front.stop_reason}; {front.wall_time_s:.1f} s)")
    for path in written:
        print(f"wrote {path}")
    return 0
