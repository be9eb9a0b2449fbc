"""Time limits held: ``solve`` on the scaling grid and ``plan`` on two pipelines, idle and beside busy processes.

Rows:

* ``solve(objective="makespan", time_limit_s=LIMIT, workers=1)`` on the
  scaling grid: ``1F1B`` (``vshape(PP, m)``), ``V`` (``vshape_chunks(PP,
  m)``, unit times, no capacity), ``V-Min cap`` (the same at V-Min's
  capacity, :func:`~schedsearch.handcrafted.v_capped.v_min_cap`) and
  ``ZB-V cap`` (the same at ``PP + 1`` activations per device, as
  ``bench_zbv_scale``), for ``PP`` in 8-64 and ``m`` in 64-1024;
* ``plan(time_limit_s=LIMIT)`` on the sample ``models/pipeline.toml`` (8
  layers, 4 ranks, 8 micro-batches) and on a 32-layer pipeline (the
  sample's layers repeated, 8 ranks, 64 micro-batches), default executor
  and parallelism;

each with every limit of ``--limits``, each in its own process, once with
the machine as it is (``idle``) and, with ``--loaded``, once beside
``--busy`` processes that spin (``python -c 'while True: pass'``, started
for that pass and stopped after it). Both sides of a row (``before``: the
library at ``--before-rev``; ``after``: at ``--after-rev``, default
``HEAD``) run one after the other.

Per row and side: the call's wall time and its ratio to the limit, whether
it is within the goal (at most ``0.5 s + 5 %`` over the limit), the whole
process's wall time (import included), the status, the time of the first
plan (``solve``), the makespan, the bound and the gap at the limit, and the
load average when the row started. Quote ratios with the load average.

Run: ``python -m benchmarks deadline`` (quick: 8x64 and 64x1024 of every
placement, limits 1 and 5 s, idle) or ``python benchmarks/bench_deadline.py
[--full] [--loaded] [--limits 1 5 10 30] [--ranks ..] [--microbatches ..]
[--placements ..] [--no-solve] [--no-plan] [--no-before] [--busy 8]``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, revision_trees, write_results

REPO = Path(__file__).resolve().parents[1]
#: The last commit before the hard stop: the "before" side.
BEFORE_REV = "cca30ee"
PLACEMENTS = ("1F1B", "V", "V-Min cap", "ZB-V cap")
PIPELINES = ("sample", "32 layers", "llama3-8b layers")


def within_goal(wall_s: float | None, limit_s: float) -> bool:
    """The goal of every row: the call ends at most ``0.5 s + 5 %`` after its limit.

    >>> within_goal(10.9, 10.0), within_goal(11.1, 10.0), within_goal(None, 1.0)
    (True, False, False)
    """
    return wall_s is not None and wall_s <= 1.05 * limit_s + 0.5


def problem_of(kind: str, pp: int, m: int):  # noqa: ANN201 - a Problem, imported lazily
    """The scaling grid's problem of placement ``kind`` on ``pp`` ranks and ``m`` micro-batches."""
    from schedsearch import placements
    from schedsearch.handcrafted.v_capped import v_min_cap

    if kind == "1F1B":
        return placements.vshape(pp, m)
    if kind == "V":
        return placements.vshape_chunks(pp, m)
    if kind == "V-Min cap":
        return placements.vshape_chunks(pp, m, memory=v_min_cap(pp))
    if kind == "ZB-V cap":
        return placements.vshape_chunks(pp, m, memory=pp + 1)
    raise ValueError(kind)


def pipeline_of(name: str, repo: Path):  # noqa: ANN201 - a Pipeline, imported lazily
    """The sample description, the 32-layer pipeline made of its layers (8 ranks, 64 micro-batches), or the
    model in layers ``models/llama3_8b_layers.toml`` (its first pipeline degree: split, micro-batching and
    recomputation chosen with the schedule)."""
    import attrs

    from schedsearch.plan.pipeline import Pipeline

    if name == "llama3-8b layers":
        from schedsearch.plan.layers import LayerModel

        return LayerModel.load(repo / "models" / "llama3_8b_layers.toml")
    sample = Pipeline.load(repo / "models" / "pipeline.toml")
    if name == "sample":
        return sample
    inner = sample.stages[1:-1]
    layers = [sample.stages[0]] + [attrs.evolve(inner[i % len(inner)], name=f"layer{i + 1}") for i in range(30)]
    return attrs.evolve(sample, name="llama-like-32-layers", num_ranks=8, num_microbatches=64,
                        stages=tuple(layers + [sample.stages[-1]]))


