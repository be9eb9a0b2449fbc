"""A random operator graph planned on two chips joined by two channels.

Part 1 is She et al.'s random-graph experiment for one seed: a
seeded DAG (in/out degree at most 3) is coarsened, planned exactly on two
identical chips with one channel each way, expanded back and refined. It
prints each phase's makespan against the bound ``max(total work / 2,
critical path)``, the speedup over one chip and how much transfer time runs
under compute. (The full experiment on ten seeds is
``benchmarks/bench_jobshop_random.py``.)

Part 2 shows memory levels at work: a smaller DAG whose operations allocate
their outputs and free their inputs (plus a transient workspace) is planned
without a memory limit, then under tighter and tighter capacities. Each plan
is proven optimal, the validator confirms that no level exceeds the
capacity, and the orders on the chips change as memory gets scarce, until
no plan fits.

Run: ``python examples/random_graph_two_chips.py [--nodes 100 --coarse 25
--seed 0 --time-limit 5 --trace trace.json]`` (``--nodes 200 --coarse 40
--time-limit 60`` is the paper's size).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from schedsearch.export.chrome import chrome_trace
from schedsearch.graphs import machine_cluster, random_dag
from schedsearch.result import Status
from schedsearch.schedule import peak_memory
from schedsearch.search import jobshop, transfer_overlap
from schedsearch.validate import validate


def two_chips(memory: int | None = None):
    """Two identical chips, one channel each way (2 channels)."""
    return machine_cluster(2, channels=2, directed=True, memory=memory)


def experiment(nodes: int, coarse: int, seed: int, time_limit_s: float, deterministic: bool = False) -> dict[str, Any]:
    dag = random_dag(nodes, seed=seed)
    problem = dag.on_machines(two_chips())
    bound = max(math.ceil(dag.total_work / 2), dag.critical_path())
    result = jobshop(problem, coarsen_to=coarse, time_limit_s=time_limit_s, seed=seed, deterministic=deterministic)
    assert result.schedule is not None and validate(problem, result.schedule) == ()
    stats = result.stats
    overlap = transfer_overlap(problem, result.schedule)
    print(f"== random graph: {nodes} operations, {len(dag.edges)} edges, seed {seed}")
    print(f"total work {dag.total_work}, critical path {dag.critical_path()}, bound max(work/2, path) = {bound}")
    print(f"list-scheduling baseline:  {stats['baseline']['makespan']}")
    if "coarsening" in stats:
        c = stats["coarsening"]
        print(f"coarsened {c['blocks_in']} -> {c['blocks']} blocks, coarse plan {stats['coarse']['makespan']} "
              f"({stats['coarse']['status']}), expanded {stats['expanded']['makespan']}")
    print(f"final plan:                {result.objective} = {result.objective / bound:.3f} x bound, "
          f"speedup {dag.total_work / result.objective:.2f} over one chip ({result.wall_time_s:.1f} s)")
    print(f"transfers: {len(result.schedule.transfers)}, {100 * overlap['hidden_any']:.0f}% of their time under "
          f"compute")
    return {"problem": problem, "result": result, "bound": bound, "overlap": overlap}


def memory_levels(seed: int, time_limit_s: float, deterministic: bool = False) -> list[dict[str, Any]]:
    dag = random_dag(16, seed=seed, memory=(1, 6), workspace=(0, 3))
    need = max(max(n.memory, 0) + n.workspace for n in dag.nodes)
    print(f"\n== memory levels: {len(dag.nodes)} operations (outputs allocated at the start, inputs freed by "
          f"their last consumer, workspace while running; the largest operation needs {need})")
    rows: list[dict[str, Any]] = []
    capacity: int | None = None
    previous_orders = None
    while True:
        problem = dag.on_machines(two_chips(capacity))
        result = jobshop(problem, time_limit_s=time_limit_s, seed=seed, deterministic=deterministic)
        label = "none" if capacity is None else str(capacity)
        if result.schedule is None:
            print(f"capacity {label:>4}: {result.status.value}")
            rows.append({"capacity": capacity, "status": result.status, "makespan": None, "peak": None})
            break
        assert validate(problem, result.schedule) == ()
        peak = peak_memory(problem, result.schedule)
        orders = result.schedule.device_orders()
        changed = previous_orders is not None and orders != previous_orders
        print(f"capacity {label:>4}: makespan {result.objective} ({result.status.value}), peak "
              f"{peak['d0']}/{peak['d1']}{', order changed' if changed else ''}")
        rows.append({"capacity": capacity, "status": result.status, "makespan": result.objective, "peak": peak,
                     "orders": orders, "problem": problem, "schedule": result.schedule})
        if result.status is not Status.OPTIMAL:
            break
        previous_orders = orders
        capacity = max(peak.values()) - 1
        if capacity < need:
            break
    return rows


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Both parts; returns their problems, results and rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--coarse", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=5.0, help="per plan (default: 5 s)")
    parser.add_argument("--deterministic", action="store_true",
                        help="reproducible searches: the time limit is read as solver work, the same on any machine")
    parser.add_argument("--trace", default=None, help="write a Chrome trace of the part-1 plan here")
    args = parser.parse_args(argv)
    part1 = experiment(args.nodes, args.coarse, args.seed, args.time_limit, args.deterministic)
    part2 = memory_levels(args.seed + 1, args.time_limit, args.deterministic)
    if args.trace:
        problem, schedule = part1["problem"], part1["result"].schedule
        trace = chrome_trace(problem, schedule, name="random graph on two chips")
        for ev in trace["traceEvents"]:
            if ev.get("ph") == "X" and ev.get("cat") != "transfer":
                ev["name"] = ev["args"]["block"]
        Path(args.trace).write_text(json.dumps(trace))
        print(f"\nwrote {args.trace} (one row per chip and per channel)")
    return {"experiment": part1, "memory": part2}


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
