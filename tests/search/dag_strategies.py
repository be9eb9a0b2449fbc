"""Hypothesis strategies for the job-shop tests: operation DAGs on identical machines.

DAGs are acyclic by construction (edges from a lower to a higher index);
every block may run on every machine with the same duration, and every pair
of machines is joined by channels, so any placement is possible.
"""

from __future__ import annotations

from hypothesis import strategies as st

from schedsearch.graphs import DagNode, OperationDag, machine_cluster
from schedsearch.problem import Edge, Problem


@st.composite
def dags(draw, max_nodes: int = 12, memory: bool = True) -> OperationDag:
    n = draw(st.integers(1, max_nodes))
    nodes = [
        DagNode(
            name=f"n{i}",
            duration=draw(st.integers(1, 6)),
            memory=draw(st.integers(-2, 3)) if memory else 0,
            workspace=draw(st.integers(0, 2)) if memory else 0,
        )
        for i in range(n)
    ]
    edges = []
    for j in range(1, n):
        preds = draw(st.lists(st.integers(0, j - 1), max_size=3, unique=True))
        for i in sorted(preds):
            edges.append(Edge(src=f"n{i}", dst=f"n{j}", size=draw(st.integers(0, 3))))
    return OperationDag(nodes=nodes, edges=edges)


@st.composite
def dag_problems(draw, max_nodes: int = 12, memory: bool = False, latency: bool = True) -> Problem:
    """A DAG on 1-3 identical machines, channels duplex or shared, optional latency.

    With ``memory``, machines get a capacity that fits every single block
    (the problem may still be infeasible)."""
    dag = draw(dags(max_nodes=max_nodes, memory=True))
    num = draw(st.integers(1, 3))
    duplex = draw(st.booleans())
    cluster = machine_cluster(
        num,
        channels=2 if duplex else draw(st.integers(1, 2)),
        directed=duplex,
        time_per_unit=draw(st.integers(1, 2)),
        latency=draw(st.integers(0, 2)) if latency else 0,
        memory=None,
    )
    problem = dag.on_machines(cluster)
    if memory:
        need = max(max(n.memory, 0) + n.workspace for n in dag.nodes)
        cap = need + draw(st.integers(0, 6))
        devices = [d.__class__(name=d.name, memory=cap) for d in cluster.devices]
        problem = problem.with_(cluster=cluster.__class__(devices=devices, channels=cluster.channels))
    return problem
