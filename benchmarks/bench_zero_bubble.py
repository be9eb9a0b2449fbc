"""The zero-bubble greedy, ZB-H1 and ZB-V against the search.

* ``greedy``: the public zero-bubble greedy (reproduced: 8 variants, best longest stage
  span; memory per micro-batch F +2, I -1, W -1) on the reference settings (p=4, m=12,
  F=5, I=6, W=4, memory 10 / 14; unit times, memory 8 / 16; p=8, m=24, unit times, memory
  16 / 32), then tighter memory; the exact search on the longest device span (objective
  ``"max_span"``), warm-started from the greedy, 60 s each: value, proven bound, status,
  median time of ``--repeats`` runs (one run on the other rows). Also the search without
  the warm start on the reference rows.
* ``handcrafted``: ZB-H1 and ZB-V beside the search under their own memory, and the least
  uniform activation limit keeping their makespan.

Run: ``python -m benchmarks zero_bubble`` or this module with ``--quick``.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks._common import print_table, timed, write_results
from schedsearch.handcrafted import reproduce
from schedsearch.handcrafted.zb_greedy import zb_greedy
from schedsearch.placements import zero_bubble
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import max_span, metrics
from schedsearch.search import optimal
from schedsearch.search.dualpipe import activation_walk
from schedsearch.search.scale import scale_search

#: (p, m, F, I, W, memory) -> the reference greedy's longest stage span (None: not a reference row)
SETTINGS = [
    ((4, 12, 5, 6, 4, 10), 193), ((4, 12, 5, 6, 4, 14), 183), ((4, 12, 1, 1, 1, 8), 39),
    ((4, 12, 1, 1, 1, 16), 36), ((8, 24, 1, 1, 1, 16), 79), ((8, 24, 1, 1, 1, 32), 72),
    ((4, 12, 5, 6, 4, 8), None), ((4, 12, 3, 2, 1, 6), None), ((8, 24, 1, 1, 1, 12), None),
    ((8, 24, 5, 6, 4, 14), None), ((8, 24, 5, 6, 4, 10), None), ((6, 18, 2, 3, 1, 8), None),
]


def part_greedy(args) -> list[dict[str, Any]]:
    rows = []
    settings = SETTINGS[:4] if args.quick else SETTINGS
    for (p, m, F, I, W, mem), reference in settings:
        problem = zero_bubble(p, m, forward=F, input_grad=I, weight_grad=W, forward_memory=2, input_grad_memory=-1,
                              memory=mem).with_(objective="max_span")
        greedy, greedy_s, _ = timed(lambda: zb_greedy(problem), 1)
        repeats = args.repeats if reference is not None else 1
        warm, median, runs = timed(lambda: optimal(problem, warm_start=greedy, time_limit_s=args.time_limit,
                                                   workers=2, seed=0), repeats)
        if reference is not None:
            cold, cold_s, _ = timed(lambda: optimal(problem, time_limit_s=args.time_limit, workers=2, seed=0), 1)
        else:
            cold, cold_s = None, None
        rows.append({
            "p": p, "m": m, "F,I,W": f"{F},{I},{W}", "memory": mem, "reference": reference,
            "greedy": max_span(greedy), "greedy_s": round(greedy_s, 3),
            "searched": warm.objective, "bound": warm.lower_bound, "status": warm.status.value,
            "median_s": round(median, 2), "runs_s": [round(t, 2) for t in runs],
            "cold searched": None if cold is None else cold.objective,
            "cold status": None if cold is None else cold.status.value,
            "cold_s": None if cold_s is None else round(cold_s, 2),
        })
        print_table([rows[-1]], [k for k in rows[-1] if k != "runs_s"])
    return rows


def part_handcrafted(args) -> list[dict[str, Any]]:
    rows = []
    cases = [("zb-h1", 4, 8), ("zb-v", 4, 8)] if args.quick else [("zb-h1", 4, 8), ("zb-h1", 8, 24), ("zb-v", 4, 8),
                                                                   ("zb-v", 8, 24)]
    for name, p, m in cases:
        rep = reproduce(name, devices=p, microbatches=m)
        problem = with_capacities(rep.problem, dict(rep.metrics.peak_memory))
        result, median, _ = timed(lambda: scale_search(problem, warm_starts=[rep.schedule],
                                                       time_limit_s=args.time_limit), args.repeats)
        walk = activation_walk(rep.problem, result.objective, start_capacity=max(rep.metrics.peak_memory.values()),
                               time_limit_s=args.time_limit, workers=2, seed=0)
        mt = metrics(problem, result.schedule)
        rows.append({
            "schedule": rep.title, "p": p, "m": m, "handcrafted makespan": rep.metrics.makespan,
            "handcrafted bubble": rep.metrics.bubble_global, "handcrafted peak": max(rep.metrics.peak_memory.values()),
            "searched makespan": mt.makespan, "searched bubble": mt.bubble_global, "status": result.status.value,
            "median_s": round(median, 3), "least activations": walk.capacity, "least proven": walk.proven,
        })
        print_table([rows[-1]])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=("greedy", "handcrafted"), default=["greedy", "handcrafted"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="the p=4 rows only, one repeat, 10 s limits")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.time_limit = 1, min(args.time_limit, 10.0)
    results = {part: globals()[f"part_{part}"](args) for part in args.parts}
    write_results("zero_bubble" if not args.quick else "zero_bubble_quick", [], parts=results,
                  settings=vars(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
