"""Standard job-shop and flexible job-shop instances, solved and proven.

Reads an instance index (by default the small set shipped in
``models/jobshop/``: ft06, la01-la05 and mk01), solves each instance with
the job-shop planner (list-scheduling warm start, then the exact model) and
prints the makespan found, the proven lower bound, the known optimum and the
time. With ``--data DIR`` it reads the full SchedulingLab collections
(``DIR/jsp/classical.json``, ``DIR/fjsp/instances.json``) instead; name
instances with ``--instances``.

Run: ``python examples/jobshop_benchmarks.py [--backend z3] [--time-limit 10]
[--data path/to/data --instances ft10 mk03]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from schedsearch.loaders import read_index, read_instance
from schedsearch.search import jobshop
from schedsearch.validate import validate

MODELS = Path(__file__).resolve().parents[1] / "models" / "jobshop"


def _index(data: str | None) -> dict:
    if data is None:
        return read_index(MODELS / "instances.json")
    root = Path(data)
    entries = {}
    for index in (root / "jsp" / "classical.json", root / "fjsp" / "instances.json"):
        if index.is_file():
            entries.update(read_index(index))
    return entries


def run(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Solve the instances; one row per instance."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpsat", "z3"), default="cpsat")
    parser.add_argument("--time-limit", type=float, default=10.0, help="per instance (default: 10 s)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", default=None, help="folder holding jsp/ and fjsp/ (default: the shipped set)")
    parser.add_argument("--instances", nargs="*", default=None, help="instance names (default: all of the index)")
    args = parser.parse_args(argv)
    index = _index(args.data)
    names = args.instances if args.instances else sorted(index)
    unknown = [n for n in names if n not in index]
    if unknown:
        parser.error(f"unknown instance(s) {unknown}; the index holds {len(index)} instances")
    rows = []
    print(f"{'instance':10s} {'size':>7s} {'optimum':>8s} {'found':>7s} {'bound':>7s} {'status':>9s} {'time':>7s}")
    for name in names:
        entry = index[name]
        problem = read_instance(entry.path).problem
        result = jobshop(problem, backend=args.backend, time_limit_s=args.time_limit, workers=args.workers)
        assert result.schedule is not None and validate(problem, result.schedule) == ()
        size = f"{entry.num_jobs}x{entry.num_machines}"
        known = entry.optimum if entry.optimum is not None else entry.best_known
        print(f"{name:10s} {size:>7s} {str(known):>8s} {result.objective:>7d} {result.lower_bound:>7d} "
              f"{result.status.value:>9s} {result.wall_time_s:6.2f}s")
        rows.append({"instance": name, "optimum": entry.optimum, "found": result.objective,
                     "lower_bound": result.lower_bound, "status": result.status.value,
                     "time_s": result.wall_time_s, "backend": args.backend})
    return rows


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
