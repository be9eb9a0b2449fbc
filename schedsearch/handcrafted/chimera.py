"""Chimera (Li and Hoefler): two bidirectional pipelines merged on the same devices.

Placement: :func:`~schedsearch.placements.chimera` (device ``d`` holds stage
``d`` of the down pipeline and stage ``D-1-d`` of the up pipeline, half of
the micro-batches each way).

Schedule, as the paper builds it: each pipeline runs its ``D/2``
micro-batches of a *basic unit* with 1F1B in unit time slots (forward and
backward one slot each, the paper's model); the two pipelines' slot tables
are merged per device in slot order. Where both pipelines claim the same
slot of a device (the middle devices, in the warm-up), the task deeper in
its pipeline (the higher stage) goes first. The per-device order then runs
as soon as possible with the problem's real durations. For ``N > D``
micro-batches, basic units of ``D`` micro-batches are concatenated (the
paper's "direct concatenation"); ``N`` must be a multiple of ``D``.

Closed forms for ``N = D`` (no communication, global bubble): ``(D - 2)
max(F, B)`` (the paper's ``D - 2`` bubbles for ``F = B``, half of 1F1B's
``2(D - 1)``), and peak activations between ``D/2 + 1`` (outer devices) and
``D`` (middle devices), forward +1 / backward -1.
"""

from __future__ import annotations

from schedsearch.actions import Action
from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["chimera", "one_f_one_b_slots"]


def one_f_one_b_slots(num_stages: int, num_microbatches: int) -> dict[tuple[str, int, int], int]:
    """Unit-slot start of every ``(kind, stage, micro-batch)`` of one 1F1B pipeline.

    Forward and backward take one slot each; stage ``s`` warms up with
    ``min(S - s - 1, n)`` forwards (as :func:`~schedsearch.handcrafted.one_f_one_b`).

    >>> one_f_one_b_slots(2, 2)[("B", 0, 1)]
    5
    """
    S, n = num_stages, num_microbatches
    orders = []
    for s in range(S):
        warm = min(S - s - 1, n)
        seq = [("F", s, i) for i in range(warm)]
        for i in range(n - warm):
            seq += [("F", s, warm + i), ("B", s, i)]
        seq += [("B", s, i) for i in range(n - warm, n)]
        orders.append(seq)
    slot: dict[tuple[str, int, int], int] = {}
    pos = [0] * S
    free = [0] * S
    while any(pos[s] < len(orders[s]) for s in range(S)):
        for s in range(S):
            while pos[s] < len(orders[s]):
                kind, st, mb = orders[s][pos[s]]
                if kind == "F":
                    dep = ("F", st - 1, mb) if st > 0 else None
                else:
                    dep = ("B", st + 1, mb) if st < S - 1 else ("F", st, mb)
                if dep is not None and dep not in slot:
                    break
                t = max(free[s], slot[dep] + 1 if dep is not None else 0)
                slot[(kind, st, mb)] = t
                free[s] = t + 1
                pos[s] += 1
    return slot


def chimera(problem: Problem) -> Schedule:
    """Chimera on a problem from :func:`~schedsearch.placements.chimera`.

    Needs an even number of devices ``D`` and a multiple of ``D`` pipeline
    micro-batches (the problem's micro-batches count pairs, so a multiple
    of ``D/2`` of them).

    Examples
    --------
    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.chimera(4, 4)
    >>> figures = metrics(problem, handcrafted.chimera(problem))
    >>> figures.bubble_global, list(figures.peak_memory.values())  # (D-2) max(F, B); D/2+1+min(d, D-1-d)
    (4, [3, 4, 4, 3])
    """
    view = pipeline_view(problem)
    if sorted(view.pipelines) != [".down", ".up"]:
        raise InvalidProblemError(
            f"Chimera: needs a down and an up pipeline (placements.chimera), got pipelines {sorted(view.pipelines)}"
        )
    D = len(problem.cluster.devices)
    down, up = view.mapping(".down"), view.mapping(".up")
    if tuple(down) != tuple(range(D)) or tuple(up) != tuple(range(D - 1, -1, -1)):
        raise InvalidProblemError(
            f"Chimera: device d must hold down stage d and up stage D-1-d, got down {list(down)}, up {list(up)}"
        )
    if not view.training:
        raise InvalidProblemError("Chimera: needs a training problem (with backward blocks)")
    if D % 2:
        raise InvalidProblemError(f"Chimera: needs an even number of devices (pipeline stages), got {D}")
    half = D // 2
    n = problem.num_microbatches
    if n % half:
        raise InvalidProblemError(
            f"Chimera: the number of micro-batches ({2 * n}) must be a multiple of the number of stages ({D}) "
            f"(basic units of {D} concatenated)"
        )
    slots = one_f_one_b_slots(D, half)
    unit: dict[int, list[tuple[int, int, str, int, str]]] = {d: [] for d in range(D)}
    for (kind, s, mb), t in slots.items():
        unit[s].append((t, -s, kind, mb, ".down"))
        unit[D - 1 - s].append((t, -s, kind, mb, ".up"))
    orders: dict[int, list[Action]] = {d: [] for d in range(D)}
    for k in range(n // half):
        for d in range(D):
            for _, neg_s, kind, mb, pipe in sorted(unit[d]):
                orders[d].append(Action(-neg_s, kind, k * half + mb, pipe=pipe))
    return run_actions(view, orders, name="Chimera")
