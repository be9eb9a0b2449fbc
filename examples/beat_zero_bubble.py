"""Beat (or provably tie) the zero-bubble paper's greedy scheduler, and ZB-H1 / ZB-V.

Part 1, the greedy. The public zero-bubble implementation builds its schedules with a greedy
(8 variants, best longest stage span kept; memory per micro-batch: forward +2, input gradient
-1, weight gradient -1). Here the same settings are built as problems whose objective is the
longest device span ("max_span"), the greedy is reproduced, and the exact search, warm-started
from it, either proves it optimal (the forced-idle bound: a device cannot start an input
gradient before a whole round trip, and memory lets it fill only capacity/2 forwards before
that) or beats it. Under tight memory the greedy falls far behind.

Part 2, ZB-H1 and ZB-V under their own memory: the search (list scheduling, then exact)
ties them and proves them optimal where the bound is met, and finds the least activation limit
that keeps their makespan.

Run: python examples/beat_zero_bubble.py --help
"""

from __future__ import annotations

import argparse

from schedsearch.handcrafted import reproduce
from schedsearch.handcrafted.zb_greedy import zb_greedy
from schedsearch.placements import zero_bubble
from schedsearch.rewrite import with_capacities
from schedsearch.schedule import max_span, metrics
from schedsearch.search import optimal
from schedsearch.search.dualpipe import activation_walk
from schedsearch.search.scale import scale_search

#: (p, m, F, I, W, memory): the public greedy's settings, then tighter memory
SETTINGS = [(4, 12, 5, 6, 4, 10), (4, 12, 1, 1, 1, 8), (4, 12, 3, 2, 1, 6)]


def parse_setting(text: str) -> tuple[int, ...]:
    values = tuple(int(x) for x in text.split(","))
    if len(values) != 6:
        raise argparse.ArgumentTypeError(f"a setting is p,m,F,I,W,memory (6 integers), got {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Beat the zero-bubble greedy and ZB-H1 / ZB-V.")
    parser.add_argument("--setting", type=parse_setting, action="append",
                        help="p,m,F,I,W,memory (repeatable; default: three settings with p=4, m=12)")
    parser.add_argument("--devices", type=int, default=4, help="devices of part 2 (ZB-H1, ZB-V)")
    parser.add_argument("--microbatches", type=int, default=8, help="micro-batches of part 2")
    parser.add_argument("--time-limit", type=float, default=4.0, help="limit of each search, seconds")
    parser.add_argument("--workers", type=int, default=2, help="search workers")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    print("Part 1: the zero-bubble greedy against the exact search (objective: longest device span)")
    print(f"  {'p':>2} {'m':>3} {'F,I,W':>7} {'memory':>6} {'greedy':>7} {'searched':>8} {'bound':>6}  status")
    for p, m, F, I, W, mem in args.setting or SETTINGS:
        problem = zero_bubble(p, m, forward=F, input_grad=I, weight_grad=W, forward_memory=2, input_grad_memory=-1,
                              memory=mem).with_(objective="max_span")
        greedy = zb_greedy(problem)
        result = optimal(problem, warm_start=greedy, time_limit_s=args.time_limit, workers=args.workers, seed=0)
        verdict = "ties" if result.objective == max_span(greedy) else "beats"
        print(f"  {p:>2} {m:>3} {f'{F},{I},{W}':>7} {mem:>6} {max_span(greedy):>7} {result.objective:>8} "
              f"{result.lower_bound:>6}  {result.status.value} ({verdict} the greedy, {result.wall_time_s:.1f} s)")
    print()
    print("Part 2: ZB-H1 and ZB-V under their own memory")
    for name in ("zb-h1", "zb-v"):
        rep = reproduce(name, devices=args.devices, microbatches=args.microbatches)
        problem = with_capacities(rep.problem, dict(rep.metrics.peak_memory))
        result = scale_search(problem, warm_starts=[rep.schedule], time_limit_s=args.time_limit, workers=args.workers)
        mt = metrics(problem, result.schedule)
        print(f"  {rep.title}: handcrafted makespan {rep.metrics.makespan}, bubble {rep.metrics.bubble_global}, peak "
              f"{max(rep.metrics.peak_memory.values())}; searched makespan {mt.makespan}, bubble {mt.bubble_global} "
              f"[{result.status.value}, bound {result.lower_bound}, {result.wall_time_s:.2f} s]")
        walk = activation_walk(rep.problem, result.objective, start_capacity=max(rep.metrics.peak_memory.values()),
                               time_limit_s=args.time_limit, workers=args.workers, seed=0)
        print(f"    least activation limit for makespan {result.objective}: {walk.capacity} "
              f"({'proven' if walk.proven else 'not proven: ' + walk.steps[-1][1].lower()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
