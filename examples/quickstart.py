"""Quickstart: build a 1F1B-placement problem, search it, check and show the result.

Run: ``python examples/quickstart.py [--devices 4 --microbatches 8 --memory 4]``
"""

from __future__ import annotations

import argparse

from schedsearch import metrics, validate
from schedsearch.bounds import analytic_lower_bound
from schedsearch.export import render_ascii, write_chrome_trace
from schedsearch.placements import vshape
from schedsearch.search import optimal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--memory", type=int, default=4)
    parser.add_argument("--backend", default="cpsat", choices=("cpsat", "z3"))
    parser.add_argument("--trace", default=None, help="write a Chrome/Perfetto trace here")
    args = parser.parse_args(argv)

    problem = vshape(args.devices, args.microbatches, forward=1, backward=2, memory=args.memory)
    result = optimal(problem, backend=args.backend, time_limit_s=60)
    print(problem)
    print(result)
    assert validate(problem, result.schedule) == ()  # already checked by the library; shown here
    print(render_ascii(problem, result.schedule))
    print(metrics(problem, result.schedule))
    print(f"analytic lower bound {analytic_lower_bound(problem).value}; "
          f"1F1B formula (m+p-1)(F+B) = {(args.microbatches + args.devices - 1) * 3}")
    if args.trace:
        print(f"trace: {write_chrome_trace(problem, result.schedule, args.trace)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
