"""PyTorch's own checks of a compute-only plan, run before any process starts.

:func:`torch_check` hands a :class:`~schedsearch.runtime.plan.CsvPlan` to the
same functions PyTorch's runtime calls when it loads the CSV
(``_PipelineScheduleRuntime._load_csv(path, format="compute_only")``):

1. ``_Action.from_str`` on every cell, compared with this library's reading
   of the cell (so both read the CSV the same way);
2. ``_validate_schedule``: per-stage counts, ``F`` before ``I``/``B``, ``I``
   before ``W``, one rank per stage; it returns the stage-to-rank map, which
   must equal the plan's;
3. the lowering ``_add_unshard_reshard``, ``_add_reduce_grad`` and
   ``_add_send_recv``: the last one is the cross-rank deadlock check
   ("Malformed compute schedule" when the orders cannot progress).

A failure is re-raised as a :class:`~schedsearch.errors.PlanError` quoting
PyTorch's message (without the schedule dump it appends). The checks of
:mod:`schedsearch.runtime.plan` run first and explain the same faults in
user terms; these are the ground truth of what torch accepts.
"""

from __future__ import annotations

from schedsearch.errors import PlanError
from schedsearch.runtime._torch import pipelining_internals
from schedsearch.runtime.plan import Cell, CsvPlan

__all__ = ["torch_actions", "torch_check"]


def _first_paragraph(message: str) -> str:
    return message.split("\n\n", 1)[0].strip()


def torch_actions(plan: CsvPlan) -> dict[int, list]:
    """Each rank's row as PyTorch parses it (``_Action`` objects; None for empty cells).

    Raises :class:`PlanError` when PyTorch reads a cell differently from
    this library.
    """
    tp = pipelining_internals()
    import csv
    import io

    out: dict[int, list] = {}
    by_column: dict[tuple[int, int], Cell] = {(r, c.column): c for r, row in enumerate(plan.rows) for c in row}
    for rank, row in enumerate(csv.reader(io.StringIO(plan.text))):
        if rank >= plan.num_ranks:
            break
        parsed = []
        for column, raw in enumerate(row):
            try:
                action = tp.Action.from_str(raw)
            except (RuntimeError, ValueError) as exc:
                raise PlanError(f"rank {rank}, action {column} {raw.strip()!r}: PyTorch cannot parse it ({exc})") from None
            ours = by_column.get((rank, column))
            theirs = None if action is None else repr(action)
            if (None if ours is None else str(ours)) != theirs:
                raise PlanError(
                    f"rank {rank}, action {column} {raw.strip()!r}: PyTorch reads it as {theirs!r}, this library as "
                    f"{None if ours is None else str(ours)!r}"
                )
            parsed.append(action)
        out[rank] = parsed
    return out


def torch_check(plan: CsvPlan) -> dict[int, int]:
    """Run PyTorch's parser, ``_validate_schedule`` and ``_add_send_recv`` on ``plan``.

    Returns
    -------
    dict
        PyTorch's stage-to-rank map (equal to ``plan.stage_to_rank``).

    Raises
    ------
    PlanError
        Quoting PyTorch's message when it rejects the plan.
    """
    tp = pipelining_internals()
    actions = torch_actions(plan)
    try:
        mapping = tp.validate_schedule(
            {r: list(a) for r, a in actions.items()}, plan.num_ranks, plan.num_stages, plan.num_microbatches
        )
    except AssertionError as exc:
        raise PlanError(f"PyTorch's _validate_schedule rejects the plan: {_first_paragraph(str(exc))}") from None
    if tuple(mapping[s] for s in range(plan.num_stages)) != plan.stage_to_rank:
        raise PlanError(
            f"PyTorch derives the stage-to-rank map {dict(sorted(mapping.items()))}, this library "
            f"{dict(enumerate(plan.stage_to_rank))}"
        )
    lowered = {}
    for rank, row in actions.items():
        with_fsdp = tp.add_unshard_reshard(list(row))
        lowered[rank] = tp.add_reduce_grad(with_fsdp, plan.num_microbatches)
    try:
        tp.add_send_recv(lowered, stage_to_rank=lambda s: mapping[s], num_stages=plan.num_stages)
    except AssertionError as exc:
        raise PlanError(f"PyTorch's _add_send_recv rejects the plan: {_first_paragraph(str(exc))}") from None
    return dict(mapping)
