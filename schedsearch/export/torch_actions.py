"""The cells of torch's pipeline CSV: one action type, its printer and its parser.

torch's pipeline runtime (``torch.distributed.pipelining``) reads a
schedule as a CSV with one row per rank and one action per cell, run left
to right. A compute-only cell (``_load_csv(path, format="compute_only")``)
is

* empty (no action),
* ``{stage}{kind}{micro-batch}`` with kind ``F`` (forward), ``B`` (full
  backward), ``I`` (input gradient) or ``W`` (weight gradient), e.g.
  ``3F0``,
* an overlapped group ``({a};{b};...)OVERLAP_F_B`` (DualPipe's forward and
  backward pair): torch runs its members one after the other.

torch's other action types (``SEND_F``, ``RECV_F``, ``SEND_B``, ``RECV_B``,
``UNSHARD``, ``RESHARD``, ``REDUCE_GRAD``) are the runtime's own: it adds
them to a compute-only schedule, and a compute-only file holding one is
refused here, saying so.

:class:`Action` is one compute action and :class:`Cell` one non-empty cell
(a single action or an overlapped group) at its column; ``str`` prints
them as torch does (``_Action.__repr__``), :func:`parse_cell` and
:func:`parse_rows` read them back and :func:`format_rows` prints rows of
cells. The CSV export (:mod:`schedsearch.export.torch_csv`) and the
runtime's plan checks (:mod:`schedsearch.runtime.plan`) both read and write
cells through this module.

Examples
--------
>>> from schedsearch.export.torch_actions import format_rows, parse_rows
>>> rows = parse_rows("0F0,,(0F1;1B0)OVERLAP_F_B\\n1F0,1I0,1W0\\n")
>>> [(str(cell), cell.column) for cell in rows[0]]
[('0F0', 0), ('(0F1;1B0)OVERLAP_F_B', 2)]
>>> print(format_rows(rows), end="")
0F0,,(0F1;1B0)OVERLAP_F_B
1F0,1I0,1W0
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

import attrs

from schedsearch.errors import FormatError, SchedSearchError

__all__ = ["KINDS", "NON_COMPUTE", "OVERLAP_TAG", "Action", "Cell", "format_rows", "parse_cell", "parse_rows"]

#: The compute action kinds and their names.
KINDS: dict[str, str] = {
    "F": "forward",
    "B": "full backward",
    "I": "input gradient",
    "W": "weight gradient",
}

#: The tag of an overlapped group.
OVERLAP_TAG = "OVERLAP_F_B"

#: torch's action types that a compute-only file must not hold (the runtime adds them).
NON_COMPUTE = ("SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD")

_ACTION_RE = re.compile(r"(\d+)([A-Z_]+?)(\d*)")
_GROUP_RE = re.compile(r"\((.*)\)([A-Z_]+)")


@attrs.frozen(kw_only=True, order=True)
class Action:
    """One compute action: ``kind`` (a key of :data:`KINDS`) of ``stage`` for ``microbatch``.

    Examples
    --------
    >>> from schedsearch.export.torch_actions import Action
    >>> a = Action(stage=3, kind="I", microbatch=0)
    >>> print(a)
    3I0
    >>> a.describe()
    'input gradient of stage 3, micro-batch 0'
    """

    stage: int
    kind: str
    microbatch: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.microbatch}"

    def describe(self) -> str:
        """In words, e.g. ``forward of stage 4, micro-batch 0``."""
        return f"{KINDS[self.kind]} of stage {self.stage}, micro-batch {self.microbatch}"


@attrs.frozen(kw_only=True)
class Cell:
    """One non-empty cell of a rank's row: a single action or an overlapped group.

    ``column`` is the cell's position in its row (counted from 0, empty
    cells included).
    """

    actions: tuple[Action, ...]
    column: int = 0
    overlapped: bool = False

    def __str__(self) -> str:
        if self.overlapped:
            return f"({';'.join(map(str, self.actions))}){OVERLAP_TAG}"
        return str(self.actions[0])


def _fail(error: type[SchedSearchError], prefix: str, rank: int, column: int, text: str,
          message: str) -> SchedSearchError:
    return error(f"{prefix}rank {rank}, action {column} {text!r}: {message}")


def _parse_action(text: str, cell_text: str, rank: int, column: int, error: type[SchedSearchError],
                  prefix: str) -> Action:
    m = _ACTION_RE.fullmatch(text)
    if m is None:
        raise _fail(error, prefix, rank, column, cell_text,
                    "is not an action of the form {stage}{F|B|I|W}{micro-batch}, e.g. 3F0, or (..;..)OVERLAP_F_B")
    stage, kind, mb = m.groups()
    if kind in NON_COMPUTE:
        raise _fail(
            error, prefix, rank, column, cell_text,
            f"{kind} is not a compute action; a compute-only plan holds F, B, I, W and overlapped groups, no "
            "communication or sharding actions (the runtime adds the sends, receives and gradient reductions itself)",
        )
    if kind not in KINDS:
        raise _fail(error, prefix, rank, column, cell_text,
                    f"unknown action kind {kind!r} (expected one of F, B, I, W): not an action of the form "
                    "{stage}{F|B|I|W}{micro-batch}")
    if not mb:
        raise _fail(error, prefix, rank, column, cell_text,
                    "names no micro-batch (e.g. 3F0 is stage 3's forward of micro-batch 0)")
    return Action(stage=int(stage), kind=kind, microbatch=int(mb))


def parse_cell(raw: str, *, rank: int = 0, column: int = 0, error: type[SchedSearchError] = FormatError,
               prefix: str = "") -> Cell | None:
    """One cell's text as a :class:`Cell` (None when empty).

    A malformed cell raises ``error`` with a message that starts with
    ``prefix`` and names the rank, the column and the cell.

    Examples
    --------
    >>> from schedsearch.export.torch_actions import parse_cell
    >>> parse_cell(" (0F1;7B0)OVERLAP_F_B ", column=4).actions[1]
    Action(stage=7, kind='B', microbatch=0)
    >>> parse_cell("0SEND_F1")
    Traceback (most recent call last):
    ...
    schedsearch.errors.FormatError: rank 0, action 0 '0SEND_F1': SEND_F is not a compute action; ...
    """
    text = raw.strip()
    if not text:
        return None
    if text.startswith("("):
        m = _GROUP_RE.fullmatch(text)
        if m is None:
            raise _fail(error, prefix, rank, column, text, "is not an overlapped group of the form (aF;bB)OVERLAP_F_B")
        inner, tag = m.groups()
        if tag != OVERLAP_TAG:
            raise _fail(error, prefix, rank, column, text, f"group type {tag!r} is not supported (only {OVERLAP_TAG})")
        parts = [p.strip() for p in inner.split(";") if p.strip()]
        if not parts:
            raise _fail(error, prefix, rank, column, text, "is an empty overlapped group")
        actions = tuple(_parse_action(p, text, rank, column, error, prefix) for p in parts)
        if len(set(actions)) != len(actions):
            raise _fail(error, prefix, rank, column, text, "repeats an action inside the group")
        return Cell(actions=actions, column=column, overlapped=True)
    return Cell(actions=(_parse_action(text, text, rank, column, error, prefix),), column=column)


def parse_rows(text: str, *, error: type[SchedSearchError] = FormatError,
               prefix: str = "") -> list[tuple[Cell, ...]]:
    """The CSV ``text`` as one tuple of non-empty cells per line (rank), each at its column.

    Every line is a row, blank ones included (a rank with no action).
    """
    return [tuple(c for col, raw in enumerate(row)
                  if (c := parse_cell(raw, rank=rank, column=col, error=error, prefix=prefix)) is not None)
            for rank, row in enumerate(csv.reader(io.StringIO(text)))]


def format_rows(rows: Sequence[Sequence[Cell]]) -> str:
    """The CSV text of ``rows``: one line per rank, each cell at its column, empty cells between.

    Raises :class:`~schedsearch.errors.FormatError` when a row's columns
    do not increase.
    """
    lines = []
    for rank, row in enumerate(rows):
        cells: list[str] = []
        for cell in row:
            if cell.column < len(cells):
                raise FormatError(f"torch CSV: rank {rank}: cell {str(cell)!r} at column {cell.column} comes after "
                                  f"column {len(cells) - 1}; a row's columns must increase")
            cells += [""] * (cell.column - len(cells)) + [str(cell)]
        lines.append(",".join(cells) + "\n")
    return "".join(lines)
