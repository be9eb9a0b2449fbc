"""From a placement Problem and a Schedule to a plan PyTorch can run.

PyTorch's pipeline runtime runs *one* model replica split into stages,
each stage on exactly one rank, with forward, full backward, input- and
weight-gradient actions (and overlapped forward/backward pairs). A
placement outside that shape cannot run, and :func:`check_problem` says why
before anything is exported or started:

* a block on several devices at once (a tensor-parallel or full-shard
  block), or with several placement options left open;
* two model replicas (two pipelines, as in Chimera, DualPipe or a
  bidirectional placement): two blocks are the same kind of the same stage;
* a block that is not a pipeline action (kind other than F, B, I, W, or
  without a stage), a stage whose blocks sit on different devices;
* an inference problem (no backward): the runtime runs training steps.

:func:`plan_from_schedule` then writes the schedule with the project's
compute-only CSV export (:func:`schedsearch.export.torch_csv.to_torch_csv`)
and reads it back as a checked :class:`~schedsearch.runtime.plan.CsvPlan`,
together with the placement's stage-to-rank map
(:func:`schedsearch.export.torch_csv.stage_to_rank`), which must agree with
the rows.
"""

from __future__ import annotations


from schedsearch.actions import COMPUTE_KINDS
from schedsearch.errors import FormatError, InvalidProblemError, PlanError
from schedsearch.export.torch_csv import stage_to_rank, to_torch_csv
from schedsearch.handcrafted.actions import pipeline_view
from schedsearch.problem import Problem
from schedsearch.runtime.plan import CsvPlan, parse_plan
from schedsearch.schedule import Schedule

__all__ = ["check_problem", "plan_from_schedule"]

def check_problem(problem: Problem) -> None:
    """Raise :class:`PlanError` when PyTorch pipelining cannot run ``problem``'s placement."""
    label = f"problem {problem.name!r}" if problem.name else "problem"
    why = f"{label}: PyTorch pipelining cannot run this placement"
    seen: dict[tuple[int, str], str] = {}
    for b in problem.graph.blocks:
        if b.kind not in COMPUTE_KINDS or b.stage is None:
            raise PlanError(
                f"{why}: block {b.name!r} (kind {b.kind!r}, stage {b.stage!r}) is not a pipeline action "
                f"(a forward, full backward, input or weight gradient of a stage)"
            )
        for o in b.options:
            if len(o.devices) != 1:
                raise PlanError(
                    f"{why}: block {b.name!r} runs on devices {list(o.devices)} at once (a tensor-parallel or "
                    "full-shard block); each stage runs on exactly one rank"
                )
        if len(b.options) != 1:
            raise PlanError(
                f"{why}: block {b.name!r} may run on {len(b.options)} devices "
                f"{[o.devices[0] for o in b.options]}; fix its device (the runtime needs one rank per stage)"
            )
        key = (b.stage, b.kind)
        if key in seen:
            raise PlanError(
                f"{why}: blocks {seen[key]!r} and {b.name!r} are both the {b.kind} of stage {b.stage}: the problem "
                "holds two model replicas (two pipelines, as in Chimera, DualPipe or a bidirectional placement), "
                "while the runtime runs one replica with each stage on one rank"
            )
        seen[key] = b.name
    try:
        view = pipeline_view(problem)
    except InvalidProblemError as exc:
        raise PlanError(f"{why}: {exc}") from None
    if not view.training:
        raise PlanError(f"{why}: it has no backward blocks (an inference problem); the runtime runs training steps")


def plan_from_schedule(problem: Problem, schedule: Schedule, *, name: str = "") -> CsvPlan:
    """Export ``schedule`` to PyTorch's compute-only CSV and read it back as a checked plan.

    Raises
    ------
    PlanError
        When the placement cannot run (see :func:`check_problem`) or the
        exported plan fails a check (naming rank, action, stage and
        micro-batch).
    """
    check_problem(problem)
    try:
        text = to_torch_csv(problem, schedule)
        mapping = stage_to_rank(problem)
    except FormatError as exc:
        raise PlanError(f"the schedule cannot be written as a PyTorch plan: {exc}") from None
    return parse_plan(
        text,
        num_ranks=len(problem.cluster.devices),
        num_microbatches=problem.num_microbatches,
        stage_to_rank=[mapping[s] for s in range(len(mapping))],
        name=name or schedule.name or problem.name,
    )
