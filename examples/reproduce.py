"""Reproduce published pipeline schedules by name, then search for something better under the same memory.

Run: python examples/reproduce.py NAME [NAME ...] [options]   (python examples/reproduce.py --help)

NAME is a schedule of :data:`schedsearch.handcrafted.SCHEDULES` (gpipe, 1f1b,
interleaved, interleaved-zb, zb-h1, zb-v, chimera, dualpipe, dualpipev) or
``all``. For each one the example builds the placement, generates the
handcrafted schedule, prints its figures beside the published closed forms,
runs the exact search under the same per-device memory (warm-started from the
handcrafted schedule), says whether the search ties or beats it, and writes a
Chrome / Perfetto trace, a plan JSON, an ASCII timeline, a PyTorch CSV (when
the format can express the schedule) and a picture (with matplotlib) under
--out-dir. Sizes and durations not given take each schedule's own defaults
(the published settings); an option a schedule does not read is ignored for it.

What each one shows:

* gpipe: makespan (m+p-1)(F+B), bubble (p-1)(F+B), m activations on every
  device.
* 1f1b: the same makespan and bubble, p - r activations on device r (p=4,
  m=8, F=1, B=2: 33, 9, [4, 3, 2, 1]). Under the same memory the search cannot
  do better: 1F1B is optimal for uniform stages, and the search proves it.
* interleaved: published per-chunk durations are F/v and B/v; the problem
  counts time in 1/v units (integers), so its times are divided by v before
  they are compared with the bubble (p-1)(F+B)/v (p=4, v=2, m=8: 4.5).
* zb-h1, interleaved-zb, zb-v: ZB-H1 makespan m(F+I+W)+(p-1)(F+I-W) and bubble
  (p-1)(F+I-W) (27 and 3 for p=4, m=8, unit times); interleaved ZB1P bubble
  (p-1)(F+I-W)/v; ZB-V no bubble inside each device's span (makespan 51 for 4
  devices, 8 stages, m=8).
* chimera: D-2 bubbles (forward = backward = one slot), half of 1F1B's
  2(D-1); activations between D/2+1 and D. Its two model replicas cannot be
  written as a PyTorch pipelining CSV (one pipeline per micro-batch there), so
  no CSV is written.
* dualpipe, dualpipev: the DualPipe README's bubble (PP/2-1)(F&B+B-3W) on every
  device and PP+1 activations on the two middle devices (PP=8, 20 chunks,
  F&B=3: makespan 66, bubble 6, peaks [8,8,8,9,9,8,8,8]); DualPipeV on 4
  devices, 8 stages, 10 micro-batches: 66, 6, [8,8,8,9]. The search runs every
  task on its own (flattening the overlapped pairs as its warm start when
  F&B = F + B) and beats both: 66 -> 63 (bubble 6 -> 3) at these settings;
  26 -> 25 and 54 -> 51 with ``--devices 4 --microbatches 8``.

A search stopped by --time-limit reports its best plan and its bound; raise the
limit for larger settings.
"""

from __future__ import annotations

import argparse

from schedsearch.export.bundle import write_bundle
from schedsearch.handcrafted import SCHEDULES, reproduce
from schedsearch.search.compare import search_against

#: the command-line options that set a schedule parameter (None: the schedule's default)
PARAMETERS = {
    "devices": "pipeline devices p (DualPipe: PP, even; Chimera: D, even)",
    "microbatches": "micro-batches m (DualPipe: chunks of both directions; Chimera: a multiple of D)",
    "chunks": "stages per device v (interleaved schedules)",
    "forward": "forward duration F (per chunk when interleaved)",
    "backward": "full backward duration B",
    "input_grad": "input-gradient duration I (zero-bubble schedules)",
    "weight_grad": "weight-gradient duration W (zero-bubble schedules, DualPipe)",
    "overlap": "overlapped forward-and-backward duration F&B (DualPipe)",
    "group_size": "Megatron micro-batch group size N (interleaved schedules; default p)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", metavar="NAME", choices=[*SCHEDULES, "all"],
                        help=f"schedules to reproduce: {', '.join(SCHEDULES)}, or all")
    for name, text in PARAMETERS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, default=None, help=text)
    parser.add_argument("--time-limit", type=float, default=5.0,
                        help="search time limit per schedule, seconds (raise it for harder settings)")
    parser.add_argument("--workers", type=int, default=2, help="search workers")
    parser.add_argument("--no-search", action="store_true", help="skip the search")
    parser.add_argument("--out-dir", default="out/reproduce", help="where the trace, plan, CSV and picture go")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = list(SCHEDULES) if "all" in args.names else list(dict.fromkeys(args.names))
    for name in names:
        params = {key: getattr(args, key) for key in PARAMETERS if key in SCHEDULES[name].defaults}
        rep = reproduce(name, **params)
        print(rep)
        if not args.no_search:
            comparison = search_against(rep.problem, rep.schedule, time_limit_s=args.time_limit,
                                        workers=args.workers, time_scale=rep.time_scale)
            print(comparison)
        for path in write_bundle(rep.problem, rep.schedule, args.out_dir, rep.name, time_scale=rep.time_scale,
                                 meta={"reproduce": rep.name, "params": dict(rep.params)}):
            print(f"wrote {path}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
