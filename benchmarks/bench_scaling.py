"""``solve`` at scale: the 1F1B and V placements, 8-64 ranks, 64-1024 micro-batches, against a time limit.

Rows: ``vshape(PP, m)`` (1F1B's placement, F = 1, B = 2) and
``vshape_chunks(PP, m)`` (the V placement, two chunks per rank, F = I = W
= 1), both without memory capacities, for ``PP`` in 8-64 and ``m`` in
64-1024 (up to 393,216 task instances). Each row runs
``solve(objective="makespan", time_limit_s=LIMIT, workers=1)`` in its own
process (its peak RSS is that process's), once per side, the two sides of
a row one after the other (interleaved, so both see the same load):

* ``before``: the library at ``--before-rev`` (default: the commit before
  this work), checked out into a temporary git worktree;
* ``after``: the library at ``--after-rev`` (default ``HEAD``; ``.`` for
  this working tree as it is).

Per row and side: the makespan, the proven bound and the gap, the status,
what found the plan, the wall time, whether the limit was honoured
(wall <= 1.1 x limit) and the peak RSS. Goals: 1F1B's rows proven at the
bound well within the limit (its construction meets it), every row within
the limit. Quote ratios: the machine may be loaded.

Run: ``python -m benchmarks scaling`` or ``python benchmarks/bench_scaling.py
[--quick] [--ranks 8 64] [--microbatches 64 1024] [--limit 30] [--before-rev REV | --before-tree DIR]``.

``--plan`` measures ``plan`` instead, against its limit at tens of thousands of
micro-batches: 2 ranks, uniform stages (F = 1, B = 2, I = W = 1 ms; 1 MiB of
activations, 1 GiB of parameters, an 80 GiB budget), the 1F1B and ZB-H1
candidates, ``workers=1``, for micro-batches:limit in ``--plan-rows``
(default 5000:2, 20000:5 and 40000:10 s: 50,000 to 400,000 task instances
over the two candidates). Per row and side: the wall time of the call,
whether it is within 1.1 x the limit, each candidate's status and makespan
(or the error when none had a plan). Goal: every call within the limit +
10% on an idle machine.
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
BEFORE_REV = "aa3c600"

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from schedsearch import placements
from schedsearch.search.portfolio import solve
kind, pp, m, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
problem = placements.vshape(pp, m) if kind == "1F1B" else placements.vshape_chunks(pp, m)
t0 = time.perf_counter()
result = solve(problem, objective="makespan", time_limit_s=limit, seed=0, workers=1)
wall = time.perf_counter() - t0
print(json.dumps({
    "tasks": len(problem.tasks), "status": result.status.value, "makespan": result.objective,
    "bound": result.lower_bound, "engine": result.engine, "wall_s": round(wall, 2),
    "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "notes": list(result.notes),
}))
"""


_PLAN_CHILD = r"""
import json, sys, time
from schedsearch.plan.planner import plan
from schedsearch.plan.pipeline import Pipeline
m, limit = int(sys.argv[1]), float(sys.argv[2])
stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
         "activation_bytes": "1 MiB", "parameter_bytes": "1 GiB"}
pipeline = Pipeline(num_ranks=2, num_microbatches=m, memory_budget_bytes="80 GiB", families=["1f1b"],
                    stages=[stage] * 2, p2p={"time_ms": 0.0})
t0 = time.perf_counter()
try:
    result = plan(pipeline, time_limit_s=limit, parallel=1)
    rows = "; ".join(f"{r.family} {r.mark} {r.makespan_ms}" for r in result.rows)
except Exception as exc:
    rows = type(exc).__name__
print(json.dumps({"wall_s": round(time.perf_counter() - t0, 2), "rows": rows}))
"""


def _run_plan_side(tree: Path, m: int, limit: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    kill = limit * 10 + 120
    try:
        out = subprocess.run([sys.executable, "-c", _PLAN_CHILD, str(m), str(limit)], env=env, cwd=str(tree),
                             capture_output=True, text=True, timeout=kill)
    except subprocess.TimeoutExpired:
        return {"rows": "KILLED", "wall_s": kill}
    if out.returncode:
        return {"rows": "ERROR " + ((out.stderr.strip().splitlines() or [""])[-1])}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _plan_rows(sides: dict[str, Path], grid: list[tuple[int, float]]) -> list[dict]:
    """The ``--plan`` table: each row's sides one after the other."""
    rows = []
    for m, limit in grid:
        for side, tree in sides.items():
            load = _load()
            got = _run_plan_side(tree, m, limit)
            wall = got.get("wall_s")
            rows.append({"m": m, "tasks": 10 * m, "limit_s": limit, "side": side, "wall_s": wall,
                         "in_limit": wall is not None and wall <= 1.1 * limit, "load": load, "rows": got.get("rows")})
            print_table(rows[-1:])
    return rows


def _run_side(tree: Path, kind: str, pp: int, m: int, limit: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    kill = limit * 10 + 120
    try:
        out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(pp), str(m), str(limit)], env=env,
                             cwd=str(tree), capture_output=True, text=True, timeout=kill)
    except subprocess.TimeoutExpired:
        return {"status": "KILLED", "wall_s": kill}
    if out.returncode:
        return {"status": "ERROR", "error": (out.stderr.strip().splitlines() or [""])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _commit(rev: str) -> str:
    """The commit ``rev`` names (``.``: the working tree on top of HEAD)."""
    out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD" if rev == "." else rev],
                         capture_output=True, text=True)
    return out.stdout.strip() + (" + working tree" if rev == "." else "")


