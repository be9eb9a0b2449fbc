"""Standard job-shop and flexible job-shop instances: a real-world check of the engine.

Targets (2 cores, 2 workers): CP-SAT proves ft06 and la01-la05 within 2 s
each and ft10 within 120 s; proves mk01, mk03, mk04 and mk08 within 60 s
each; Z3 proves ft06 and la01-la05 within 30 s each. A wider sample (la, orb,
abz, mk) is run with a shorter limit and its gaps reported. An ablation
measures, side by side, CP-SAT's stronger no-overlap propagation (on by
default for classic job shops), the redundant bounds (``makespan >= end +
tail`` per operation, which for a job shop is the job's remaining work, and
the per-machine bound) and the list-scheduling warm start.

The instance files and their optima come from the SchedulingLab collections
beside the repository (``../shared/data``, or ``--data``); the optima are
those of the collections' indexes.

Usage: ``python -m benchmarks.bench_jobshop [--quick] [--skip-wide]
[--skip-ablation] [--wide-limit 30] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from benchmarks._common import print_table, write_results
from schedsearch.loaders import read_index, read_instance
from schedsearch.search import jobshop
from schedsearch.validate import validate

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

#: (instances, backend, time limit s, target s)
TARGETS = [
    (["ft06", "la01", "la02", "la03", "la04", "la05"], "cpsat", 30.0, 2.0),
    (["ft10"], "cpsat", 120.0, 120.0),
    (["mk01", "mk03", "mk04", "mk08"], "cpsat", 60.0, 60.0),
    (["ft06", "la01", "la02", "la03", "la04", "la05"], "z3", 30.0, 30.0),
]

WIDE = (
    ["la06", "la10", "la16", "la17", "la18", "la19", "la20", "la21", "la24", "la25", "la27", "la29", "la36", "la40"]
    + [f"orb{i:02d}" for i in range(1, 11)]
    + ["abz5", "abz6", "abz7", "abz8", "abz9"]
    + ["mk02", "mk05", "mk06", "mk07", "mk09", "mk10", "mk11", "mk12", "mk13", "mk14", "mk15"]
)

ABLATION = ["ft10", "la16", "la18", "la19", "la20", "orb01", "orb02", "mk03", "mk04", "mk08"]


def _solve(entry, backend: str, limit: float, **kwargs) -> dict:
    problem = read_instance(entry.path).problem
    result = jobshop(problem, backend=backend, time_limit_s=limit, workers=2, seed=0, **kwargs)
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    known = entry.optimum if entry.optimum is not None else entry.best_known
    return {
        "instance": entry.name,
        "size": f"{entry.num_jobs}x{entry.num_machines}",
        "optimum": entry.optimum,
        "best_known": known,
        "ours": result.objective,
        "lower_bound": result.lower_bound,
        "status": result.status.value,
        "gap_to_bound": result.gap,
        "above_best_known": (result.objective - known) / known if known else None,
        "time_s": result.wall_time_s,
        "backend": backend,
        "heuristic": result.stats.get("baseline", {}).get("makespan"),
        # an index optimum below a proven bound would be an index error: report it
        "index_disagrees": entry.optimum is not None and (
            result.lower_bound > entry.optimum or (result.status.value == "OPTIMAL" and result.objective != entry.optimum)
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_jobshop", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--quick", action="store_true", help="targets only, ft10 excluded")
    parser.add_argument("--skip-wide", action="store_true")
    parser.add_argument("--skip-ablation", action="store_true")
    parser.add_argument("--wide-limit", type=float, default=30.0)
    parser.add_argument("--ablation-limit", type=float, default=30.0)
    args = parser.parse_args(argv)
    root = Path(args.data)
    if not (root / "jsp" / "classical.json").is_file():
        print(f"no instance collections under {root}; pass --data")
        return 0
    index = {**read_index(root / "jsp" / "classical.json"), **read_index(root / "fjsp" / "instances.json")}
    load_before = os.getloadavg()

    rows = []
    for names, backend, limit, target in TARGETS:
        if args.quick and "ft10" in names:
            continue
        for name in names:
            row = _solve(index[name], backend, limit)
            row["target_s"] = target
            row["met"] = row["status"] == "OPTIMAL" and row["time_s"] <= target
            rows.append(row)
            print(f"{name} {backend}: {row['ours']} ({row['status']}) in {row['time_s']:.2f} s", flush=True)
    print("\nTargets")
    print_table(rows, ["instance", "size", "optimum", "ours", "lower_bound", "status", "time_s", "backend",
                       "target_s", "met", "index_disagrees"])

    wide = []
    if not (args.skip_wide or args.quick):
        for name in WIDE:
            row = _solve(index[name], "cpsat", args.wide_limit)
            wide.append(row)
            print(f"{name}: {row['ours']} vs {row['best_known']} ({row['status']}) in {row['time_s']:.1f} s", flush=True)
        print(f"\nWider sample (CP-SAT, {args.wide_limit:g} s each)")
        print_table(wide, ["instance", "size", "best_known", "ours", "lower_bound", "status", "gap_to_bound",
                           "above_best_known", "time_s", "index_disagrees"])

    ablation = []
    if not (args.skip_ablation or args.quick):
        configs = [
            {"strong_disjunctive": None, "redundant": True, "list_baseline": True},  # the defaults
            {"strong_disjunctive": None, "redundant": True, "list_baseline": False},
            {"strong_disjunctive": None, "redundant": False, "list_baseline": True},
            {"strong_disjunctive": False, "redundant": True, "list_baseline": True},
            {"strong_disjunctive": True, "redundant": True, "list_baseline": True},
        ]
        for name in ABLATION:
            seen = set()
            for config in configs:
                problem_fixed = name.startswith(("la", "orb", "ft", "abz"))
                strong = problem_fixed if config["strong_disjunctive"] is None else config["strong_disjunctive"]
                key = (strong, config["redundant"], config["list_baseline"])
                if key in seen:
                    continue
                seen.add(key)
                row = _solve(index[name], "cpsat", args.ablation_limit, **config)
                row.update(strong_disjunctive=strong, redundant=config["redundant"], warm_start=config["list_baseline"])
                ablation.append(row)
                print(f"{name} strong={strong} redundant={config['redundant']} warm={config['list_baseline']}: "
                      f"{row['ours']} ({row['status']}) {row['time_s']:.2f} s", flush=True)
        print(f"\nAblation (CP-SAT, {args.ablation_limit:g} s each): strong disjunctive propagation, redundant "
              "bounds, warm start")
        print_table(ablation, ["instance", "optimum", "strong_disjunctive", "redundant", "warm_start", "ours",
                               "lower_bound", "status", "time_s"])

    summary = {
        "targets_met": sum(r["met"] for r in rows),
        "targets": len(rows),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    print(summary)
    write_results("jobshop", rows, wide=wide, ablation=ablation, summary=summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
