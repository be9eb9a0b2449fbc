"""Reproduce interleaved 1F1B (Megatron-LM), then search for something better under the same memory.

Builds the placement, generates the handcrafted schedule, prints its figures beside the
published closed forms, runs the exact search under the same per-device memory (warm-started
from the handcrafted schedule), says whether the search ties or beats it, and writes a
Chrome / Perfetto trace, a plan JSON, an ASCII timeline, a PyTorch CSV (when the format can
express the schedule) and a picture (with matplotlib) under --out-dir.

Published per-chunk durations are F/v and B/v; the problem counts time in 1/v units (integers),
so its times are divided by v before they are compared with the bubble (p-1)(F+B)/v
(p=4, v=2, m=8: 4.5).

Run: python examples/reproduce_interleaved.py --help
"""

from __future__ import annotations

import argparse

from schedsearch.export.bundle import write_bundle
from schedsearch.handcrafted import SCHEDULES as SPECS, reproduce
from schedsearch.search.compare import search_against

SCHEDULES = ['interleaved']


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description='Reproduce interleaved 1F1B (Megatron-LM) and search under the same memory.')
    parser.add_argument('--devices', type=int, default=4, help='pipeline devices p')
    parser.add_argument('--chunks', type=int, default=2, help='stages per device v')
    parser.add_argument('--microbatches', type=int, default=8, help='micro-batches m')
    parser.add_argument('--forward', type=int, default=1, help='per-chunk forward duration')
    parser.add_argument('--backward', type=int, default=2, help='per-chunk backward duration')
    parser.add_argument('--group-size', type=int, default=None, help='Megatron micro-batch group size N (default p)')
    parser.add_argument('--time-limit', type=float, default=5.0, help='search time limit per schedule, seconds (raise it for harder settings)')
    parser.add_argument('--workers', type=int, default=2, help='search workers')
    parser.add_argument('--no-search', action='store_true', help='skip the search')
    parser.add_argument('--out-dir', default='out/reproduce_interleaved', help='where the trace, plan, CSV and picture go')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in SCHEDULES:
        params = {k: v for k, v in vars(args).items() if k in SPECS[name].defaults}
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
