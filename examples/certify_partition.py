"""Certify a partition: the best split known, a proven lower bound, and the gap.

Splits an operator graph over accelerators (and CPUs) with the exact
contiguous DP, then proves with integer programs how far from optimal it
can be:

* the non-contiguous IP (Tarnawski et al.) gives the best split of any
  shape and a lower bound on every split;
* the contiguous IP must agree with the DP (two independent methods);
* Archer et al.'s bounds certify a SliceGraph partition for max-throughput
  pipelines on ``k`` accelerators.

Run with a dnn-partitioning workload (``--workload FILE.json``) or, by
default, on a small built-in transformer-like graph.
"""

from __future__ import annotations

import argparse

from schedsearch.loaders.opgraph import read_dnn_partitioning
from schedsearch.partition import (
    bottleneck_guess_mip,
    contiguous_ip,
    exact_mip,
    noncontiguous_ip,
    partition_dp,
    simple_bound,
)
from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph, PartitionWorkload
from schedsearch.partition.slicegraph import partition_slicegraph


def toy_workload() -> PartitionWorkload:
    """Embedding, three attention+MLP layers with residual edges, and a head."""
    ops = [Operator(id=0, name="embed", accel_latency=2.0, cpu_latency=20.0, output_cost=0.5)]
    edges = []
    prev = 0
    nid = 1
    for layer in range(3):
        attn, mlp, add = nid, nid + 1, nid + 2
        ops += [
            Operator(id=attn, name=f"attn{layer}", accel_latency=3.0 + layer, cpu_latency=40.0, output_cost=0.5),
            Operator(id=mlp, name=f"mlp{layer}", accel_latency=4.0, cpu_latency=45.0, output_cost=0.5),
            Operator(id=add, name=f"add{layer}", accel_latency=0.5, cpu_latency=1.0, output_cost=0.5),
        ]
        edges += [(prev, attn), (attn, mlp), (mlp, add), (prev, add)]
        prev = add
        nid += 3
    ops.append(Operator(id=nid, name="head", accel_latency=2.5, cpu_latency=5.0))
    edges.append((prev, nid))
    graph = OperatorGraph(operators=ops, edges=edges, name="toy-transformer")
    return PartitionWorkload(graph=graph, devices=DeviceLimits(num_accelerators=3, num_cpus=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", help="dnn-partitioning JSON (default: a built-in toy graph)")
    parser.add_argument("--solver", choices=("highs", "scip", "cbc"), default="highs")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per MIP (default: 30)")
    parser.add_argument("--k", type=int, default=3, help="accelerators for the max-throughput bounds (default: 3)")
    args = parser.parse_args(argv)
    workload = read_dnn_partitioning(args.workload) if args.workload else toy_workload()
    print(workload)
    mip = {"solver": args.solver, "time_limit_s": args.time_limit}

    dp = partition_dp(workload)
    print(f"\ncontiguous DP:          max-load {dp.max_load:.6g} (optimal among contiguous splits)")
    cip = contiguous_ip(workload, **mip)
    agree = cip.value is not None and abs(cip.value - dp.max_load) <= 1e-4 * dp.max_load
    print(f"contiguous IP:          {cip}")
    print(f"                        DP and IP {'agree' if agree else 'DISAGREE'}")
    nip = noncontiguous_ip(workload, incumbent=dp.split, **mip)
    print(f"non-contiguous IP:      {nip}")
    if nip.lower_bound:
        print(f"=> the contiguous DP split is within {100 * (dp.max_load / nip.lower_bound - 1):.2f}% of any split")

    k = args.k
    graph = workload.graph
    sg = partition_slicegraph(graph, DeviceLimits(num_accelerators=k, num_cpus=0,
                                                  max_accel_memory=workload.devices.max_accel_memory))
    print(f"\nmax-throughput pipeline on {k} accelerators: SliceGraph {sg.max_load:.6g}")
    print(f"  simple bound:         {simple_bound(graph, k):.6g} (ratio {simple_bound(graph, k) / sg.max_load:.3f})")
    for fn in (bottleneck_guess_mip, exact_mip):
        res = fn(workload, k, incumbent=sg.split, **mip)
        print(f"  {res}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