def _tree_commit(tree: str) -> str:
    """The commit a source tree is at (with ``+ changes`` when it has uncommitted ones)."""
    head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True)
    return (head.stdout.strip() or "unknown") + (" + changes" if dirty.stdout.strip() else "")


def _load() -> float:
    return round(os.getloadavg()[0], 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 and 32 ranks, 64 and 1024 micro-batches, 10 s")
    parser.add_argument("--ranks", type=int, nargs="*", default=None)
    parser.add_argument("--microbatches", type=int, nargs="*", default=None)
    parser.add_argument("--placements", nargs="*", default=["1F1B", "V"], choices=["1F1B", "V"])
    parser.add_argument("--limit", type=float, default=None, help="time limit per row and side (s)")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--before-tree", default=None,
                        help="the 'before' side from this source tree as it is (instead of --before-rev)")
    parser.add_argument("--after-rev", default="HEAD", help="the 'after' side ('.': this working tree as it is)")
    parser.add_argument("--no-before", action="store_true", help="measure the after side only")
    parser.add_argument("--name", default=None, help="results file name (default scaling / scaling_quick / "
                                                          "scaling_plan)")
    parser.add_argument("--plan", action="store_true", help="measure plan() against its limit instead")
    parser.add_argument("--plan-rows", nargs="*", default=["5000:2", "20000:5", "40000:10"],
                        help="with --plan: micro-batches:limit_s per row")
    args = parser.parse_args(argv)
    ranks = args.ranks or ([8, 32] if args.quick else [8, 16, 32, 64])
    mbs = args.microbatches or ([64, 1024] if args.quick else [64, 256, 1024])
    limit = args.limit or (10.0 if args.quick else 30.0)
    rows = []
    revisions = {} if args.no_before or args.before_tree else {"before": args.before_rev}
    with revision_trees(REPO, {**revisions, "after": args.after_rev}, "scaling-") as trees:
        sides = {"before": Path(args.before_tree), **trees} if args.before_tree and not args.no_before else trees
        if args.plan:
            rows = _plan_rows(sides, [(int(a), float(b)) for a, b in (r.split(":") for r in args.plan_rows)])
        for kind in [] if args.plan else args.placements:
            for pp in ranks:
                for m in mbs:
                    for side, tree in sides.items():  # interleaved: both sides of a row one after the other
                        load = _load()
                        got = _run_side(tree, kind, pp, m, limit)
                        mk, lb, wall = got.get("makespan"), got.get("bound"), got.get("wall_s")
                        rows.append({
                            "placement": kind, "PP": pp, "m": m, "tasks": got.get("tasks"), "side": side,
                            "status": got.get("status"), "makespan": mk, "bound": lb,
                            "gap_%": round(100 * (mk - lb) / lb, 2) if mk is not None and lb else None,
                            "wall_s": wall, "limit_s": limit,
                            "in_limit": wall is not None and wall <= 1.1 * limit,
                            "rss_mb": got.get("rss_mb"), "engine": got.get("engine"), "load": load,
                            "notes": "; ".join(got.get("notes", [])) or got.get("error"),
                        })
                        print_table(rows[-1:], ["placement", "PP", "m", "tasks", "side", "status", "makespan",
                                                "bound", "gap_%", "wall_s", "in_limit", "rss_mb", "load",
                                                "engine"])
    print()
    print_table(rows, list(rows[0]) if args.plan and rows else
                ["placement", "PP", "m", "tasks", "side", "status", "makespan", "bound", "gap_%", "wall_s",
                 "limit_s", "in_limit", "rss_mb", "load", "engine"])
    name = args.name or ("scaling_plan" if args.plan else "scaling_quick" if args.quick else "scaling")
    before = None if args.no_before else (_tree_commit(args.before_tree) if args.before_tree else _commit(args.before_rev))
    write_results(name, rows, limit_s=None if args.plan else limit, before_rev=before,
                  after_rev=_commit(args.after_rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
