"""DualPipe and DualPipeV against the search: bubble, memory, scale, trade-off, comparison.

Parts (``--parts``, default all):

* ``figures``: DualPipe's handcrafted schedule for PP in {4, 8} and 2PP, 3PP, 4PP chunks
  (F = W = 1, B = 2, F&B = 3) beside its formula; the search warm-started from it under its
  own per-device peaks and under a uniform PP + 1; and, for PP = 4, a cold exact search with
  and without the overlap declarations (same optimum?).
* ``overlap``: the README figures (DualPipe PP=8, 20 chunks; DualPipeV 4 devices, 10
  micro-batches) with F&B = 3, and F&B = 2 < F + B where pairs save time.
* ``memory``: the least uniform activation limit keeping bubble PP/2 - 1, PP in {4, 8, 16},
  2PP chunks (every step proven or TIMEOUT).
* ``scale``: PP = 16 with 64 chunks and PP = 32 with 128 under DualPipe's memory (PP + 1) and
  under PP; each case in a child process (time and peak RSS of the child). ``--ablation``
  adds the exact search alone (periodic + mirror ties, no list scheduling) for PP = 16 and 32.
* ``pareto``: the fronts of the six comparable placements (common unit, see ``schedsearch
  pareto --help``), every point with its proof status.
* ``table``: one setting (``--table-devices``, ``--table-microbatches``), every handcrafted
  schedule and the search on its placement (same memory, and, when lower, the least uniform
  activation limit for that bubble).

Times are medians of ``--repeats`` runs where stated; the machine is shared, so compare
ratios measured in the same run. Run: ``python -m benchmarks dualpipe`` or this module with
``--quick`` (small cases only).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import time
from typing import Any

from benchmarks._common import print_table, timed, write_results
from schedsearch.cli.pareto import COMPARABLE, comparable, front_rows
from schedsearch.handcrafted import reproduce
from schedsearch.placements import dualpipe
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import metrics
from schedsearch.search import optimal
from schedsearch.search.dualpipe import activation_walk, list_heuristic, mirror_pairs
from schedsearch.search.pareto_front import pareto
from schedsearch.search.scale import mirror_ties, periodic_ties, scale_search

PARTS = ("figures", "overlap", "memory", "scale", "pareto", "table")


def _bubbles(problem, schedule) -> list[int]:
    mt = metrics(problem, schedule)
    return [mt.makespan - mt.busy[d] for d in problem.cluster.device_names]


def part_figures(args) -> list[dict[str, Any]]:
    rows = []
    cases = [(4, 8)] if args.quick else [(PP, k * PP) for PP in (4, 8) for k in (2, 3, 4)]
    for PP, chunks in cases:
        rep = reproduce("dualpipe", devices=PP, microbatches=chunks)
        for label, limits in (("own peaks", dict(rep.metrics.peak_memory)),
                              ("PP+1", {d: PP + 1 for d in rep.problem.cluster.device_names})):
            problem = with_capacities(rep.problem, limits)
            result, median, runs = timed(lambda: scale_search(problem, warm_starts=[rep.schedule],
                                                              time_limit_s=args.time_limit), args.repeats)
            mt = metrics(problem, result.schedule)
            rows.append({
                "PP": PP, "chunks": chunks, "memory": label,
                "DualPipe bubble": rep.metrics.bubble_global, "formula": rep.formula.get("bubble"),
                "DualPipe peaks": list(rep.metrics.peak_memory.values()),
                "searched bubble": mt.bubble_global, "searched peaks": list(mt.peak_memory.values()),
                "status": result.status.value, "bound": result.lower_bound, "makespan": mt.makespan,
                "found by": result.engine.split(" (")[0], "median_s": round(median, 3),
            })
            print_table([rows[-1]])
    # do the overlap declarations change the optimum? cold exact searches, PP = 4
    for chunks in ([8] if args.quick else [8, 12, 16]):
        rep = reproduce("dualpipe", devices=4, microbatches=chunks)
        problem = with_capacities(rep.problem, 5)
        for declared in (True, False):
            target = problem if declared else problem.with_(overlaps=())
            result, median, _ = timed(lambda: optimal(target, time_limit_s=args.time_limit, workers=2, seed=0), 1)
            rows.append({"PP": 4, "chunks": chunks, "memory": "PP+1", "cold exact search": True,
                         "overlaps declared": declared, "status": result.status.value, "makespan": result.objective,
                         "bound": result.lower_bound, "median_s": round(median, 3)})
            print_table([rows[-1]])
    return rows


def part_overlap(args) -> list[dict[str, Any]]:
    rows = []
    cases = [("dualpipe", dict(devices=8, microbatches=20, overlap=3)),
             ("dualpipev", dict(devices=4, microbatches=10, overlap=3)),
             ("dualpipe", dict(devices=4, microbatches=8, overlap=2)),
             ("dualpipev", dict(devices=2, microbatches=4, overlap=2)),
             ("dualpipev", dict(devices=4, microbatches=8, overlap=2)),
             ("dualpipe", dict(devices=8, microbatches=20, overlap=2))]
    if args.quick:
        cases = cases[:4]
    for name, params in cases:
        rep = reproduce(name, **params)
        problem = with_capacities(rep.problem, dict(rep.metrics.peak_memory))
        result, median, _ = timed(lambda: scale_search(problem, warm_starts=[rep.schedule],
                                                       time_limit_s=args.time_limit), 1)
        rows.append({
            "schedule": rep.title, **params,
            "handcrafted makespan": rep.metrics.makespan, "handcrafted bubbles": _bubbles(problem, rep.schedule),
            "searched makespan": result.objective, "searched bubbles": _bubbles(problem, result.schedule),
            "pairs used": sum(t.overlap == "F&B" for t in result.schedule.tasks) // 3,
            "status": result.status.value, "bound": result.lower_bound,
            "declarations dropped": result.stats["overlaps_dropped"], "time_s": round(median, 2),
        })
        print_table([rows[-1]])
    return rows


def part_memory(args) -> list[dict[str, Any]]:
    rows = []
    for PP in ([4] if args.quick else [4, 8, 16]):
        chunks = 2 * PP
        target = PP // 2 - 1 + 3 * chunks
        t0 = time.perf_counter()
        walk = activation_walk(dualpipe(PP, chunks), target, start_capacity=PP + 1,
                               time_limit_s=args.walk_time_limit, workers=2, seed=0)
        rows.append({
            "PP": PP, "chunks": chunks, "bubble": PP // 2 - 1, "least activations": walk.capacity,
            "proven": walk.proven, "DualPipe": PP + 1, "1F1B": PP,
            "steps": [f"{cap}: {status} ({how})" for cap, status, _, how in walk.steps],
            "time_s": round(time.perf_counter() - t0, 2),
        })
        print_table([rows[-1]])
    return rows


def _scale_case(PP: int, chunks: int, capacity: int, limit: float, mode: str, conn) -> None:
    t0 = time.perf_counter()
    problem = dualpipe(PP, chunks, memory=capacity)
    if mode == "tied exact":
        reduced = problem.with_(overlaps=())
        n = reduced.num_microbatches
        ties = periodic_ties(reduced, n // 4, 3 * n // 4) + mirror_ties(reduced, mirror_pairs(reduced))
        result = scale_search(problem, rules=(), ties=ties, time_limit_s=limit)
    else:
        result = scale_search(problem, time_limit_s=limit)
    wall = time.perf_counter() - t0
    mt = metrics(problem, result.schedule) if result.schedule is not None else None
    conn.send({
        "PP": PP, "chunks": chunks, "activations": capacity, "mode": mode, "status": result.status.value,
        "makespan": result.objective, "bound": result.lower_bound,
        "bubble": None if mt is None else mt.bubble_global, "bubble bound": result.lower_bound - 3 * chunks,
        "DualPipe bubble": PP - 2, "peak": None if mt is None else max(mt.peak_memory.values()),
        "found by": result.engine, "time_s": round(wall, 2),
        "peak_rss_MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })
    conn.close()


def part_scale(args) -> list[dict[str, Any]]:
    cases = [(16, 64, 17, "scale search"), (16, 64, 16, "scale search"), (32, 128, 33, "scale search"),
             (32, 128, 32, "scale search")]
    if args.quick:
        cases = [(16, 64, 17, "scale search")]
    if args.ablation:
        cases += [(16, 64, 17, "tied exact"), (32, 128, 33, "tied exact")]
    rows = []
    ctx = multiprocessing.get_context("fork")
    for PP, chunks, cap, mode in cases:
        samples = []
        for _ in range(1 if mode == "tied exact" else args.repeats):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_scale_case, args=(PP, chunks, cap, args.scale_time_limit, mode, send))
            proc.start()
            samples.append(recv.recv())
            proc.join()
        row = dict(samples[-1])
        row["time_s"] = round(statistics.median(s["time_s"] for s in samples), 2)
        row["runs_s"] = [s["time_s"] for s in samples]
        rows.append(row)
        print_table([row])
    return rows


def part_pareto(args) -> list[dict[str, Any]]:
    rows = []
    p, m = (2, 4) if args.quick else (args.table_devices // 2, args.table_microbatches // 2)
    for name in COMPARABLE:
        spec, rep = comparable(name, p, m)
        front = pareto(rep.problem, time_limit_s=None, step_time_limit_s=args.step_time_limit,
                       warm_starts=[rep.schedule], heuristic=list_heuristic(), workers=2, seed=0)
        for r in front_rows(spec, rep, front):
            rows.append({"devices": p, "microbatches": m, **r})
        print_table([r for r in rows if r["placement"] == spec.title],
                    ["placement", "schedule", "makespan", "bubble", "peak_activations", "status", "time_s"])
    return rows


def part_table(args) -> list[dict[str, Any]]:
    rows = []
    p, m = (4, 8) if args.quick else (args.table_devices, args.table_microbatches)
    for name in ("dualpipe", "dualpipev", "zb-h1", "zb-v", "interleaved", "1f1b"):
        spec, rep = comparable(name, p, m)
        busy = max(rep.metrics.busy.values())
        unit = spec.memory_unit
        rows.append({"schedule": spec.title, "bubble": rep.metrics.makespan - busy,
                     "peak activations": [v * unit for v in rep.metrics.peak_memory.values()],
                     "parameter copies": spec.param_copies, "search_s": None})
        problem = with_capacities(rep.problem, dict(rep.metrics.peak_memory))
        t0 = time.perf_counter()
        result = scale_search(problem, warm_starts=[rep.schedule], time_limit_s=args.time_limit)
        found = time.perf_counter() - t0
        mt = metrics(problem, result.schedule)
        rows.append({"schedule": f"ours on {spec.title}'s placement, same memory",
                     "bubble": mt.makespan - busy, "peak activations": [v * unit for v in mt.peak_memory.values()],
                     "parameter copies": spec.param_copies, "status": result.status.value,
                     "search_s": round(found, 2)})
        t0 = time.perf_counter()
        walk = activation_walk(rep.problem, result.objective, start_capacity=max(mt.peak_memory.values()),
                               time_limit_s=args.table_walk_time_limit, workers=2, seed=0)
        if walk.schedule is not None and walk.capacity < max(mt.peak_memory.values()):
            lean = metrics(rep.problem, walk.schedule)
            rows.append({"schedule": f"ours on {spec.title}'s placement, least uniform limit",
                         "bubble": lean.makespan - busy,
                         "peak activations": [v * unit for v in lean.peak_memory.values()],
                         "parameter copies": spec.param_copies,
                         "status": "proven least" if walk.proven else walk.steps[-1][1],
                         "search_s": round(time.perf_counter() - t0, 2)})
        print_table([r for r in rows if spec.title in r["schedule"]],
                    ["schedule", "bubble", "peak activations", "parameter copies", "status", "search_s"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0, help="per search (figures, overlap, table)")
    parser.add_argument("--walk-time-limit", type=float, default=300.0, help="per memory walk (all its steps)")
    parser.add_argument("--step-time-limit", type=float, default=10.0, help="per exact step of a Pareto walk")
    parser.add_argument("--table-walk-time-limit", type=float, default=60.0, help="per memory walk, table part")
    parser.add_argument("--scale-time-limit", type=float, default=300.0)
    parser.add_argument("--table-devices", type=int, default=8)
    parser.add_argument("--table-microbatches", type=int, default=24)
    parser.add_argument("--ablation", action="store_true", help="also the tied exact search alone (scale part)")
    parser.add_argument("--quick", action="store_true", help="small cases, one repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 1
        args.time_limit = min(args.time_limit, 20.0)
        args.walk_time_limit = min(args.walk_time_limit, 60.0)
        args.table_walk_time_limit = min(args.table_walk_time_limit, 20.0)
    results: dict[str, Any] = {}
    for part in args.parts:
        print(f"\n--- {part}")
        results[part] = globals()[f"part_{part}"](args)
    write_results("dualpipe" if not args.quick else "dualpipe_quick", [], parts=results,
                  settings={k: v for k, v in vars(args).items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
