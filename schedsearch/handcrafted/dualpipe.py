"""DualPipe and DualPipeV (DeepSeek-V3's bidirectional pipeline schedules).

Both give each device two model chunks and run the same eight steps; they
differ in where the chunks live:

* DualPipe (:func:`~schedsearch.placements.dualpipe`): ``PP`` devices, two
  pipelines (down and up, a model replica each); device ``r`` holds stage
  ``r`` of the down and stage ``PP-1-r`` of the up pipeline; half of the
  micro-batches run each way. In its own words, ranks of the first half
  call the down chunk "phase 0", ranks of the second half the up chunk;
  ``h = min(r, PP-1-r)`` and ``H = PP/2``.
* DualPipeV (:func:`~schedsearch.placements.dualpipev`): ``p`` devices, one
  pipeline of ``2p`` stages in the ``"v"`` mapping; device ``r`` holds
  stage ``r`` (phase 0) and ``2p-1-r`` (phase 1); ``h = r``, ``H = p``.

With ``n`` micro-batches per phase (``chunks/2`` for DualPipe, ``m`` for
DualPipeV), device ``h`` runs (``F0`` = forward of phase 0, ``B1`` = full
backward of phase 1, ``I``/``W`` the split halves, ``(F0;B1)`` an
overlapped pair, ``W`` the oldest deferred weight gradient):

1. ``2(H-h-1)`` x ``F0``
2. ``h+1`` x ``F0 F1``
3. ``H-h-1`` x ``I1 W F1``
4. ``n-2H+h+1`` x ``(F0;B1) (F1;B0)`` (on the middle device, ``h = H-1``,
   the first pair runs as ``F0`` then ``B1``, not overlapped)
5. ``H-h-1`` x ``B1 (F1;B0)``
6. ``h+1`` x ``B1 B0``, switching to ``I`` (deferring ``W``) half-way
7. ``H-h-1`` x ``W I0``
8. ``h+1`` x ``W``

Closed forms (``F``, ``B`` full backward, ``W``, overlapped pair ``F&B``,
no communication): DualPipe bubble ``(PP/2 - 1)(F&B + B - 3W)`` on every
device when ``F&B = F + B`` (DualPipe's README); DualPipeV the same with
``PP = 2p``.
"""

from __future__ import annotations

from collections import deque

from schedsearch.actions import Action
from schedsearch.deadline import checkpoint

from schedsearch.errors import InvalidProblemError
from schedsearch.handcrafted.actions import check_v_mapping, pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["dualpipe", "dualpipev", "eight_steps"]


def eight_steps(H: int, h: int, n: int, chunk0: tuple[int, str], chunk1: tuple[int, str]) -> list[Action]:
    """The action list of one device (see the module docstring).

    Parameters
    ----------
    H, h:
        Half the number of ranks (DualPipe) or the number of devices
        (DualPipeV), and this device's distance from the nearer end.
    n:
        Micro-batches per phase.
    chunk0, chunk1:
        ``(stage, pipeline suffix)`` of the device's phase-0 and phase-1 chunk.

    Examples
    --------
    Device 1 of DualPipeV on 2 devices (stages 1 and 2), 4 micro-batches;
    ``2F0`` is the forward of stage 2, micro-batch 0, and ``(2F2;1B0)OVERLAP_F_B`` an
    overlapped pair:

    >>> from schedsearch.handcrafted import eight_steps
    >>> print(" ".join(str(action) for action in eight_steps(2, 1, 4, (1, ""), (2, ""))))
    1F0 2F0 1F1 2F1 1F2 2B0 (2F2;1B0)OVERLAP_F_B (1F3;2B1)OVERLAP_F_B (2F3;1B1)OVERLAP_F_B 2B2 1B2 2I3 1I3 2W3
    1W3
    """
    acts: list[Action] = []
    nxt_f = [0, 0]  # next forward micro-batch per phase
    nxt_b = [0, 0]  # next backward (B or I) micro-batch per phase
    deferred: deque[Action] = deque()
    chunks = (chunk0, chunk1)

    def act(kind: str, phase: int, mb: int) -> Action:
        stage, pipe = chunks[phase]
        return Action(stage, kind, mb, pipe=pipe)

    def forward(phase: int) -> Action:
        a = act("F", phase, nxt_f[phase])
        nxt_f[phase] += 1
        return a

    def backward(phase: int, split: bool = False) -> Action:
        mb = nxt_b[phase]
        nxt_b[phase] += 1
        if split:
            deferred.append(act("W", phase, mb))
            return act("I", phase, mb)
        return act("B", phase, mb)

    def weight() -> None:
        if deferred:
            acts.append(deferred.popleft())

    middle = h == H - 1
    for _ in range(2 * (H - h - 1)):  # step 1
        acts.append(forward(0))
    for _ in range(h + 1):  # step 2
        acts.append(forward(0))
        acts.append(forward(1))
    for _ in range(H - h - 1):  # step 3
        acts.append(backward(1, split=True))
        weight()
        acts.append(forward(1))
    for i in range(n - 2 * H + h + 1):  # step 4
        if i == 0 and middle:
            acts.append(forward(0))
            acts.append(backward(1))
        else:
            acts.append(Action.overlap(forward(0), backward(1)))
        acts.append(Action.overlap(forward(1), backward(0)))
    for _ in range(H - h - 1):  # step 5
        acts.append(backward(1))
        acts.append(Action.overlap(forward(1), backward(0)))
    split = False
    steps6 = h + 1
    for i in range(steps6):  # step 6
        if i == steps6 // 2 and h % 2 == 1:
            split = True
        acts.append(backward(1, split))
        if i == steps6 // 2 and h % 2 == 0:
            split = True
        acts.append(backward(0, split))
    for _ in range(H - h - 1):  # step 7
        weight()
        acts.append(backward(0, split))
    for _ in range(h + 1):  # step 8
        weight()
    if deferred or nxt_f != [n, n] or nxt_b != [n, n]:  # pragma: no cover - the step counts add up
        raise AssertionError(f"eight steps of device {h}: incomplete ({nxt_f}, {nxt_b}, {len(deferred)} W left)")
    return acts