# the children define the rows' problems with this module's own functions (the "before" tree has no copy)
_SOLVE_CHILD = r"""
import json, os, sys, time
from schedsearch.search.portfolio import solve
PROBLEM_OF
kind, pp, m, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
problem = problem_of(kind, pp, m)
first = []
t0 = time.perf_counter()
def progress(event):
    if event.incumbent is not None and not first:
        first.append(time.perf_counter() - t0)
result = solve(problem, objective="makespan", time_limit_s=limit, seed=0, workers=1, progress=progress)
wall = time.perf_counter() - t0
print(json.dumps({"tasks": len(problem.tasks), "status": result.status.value, "makespan": result.objective,
                  "bound": result.lower_bound, "engine": result.engine, "call_s": round(wall, 3),
                  "first_s": round(first[0], 3) if first else None}))
"""

_PLAN_CHILD = r"""
import json, sys, time
from pathlib import Path
PIPELINE_OF
from schedsearch.errors import NoFittingPlanError
from schedsearch.plan.planner import plan
def main():
    name, limit, repo = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
    pipeline = pipeline_of(name, repo)
    t0 = time.perf_counter()
    try:
        result = plan(pipeline, time_limit_s=limit)
        best = result.best
        if hasattr(result, "candidates"):  # a model in layers: its best candidate and the bound of them all
            out = {"status": best.row.status.value, "makespan": best.makespan_ms, "bound": result.bound_ms,
                   "engine": best.candidate.label}
        else:
            out = {"status": best.status.value, "makespan": best.makespan_ms, "bound": best.bound_ms,
                   "engine": best.family}

    except NoFittingPlanError:
        out = {"status": "no plan", "plans": 0}
    out["call_s"] = round(time.perf_counter() - t0, 3)
    print(json.dumps(out))
if __name__ == "__main__":
    main()
"""


_SOLVE_CHILD = _SOLVE_CHILD.replace("PROBLEM_OF", inspect.getsource(problem_of))
_PLAN_CHILD = _PLAN_CHILD.replace("PIPELINE_OF", inspect.getsource(pipeline_of))


