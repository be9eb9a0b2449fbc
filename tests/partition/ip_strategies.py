"""Hypothesis strategies for the tests of the partition IPs: small operator graphs and workloads."""

from __future__ import annotations

from hypothesis import strategies as st

from schedsearch.partition.opgraph import DeviceLimits, Operator, OperatorGraph, PartitionWorkload


@st.composite
def operator_graphs(draw, min_ops: int = 2, max_ops: int = 6, classes: bool = True, unsupported: bool = True,
                    integer: bool = False) -> OperatorGraph:
    """Acyclic by construction (edges from lower to higher id), costs per source."""
    n = draw(st.integers(min_ops, max_ops))
    num = st.integers(0, 6) if integer else st.floats(0.0, 6.0, allow_nan=False).map(lambda x: round(x, 2))
    ops = []
    for i in range(n):
        acc = draw(num)
        ops.append(
            Operator(
                id=i,
                accel_latency=acc,
                cpu_latency=acc * draw(st.sampled_from([1, 2, 5])) + draw(num),
                size=float(draw(st.integers(0, 3))),
                output_cost=draw(num),
                color_class=(draw(st.integers(0, 2)) if classes and draw(st.integers(0, 3)) == 0 else None),
                supported_on_accel=not (unsupported and draw(st.integers(0, 6)) == 0),
            )
        )
    edges = [(i, j) for j in range(n) for i in range(j) if draw(st.integers(0, 2)) == 0]
    return OperatorGraph(operators=ops, edges=edges, name="random")


@st.composite
def workloads(draw, max_ops: int = 6, max_accel: int = 2, max_cpus: int = 1, memory: bool = True) -> PartitionWorkload:
    graph = draw(operator_graphs(max_ops=max_ops))
    devices = DeviceLimits(
        num_accelerators=draw(st.integers(1, max_accel)),
        num_cpus=draw(st.integers(0, max_cpus)),
        max_accel_memory=(float(draw(st.integers(2, 6))) if memory and draw(st.booleans()) else None),
    )
    return PartitionWorkload(graph=graph, devices=devices)
