"""Partition a real operator graph, then schedule the pipeline, in one call.

BERT-24 training (64 layer operators, forward and backward) is split over
accelerators by the exact contiguous DP (minimum max-load), the split
becomes one forward and one backward block per stage with the
communication on the edges, and the time-optimal search schedules a few
micro-batches through that pipeline. The schedule is checked by the
independent validator and shown as a timeline.

Run: ``python examples/partition_then_schedule.py [--accelerators 4 --microbatches 4]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from schedsearch import metrics, validate
from schedsearch.export import render_ascii
from schedsearch.loaders.opgraph import read_dnn_partitioning
from schedsearch.partition import evaluate_split, one_device_split
from schedsearch.partition.opgraph import DeviceLimits
from schedsearch.partition.to_problem import partition_and_schedule
from schedsearch.search import optimal

WORKLOAD = Path(__file__).resolve().parents[1] / "models" / "dnn-partitioning" / "bert24_training.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default=str(WORKLOAD), help="dnn-partitioning JSON file")
    parser.add_argument("--method", default="dp", help="partitioner (dp, dpl, slicegraph, modules, ...)")
    parser.add_argument("--accelerators", type=int, default=4)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=None,
                        help="micro-batches a stage may hold at once (default: unbounded)")
    parser.add_argument("--resolution", type=int, default=20, help="time units of the longest block")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args(argv)

    workload = read_dnn_partitioning(args.workload)
    devices = DeviceLimits(num_accelerators=args.accelerators, num_cpus=0,
                           max_accel_memory=workload.devices.max_accel_memory)
    print(workload.graph)
    result = partition_and_schedule(
        workload, devices, method=args.method, search=optimal, num_microbatches=args.microbatches,
        resolution=args.resolution, max_in_flight=args.in_flight,
        time_limit_s=args.time_limit, workers=2, seed=0,
    )
    print(result)
    one = evaluate_split(workload.graph, one_device_split(workload.graph)).max_load
    print(f"one accelerator: {one:.6g} per sample; the split: {result.partition.max_load:.6g}")
    problem, schedule = result.problem, result.schedule
    assert schedule is not None and validate(problem, schedule) == ()
    print(render_ascii(problem, schedule))
    print(metrics(problem, schedule))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
