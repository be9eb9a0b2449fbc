"""Repetend search on Tessel's five shapes (V, X, M, NN, K), 4 and 8 devices.

Per shape: the period found beside the per-device work bound, search time
(median of ``--repeats`` runs, CP-SAT, 2 workers), the schedule unrolled to
16 micro-batches (makespan, analytic lower bound, peak memory), and Z3's
period and time on the same search (4 devices; ``--z3-8`` adds 8 devices).
Tessel's own figures (its public code, measured on a 2-core machine like
this one) are printed beside ours.

Tessel's conventions: F span 1 memory +1, B span 3 memory -1, full-shard
blocks span 1 on every device. Memory per device: Tessel's settings on 4
devices (V, X 4; M, NN, K 6), scaled with the number of devices (x2 on 8).

Targets: V, X, K under 2 s and M, NN under 10 s on 4 devices; every shape
under 60 s on 8 devices; V on 4 devices unrolled to 16 micro-batches at
most 76 (the optimum) with peak memory at most 4.

Run: ``python -m benchmarks bench_repetend`` (or ``python
benchmarks/bench_repetend.py [--repeats 3] [--z3-8]``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, write_results
from schedsearch.placements import TESSEL_SHAPES, tessel_shape
from schedsearch.schedule import peak_memory
from schedsearch.search.repetend_search import period_lower_bound, repetend
from schedsearch.validate import validate

#: Tessel's memory settings on 4 devices
MEMORY_4 = {"V": 4, "X": 4, "M": 6, "NN": 6, "K": 6}

#: Tessel's public code, 4 devices (reference results): steady-state period and search time
TESSEL_4 = {
    "V": {"period": 4, "search_s": "2-4", "makespan16": 85},
    "X": {"period": 8, "search_s": "13"},
    "K": {"period": 6, "search_s": "4.7"},
    "M": {"period": 6, "search_s": "103"},
    "NN": {"period": 8, "search_s": "443"},
}
#: optimum of V, 4 devices, memory 4, 16 micro-batches, in this model (reference results)
V16_OPTIMUM = 76
TARGET_S = {4: {"V": 2.0, "X": 2.0, "K": 2.0, "M": 10.0, "NN": 10.0}, 8: {s: 60.0 for s in TESSEL_SHAPES}}
N_UNROLL = 16


def run_shape(shape: str, devices: int, backend: str, repeats: int, time_limit_s: float) -> dict:
    memory = MEMORY_4[shape] * devices // 4
    problem = tessel_shape(shape, devices, N_UNROLL, memory=memory)
    times, result = [], None
    for seed in range(repeats):
        t0 = time.perf_counter()
        result = repetend(problem, backend=backend, time_limit_s=time_limit_s, seed=seed)
        times.append(time.perf_counter() - t0)
    row = {
        "shape": shape,
        "devices": devices,
        "memory": memory,
        "backend": backend,
        "status": result.status.value,
        "period": result.period,
        "fold": result.fold,
        "work_bound": max(period_lower_bound(problem).values()),
        "least": result.period_optimal,
        "search_s": statistics.median(times),
        "search_s_all": times,
        "target_s": TARGET_S[devices][shape],
    }
    if result.schedule is not None:
        assert validate(problem, result.schedule) == ()
        row.update(
            makespan16=result.objective,
            lower_bound16=result.lower_bound,
            peak_memory=max(peak_memory(problem, result.schedule).values()),
            repetend_bubble=result.periodic.repetend_bubble(),
            N_R=result.periodic.repetend.num_microbatches,
            completion=result.stats.get("completion"),
        )
    row["within_target"] = row["search_s"] <= row["target_s"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per shape on 4 devices (median)")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--z3-8", action="store_true", help="also run Z3 on 8 devices")
    args = parser.parse_args(argv)

    rows = []
    for devices in (4, 8):
        for shape in TESSEL_SHAPES:
            rows.append(run_shape(shape, devices, "cpsat", args.repeats if devices == 4 else 1, args.time_limit))
            print(f"  {shape}-{devices} cpsat: period {rows[-1]['period']} in {rows[-1]['search_s']:.2f} s", flush=True)
    z3_rows = []
    for devices in ((4, 8) if args.z3_8 else (4,)):
        for shape in TESSEL_SHAPES:
            z3_rows.append(run_shape(shape, devices, "z3", 1, args.time_limit))
            print(f"  {shape}-{devices} z3: period {z3_rows[-1]['period']} in {z3_rows[-1]['search_s']:.2f} s", flush=True)

    table = []
    for r in rows:
        z = next((x for x in z3_rows if x["shape"] == r["shape"] and x["devices"] == r["devices"]), None)
        tessel = TESSEL_4.get(r["shape"], {}) if r["devices"] == 4 else {}
        table.append({
            "shape": r["shape"], "D": r["devices"], "mem": r["memory"], "period": r["period"],
            "work": r["work_bound"], "least": r["least"], "search_s": r["search_s"], "target_s": r["target_s"],
            "ok": r["within_target"], "makespan16": r.get("makespan16"), "lb16": r.get("lower_bound16"),
            "peak_mem": r.get("peak_memory"), "tessel_period": tessel.get("period"),
            "tessel_s": tessel.get("search_s"), "tessel_m16": tessel.get("makespan16"),
            "z3_period": z["period"] if z else None, "z3_s": z["search_s"] if z else None,
            "z3/cpsat": (z["search_s"] / r["search_s"]) if z else None,
        })
    print("\nTessel's shapes (CP-SAT, 2 workers; search_s is the median; makespan16 = unrolled to 16 micro-batches)")
    print_table(table)
    v4 = next(r for r in rows if r["shape"] == "V" and r["devices"] == 4)
    print(f"\nV, 4 devices, memory 4, 16 micro-batches: makespan {v4.get('makespan16')} "
          f"(optimum {V16_OPTIMUM}; Tessel's code {TESSEL_4['V']['makespan16']}), peak memory {v4.get('peak_memory')}")
    write_results("repetend_shapes", rows + z3_rows, table=table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
