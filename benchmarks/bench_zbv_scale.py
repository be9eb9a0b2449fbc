"""ZB-V beyond 8 ranks: ``scale_search`` on the ZB-V placement, memory PP + 1 per device.

Unit times (F = I = W = 1), ``m = 4 PP`` micro-batches, every device capped
at ``PP + 1`` chunk activations (ZB-V itself needs ``2 PP``), a time limit
per row. Both sides run in this run, each row in its own process (its peak
RSS is that process's):

* ``before``: the library at ``--before-rev`` (default: the commit before
  the capped V greedy, the scale driver's V start and the faster memory
  bound), checked out into a temporary git worktree;
* ``after``: the library at ``--after-rev`` (default ``HEAD``; ``.`` for
  this working tree as it is).

Per row and side: the makespan, the lower bound and the gap to it, the
status, what found the plan, the wall time against the limit and the peak
RSS. Goal: a plan at every size, within the limit (+10%), under 300 MB.

Run: ``python -m benchmarks zbv_scale`` or ``python benchmarks/bench_zbv_scale.py
[--quick] [--sizes 8 16 32 64] [--limit 60] [--before-rev REV]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, revision_trees, write_results

REPO = Path(__file__).resolve().parents[1]
#: The last commit before this work: the "before" side.
BEFORE_REV = "04f6e34"

_CHILD = r"""
import json, resource, sys, time
from schedsearch import placements
from schedsearch.search.scale import scale_search
pp, limit = int(sys.argv[1]), float(sys.argv[2])
problem = placements.vshape_chunks(pp, 4 * pp, memory=pp + 1)
t0 = time.perf_counter()
result = scale_search(problem, time_limit_s=limit, seed=0, workers=2)
wall = time.perf_counter() - t0
print(json.dumps({
    "status": result.status.value, "makespan": result.objective, "bound": result.lower_bound,
    "engine": result.engine, "wall_s": round(wall, 1),
    "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "notes": list(result.notes),
}))
"""


def _run_side(tree: Path, pp: int, limit: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    try:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(pp), str(limit)], env=env, cwd=str(tree),
                             capture_output=True, text=True, timeout=limit * 6 + 120)
    except subprocess.TimeoutExpired:
        return {"status": "KILLED", "wall_s": limit * 6 + 120}
    if out.returncode:
        return {"status": "ERROR", "error": out.stderr.strip().splitlines()[-1:] or [""]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _commit(rev: str) -> str:
    """The commit ``rev`` names (``.``: the working tree on top of HEAD)."""
    out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD" if rev == "." else rev],
                         capture_output=True, text=True)
    return out.stdout.strip() + (" + working tree" if rev == "." else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="PP 8 and 16, 20 s each")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--limit", type=float, default=None, help="time limit per row and side (s)")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--after-rev", default="HEAD", help="the 'after' side ('.': this working tree as it is)")
    parser.add_argument("--no-before", action="store_true", help="measure this tree only")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([8, 16] if args.quick else [8, 16, 32, 64])
    limit = args.limit or (20.0 if args.quick else 60.0)
    rows = []
    revisions = {} if args.no_before else {"before": args.before_rev}
    with revision_trees(REPO, {**revisions, "after": args.after_rev}, "zbv-scale-") as sides:
        for pp in sizes:
            for side, tree in sides.items():  # interleaved: both sides of a size one after the other
                got = _run_side(tree, pp, limit)
                mk, lb = got.get("makespan"), got.get("bound")
                rows.append({
                    "PP": pp, "m": 4 * pp, "memory": pp + 1, "side": side, "status": got.get("status"),
                    "makespan": mk, "bound": lb,
                    "gap_%": round(100 * (mk - lb) / lb, 1) if mk is not None and lb else None,
                    "wall_s": got.get("wall_s"), "limit_s": limit, "rss_mb": got.get("rss_mb"),
                    "engine": got.get("engine"), "notes": "; ".join(got.get("notes", [])) or got.get("error"),
                })
                print_table(rows[-1:])
    print()
    print_table(rows, ["PP", "m", "memory", "side", "status", "makespan", "bound", "gap_%", "wall_s", "limit_s",
                       "rss_mb", "engine"])
    write_results("zbv_scale_quick" if args.quick else "zbv_scale", rows, limit_s=limit,
                  before_rev=None if args.no_before else _commit(args.before_rev), after_rev=_commit(args.after_rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
