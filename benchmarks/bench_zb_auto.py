"""The zero-bubble automatic scheduler: the library's greedy and ``solve`` against the repository's.

Configurations (the ones the zero-bubble repository's figures were recorded
on): one stage per rank (ZB-H1 placement), F / I / W = 18 / 18 / 9, memory
per micro-batch +1 at F, 0 at I, -1 at W, every rank capped at ``p`` or
``2p``, ``p`` in {4, 8}, ``m`` in {12, 24, 48}, communication time 0 and 1
(``comm``: every edge between ranks carries 1 unit over a directed channel
each way of that time per unit). Per configuration:

* ``greedy``: :func:`~schedsearch.handcrafted.zb_greedy.zb_greedy` (the
  library's own implementation of the paper's heuristic, eight variants,
  the least longest stage span kept): its time, longest stage span and
  makespan;
* ``solve``: ``solve(objective="makespan", time_limit_s=LIMIT, workers=1)``:
  when its first plan arrived and its value (from the progress events),
  then its final value, status and wall time;
* the analytic bounds of both objectives (makespan and longest span);
* ``repo`` (with ``--zb-repo PATH``, a checkout of
  sail-sg/zero-bubble-pipeline-parallelism outside this repository): its
  ``Graph.build_graph`` + ``initial_solution`` run live in a child process
  (its two modules loaded by path; nothing of it is copied here) at the
  row's communication time: its time, its objective (the longest stage
  span, last W end minus first F start), the makespan of its completion
  times, and whether the library's greedy gives the same two figures.

The repository's scheduler, like the library's greedy, ranks plans by the
longest stage span; a training step's wall time (what torchtitan's runtime
measures per step) is the makespan.

Run: ``python -m benchmarks zb_auto`` or ``python benchmarks/bench_zb_auto.py
[--quick] [--limit 10] [--zb-repo PATH]``.
"""

from __future__ import annotations

import argparse

import attrs
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ZB_REPO_LOADER, print_table, run_child, write_results
from schedsearch import Channel, solve
from schedsearch.bounds.analytic import objective_lower_bound
from schedsearch.handcrafted.zb_greedy import zb_greedy
from schedsearch.placements import zero_bubble
from schedsearch.schedule import max_span

F, I, W = 18, 18, 9

#: Runs the repository's scheduler: loads its graph and zb modules by path under their package names.
_REPO_CHILD = ZB_REPO_LOADER + r"""
root, p, m, cap, comm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
sys.modules.setdefault("pulp", types.ModuleType("pulp"))  # imported by zb.py, unused by the greedy
graph_mod, zb = load("graph"), load("zb")
config = graph_mod.GraphConfig(mem_f=[1] * p, mem_b=[0] * p, mem_w=[-1] * p, max_mem=[cap] * p,
                               cost_f=[18.0] * p, cost_b=[18.0] * p, cost_w=[9.0] * p, cost_comm=comm,
                               n_stages=p, n_micro=m)
t0 = time.perf_counter()
g = zb.Graph.build_graph(p, m, config)
best, order, done = zb.initial_solution(g, print_result=False)
wall = time.perf_counter() - t0
starts = [done[i] - g.get_cost(i) for i in range(g.nnodes)]
print(json.dumps({"span": best, "makespan": max(done) - min(starts), "ms": round(1000 * wall, 1)}))
"""


def _repo(root: str, p: int, m: int, cap: int, comm: float) -> dict[str, Any]:
    return run_child(_REPO_CHILD, [root, p, m, cap, comm], timeout_s=600)


def _problem(p: int, m: int, cap: int, comm: int):
    problem = zero_bubble(p, m, forward=F, input_grad=I, weight_grad=W, forward_memory=1, input_grad_memory=0,
                          weight_grad_memory=-1, memory=cap)
    if not comm:
        return problem
    devices = {b.name: b.options[0].devices for b in problem.graph.blocks}
    edges = [attrs.evolve(e, size=1) if devices[e.src] != devices[e.dst] else e for e in problem.graph.edges]
    names = problem.cluster.device_names
    channels = [Channel(name=f"{a}-{b}", endpoints=(a, b), time_per_unit=comm, directed=True)
                for i in range(p - 1) for a, b in ((names[i], names[i + 1]), (names[i + 1], names[i]))]
    return problem.with_(graph=attrs.evolve(problem.graph, edges=edges),
                         cluster=attrs.evolve(problem.cluster, channels=channels))


def _row(p: int, m: int, cap: int, comm: int, limit: float, root: str | None) -> dict[str, Any]:
    problem = _problem(p, m, cap, comm)
    t0 = time.perf_counter()
    greedy = zb_greedy(problem)
    greedy_ms = 1000 * (time.perf_counter() - t0)
    events: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    result = solve(problem, objective="makespan", time_limit_s=limit, workers=1, seed=0,
                   progress=lambda e: e.incumbent is not None and events.append((e.elapsed_s, e.incumbent)))
    wall = time.perf_counter() - t0
    row: dict[str, Any] = {
        "comm": comm, "p": p, "m": m, "cap": cap,
        "greedy_ms": round(greedy_ms, 1), "greedy_span": max_span(greedy), "greedy_makespan": greedy.makespan,
        "span_bound": objective_lower_bound(problem.with_(objective="max_span")).value,
        "makespan_bound": result.lower_bound,
        "solve_first_s": round(events[0][0], 2) if events else None,
        "solve_first": events[0][1] if events else None,
        "solve": result.objective, "solve_status": result.status.value, "solve_s": round(wall, 2),
        "solve_engine": result.engine,
    }
    if root:
        got = _repo(root, p, m, cap, comm)
        row.update(repo_ms=got.get("ms"), repo_span=got.get("span"), repo_makespan=got.get("makespan"))
        if "error" in got:
            row["repo_error"] = got["error"]
        row["same_as_repo"] = (row["greedy_span"], row["greedy_makespan"]) == (got.get("span"), got.get("makespan"))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="p = 4 only")
    parser.add_argument("--limit", type=float, default=10.0, help="solve's time limit per configuration (s)")
    parser.add_argument("--zb-repo", default=None, help="a checkout of the zero-bubble repository (run live)")
    args = parser.parse_args(argv)
    rows = []
    for comm in (0, 1):
        for p in (4,) if args.quick else (4, 8):
            for m in (12, 24, 48):
                for cap in (p, 2 * p):
                    rows.append(_row(p, m, cap, comm, args.limit, args.zb_repo))
                    print_table(rows[-1:])
    print()
    columns = ["comm", "p", "m", "cap", "greedy_ms", "greedy_span", "greedy_makespan", "span_bound", "makespan_bound",
               "solve_first_s", "solve_first", "solve", "solve_status", "solve_s"]
    if args.zb_repo:
        columns += ["repo_ms", "repo_span", "repo_makespan", "same_as_repo"]
    print_table(rows, columns)
    write_results("zb_auto_quick" if args.quick else "zb_auto", rows, limit_s=args.limit,
                  load_average=os.getloadavg()[0], repo_run_live=bool(args.zb_repo))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
