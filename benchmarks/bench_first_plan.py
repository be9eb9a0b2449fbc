"""Time to the first good answer: ``solve``'s first plan against the public heuristic of its placement.

For each configuration the public heuristic that a user would otherwise
run (its time and its makespan) is set beside ``solve(objective="makespan",
time_limit_s=LIMIT, workers=1, seed=0)``, read from its progress events
(each carries the elapsed time, the source of the incumbent, its makespan
and the bound): when the first plan arrived, its makespan and source, when
``solve`` first held a plan at least as short as the heuristic's, and its
final makespan, status and wall time.

Sections (``--section``):

* ``v``: the V placement (``vshape_chunks``, two chunks per device, F +1,
  I 0, W -1 per chunk), V-Half and V-Min, ``p`` in {4, 8} (16 without
  ``--quick``), ``m`` in {2p, 4p}, F / I / W in {1/1/1, 2/2/1} (and 3/2/2),
  communication time 0 and 1 (every edge between devices carries 1 unit
  over a directed channel each way). The heuristic: with ``--zb-repo
  PATH`` (a checkout of sail-sg/zero-bubble-pipeline-parallelism outside
  this repository) its V-Half / V-Min greedy (``zbv_greedy.PipelineGraph``:
  the stable pattern, squeezed twice, timed with the communication time),
  run live in a child process, its modules loaded by path, nothing of it
  copied here; its plan's own peak is every device's capacity for
  ``solve``. Without it: the library's
  :func:`~schedsearch.handcrafted.v_capped.v_half` /
  :func:`~schedsearch.handcrafted.v_capped.v_min` (which reach the public
  greedy's figures) at the named caps.
* ``zb``: one stage per rank (ZB-H1 placement), F / I / W = 18 / 18 / 9,
  memory +1 / 0 / -1 per micro-batch, caps ``p`` and ``2p``, ``p`` in {4, 8},
  ``m`` = 24, communication 0 and 1. The heuristic: the repository's
  automatic scheduler (``zb.py``, live with ``--zb-repo``), else the
  library's :func:`~schedsearch.handcrafted.zb_greedy.zb_greedy`.
* ``1f1b``: the 1F1B placement (``vshape``), F / B = 1 / 2, ``p`` in {8, 32},
  ``m`` in {64, 1024} (1024 not with ``--quick``). The heuristic: the
  library's :func:`~schedsearch.handcrafted.classic.one_f_one_b` (1F1B's
  published order).

Both sides are timed after their imports (a small ``solve`` warms the
library up first), each after a garbage collection; a heuristic timed in
this process keeps only its plan's figures, so ``solve`` does not run
beside the heuristic's plan. Columns: ``heur_s`` / ``heur`` the heuristic's time and makespan;
``first_s`` / ``first`` / ``first_source`` solve's first plan; ``match_s``
when solve first held a plan of at most ``heur``; ``final``, ``status``,
``bound``, ``solve_s``; ``first<=heur`` and ``first_s<=heur_s``; and the
criterion itself, ``match_s<=heur_s``: a plan at least as short as the
heuristic's within the heuristic's time (``match_s <= heur_s``). The
summary line counts all three.

Run: ``python -m benchmarks first_plan`` or ``python benchmarks/bench_first_plan.py
[--quick] [--limit 10] [--section v] [--zb-repo PATH]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attrs

from benchmarks._common import ZB_REPO_LOADER, print_table, run_child, write_results
from schedsearch import Channel, solve
from schedsearch.problem import Problem

#: Runs the repository's V-Half / V-Min greedy: loads its graph and zbv_greedy modules by path.
_V_CHILD = ZB_REPO_LOADER + r"""
root, p, m, f, b, w, comm, kind = sys.argv[1:9]
p, m, f, b, w, comm = int(p), int(m), int(f), int(b), int(w), float(comm)
load("graph")
vg = load("zbv_greedy")
t0 = time.perf_counter()
g = vg.PipelineGraph(p, m, kind, f, b, w, comm)
pattern = {"half": g.stable_pattern_v_half, "min": g.stable_pattern_v_min}[kind](p)
cost = [f, f, b, b, w, w]
span, starts, orders = g.schedule_from_pattern(pattern, m, cost)
wall = time.perf_counter() - t0
ends = [s + cost[t] for st in starts for t, col in enumerate(st) for s in col]
first = min(s for st in starts for col in st for s in col)
delta = [1, 1, 0, 0, -1, -1]
peak = 0
for order in orders:
    level = top = 0
    for t, _ in order:
        level += delta[t]; top = max(top, level)
    peak = max(peak, top)
