"""``schedsearch partition``: split an operator graph into pipeline stages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schedsearch.cli._common import add_out_argument, add_retired_flag, byte_amount
from schedsearch.errors import FormatError
from schedsearch.loaders.opgraph import find_expert_split, read_dnn_partitioning, read_pipedream_profile, read_split
from schedsearch.partition.cost import complete_split, evaluate_split, one_device_split
from schedsearch.partition.methods import METHODS, partition
from schedsearch.partition.opgraph import DeviceLimits, PartitionWorkload


#: the file ``--out DIR`` holds: the split, the loads and the one-accelerator comparison
OUT_NAME = "partition.json"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "partition",
        help="split an operator graph (dnn-partitioning JSON or PipeDream graph.txt) into stages",
        description="Split an operator graph over accelerators and CPUs minimising the largest "
        "device load (time per sample); print the split, the per-device loads and the comparison "
        "with the one-accelerator split and, where the data has one, the human-expert split. "
        f"Writes them as JSON to --out DIR (default out; '' writes nothing) as {OUT_NAME}. "
        "Exits with 1 when the split found breaks a limit (memory, unsupported operators) or is not a pipeline.",
    )
    p.add_argument("file", metavar="FILE", help="dnn-partitioning .json or PipeDream graph .txt")
    p.add_argument("--method", choices=sorted(METHODS), default="dp", help="partitioner (default: dp)")
    p.add_argument("--accelerators", type=int, default=None, metavar="K",
                   help="number of accelerators (default: the file's maxFPGAs; 4 for PipeDream)")
    p.add_argument("--cpus", type=int, default=None, metavar="L", help="number of CPUs (default: the file's maxCPUs)")
    p.add_argument("--memory-bytes", type=byte_amount, default=None, metavar="SIZE",
                   help="memory per accelerator in bytes, e.g. 1e9 or '16 GiB' (default: the file's maxSizePerFPGA)")
    p.add_argument("--expert", metavar="SPLIT.json", default=None,
                   help="a split to compare with (default: the human-expert split beside the file, if any)")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomised methods (default: 0)")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="wall-clock limit of the search methods (slicegraph, annealing, evolutionary)")
    p.add_argument("--channels", type=int, default=1, help="module splitting: channels between modules (default: 1)")
    p.add_argument("--no-merge-trivial", action="store_true",
                   help="do not merge zero-latency leaves into their neighbour")
    p.add_argument("--bandwidth", type=float, default=1e7, metavar="BYTES_PER_MS",
                   help="PipeDream profiles: bytes moved per ms (default: 1e7)")
    add_out_argument(p, f"the split and loads as JSON ({OUT_NAME})")
    add_retired_flag(p, "--json", f"--out DIR (writes DIR/{OUT_NAME}; --out '' writes nothing)")
    p.add_argument("--list", action="store_true", help="list the operators of every device")
    p.set_defaults(func=run)


def load(args: argparse.Namespace) -> PartitionWorkload:
    path = Path(args.file)
    if path.suffix == ".txt":
        graph = read_pipedream_profile(path, bandwidth_bytes_per_ms=args.bandwidth)
        devices = DeviceLimits(num_accelerators=4, num_cpus=0)
        workload = PartitionWorkload(graph=graph, devices=devices, source=str(path))
    elif path.suffix == ".json":
        workload = read_dnn_partitioning(path)
    else:
        raise FormatError(f"{path}: expected a .json (dnn-partitioning) or .txt (PipeDream) file")
    d = workload.devices
    devices = DeviceLimits(
        num_accelerators=d.num_accelerators if args.accelerators is None else args.accelerators,
        num_cpus=d.num_cpus if args.cpus is None else args.cpus,
        max_accel_memory=d.max_accel_memory if args.memory_bytes is None else args.memory_bytes,
    )
    return PartitionWorkload(graph=workload.graph, devices=devices, source=workload.source)


def options(args: argparse.Namespace) -> dict:
    opts: dict = {"merge_trivial": not args.no_merge_trivial}
    if args.method in ("slicegraph", "annealing", "evolutionary"):
        opts["seed"] = args.seed
        opts["time_limit_s"] = args.time_limit
    if args.method == "modules":
        opts["channels"] = args.channels
    return opts


def run(args: argparse.Namespace) -> int:
    workload = load(args)
    graph, devices = workload.graph, workload.devices
    print(workload)
    result = partition(workload, method=args.method, **options(args))
    print(result)
    if args.list:
        for slot, ops in result.split.stages:
            print(f"  {slot}: {' '.join(map(str, ops))}")
    one = evaluate_split(graph, one_device_split(graph), devices)
    one_note = "" if one.feasible else " (infeasible: " + "; ".join(one.violations) + ")"
    print(f"one accelerator: max-load {one.max_load:.6g}{one_note}; this split is "
          f"{one.max_load / result.max_load:.3g}x faster" if result.max_load > 0 else
          f"one accelerator: max-load {one.max_load:.6g}{one_note}")
    expert_path = Path(args.expert) if args.expert else find_expert_split(args.file)
    if expert_path is not None:
        expert = evaluate_split(graph, complete_split(graph, read_split(expert_path)), devices)
        note = "" if expert.feasible else " (infeasible: " + "; ".join(expert.violations) + ")"
        print(f"expert split ({expert_path.name}): max-load {expert.max_load:.6g}; this split is "
              f"{expert.max_load / result.max_load:.3g}x faster{note}" if result.max_load > 0 else
              f"expert split: max-load {expert.max_load:.6g}{note}")
    if args.out:
        payload = result.to_json()
        payload["oneAccelerator"] = one.max_load
        target = Path(args.out) / OUT_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {target}")
    if not result.feasible:
        print(f"schedsearch partition: the {result.method} split is infeasible: " + "; ".join(result.problems),
              file=sys.stderr)
        return 1
    return 0
