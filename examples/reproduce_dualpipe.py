"""Reproduce DualPipe and DualPipeV, then search for something better under the same memory.

Builds the placement, generates the handcrafted schedule, prints its figures beside the
published closed forms, runs the exact search under the same per-device memory (warm-started
from the handcrafted schedule), says whether the search ties or beats it, and writes a
Chrome / Perfetto trace, a plan JSON, an ASCII timeline, a PyTorch CSV (when the format can
express the schedule) and a picture (with matplotlib) under --out-dir.

The published figures (DualPipe README): bubble (PP/2-1)(F&B+B-3W) on every device, PP+1
activations on the two middle devices (PP=8, 20 chunks, F&B=3: makespan 66, bubble 6, peaks
[8,8,8,9,9,8,8,8]); DualPipeV on 4 devices, 8 stages, 10 micro-batches: 66, 6, [8,8,8,9].
The search does not model overlapped pairs: it searches schedules that run every task on its
own (flattening the pairs as its warm start when F&B = F + B).

Run: python examples/reproduce_dualpipe.py --help
"""

from __future__ import annotations

import argparse

from schedsearch.export.bundle import write_bundle
from schedsearch.handcrafted import SCHEDULES as SPECS, reproduce
from schedsearch.search.compare import search_against

SCHEDULES = ['dualpipe', 'dualpipev']


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description='Reproduce DualPipe and DualPipeV and search under the same memory.')
    parser.add_argument('--dualpipe-devices', type=int, default=4, help='DualPipe devices PP (even)')
    parser.add_argument('--dualpipe-microbatches', type=int, default=8, help='DualPipe chunks (even, >= 2 PP)')
    parser.add_argument('--dualpipev-devices', type=int, default=4, help='DualPipeV devices p')
    parser.add_argument('--dualpipev-microbatches', type=int, default=8, help='DualPipeV micro-batches (>= 2p)')
    parser.add_argument('--overlap', type=int, default=3, help='overlapped forward-and-backward duration F&B')
    parser.add_argument('--forward', type=int, default=1, help='forward duration F')
    parser.add_argument('--backward', type=int, default=2, help='full backward duration B')
    parser.add_argument('--weight-grad', type=int, default=1, help='weight-gradient duration W')
    parser.add_argument('--time-limit', type=float, default=5.0, help='search time limit per schedule, seconds (raise it for harder settings)')
    parser.add_argument('--workers', type=int, default=2, help='search workers')
    parser.add_argument('--no-search', action='store_true', help='skip the search')
    parser.add_argument('--out-dir', default='out/reproduce_dualpipe', help='where the trace, plan, CSV and picture go')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in SCHEDULES:
        prefix = name + '_'
        params = {k.removeprefix(prefix): v for k, v in vars(args).items()
                  if not any(k.startswith(other + '_') for other in SCHEDULES if other != name)}
        params = {k: v for k, v in params.items() if k in SPECS[name].defaults}
        rep = reproduce(name, **params)
        print(rep)
        if not args.no_search:
            comparison = search_against(rep.problem, rep.schedule, time_limit_s=args.time_limit,
                                        workers=args.workers, time_scale=rep.time_scale)
            print(comparison)
        for path in write_bundle(rep.problem, rep.schedule, args.out_dir, rep.name, time_scale=rep.time_scale,
                                 meta={'reproduce': rep.name, 'params': dict(rep.params)}):
            print(f'wrote {path}')
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
