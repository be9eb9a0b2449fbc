"""``schedsearch reproduce NAME``: a handcrafted schedule beside its published formula.

Builds the placement, generates the handcrafted schedule, prints its
figures (makespan, bubble, per-device bubble and peak memory) beside the
closed forms, optionally searches under the same memory (``--search``) and
writes the plans (``--out DIR``, default ``out``; ``--format``, default
json, trace, txt, csv and png: plan JSON, Chrome trace, text timeline,
PyTorch CSV where the format can express the plan, PNG where matplotlib is
installed). With ``--search`` the searched plan is written beside the
handcrafted one, as ``{name}-searched.*``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schedsearch.export import render_ascii
from schedsearch.cli._common import add_output_arguments, write_plan
from schedsearch.handcrafted import reproduce, schedule_names
from schedsearch.search.compare import search_against

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "reproduce",
        help="generate a published pipeline schedule (GPipe ... DualPipeV) and compare it with its formula",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", choices=schedule_names(), help="schedule to reproduce")
    p.add_argument("--devices", type=int, help="pipeline devices p (DualPipe: PP)")
    p.add_argument("--microbatches", type=int, help="micro-batches m (DualPipe: chunks of both directions)")
    p.add_argument("--chunks", type=int, help="stages per device v (interleaved schedules)")
    p.add_argument("--forward", type=int, help="forward duration per stage (per chunk when interleaved)")
    p.add_argument("--backward", type=int, help="full backward duration")
    p.add_argument("--input-grad", type=int, help="input-gradient (I) duration")
    p.add_argument("--weight-grad", type=int, help="weight-gradient (W) duration")
    p.add_argument("--overlap", type=int, help="overlapped forward-and-backward (F&B) duration (DualPipe)")
    p.add_argument("--group-size", type=int, help="Megatron micro-batch group size N (interleaved)")
    p.add_argument("--search", action="store_true", help="search under the same memory, warm-started from it")
    p.add_argument("--time-limit", type=float, default=30.0, help="search time limit in seconds (default 30)")
    p.add_argument("--workers", type=int, default=2, help="search workers (default 2)")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--ascii", action="store_true", help="print the ASCII timeline")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of text")
    add_output_arguments(p, formats=("json", "trace", "txt", "csv", "png"), what="the plans")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    params = {
        "devices": args.devices,
        "microbatches": args.microbatches,
        "chunks": args.chunks,
        "forward": args.forward,
        "backward": args.backward,
        "input_grad": args.input_grad,
        "weight_grad": args.weight_grad,
        "overlap": args.overlap,
        "group_size": args.group_size,
    }
    rep = reproduce(args.name, **params)
    comparison = None
    if args.search:
        comparison = search_against(
            rep.problem, rep.schedule, time_limit_s=args.time_limit, workers=args.workers, seed=args.seed,
            time_scale=rep.time_scale,
        )
    written = write_plans(rep, comparison, args.out, args.formats)
    if args.json:
        doc = rep.to_dict()
        if comparison is not None:
            doc["search"] = comparison.to_dict()
        doc["written"] = [str(p) for p in written]
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(rep)
    if args.ascii:
        print(render_ascii(rep.problem, rep.schedule))
    if comparison is not None:
        print(comparison)
    for path in written:
        print(f"wrote {path}")
    return 0


def comparison_rows(comparison) -> list[dict]:
    """The handcrafted schedule and the searched plan side by side (the report's comparison table)."""
    rows = []
    for name, m, status, bound in (
        ("handcrafted", comparison.handcrafted_metrics, "-", None),
        ("searched", comparison.searched_metrics, comparison.result.status.value, comparison.result.lower_bound),
    ):
        if m is None:
            rows.append({"schedule": name, "status": status, "lower bound": bound})
            continue
        rows.append({"schedule": name, "status": status, "makespan": m.makespan, "bubble": m.bubble_global,
                     "lower bound": bound, "peak memory": max(m.peak_memory.values(), default=0)})
    return rows


def write_plans(rep, comparison, out_dir: str, formats: tuple[str, ...]) -> list[Path]:
    """Write the handcrafted plan and, after ``--search``, the searched one (when it found one)."""
    meta = {"reproduce": rep.name, "params": dict(rep.params)}
    if comparison is not None:
        meta["table"] = comparison_rows(comparison)
    written = write_plan(rep.problem, rep.schedule, out_dir, rep.name, formats, time_scale=rep.time_scale, meta=meta)
    if comparison is not None and comparison.searched is not None:
        written += write_plan(comparison.searched_problem, comparison.searched, out_dir, f"{rep.name}-searched",
                              formats, result=comparison.result, time_scale=rep.time_scale,
                              meta={**meta, "searched": True})
    return written
