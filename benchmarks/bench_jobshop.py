"""Standard job-shop and flexible job-shop instances: a real-world check of the engine.

Targets (2 cores, 2 workers): CP-SAT proves ft06 and la01-la05 within 2 s
each and ft10 within 120 s; proves mk01, mk03, mk04 and mk08 within 60 s
each; Z3 proves ft06 and la01-la05 within 30 s each. A wider sample (la, orb,
abz, mk) is run with a shorter limit and its gaps reported. An ablation
measures, side by side, CP-SAT's stronger no-overlap propagation (on by
default for classic job shops), the redundant bounds (``makespan >= end +
tail`` per operation, which for a job shop is the job's remaining work, and
the per-machine bound) and the list-scheduling warm start.

**Whole processes** (what a script pays, :data:`WHOLE`): each side runs as
a fresh interpreter that imports its library, reads the instance file,
solves it and writes the plan; the clock runs from the launch to the exit.
The sides: this library (``read_instance``, ``jobshop``, the schedule's
JSON), PyJobShop 0.0.9 (``pyjobshop.read`` of the instance in FJSPLIB form,
``pyjobshop.solve`` with OR-tools, its tasks as JSON; in its own
interpreter, ``--pyjobshop PYTHON`` or ``$PYJOBSHOP_PYTHON``, skipped with
a note when none is given or it cannot import ``pyjobshop``) and the plain
CP-SAT model of :mod:`benchmarks.bench_jobshop_overhead` (the same FJSPLIB
file, a ten-line reader). A row ``(import)`` launches ``import schedsearch``
against ``import pyjobshop`` (which imports OR-tools). Every side reads
bytecode caches, as an installed package does (``PYTHONDONTWRITEBYTECODE``
is dropped, and one untimed launch of each side writes them). The runs
alternate (A, B, C, C, B, A, ...), the same workers, seed and limit on
every side, and each figure is the median (wall and CPU time); the goals:
this library's wall time at most PyJobShop's and at most the plain model's
x 1.2 + 0.1 s. The children also report their own phases (import, read,
solve, write). ``--before REV`` adds this library at a git revision as a
fourth side (the same child, its source tree in a temporary worktree).

The instance files and their optima come from the SchedulingLab collections
beside the repository (``../shared/data``, or ``--data``); the optima are
those of the collections' indexes.

Usage: ``python -m benchmarks.bench_jobshop [--quick] [--skip-wide]
[--skip-ablation] [--skip-whole] [--whole-only] [--whole-reps 4]
[--whole-workers 2] [--whole-limit 60] [--whole-instances NAME ...]
[--pyjobshop PYTHON] [--before REV] [--wide-limit 30] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import print_table, revision_trees, write_results
from benchmarks.bench_jobshop_overhead import _goal, _jobs, plain_cpsat
from schedsearch.loaders import read_index, read_instance
from schedsearch.search import jobshop
from schedsearch.validate import validate

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

#: (instances, backend, time limit s, target s)
TARGETS = [
    (["ft06", "la01", "la02", "la03", "la04", "la05"], "cpsat", 30.0, 2.0),
    (["ft10"], "cpsat", 120.0, 120.0),
    (["mk01", "mk03", "mk04", "mk08"], "cpsat", 60.0, 60.0),
    (["ft06", "la01", "la02", "la03", "la04", "la05"], "z3", 30.0, 30.0),
]

WIDE = (
    ["la06", "la10", "la16", "la17", "la18", "la19", "la20", "la21", "la24", "la25", "la27", "la29", "la36", "la40"]
    + [f"orb{i:02d}" for i in range(1, 11)]
    + ["abz5", "abz6", "abz7", "abz8", "abz9"]
    + ["mk02", "mk05", "mk06", "mk07", "mk09", "mk10", "mk11", "mk12", "mk13", "mk14", "mk15"]
)

ABLATION = ["ft10", "la16", "la18", "la19", "la20", "orb01", "orb02", "mk03", "mk04", "mk08"]

#: the whole-process comparison: the easy instances of the job shops and of the flexible ones
WHOLE = ["ft06", "la01", "la02", "la03", "la04", "la05", "mk01", "mk03", "mk04", "mk08"]

#: this library's side of a whole process: import, read the instance, plan, write the schedule
_OURS_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from schedsearch.loaders import read_instance
from schedsearch.search import jobshop
t1 = time.perf_counter()
path, out, limit, workers, seed = sys.argv[1:6]
problem = read_instance(path).problem
t2 = time.perf_counter()
result = jobshop(problem, time_limit_s=float(limit), workers=int(workers), seed=int(seed))
t3 = time.perf_counter()
with open(out, "w") as fh:
    fh.write(result.schedule.to_json())
t4 = time.perf_counter()
print(json.dumps({"status": result.status.value, "makespan": result.objective, "import_s": t1 - t0,
                  "read_s": t2 - t1, "solve_s": t3 - t2, "write_s": t4 - t3, "modules": len(sys.modules)}))
"""

