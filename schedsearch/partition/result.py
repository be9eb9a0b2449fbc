"""The result of a partitioner."""

from __future__ import annotations

from typing import Any

import attrs

from schedsearch.partition.cost import SplitCost
from schedsearch.partition.opgraph import Split

__all__ = ["PartitionResult"]


@attrs.frozen(kw_only=True)
class PartitionResult:
    """A split found by a partitioner.

    Attributes
    ----------
    method:
        Name of the partitioner (``"dp"``, ``"dpl"``, ``"slicegraph"``, ...).
    split:
        The devices in pipeline order with their operators.
    max_load:
        The partitioner's own value of its objective.
    cost:
        The split re-evaluated by :func:`~schedsearch.partition.cost.evaluate_split`
        (the independent check; ``cost.max_load`` equals ``max_load`` for the
        max-load partitioners).
    optimal:
        True if ``max_load`` is proven optimal for the method's split family.
    wall_time_s:
        Wall time of the call.
    acyclic:
        Whether the split's devices feed each other in one direction only (a
        pipeline); None when the method does not say (its splits are
        pipelines by construction, or checked by :attr:`cost`).
    stats:
        Method-specific figures (ideals, pairs evaluated, bound used, ...).

    A split that breaks a limit (an accelerator's memory, an operator not
    supported where it runs, more devices than available, a colocation class
    split) or is not a pipeline (its devices feed each other in a cycle) is
    still returned, never raised: :attr:`status` is then ``"infeasible"`` and
    :attr:`problems` says why.

    Examples
    --------
    >>> from schedsearch.partition import DeviceLimits, Operator, OperatorGraph, partition_dp
    >>> layers = [Operator(id=i, accel_latency=t, cpu_latency=10 * t, output_cost=1.0)
    ...           for i, t in enumerate([4, 2, 3, 3])]
    >>> graph = OperatorGraph(operators=layers, edges=[(0, 1), (1, 2), (2, 3)])
    >>> result = partition_dp(graph, DeviceLimits(num_accelerators=2))
    >>> result.method, result.max_load, result.optimal, result.status
    ('dp', 7.0, True, 'feasible')
    >>> result.to_json()["fpgas"]
    [{'device': 'accel0', 'load': 7.0, 'nodes': [0, 1]}, {'device': 'accel1', 'load': 7.0, 'nodes': [2, 3]}]
    """

    method: str
    split: Split
    max_load: float
    cost: SplitCost
    optimal: bool = False
    wall_time_s: float = 0.0
    acyclic: bool | None = None
    stats: dict[str, Any] = attrs.field(factory=dict)

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the split cannot be used as it is (empty when it can)."""
        out = list(self.cost.violations)
        if self.acyclic is False:
            out.append("not a pipeline: its devices feed each other in a cycle")
        return tuple(out)

    @property
    def status(self) -> str:
        """``"feasible"`` or ``"infeasible"`` (see :attr:`problems`)."""
        return "infeasible" if self.problems else "feasible"

    @property
    def feasible(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The dnn-partitioning result layout plus the method's figures.

        ``{"method", "maxLoad", "optimal", "wallTime", "fpgas": [{"load",
        "nodes"}], "cpus": [...], "acyclic", "stats"}``; devices in pipeline order.
        """
        loads = dict(self.cost.loads)
        out: dict[str, Any] = {
            "method": self.method,
            "status": self.status,
            "problems": list(self.problems),
            "maxLoad": self.max_load,
            "optimal": self.optimal,
            "wallTime": self.wall_time_s,
            "fpgas": [],
            "cpus": [],
            "pipelineOrder": [str(slot) for slot, _ in self.split.stages],
            "acyclic": self.acyclic,
            "stats": {k: v for k, v in self.stats.items() if isinstance(v, (int, float, str, bool))},
        }
        for slot, ops in self.split.stages:
            key = "fpgas" if slot.kind == "accel" else "cpus"
            out[key].append({"device": str(slot), "load": loads[slot], "nodes": list(ops)})
        return out

    def __str__(self) -> str:
        lines = [
            f"{self.method}: max-load {self.max_load:.6g}"
            + (" (optimal)" if self.optimal else "")
            + f", {len([1 for _, ops in self.split.stages if ops])} devices used,"
            f" {self.wall_time_s:.3g} s"
        ]
        loads = dict(self.cost.loads)
        comm = dict(self.cost.communication)
        for slot, ops in self.split.stages:
            lines.append(
                f"  {str(slot):<7} load {loads[slot]:10.6g} (communication {comm[slot]:.6g}),"
                f" {len(ops)} operators"
            )
        if self.problems:
            lines.append("  INFEASIBLE: " + "; ".join(self.problems))
        return "\n".join(lines)