print(json.dumps({"span": span, "makespan": max(ends) - first, "peak": peak, "s": wall}))
"""


def _child(code: str, args: list[Any]) -> dict[str, Any]:
    return run_child(code, args, timeout_s=1200)


def with_communication(problem: Problem, time_per_unit: int) -> Problem:
    """``problem`` with 1 unit on every edge between devices, over one directed channel each way between
    neighbouring devices, of ``time_per_unit``."""
    if not time_per_unit:
        return problem
    devices = {b.name: b.options[0].devices for b in problem.graph.blocks}
    edges = [attrs.evolve(e, size=1) if devices[e.src] != devices[e.dst] else e for e in problem.graph.edges]
    names = problem.cluster.device_names
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=time_per_unit, directed=True)
                for i in range(len(names) - 1) for a, b in ((names[i], names[i + 1]), (names[i + 1], names[i]))]
    return problem.with_(graph=attrs.evolve(problem.graph, edges=edges),
                         cluster=attrs.evolve(problem.cluster, channels=channels))


def _solve(problem: Problem, limit: float, heur: int | None) -> dict[str, Any]:
    """solve's progress read off its events: first plan (time, makespan, source), when it first held a plan
    of at most ``heur``, and the final figures."""
    events: list[Any] = []
    gc.collect()  # as before the heuristic: neither side pays for collecting the other's garbage
    t0 = time.perf_counter()
    result = solve(problem, objective="makespan", time_limit_s=limit, workers=1, seed=0,
                   progress=lambda e: e.incumbent is not None and events.append(e))
    wall = time.perf_counter() - t0
    first = events[0] if events else None
    match = next((e for e in events if heur is not None and e.incumbent <= heur), None)
    return {
        "first_s": round(first.elapsed_s, 3) if first else None,
        "first": first.incumbent if first else None,
        "first_source": first.source if first else None,
        "match_s": round(match.elapsed_s, 3) if match else None,
        "final": result.objective, "bound": result.lower_bound, "status": result.status.value,
        "solve_s": round(wall, 2),
    }


def _heuristic(build: Any, problem: Problem) -> tuple[int, float]:
    """The makespan of a library heuristic's plan of ``problem`` and the seconds it took. The plan itself is
    not kept: timed in this process, ``solve`` would otherwise run beside it (its tens of thousands of task
    objects scanned by every garbage collection ``solve`` triggers), which the heuristic did not."""
    gc.collect()
    t0 = time.perf_counter()
    schedule = build(problem)
    return schedule.makespan, time.perf_counter() - t0


def _compare(row: dict[str, Any]) -> dict[str, Any]:
    heur, first = row.get("heur"), row.get("first")
    row["first<=heur"] = None if heur is None or first is None else first <= heur
    row["first_s<=heur_s"] = None if row.get("heur_s") is None or row.get("first_s") is None \
        else row["first_s"] <= row["heur_s"]
    # the criterion: a plan at least as short as the heuristic's within the heuristic's time
    row["match_s<=heur_s"] = None if row.get("heur_s") is None or heur is None \
        else row.get("match_s") is not None and row["match_s"] <= row["heur_s"]
    return row


def _v_rows(quick: bool, limit: float, root: str | None) -> list[dict[str, Any]]:
    from schedsearch.handcrafted.v_capped import v_half, v_half_cap, v_min, v_min_cap
    from schedsearch.placements import vshape_chunks

    rows = []
    sizes = [(p, m) for p in ((4, 8) if quick else (4, 8, 16)) for m in (2 * p, 4 * p)]
    costs_list = [(1, 1, 1), (2, 2, 1)] + ([] if quick else [(3, 2, 2)])
    for comm in (0, 1):
        for p, m in sizes:
            for costs in costs_list:
                for kind, build, named_cap in (("half", v_half, v_half_cap(p)), ("min", v_min, v_min_cap(p))):
                    row: dict[str, Any] = {"section": "v", "config": f"V-{kind.capitalize()} {p}x{m} "
                                           f"{'/'.join(map(str, costs))} comm {comm}"}
                    base = with_communication(vshape_chunks(p, m, forward=costs[0], input_grad=costs[1],
                                                            weight_grad=costs[2]), comm)
                    if root:
                        got = _child(_V_CHILD, [root, p, m, *costs, comm, kind])
                        if "error" in got:
                            row["heur_error"] = got["error"]
                            rows.append(row)
                            continue
                        row.update(heuristic="public greedy (live)", heur_s=round(got["s"], 3),
                                   heur=int(got["makespan"]), heur_span=int(got["span"]), cap=got["peak"])
                    else:
                        makespan, seconds = _heuristic(build, base)
                        row.update(heuristic=f"library V-{kind.capitalize()}", heur_s=round(seconds, 3),
                                   heur=makespan, cap=named_cap)
                    problem = base.with_(cluster=attrs.evolve(
                        base.cluster, devices=tuple(attrs.evolve(d, memory=row["cap"]) for d in base.cluster.devices)))
                    row.update(_solve(problem, limit, row["heur"]))
                    rows.append(_compare(row))
                    print_table(rows[-1:])
    return rows


def _zb_rows(quick: bool, limit: float, root: str | None) -> list[dict[str, Any]]:
    from benchmarks.bench_zb_auto import _problem, _repo
    from schedsearch.handcrafted.zb_greedy import zb_greedy

    rows = []
    for comm in (0, 1):
        for p in (4,) if quick else (4, 8):
            m = 24
            for cap in (p, 2 * p):
                problem = _problem(p, m, cap, comm)
                row: dict[str, Any] = {"section": "zb", "config": f"ZB {p}x{m} cap {cap} comm {comm}", "cap": cap}
                got = _repo(root, p, m, cap, comm) if root else {"error": "no checkout"}
                if "error" not in got:
                    row.update(heuristic="public zb.py (live)", heur_s=round(got["ms"] / 1000, 3),
                               heur=int(got["makespan"]), heur_span=int(got["span"]))
                else:
                    makespan, seconds = _heuristic(zb_greedy, problem)
                    row.update(heuristic="library zero-bubble greedy", heur_s=round(seconds, 3), heur=makespan)
                row.update(_solve(problem, limit, row["heur"]))
                rows.append(_compare(row))
                print_table(rows[-1:])
    return rows


def _one_f_one_b_rows(quick: bool, limit: float) -> list[dict[str, Any]]:
    from schedsearch.handcrafted.classic import one_f_one_b
    from schedsearch.placements import vshape

    rows = []
    for p in (8, 32):
        for m in (64,) if quick else (64, 1024):
            problem = vshape(p, m, forward=1, backward=2)
            makespan, seconds = _heuristic(one_f_one_b, problem)
            row: dict[str, Any] = {"section": "1f1b", "config": f"1F1B {p}x{m}", "heuristic": "library 1F1B",
                                   "heur_s": round(seconds, 3), "heur": makespan}
            row.update(_solve(problem, limit, row["heur"]))
            rows.append(_compare(row))
            print_table(rows[-1:])
    return rows


COLUMNS = ["config", "heuristic", "cap", "heur_s", "heur", "first_s", "first", "first_source", "match_s", "final",
           "bound", "status", "solve_s", "first<=heur", "first_s<=heur_s", "match_s<=heur_s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smaller sizes only")
    parser.add_argument("--limit", type=float, default=10.0, help="solve's time limit per configuration (s)")
    parser.add_argument("--section", action="append", choices=("v", "zb", "1f1b"),
                        help="the sections to run (default all)")
    parser.add_argument("--zb-repo", default=None, help="a checkout of the zero-bubble repository (run live)")
    args = parser.parse_args(argv)
    sections = args.section or ["v", "zb", "1f1b"]
    # warm up (imports, first calls) as the heuristic's child process does before its clock starts
    from schedsearch.placements import vshape_chunks

    solve(vshape_chunks(2, 2), objective="makespan", time_limit_s=5, workers=1)
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    if "v" in sections:
        rows += _v_rows(args.quick, args.limit, args.zb_repo)
    if "zb" in sections:
        rows += _zb_rows(args.quick, args.limit, args.zb_repo)
    if "1f1b" in sections:
        rows += _one_f_one_b_rows(args.quick, args.limit)
    print()
    print_table(rows, COLUMNS)
    judged = [r for r in rows if r.get("first<=heur") is not None]
    print(f"\nfirst plan at least as short as the heuristic's: {sum(r['first<=heur'] for r in judged)} of "
          f"{len(judged)}; first plan within the heuristic's time: {sum(bool(r['first_s<=heur_s']) for r in judged)} "
          f"of {len(judged)}; a plan at least as short as the heuristic's within its time: "
          f"{sum(bool(r['match_s<=heur_s']) for r in judged)} of {len(judged)}; "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    write_results("first_plan_quick" if args.quick else "first_plan", rows, limit_s=args.limit,
                  load_average=load, repo_run_live=bool(args.zb_repo), sections=sections)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