#: PyJobShop's side: its reader of FJSPLIB files, its OR-tools model, its tasks written as JSON
_PYJOBSHOP_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import pyjobshop
t1 = time.perf_counter()
path, out, limit, workers, seed = sys.argv[1:6]
data = pyjobshop.read(path)
t2 = time.perf_counter()
r = pyjobshop.solve(data, "ortools", time_limit=float(limit), num_workers=int(workers), display=False,
                    random_seed=int(seed))
t3 = time.perf_counter()
with open(out, "w") as fh:
    json.dump([[t.mode, t.start, t.end] for t in r.best.tasks], fh)
t4 = time.perf_counter()
print(json.dumps({"status": r.status.name, "makespan": None if r.objective == float("inf") else int(r.objective),
                  "import_s": t1 - t0, "read_s": t2 - t1, "solve_s": t3 - t2, "write_s": t4 - t3,
                  "modules": len(sys.modules)}))
"""

#: the plain model's side: the FJSPLIB file read by a few lines, the model of bench_jobshop_overhead
_PLAIN_CHILD = """
import json, sys, time
t0 = time.perf_counter()
path, out, limit, workers, seed = sys.argv[1:6]
tokens = open(path).read().split()
num_jobs, num_machines, numbers = int(tokens[0]), int(tokens[1]), map(int, tokens[3:])
jobs = [[[(next(numbers) - 1, next(numbers)) for _ in range(next(numbers))] for _ in range(next(numbers))]
        for _ in range(num_jobs)]
t1 = time.perf_counter()
%s
status, value, bound = plain_cpsat(jobs, num_machines, float(limit), int(workers), int(seed))
t2 = time.perf_counter()
with open(out, "w") as fh:
    json.dump({"status": status, "makespan": value}, fh)
t3 = time.perf_counter()
print(json.dumps({"status": status, "makespan": value, "import_s": 0.0, "read_s": t1 - t0, "solve_s": t2 - t1,
                  "write_s": t3 - t2, "modules": len(sys.modules)}))
