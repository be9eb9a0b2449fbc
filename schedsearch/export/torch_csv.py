"""PyTorch ``torch.distributed.pipelining`` compute-only CSV: export and import.

Format (what PyTorch's ``_PipelineScheduleRuntime._load_csv(path,
format="compute_only")`` reads): one row per rank, one action per cell, in
the order the rank runs them (the cells are printed and parsed by
:mod:`schedsearch.actions`, as the runtime reads them). A cell
is ``{stage}{type}{micro-batch}`` with type ``F`` (forward), ``I`` (input
gradient), ``W`` (weight gradient) or ``B`` (full backward), e.g. ``0F1``;
an overlapped forward and backward is ``({a}F{m};{b}B{n})OVERLAP_F_B``. An
empty cell is no action. Communication
(``SEND_F``, ``RECV_B``, ...) is not part of a compute-only file: the
runtime adds it.

Mapping from a schedule: the problem must be one pipeline built by
:mod:`schedsearch.placements` (blocks ``F{s}``, ``B{s}`` / ``I{s}``,
``W{s}`` with their ``stage``); the stage index is the block's ``stage``
(so the ``"loop"`` and ``"v"`` mappings come out as PyTorch numbers them),
the rank is the device's index in the cluster, and each rank's cells
follow the start times of its tasks. Overlapped groups become one cell: an
``I`` and ``W`` of one stage and micro-batch fused into a ``"B"`` group is
``sB m``; a forward grouped with a full backward is ``OVERLAP_F_B``. A
schedule that the format cannot express (several pipelines, a block on
several devices at once, a kind other than F/B/I/W, another kind of group)
raises :class:`~schedsearch.errors.FormatError` instead of writing a wrong
file.

Import (:func:`read_torch_csv`) reads the cells back into the problem's
tasks and times them as soon as possible in each rank's order (see
:func:`~schedsearch.handcrafted.schedule_from_orders`); for a schedule
that is itself as soon as possible in its device orders (every
handcrafted one) the round trip gives the same schedule back.
"""

from __future__ import annotations

from pathlib import Path

from schedsearch._io import read_text
from schedsearch.actions import Action, Cell, Kind, format_rows, parse_rows
from schedsearch.errors import FormatError, InvalidProblemError
from schedsearch.handcrafted.actions import PipelineView, group_action, pipeline_view, run_actions
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, TaskInstance

__all__ = [
    "torch_cells",
    "to_torch_csv",
    "write_torch_csv",
    "parse_torch_csv",
    "read_torch_csv",
    "stage_to_rank",
]


def _view(problem: Problem, what: str) -> PipelineView:
    try:
        view = pipeline_view(problem)
    except InvalidProblemError as exc:
        raise FormatError(f"{what}: the problem is not one pipeline of stage blocks ({exc})") from None
    if list(view.pipelines) != [""]:
        raise FormatError(
            f"{what}: PyTorch's format runs every micro-batch through one pipeline of stages; problem "
            f"{problem.name!r} has {len(view.pipelines)} pipelines {sorted(view.pipelines)} (two model replicas, "
            f"as Chimera or DualPipe), which it cannot express"
        )
    return view


def stage_to_rank(problem: Problem) -> dict[int, int]:
    """Stage index -> rank (cluster device index) of a one-pipeline problem."""
    view = _view(problem, "stage_to_rank")
    return dict(enumerate(view.mapping()))


def torch_cells(problem: Problem, schedule: Schedule) -> list[list[str]]:
    """The cells of the compute-only CSV, one list per rank (cluster device order)."""
    return [[str(cell) for cell in row] for row in _cells(problem, schedule)]


def _cells(problem: Problem, schedule: Schedule) -> list[list[Cell]]:
    what = "PyTorch CSV export"
    view = _view(problem, what)
    by_block = view.block_kinds()
    rows: list[list[Cell]] = []
    for device in problem.cluster.device_names:
        items: list[tuple[int, Action]] = []
        groups: dict[tuple, list[TaskInstance]] = {}
        for t in schedule.on_device(device):
            if t.block not in by_block:
                raise FormatError(f"{what}: task {t.block!r} (micro-batch {t.microbatch}) is not a block of the problem")
            if len(t.devices) != 1:
                raise FormatError(
                    f"{what}: task {t.block!r} (micro-batch {t.microbatch}) runs on several devices at once "
                    f"{list(t.devices)}; a CSV cell belongs to one rank"
                )
            if t.group_key is not None:
                groups.setdefault(t.group_key, []).append(t)
                continue
            kind, stage = by_block[t.block]
            items.append((t.start, Action(stage, kind, t.microbatch)))
        for key, members in groups.items():
            items.append((key[2], group_action(members, by_block, what, FormatError)))
        items.sort(key=lambda x: x[0])
        starts = [s for s, _ in items]
        if len(set(starts)) != len(starts):
            raise FormatError(f"{what}: two actions start at the same time on device {device!r}")
        rows.append([Cell(action=action, column=col) for col, (_, action) in enumerate(items)])
    return rows