def dualpipe(problem: Problem) -> Schedule:
    """DualPipe on a problem from :func:`~schedsearch.placements.dualpipe`.

    Needs ``PP`` even and at least ``PP`` micro-batches per direction (the
    original's ``chunks >= 2 PP``, even).

    Examples
    --------
    The README's figures for ``PP = 4``, 8 chunks: bubble ``(PP/2-1)(F&B+B-3W)
    = 2`` on every device, ``PP + 1`` activations on the middle two:

    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.dualpipe(4, 8)
    >>> figures = metrics(problem, handcrafted.dualpipe(problem))
    >>> figures.makespan, figures.bubble_global, list(figures.peak_memory.values())
    (26, 2, [4, 5, 5, 4])
    """
    view = pipeline_view(problem)
    if sorted(view.pipelines) != [".down", ".up"]:
        raise InvalidProblemError(
            f"DualPipe: needs a down and an up pipeline (placements.dualpipe), got pipelines {sorted(view.pipelines)}"
        )
    PP = len(problem.cluster.devices)
    down, up = view.mapping(".down"), view.mapping(".up")
    if tuple(down) != tuple(range(PP)) or tuple(up) != tuple(range(PP - 1, -1, -1)):
        raise InvalidProblemError(
            f"DualPipe: device r must hold down stage r and up stage PP-1-r, got down {list(down)}, up {list(up)}"
        )
    if PP % 2:
        raise InvalidProblemError(f"DualPipe: needs an even number of devices (PP), got {PP}")
    n = problem.num_microbatches
    if n < PP:
        raise InvalidProblemError(
            f"DualPipe: needs chunks >= 2 PP = {2 * PP} ({PP} micro-batches per direction), got {2 * n}"
        )
    if not view.split:
        raise InvalidProblemError("DualPipe: needs backwards split into I and W (placements.dualpipe)")
    H = PP // 2
    orders = {}
    for r in range(PP):
        h = min(r, PP - 1 - r)
        mine = ((r, ".down"), (PP - 1 - r, ".up"))
        chunk0, chunk1 = mine if r < H else mine[::-1]
        orders[r] = eight_steps(H, h, n, chunk0, chunk1)
        checkpoint(len(orders[r]))

    return run_actions(view, orders, name="DualPipe")


def dualpipev(problem: Problem) -> Schedule:
    """DualPipeV on a problem from :func:`~schedsearch.placements.dualpipev`.

    Needs at least as many micro-batches as stages (``m >= 2p``).

    Examples
    --------
    >>> from schedsearch import handcrafted, metrics, placements
    >>> problem = placements.dualpipev(2, 4)
    >>> figures = metrics(problem, handcrafted.dualpipev(problem))
    >>> figures.makespan, figures.bubble_global, list(figures.peak_memory.values())  # 2p, 2p+1 on the last
    (26, 2, [4, 5])
    """
    view = pipeline_view(problem)
    if list(view.pipelines) != [""]:
        raise InvalidProblemError(f"DualPipeV: needs a single pipeline, got pipelines {sorted(view.pipelines)}")
    p = check_v_mapping(view, "DualPipeV")
    m = problem.num_microbatches
    if m < 2 * p:
        raise InvalidProblemError(
            f"DualPipeV: needs at least as many micro-batches as stages ({2 * p}), got {m}"
        )
    if not view.split:
        raise InvalidProblemError("DualPipeV: needs backwards split into I and W (placements.dualpipev)")
    orders = {r: eight_steps(p, r, m, (r, ""), (2 * p - 1 - r, "")) for r in range(p)}
    return run_actions(view, orders, name="DualPipeV")