"""


def _solve(entry, backend: str, limit: float, **kwargs) -> dict:
    problem = read_instance(entry.path).problem
    result = jobshop(problem, backend=backend, time_limit_s=limit, workers=2, seed=0, **kwargs)
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    known = entry.optimum if entry.optimum is not None else entry.best_known
    return {
        "instance": entry.name,
        "size": f"{entry.num_jobs}x{entry.num_machines}",
        "optimum": entry.optimum,
        "best_known": known,
        "ours": result.objective,
        "lower_bound": result.lower_bound,
        "status": result.status.value,
        "gap_to_bound": result.gap,
        "above_best_known": (result.objective - known) / known if known else None,
        "time_s": result.wall_time_s,
        "backend": backend,
        "heuristic": result.stats.get("baseline", {}).get("makespan"),
        # an index optimum below a proven bound would be an index error: report it
        "index_disagrees": entry.optimum is not None and (
            result.lower_bound > entry.optimum or (result.status.value == "OPTIMAL" and result.objective != entry.optimum)
        ),
    }


def fjsplib_text(problem) -> str:
    """``problem`` (a job shop or flexible job shop of the loaders) in FJSPLIB form, machines from 1."""
    jobs, num_machines = _jobs(problem)
    lines = [f"{len(jobs)} {num_machines} 1"]
    for job in jobs:
        words = [len(job)]
        for alternatives in job:
            words.append(len(alternatives))
            for machine, duration in alternatives:
                words += [machine + 1, duration]
        lines.append(" ".join(map(str, words)))
    return "\n".join(lines) + "\n"


def pyjobshop_python(given: str | None) -> tuple[str | None, str]:
    """The interpreter that runs PyJobShop (``given`` or ``$PYJOBSHOP_PYTHON``), or None and why not."""
    python = given or os.environ.get("PYJOBSHOP_PYTHON")
    if not python:
        return None, "no PyJobShop interpreter given (--pyjobshop PYTHON or $PYJOBSHOP_PYTHON)"
    try:
        done = subprocess.run([python, "-c", "import pyjobshop; print(pyjobshop.__name__)"], capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, PYTHONPATH=""))
    except OSError as exc:
        return None, f"{python}: {exc.strerror}"
    if done.returncode:
        return None, f"{python} cannot import pyjobshop: {(done.stderr.strip().splitlines() or [''])[-1]}"
    return python, ""


def _launch(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, dict]:
    """Run ``command`` as a fresh process in ``cwd`` (a folder without a package of its own: ``python -c``
    puts it first on the module path): its wall time from launch to exit, its CPU time (user and system,
    all threads) and the JSON its last line prints."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{command[0]} -c ... {' '.join(command[3:4])} failed: "
                           f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    lines = done.stdout.strip().splitlines()
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, json.loads(lines[-1]) if lines else {}