def to_torch_csv(problem: Problem, schedule: Schedule) -> str:
    """The compute-only CSV text of ``schedule`` (see the module docstring).

    One row per rank, one action per cell, in the order the rank runs them:
    the format of PyTorch's ``torch.distributed.pipelining`` schedules.

    Examples
    --------
    >>> from schedsearch import export, handcrafted, placements
    >>> problem = placements.zero_bubble(2, 2)
    >>> print(export.to_torch_csv(problem, handcrafted.zb_h1(problem)))
    0F0,0F1,0I0,0W0,0I1,0W1
    1F0,1I0,1F1,1I1,1W0,1W1
    """
    return format_rows(_cells(problem, schedule))


def write_torch_csv(problem: Problem, schedule: Schedule, path: str | Path) -> Path:
    """Write the compute-only CSV of ``schedule`` to ``path`` (see :func:`to_torch_csv`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch import export, handcrafted, placements
    >>> problem = placements.vshape(2, 2)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = export.write_torch_csv(problem, handcrafted.one_f_one_b(problem), Path(folder) / "1f1b.csv")
    ...     print(path.read_text().splitlines()[1])
    1F0,1B0,1F1,1B1
    """
    text = to_torch_csv(problem, schedule)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _checked_pair(cell: Cell, rank: int) -> Action:
    """A cell's action, an ``OVERLAP_F_B`` group checked to be a forward then a full backward."""
    if not cell.overlapped:
        return cell.action
    where = f"PyTorch CSV, rank {rank}, action {cell.column} {str(cell)!r}"
    if len(cell.actions) != 2:
        raise FormatError(f"{where}: OVERLAP_F_B must hold two actions, a forward and a full backward")
    if [a.kind for a in cell.actions] != [Kind.FORWARD, Kind.FULL_BACKWARD]:
        raise FormatError(f"{where}: OVERLAP_F_B must hold a forward then a full backward, got "
                          f"{[str(a) for a in cell.actions]}")
    return cell.action


def parse_torch_csv(text: str) -> list[list[Action]]:
    """Parse compute-only CSV text into per-rank action lists (empty cells dropped).

    The actions are not checked against a problem; :func:`read_torch_csv`
    does that.

    Examples
    --------
    >>> from schedsearch.export import parse_torch_csv
    >>> rows = parse_torch_csv("0F0,0F1,,0B0\\n1F0,(1F1;1B0)OVERLAP_F_B\\n")
    >>> [[str(action) for action in row] for row in rows]
    [['0F0', '0F1', '0B0'], ['1F0', '(1F1;1B0)OVERLAP_F_B']]
    """
    return [[_checked_pair(cell, rank) for cell in row]
            for rank, row in enumerate(parse_rows(text, error=FormatError, prefix="PyTorch CSV, "))]


def _is_file(text: str) -> bool:
    """True when ``text`` names a file (a name too long for the system, or one it cannot look up, does not)."""
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def read_torch_csv(problem: Problem, source: str | Path, *, name: str = "") -> Schedule:
    """Read a compute-only CSV (text or path) into a validated schedule of ``problem``.

    Each rank's actions run in their order, as soon as possible (see the
    module docstring). Raises :class:`~schedsearch.errors.FormatError`
    when the file does not fit the problem (more ranks than devices, a
    stage on the wrong rank, an unknown stage) and the simulator's errors
    when the order deadlocks or misses tasks.

    Examples
    --------
    >>> from schedsearch.export import read_torch_csv
    >>> from schedsearch.placements import vshape
    >>> schedule = read_torch_csv(vshape(2, 2), "0F0,0F1,0B0,0B1\\n1F0,1B0,1F1,1B1\\n")
    >>> print(schedule)
    Schedule 'vshape-2x2 (from PyTorch CSV)': 8 tasks, 0 transfers, makespan 9
    """
    if isinstance(source, Path) or ("\n" not in source and _is_file(source)):
        text = read_text(source, f"PyTorch CSV {str(source)!r}")
    else:
        text = str(source)
    view = _view(problem, "PyTorch CSV import")
    rows = parse_torch_csv(text)
    ndev = len(problem.cluster.devices)
    while rows and not rows[-1] and len(rows) > ndev:
        rows.pop()
    if len(rows) > ndev:
        raise FormatError(f"PyTorch CSV import: {len(rows)} ranks, but problem {problem.name!r} has {ndev} devices")
    mapping = view.mapping()
    S = len(mapping)
    for rank, actions in enumerate(rows):
        for a in actions:
            for act in a.members:
                if not 0 <= act.stage < S:
                    raise FormatError(f"PyTorch CSV import: rank {rank}: stage {act.stage} of {act} is not in 0..{S - 1}")
                if mapping[act.stage] != rank:
                    raise FormatError(
                        f"PyTorch CSV import: rank {rank} runs {act}, but stage {act.stage} is on rank "
                        f"{mapping[act.stage]} in problem {problem.name!r}"
                    )
    try:
        return run_actions(view, dict(enumerate(rows)), name=name or schedule_name(problem))
    except InvalidProblemError as exc:
        raise FormatError(f"PyTorch CSV import: {exc}") from None


def schedule_name(problem: Problem) -> str:
    return f"{problem.name} (from PyTorch CSV)" if problem.name else "from PyTorch CSV"
