"""Ablation like Tessel's Fig. 11 and 12: bubble rate against the repetend
size N_R and against the memory capacity.

Tessel's five shapes on 4 devices, its conventions (F 1 / +1, B 3 / -1,
full-shard 1 / 0), fold-1 repetends (Tessel's space) found by the exact
period search:

* against N_R (offsets in ``0 .. N_R - 1``), memory as in Tessel (V, X 4;
  M, NN, K 6);
* against the capacity per device, N_R unrestricted.

Bubble rates: the repetend's (period minus busy time, worst device, over the
period; Tessel's measure) and the unrolled schedule's at 32 micro-batches
(makespan minus busy time, worst device, over the makespan).

Run: ``python -m benchmarks bench_repetend_ablation`` (or
``python benchmarks/bench_repetend_ablation.py [--sizes 1 2 3 4 5 6 7 8] [--memories 1 2 ... 12]``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import print_table, write_results
from schedsearch.errors import InvalidProblemError
from schedsearch.placements import TESSEL_SHAPES, tessel_shape
from schedsearch.schedule import bubble
from schedsearch.search.repetend_search import repetend

MEMORY_4 = {"V": 4, "X": 4, "M": 6, "NN": 6, "K": 6}
N = 32


def measure(shape: str, memory: int, size: int | None, time_limit_s: float) -> dict:
    row = {"shape": shape, "memory": memory, "N_R": size}
    try:
        problem = tessel_shape(shape, 4, N, memory=memory)
    except InvalidProblemError:  # a block does not fit at all
        return {**row, "status": "no fit"}
    t0 = time.perf_counter()
    result = repetend(problem, repetend_size=size, max_fold=1, time_limit_s=time_limit_s, candidates=1)
    row.update(status=result.status.value, search_s=time.perf_counter() - t0)
    if result.periodic is None:
        return row
    rep = result.periodic.repetend
    devices = problem.cluster.device_names
    row.update(
        period=rep.period,
        least=result.period_optimal,
        repetend_bubble_rate=rep.bubble(devices) / rep.period,
        makespan32=result.objective,
        bubble_rate32=bubble(result.schedule, "global", devices) / result.objective,
        N_R_used=rep.num_microbatches,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 3, 4, 5, 6, 7, 8])
    parser.add_argument("--memories", type=int, nargs="*", default=list(range(1, 13)))
    parser.add_argument("--shapes", nargs="*", default=list(TESSEL_SHAPES), choices=TESSEL_SHAPES)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args(argv)

    by_size = []
    for shape in args.shapes:
        for size in args.sizes:
            by_size.append(measure(shape, MEMORY_4[shape], size, args.time_limit))
        print(f"  {shape}: N_R sweep done", flush=True)
    by_memory = []
    for shape in args.shapes:
        for memory in args.memories:
            by_memory.append(measure(shape, memory, None, args.time_limit))
        print(f"  {shape}: memory sweep done", flush=True)
    cols = ["shape", "memory", "N_R", "status", "period", "least", "repetend_bubble_rate", "bubble_rate32",
            "makespan32", "N_R_used", "search_s"]
    print("\nBubble rate against the repetend size N_R (Tessel's memory settings; fold 1)")
    print_table(by_size, cols)
    print("\nBubble rate against memory per device (N_R unrestricted; fold 1)")
    print_table(by_memory, cols)
    monotone = []
    for shape in args.shapes:
        periods = [(r["memory"], r.get("period")) for r in by_memory if r["shape"] == shape and r.get("least")]
        monotone.append(all(b <= a for (_, a), (_, b) in zip(periods, periods[1:])))
    print(f"\nmore memory never lengthened the period: {all(monotone)}")
    write_results("repetend_ablation", by_size + by_memory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