def whole_processes(index, names: list[str], reps: int, workers: int, limit: float, pyjobshop: str | None,
                    before: Path | None = None) -> list[dict]:
    """Whole-process wall times of this library, PyJobShop (when ``pyjobshop``) and the plain model (module
    notes); with ``before`` (a source tree of this library) that tree's as a fourth side."""
    root = Path(__file__).resolve().parents[1]
    # every side reads its modules' bytecode caches, as an installed package does (written by the warm-up)
    user_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bare_env = dict(user_env, PYTHONPATH="")
    envs = {"ours": dict(user_env, PYTHONPATH=str(root)), "pyjobshop": bare_env, "plain": bare_env}
    if before is not None:
        envs["before"] = dict(user_env, PYTHONPATH=str(before))
    plain_code = _PLAIN_CHILD % inspect.getsource(plain_cpsat)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_jobshop_") as tmp:
        folder = Path(tmp)
        for i, name in enumerate([names[0], "(import)", *names]):
            warm_up = i == 0  # the first instance once, untimed: the bytecode caches written
            sides: dict[str, list[str] | None] = {}
            if name == "(import)":
                sides["ours"] = [sys.executable, "-c", "import schedsearch"]
                sides["pyjobshop"] = [pyjobshop, "-c", "import pyjobshop"] if pyjobshop else None
                sides["plain"] = [sys.executable, "-c", "from ortools.sat.python import cp_model"]
            else:
                problem = read_instance(index[name].path).problem
                fjs = folder / f"{name}.fjs"
                fjs.write_text(fjsplib_text(problem))
                tail = [str(limit), str(workers), "0"]
                sides["ours"] = [sys.executable, "-c", _OURS_CHILD, str(index[name].path), str(folder / "ours.json"),
                                 *tail]
                sides["pyjobshop"] = ([pyjobshop, "-c", _PYJOBSHOP_CHILD, str(fjs), str(folder / "pjs.json"), *tail]
                                      if pyjobshop else None)
                sides["plain"] = [sys.executable, "-c", plain_code, str(fjs), str(folder / "plain.json"), *tail]
            if before is not None:
                sides["before"] = sides["ours"]
            order = [side for side, command in sides.items() if command is not None]
            runs: dict[str, list[tuple[float, float, dict]]] = {side: [] for side in order}
            for rep in range(1 if warm_up else reps):  # A, B, C, C, B, A, ...: each side as often first as last
                for side in order if rep % 2 == 0 else order[::-1]:
                    runs[side].append(_launch(sides[side], envs[side], folder))
            if warm_up:
                continue
            row: dict = {"instance": name, "reps": reps, "workers": workers}
            for side, done in runs.items():
                row[f"{side}_s"] = statistics.median(wall for wall, _, _ in done)
                row[f"{side}_cpu_s"] = statistics.median(cpu for _, cpu, _ in done)
                row[f"{side}_times"] = [wall for wall, _, _ in done]
                reports = [report for _, _, report in done]
                if reports[-1]:
                    row[f"{side}_status"], row[f"{side}_makespan"] = reports[-1]["status"], reports[-1]["makespan"]
                    for phase in ("import_s", "read_s", "solve_s", "write_s"):
                        row[f"{side}_{phase}"] = statistics.median(r[phase] for r in reports)
            if "before_s" in row:
                row["ratio_before"] = row["ours_s"] / row["before_s"]
            if "pyjobshop_s" in row:
                row["ratio_pyjobshop"] = row["ours_s"] / row["pyjobshop_s"]
                row["goal_pyjobshop"] = row["ours_s"] <= row["pyjobshop_s"]
            row["ratio_plain"] = row["ours_s"] / row["plain_s"]
            row["goal_plain"] = _goal(row["ours_s"], row["plain_s"])
            if name != "(import)":
                made = {side: row.get(f"{side}_makespan") for side in order
                        if row.get(f"{side}_status") == "OPTIMAL"}
                row["agree"] = len(set(made.values())) <= 1
            rows.append(row)
            print(f"{name}: ours {row['ours_s']:.3f} s, "
                  + (f"before {row['before_s']:.3f} s, " if "before_s" in row else "")
                  + (f"pyjobshop {row['pyjobshop_s']:.3f} s (x{row['ratio_pyjobshop']:.2f}), "
                     if "pyjobshop_s" in row else "")
                  + f"plain {row['plain_s']:.3f} s (x{row['ratio_plain']:.2f})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_jobshop", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--quick", action="store_true", help="targets only, ft10 excluded")
    parser.add_argument("--skip-wide", action="store_true")
    parser.add_argument("--skip-ablation", action="store_true")
    parser.add_argument("--wide-limit", type=float, default=30.0)
    parser.add_argument("--ablation-limit", type=float, default=30.0)
    parser.add_argument("--skip-whole", action="store_true", help="no whole-process comparison")
    parser.add_argument("--whole-only", action="store_true", help="only the whole-process comparison")
    parser.add_argument("--whole-reps", type=int, default=4, help="launches of each side per instance")
    parser.add_argument("--whole-workers", type=int, default=2)
    parser.add_argument("--whole-limit", type=float, default=60.0)
    parser.add_argument("--whole-instances", nargs="*", default=None, help=f"default: {' '.join(WHOLE)}")
    parser.add_argument("--pyjobshop", default=None, help="an interpreter with pyjobshop 0.0.9 and this OR-tools")
    parser.add_argument("--before", default=None, metavar="REV",
                        help="a git revision of this library run as a fourth side (the 'before' of a change)")
    args = parser.parse_args(argv)
    root = Path(args.data)
    if not (root / "jsp" / "classical.json").is_file():
        print(f"no instance collections under {root}; pass --data")
        return 0
    index = {**read_index(root / "jsp" / "classical.json"), **read_index(root / "fjsp" / "instances.json")}
    load_before = os.getloadavg()

    rows = []
    for names, backend, limit, target in [] if args.whole_only else TARGETS:
        if args.quick and "ft10" in names:
            continue
        for name in names:
            row = _solve(index[name], backend, limit)
            row["target_s"] = target
            row["met"] = row["status"] == "OPTIMAL" and row["time_s"] <= target
            rows.append(row)
            print(f"{name} {backend}: {row['ours']} ({row['status']}) in {row['time_s']:.2f} s", flush=True)
    if rows:
        print("\nTargets")
        print_table(rows, ["instance", "size", "optimum", "ours", "lower_bound", "status", "time_s", "backend",
                           "target_s", "met", "index_disagrees"])

    wide = []
    if not (args.skip_wide or args.quick or args.whole_only):
        for name in WIDE:
            row = _solve(index[name], "cpsat", args.wide_limit)
            wide.append(row)
            print(f"{name}: {row['ours']} vs {row['best_known']} ({row['status']}) in {row['time_s']:.1f} s", flush=True)
        print(f"\nWider sample (CP-SAT, {args.wide_limit:g} s each)")
        print_table(wide, ["instance", "size", "best_known", "ours", "lower_bound", "status", "gap_to_bound",
                           "above_best_known", "time_s", "index_disagrees"])

    ablation = []
    if not (args.skip_ablation or args.quick or args.whole_only):
        configs = [
            {"strong_disjunctive": None, "redundant": True, "list_baseline": True},  # the defaults
            {"strong_disjunctive": None, "redundant": True, "list_baseline": False},
            {"strong_disjunctive": None, "redundant": False, "list_baseline": True},
            {"strong_disjunctive": False, "redundant": True, "list_baseline": True},
            {"strong_disjunctive": True, "redundant": True, "list_baseline": True},
        ]
        for name in ABLATION:
            seen = set()
            for config in configs:
                problem_fixed = name.startswith(("la", "orb", "ft", "abz"))
                strong = problem_fixed if config["strong_disjunctive"] is None else config["strong_disjunctive"]
                key = (strong, config["redundant"], config["list_baseline"])
                if key in seen:
                    continue
                seen.add(key)
                row = _solve(index[name], "cpsat", args.ablation_limit, **config)
                row.update(strong_disjunctive=strong, redundant=config["redundant"], warm_start=config["list_baseline"])
                ablation.append(row)
                print(f"{name} strong={strong} redundant={config['redundant']} warm={config['list_baseline']}: "
                      f"{row['ours']} ({row['status']}) {row['time_s']:.2f} s", flush=True)
        print(f"\nAblation (CP-SAT, {args.ablation_limit:g} s each): strong disjunctive propagation, redundant "
              "bounds, warm start")
        print_table(ablation, ["instance", "optimum", "strong_disjunctive", "redundant", "warm_start", "ours",
                               "lower_bound", "status", "time_s"])

    whole, note = [], ""
    if not args.skip_whole:
        python, note = pyjobshop_python(args.pyjobshop)
        whole_load = os.getloadavg()
        repo = Path(__file__).resolve().parents[1]
        with revision_trees(repo, {"before": args.before} if args.before else {}, "bench_jobshop_") as trees:
            whole = whole_processes(index, args.whole_instances or WHOLE, args.whole_reps, args.whole_workers,
                                    args.whole_limit, python, trees.get("before"))
        print(f"\nWhole processes (launch to exit; medians of {args.whole_reps} alternating launches, "
              f"workers={args.whole_workers}, seed 0; load average {whole_load[0]:.2f} -> {os.getloadavg()[0]:.2f})"
              + (f"; PyJobShop skipped: {note}" if note else ""))
        print_table(whole, ["instance", "ours_status", "ours_makespan", "ours_s", "before_s", "ratio_before",
                            "pyjobshop_s", "ratio_pyjobshop", "goal_pyjobshop", "plain_s", "ratio_plain", "goal_plain",
                            "agree"])
        print("\nCPU time of the whole process (user and system, all threads; medians, s) and the phases inside it")
        print_table(whole, ["instance"] + [f"{side}_{phase}" for side in ("ours", "before", "pyjobshop", "plain")
                                           for phase in ("cpu_s", "import_s", "solve_s")])

    summary = {
        "targets_met": sum(r["met"] for r in rows),
        "targets": len(rows),
        "whole_goal_pyjobshop_met": sum(bool(r.get("goal_pyjobshop")) for r in whole),
        "whole_goal_plain_met": sum(bool(r["goal_plain"]) for r in whole),
        "whole_rows": len(whole),
        "whole_note": note,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    print(summary)
    if args.whole_only:  # the other sections' record stays
        write_results("jobshop_whole", whole, summary=summary)
    else:
        write_results("jobshop", rows, wide=wide, ablation=ablation, whole=whole, summary=summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
