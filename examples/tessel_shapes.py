"""Tessel's five shapes (V, X, M, NN, K) searched with the repetend strategy.

For each shape: search a repetend (least period, then warmup and cooldown),
print the unrolled timeline with the repetend marked, the period beside the
work bound, and write a Chrome/Perfetto trace (and, with ``--plot``, a PNG)
whose tasks name their part (warmup, repetend instance, cooldown).

Tessel's conventions: forward blocks last 1 and allocate 1, backward blocks
last 3 and free 1, full-shard blocks occupy every device for 1 unit. Memory
per device defaults to Tessel's settings on 4 devices (V and X 4; M, NN and
K 6), scaled with the number of devices.

Run: ``python examples/tessel_shapes.py [--devices 4 --microbatches 8 --out tessel_traces]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from schedsearch.export.repetend import plot_periodic, render_periodic_ascii, write_periodic_trace
from schedsearch.placements import TESSEL_SHAPES, tessel_shape
from schedsearch.search.repetend_search import period_lower_bound, repetend
from schedsearch.validate import validate

#: memory per device on 4 devices (Tessel's settings)
MEMORY_4 = {"V": 4, "X": 4, "M": 6, "NN": 6, "K": 6}


def default_memory(shape: str, num_devices: int) -> int:
    """Tessel's capacity on 4 devices, scaled with the number of devices."""
    return MEMORY_4[shape] * num_devices // 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--memory", type=int, default=None, help="capacity per device (default: per shape)")
    parser.add_argument("--shapes", nargs="*", default=list(TESSEL_SHAPES), choices=TESSEL_SHAPES)
    parser.add_argument("--backend", default="cpsat", choices=("cpsat", "z3"))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", default="tessel_traces", help="folder for traces ('' = write nothing)")
    parser.add_argument("--plot", action="store_true", help="also write PNG charts (needs matplotlib)")
    args = parser.parse_args(argv)

    for shape in args.shapes:
        memory = args.memory if args.memory is not None else default_memory(shape, args.devices)
        problem = tessel_shape(shape, args.devices, args.microbatches, memory=memory)
        result = repetend(problem, backend=args.backend, time_limit_s=args.time_limit)
        print(f"\n== {shape} on {args.devices} devices, memory {memory}, {args.microbatches} micro-batches")
        print(result)
        if result.periodic is None:
            continue
        assert validate(problem, result.schedule) == ()  # checked by the library already; shown here
        periodic = result.periodic
        work = max(period_lower_bound(problem).values())
        print(f"period {periodic.period} per {periodic.fold} micro-batch(es) (work bound {work}); "
              f"repetend bubble {periodic.repetend_bubble()}; N_R {periodic.repetend.num_microbatches}; "
              f"search {result.wall_time_s:.2f} s")
        print(render_periodic_ascii(periodic, args.microbatches))
        if args.out:
            out = Path(args.out)
            path = write_periodic_trace(periodic, args.microbatches, out / f"tessel-{shape}-{args.devices}.trace.json")
            print(f"trace: {path}")
            if args.plot:
                png = out / f"tessel-{shape}-{args.devices}.png"
                plot_periodic(periodic, args.microbatches, png)
                print(f"chart: {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
