"""Handcrafted schedules: the reference figures, generation time, and the search against them.

Part 1 reproduces every handcrafted row of the project's reference table
(GPipe, 1F1B, ZB-H1, interleaved 1F1B and ZB1P, ZB-V, DualPipe, DualPipeV)
and prints ours beside the reference, with the time to build, generate and
validate the schedule (median of ``--repeats``).

Part 2 runs the exact search (CP-SAT, 2 workers, seed 0) under each
handcrafted schedule's own per-device peak memory, warm-started from it, and
prints whether the search ties or beats it and by how much.

Run: ``python -m benchmarks handcrafted`` (``--quick`` for small search
settings only).
"""

from __future__ import annotations

import argparse

from benchmarks._common import print_table, timed, write_results
from schedsearch.handcrafted import reproduce
from schedsearch.search.compare import search_against

#: (name, parameters, reference figures) as in the reference table
REFERENCE = [
    ("1f1b", dict(devices=4, microbatches=8), dict(makespan=33, bubble=9, peak_memory=[4, 3, 2, 1])),
    ("1f1b", dict(devices=8, microbatches=20), dict(makespan=81, bubble=21, peak_memory=[8, 7, 6, 5, 4, 3, 2, 1])),
    ("gpipe", dict(devices=4, microbatches=8), dict(makespan=33, bubble=9, peak_memory=[8] * 4)),
    ("gpipe", dict(devices=8, microbatches=20), dict(makespan=81, bubble=21, peak_memory=[20] * 8)),
    ("zb-h1", dict(devices=4, microbatches=8), dict(makespan=27, bubble=3)),
    ("zb-h1", dict(devices=8, microbatches=20), dict(makespan=67, bubble=7)),
    ("interleaved", dict(devices=4, chunks=2, microbatches=8), dict(bubble=4.5)),
    ("interleaved", dict(devices=4, chunks=4, microbatches=16), dict(bubble=2.25)),
    ("interleaved", dict(devices=8, chunks=2, microbatches=32), dict(bubble=10.5)),
    ("interleaved-zb", dict(devices=4, chunks=2, microbatches=8), dict(bubble=1.5)),
    ("interleaved-zb", dict(devices=4, chunks=4, microbatches=16), dict(bubble=0.75)),
    ("interleaved-zb", dict(devices=8, chunks=2, microbatches=32), dict(bubble=3.5)),
    ("zb-v", dict(devices=4, microbatches=8), dict(makespan=51, bubble=3, bubble_span=0)),
    ("dualpipe", dict(devices=8, microbatches=20, overlap=3),
     dict(makespan=66, bubble=6, bubble_per_device=[6] * 8, peak_memory=[8, 8, 8, 9, 9, 8, 8, 8])),
    ("dualpipe", dict(devices=8, microbatches=20, overlap=2), dict(makespan=52, bubble_per_device=[1, 2, 3, 3, 3, 3, 2, 1])),
    ("dualpipe", dict(devices=4, microbatches=10), dict(bubble=2)),
    ("dualpipe", dict(devices=16, microbatches=64), dict(bubble=14)),
    ("dualpipev", dict(devices=4, microbatches=10, overlap=3), dict(makespan=66, bubble=6, peak_memory=[8, 8, 8, 9])),
]

SEARCH = [
    ("gpipe", dict(devices=4, microbatches=8)),
    ("1f1b", dict(devices=4, microbatches=8)),
    ("zb-h1", dict(devices=4, microbatches=8)),
    ("interleaved", dict(devices=4, chunks=2, microbatches=8)),
    ("interleaved-zb", dict(devices=4, chunks=2, microbatches=8)),
    ("zb-v", dict(devices=4, microbatches=8)),
    ("chimera", dict(devices=4, microbatches=4)),
    ("chimera", dict(devices=4, microbatches=8)),
    ("dualpipe", dict(devices=4, microbatches=8)),
    ("dualpipev", dict(devices=4, microbatches=10)),
    ("dualpipev", dict(devices=4, microbatches=10, overlap=2)),
    ("dualpipe", dict(devices=8, microbatches=20)),
]

QUICK_SEARCH = SEARCH[:3] + [SEARCH[8]]


def label(name: str, params: dict) -> str:
    return name + " " + " ".join(f"{k[:2]}={v}" for k, v in params.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0, help="search time limit per case")
    parser.add_argument("--quick", action="store_true", help="small search cases only, one repeat")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats

    figures = []
    for name, params, expected in REFERENCE:
        rep, median, _ = timed(lambda: reproduce(name, **params), repeats)
        got = rep.measured
        figures.append({
            "schedule": label(name, params),
            "figure": ", ".join(expected),
            "reference": "; ".join(str(v) for v in expected.values()),
            "ours": "; ".join(str(got[k]) for k in expected),
            "equal": all(got[k] == v for k, v in expected.items()),
            "generate_s": round(median, 4),
        })
    print_table(figures)
    print()

    comparisons = []
    for name, params in (QUICK_SEARCH if args.quick else SEARCH):
        rep = reproduce(name, **params)
        cmp = search_against(rep.problem, rep.schedule, time_limit_s=args.time_limit, workers=2, seed=0,
                             time_scale=rep.time_scale)
        k = rep.time_scale
        s = cmp.searched_metrics
        comparisons.append({
            "schedule": label(name, params),
            "memory": max(cmp.memory_limits.values()),
            "handcrafted": rep.schedule.makespan / k if k != 1 else rep.schedule.makespan,
            "searched": None if s is None else (s.makespan / k if k != 1 else s.makespan),
            "status": cmp.result.status.value,
            "bound": None if cmp.result.lower_bound is None else cmp.result.lower_bound / k,
            "verdict": cmp.verdict,
            "gain_makespan": cmp.improvement["makespan"] / k,
            "gain_bubble": cmp.improvement["bubble"] / k,
            "warm": cmp.warm_started,
            "wall_s": round(cmp.result.wall_time_s, 2),
        })
        print_table([comparisons[-1]])
    print()
    print_table(comparisons)
    write_results("handcrafted", figures, search=comparisons, time_limit_s=args.time_limit)
    return 0 if all(f["equal"] for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