def _child(code: str, args: list, tree: Path, limit: float) -> dict:
    """Run ``code`` with ``args`` against the library in ``tree``; its JSON answer with ``process_s``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    kill = limit * 20 + 120
    t0 = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, cwd=str(tree),
                             capture_output=True, text=True, timeout=kill)
    except subprocess.TimeoutExpired:
        return {"status": "KILLED", "process_s": kill}
    got = ({"status": "ERROR", "error": (out.stderr.strip().splitlines() or [""])[-1]} if out.returncode
           else json.loads(out.stdout.strip().splitlines()[-1]))
    got["process_s"] = round(time.perf_counter() - t0, 2)
    return got


@contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` processes that spin while inside (none for 0), stopped on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(1.0 if procs else 0.0)  # let them take the cores
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _row(what: str, size: str, limit: float, side: str, load: str, got: dict, la: float) -> dict:
    wall, mk, lb = got.get("call_s"), got.get("makespan"), got.get("bound")
    return {"what": what, "size": size, "limit_s": limit, "side": side, "load": load, "call_s": wall,
            "ratio": round(wall / limit, 2) if wall is not None else None, "goal": within_goal(wall, limit),
            "process_s": got.get("process_s"), "status": got.get("status"), "first_s": got.get("first_s"),
            "makespan": mk, "bound": lb,
            "gap_%": round(100 * (mk - lb) / lb, 2) if mk is not None and lb else None,
            "loadavg": la, "engine": got.get("engine") or got.get("error")}


COLUMNS = ["what", "size", "limit_s", "side", "load", "call_s", "ratio", "goal", "process_s", "status", "first_s",
           "gap_%", "loadavg"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="8-64 ranks x 64-1024 micro-batches, limits 1 5 10 30, idle and loaded (long)")
    parser.add_argument("--ranks", type=int, nargs="*", default=None)
    parser.add_argument("--microbatches", type=int, nargs="*", default=None)
    parser.add_argument("--sizes", nargs="*", default=None, help="PPxM pairs instead of the ranks x micro-batches grid")
    parser.add_argument("--placements", nargs="*", default=list(PLACEMENTS), choices=PLACEMENTS)
    parser.add_argument("--pipelines", nargs="*", default=list(PIPELINES), choices=PIPELINES)
    parser.add_argument("--limits", type=float, nargs="*", default=None)
    parser.add_argument("--loaded", action="store_true", help="also run every row beside --busy spinning processes")
    parser.add_argument("--only-loaded", action="store_true", help="run the loaded pass only")
    parser.add_argument("--busy", type=int, default=8)
    parser.add_argument("--no-solve", action="store_true")
    parser.add_argument("--no-plan", action="store_true")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--after-rev", default="HEAD", help="the 'after' side ('.': this working tree as it is)")
    parser.add_argument("--no-before", action="store_true", help="measure the after side only")
    parser.add_argument("--name", default=None, help="results file name (default deadline / deadline_full)")
    args = parser.parse_args(argv)
    if args.sizes:
        sizes = [tuple(int(x) for x in s.lower().split("x")) for s in args.sizes]
    elif args.full or args.ranks or args.microbatches:
        sizes = [(pp, m) for pp in args.ranks or [8, 16, 32, 64] for m in args.microbatches or [64, 256, 1024]]
    else:
        sizes = [(8, 64), (64, 1024)]
    limits = args.limits or ([1.0, 5.0, 10.0, 30.0] if args.full else [1.0, 5.0])
    passes = ([] if args.only_loaded else ["idle"]) + (["loaded"] if args.loaded or args.full or args.only_loaded
                                                      else [])
    revisions = {} if args.no_before else {"before": args.before_rev}
    rows: list[dict] = []
    with revision_trees(REPO, {**revisions, "after": args.after_rev}, "deadline-") as trees:
        for load in passes:
            with busy(args.busy if load == "loaded" else 0):
                for limit in limits:
                    for kind in [] if args.no_solve else args.placements:
                        for pp, m in sizes:
                            for side, tree in trees.items():
                                la = round(os.getloadavg()[0], 1)
                                got = _child(_SOLVE_CHILD, [kind, pp, m, limit], tree, limit)
                                rows.append(_row(f"solve {kind}", f"{pp}x{m}", limit, side, load, got, la))
                                print_table(rows[-1:], COLUMNS)
                    for name in [] if args.no_plan else args.pipelines:
                        for side, tree in trees.items():
                            la = round(os.getloadavg()[0], 1)
                            got = _child(_PLAN_CHILD, [name, limit, REPO], tree, limit)

                            rows.append(_row(f"plan {name}", "", limit, side, load, got, la))
                            print_table(rows[-1:], COLUMNS)
    print()
    print_table(rows, COLUMNS + ["makespan", "bound", "engine"])
    for side in dict.fromkeys(r["side"] for r in rows):
        for load in passes:
            mine = [r for r in rows if r["side"] == side and r["load"] == load]
            if mine:
                worst = max(mine, key=lambda r: r["ratio"] or 0.0)
                print(f"{side}, {load}: {sum(r['goal'] for r in mine)}/{len(mine)} rows within 0.5 s + 5 % of the "
                      f"limit; worst {worst['what']} {worst['size']} at {worst['limit_s']:g} s: {worst['call_s']} s")
    write_results(args.name or ("deadline_full" if args.full else "deadline"), rows,
                  before_rev=None if args.no_before else args.before_rev, after_rev=args.after_rev,
                  busy=args.busy if "loaded" in passes else 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
