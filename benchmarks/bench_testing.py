"""Generation rates of the schedsearch.testing strategies.

Per strategy: examples generated per second by hypothesis (generation
phase only, no shrinking, hypothesis's own overhead included), the share of
test cases hypothesis marked invalid (its own rejection sampling, e.g. of
unique lists, included: plain ``st.integers`` already show about 8%) and,
for ``schedules``, the share of draws whose random order memory blocked
(``fallback``: the default order was used instead) and the share it
rejected itself (``rejected``: no plan found; the problem may be
infeasible). Plans and mutations are drawn on problems of each family, so
their rate includes drawing the problem.

Run: ``python -m benchmarks testing`` (or ``python -m benchmarks.bench_testing --examples 500``).
"""

from __future__ import annotations

import argparse
import time

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from benchmarks._common import print_table, write_results
from schedsearch.testing import broken, overlap_problems, pipeline_problems, problems, schedules

FAMILIES = {"problems": problems, "pipeline_problems": pipeline_problems, "overlap_problems": overlap_problems}


_SGS = {"draws": 0, "fallback": 0, "planned": 0}


def _counting(serial_schedule):
    """Wrap the strategies' generator to count, per draw of ``schedules``, the
    fallbacks and the draws that ended with a plan (the others are rejected)."""
    state = {"ok": True}

    def wrapped(problem, order=None, **options):
        result = serial_schedule(problem, order, **options)
        if options.get("name") == "random list schedule":  # a new draw
            _SGS["draws"] += 1
            _SGS["fallback"] += result is None
            state["ok"] = False
        if result is not None and not state["ok"]:
            state["ok"] = True
            _SGS["planned"] += 1
        return result
    return wrapped


def rate(name: str, body, examples: int) -> dict:
    """Run ``body(data)`` on ``examples`` generated examples; count attempts and completions."""
    count = {"attempts": 0, "done": 0}
    _SGS.update(draws=0, fallback=0, planned=0)

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        count["attempts"] += 1
        body(data)
        count["done"] += 1

    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    return {
        "strategy": name,
        "examples": count["done"],
        "seconds": wall,
        "examples_per_s": count["done"] / wall,
        "invalid_share": 1 - count["done"] / max(1, count["attempts"]),
        "fallback": _SGS["fallback"] / _SGS["draws"] if _SGS["draws"] else None,
        "rejected": 1 - _SGS["planned"] / _SGS["draws"] if _SGS["draws"] else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    args = parser.parse_args(argv)
    from schedsearch.testing import strategies

    strategies.serial_schedule = _counting(strategies.serial_schedule)
    rows = []
    for family, make in FAMILIES.items():
        rows.append(rate(f"{family}()", lambda data, make=make: data.draw(make()), args.examples))
    for family, make in FAMILIES.items():
        def plan(data, make=make):
            data.draw(schedules(data.draw(make())))

        rows.append(rate(f"schedules({family})", plan, args.examples))
    for family, make in FAMILIES.items():
        def mutation(data, make=make):
            problem = data.draw(make())
            data.draw(broken(problem, data.draw(schedules(problem))))

        rows.append(rate(f"broken({family})", mutation, args.examples))
    print_table(rows, ["strategy", "examples", "seconds", "examples_per_s", "invalid_share", "fallback", "rejected"])
    write_results("testing", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
