"""Operation graphs that are not pipelines: random DAGs and their placement on machines."""

from schedsearch.graphs.operation_dag import (
    DagNode as DagNode,
    OperationDag as OperationDag,
    machine_cluster as machine_cluster,
    machine_names as machine_names,
    random_dag as random_dag,
)

__all__ = ["DagNode", "OperationDag", "machine_cluster", "machine_names", "random_dag"]
