"""The pipeline action: one type, one printer, one parser (torch's action grammar).

torch's pipeline runtime (``torch.distributed.pipelining``) names every step
a rank takes with one action type, ``_Action``: a stage, a kind, a
micro-batch, and, for an overlapped pair, its sub-actions. It prints and
reads them as text:

* ``{stage}{kind}{micro-batch}``, e.g. ``3F0`` (stage 3's forward of
  micro-batch 0), ``0SEND_B12``; the micro-batch is left out where the kind
  has none (``2REDUCE_GRAD``);
* an overlapped group ``({a};{b};...)OVERLAP_F_B`` (DualPipe's forward and
  backward pair): torch runs its members one after the other.

:class:`Action` is that type and :class:`Kind` its kinds, with torch's
letters and names; ``str`` prints an action as torch does and
:meth:`Action.parse` reads it back. A problem with several pipelines
(Chimera's or DualPipe's two directions) names an action's pipeline by its
block-name suffix (``pipe``, e.g. ``".up"``), printed after the
micro-batch (``0B1.up``); torch's CSV runs one pipeline and holds none.

A compute-only CSV (``_load_csv(path, format="compute_only")``: one row per
rank, one action per cell, run left to right) holds the compute kinds and
overlapped groups only: the runtime adds the sends, receives and gradient
reductions itself. :class:`Cell` is one non-empty cell, an action at its
column; :func:`parse_cell` and :func:`parse_rows` read cells under that
restriction, naming the rank, the column and the text of a bad one, and
:func:`format_rows` prints rows of cells. The CSV export
(:mod:`schedsearch.export.torch_csv`), the handcrafted schedules, the
runtime's plan reader and traces and the profiler-trace importer all hold
actions of this one type.

A position in time is not part of an action: a planned or measured span is
a record that holds one (:class:`OnAction`: the runtime's measured stage
calls, the profiler's action spans).

This module imports nothing of the package but its errors.

Examples
--------
>>> from schedsearch.actions import Action, format_rows, parse_rows
>>> Action.parse("(0F1;1B0)OVERLAP_F_B").sub_actions
(Action.parse('0F1'), Action.parse('1B0'))
>>> rows = parse_rows("0F0,,(0F1;1B0)OVERLAP_F_B\\n1F0,1I0,1W0\\n")
>>> [(str(cell), cell.column) for cell in rows[0]]
[('0F0', 0), ('(0F1;1B0)OVERLAP_F_B', 2)]
>>> print(format_rows(rows), end="")
0F0,,(0F1;1B0)OVERLAP_F_B
1F0,1I0,1W0
"""

from __future__ import annotations

import csv
import enum
import io
import re
from collections.abc import Sequence

import attrs

from schedsearch.errors import FormatError, SchedSearchError

__all__ = [
    "COMPUTE_KINDS",
    "Action",
    "Cell",
    "Kind",
    "OnAction",
    "format_rows",
    "kind_order",
    "parse_cell",
    "parse_rows",
]


class Kind(enum.StrEnum):
    """An action's kind, with torch's names and letters (``_ComputationType``).

    A kind is a ``str`` equal to its letter (``Kind.FORWARD == "F"``), so
    it prints, compares and hashes as the text torch writes.
    """

    FORWARD = "F"
    FULL_BACKWARD = "B"
    BACKWARD_INPUT = "I"
    BACKWARD_WEIGHT = "W"
    SEND_F = "SEND_F"
    RECV_F = "RECV_F"
    SEND_B = "SEND_B"
    RECV_B = "RECV_B"
    UNSHARD = "UNSHARD"
    RESHARD = "RESHARD"
    REDUCE_GRAD = "REDUCE_GRAD"
    OVERLAP_F_B = "OVERLAP_F_B"

    @property
    def is_compute(self) -> bool:
        """A forward, full backward, input or weight gradient (what a stage computes)."""
        return self in COMPUTE_KINDS

    @property
    def description(self) -> str:
        """In words, e.g. ``input gradient``."""
        return _DESCRIPTIONS[self]


F = Kind.FORWARD
B = Kind.FULL_BACKWARD
I = Kind.BACKWARD_INPUT  # noqa: E741 - torch's letter
W = Kind.BACKWARD_WEIGHT

#: The compute kinds, in the library's order (forward, full backward, input gradient, weight gradient).
COMPUTE_KINDS: tuple[Kind, ...] = (F, B, I, W)

_DESCRIPTIONS = {
    F: "forward", B: "full backward", I: "input gradient", W: "weight gradient",
    Kind.SEND_F: "send of an activation", Kind.RECV_F: "receive of an activation",
    Kind.SEND_B: "send of a gradient", Kind.RECV_B: "receive of a gradient",
    Kind.UNSHARD: "unshard", Kind.RESHARD: "reshard", Kind.REDUCE_GRAD: "gradient reduction",
    Kind.OVERLAP_F_B: "overlapped forward and backward",
}

_ORDER = {k.value: i for i, k in enumerate(COMPUTE_KINDS)}


def kind_order(kind: str) -> int:
    """The position of a compute kind in :data:`COMPUTE_KINDS`; any other tag sorts after them.

    Examples
    --------
    >>> from schedsearch.actions import kind_order
    >>> sorted(["W", "X", "F", "I", "B"], key=lambda k: (kind_order(k), k))
    ['F', 'B', 'I', 'W', 'X']
    """
    return _ORDER.get(kind, len(_ORDER))


#: A kind by its letter (a kind hashes and compares as its letter, so a kind finds itself too).
_KIND_OF: dict[str, Kind] = {k.value: k for k in Kind}


def _kind(value: str) -> Kind:
    kind = _KIND_OF.get(value)
    if kind is None:
        raise FormatError(f"action kind {value!r} is not one of {[k.value for k in Kind]}")
    return kind


@attrs.frozen(order=True, repr=False)
class Action:
    """One pipeline action: ``kind`` of ``stage`` for ``microbatch``, or an overlapped group.

    A group (:meth:`overlap`) has kind ``OVERLAP_F_B``, its members in
    ``sub_actions``, stage -1 and no micro-batch, as torch's. ``pipe`` is
    the pipeline's block-name suffix in a problem with several pipelines
    (``""`` for one). ``kind`` may be given as its letter.

    Examples
    --------
    >>> from schedsearch.actions import Action, Kind
    >>> a = Action(3, "I", 0)
    >>> print(a, a.kind is Kind.BACKWARD_INPUT, a.describe())
    3I0 True input gradient of stage 3, micro-batch 0
    >>> print(Action.overlap(Action(0, "F", 1), Action(1, "B", 0)), Action(0, "B", 1, pipe=".up"))
    (0F1;1B0)OVERLAP_F_B 0B1.up
    """

    stage: int
    kind: Kind = attrs.field(converter=_kind)
    microbatch: int | None = None
    sub_actions: tuple[Action, ...] = ()
    pipe: str = ""

    @classmethod
    def overlap(cls, *members: Action) -> Action:
        """The overlapped group of ``members``, run one after the other in this order."""
        return cls(-1, Kind.OVERLAP_F_B, None, tuple(members))

    @classmethod
    def parse(cls, text: str) -> Action:
        """The action ``text`` prints (the inverse of ``str``); :class:`FormatError` naming it when it is none.

        Examples
        --------
        >>> from schedsearch.actions import Action
        >>> Action.parse(" 2REDUCE_GRAD "), Action.parse("0SEND_F12").microbatch
        (Action.parse('2REDUCE_GRAD'), 12)
        >>> Action.parse("F3")
        Traceback (most recent call last):
        ...
        schedsearch.errors.FormatError: 'F3': is not an action of the form {stage}{kind}[{micro-batch}], e.g. 3F0, or (..;..)OVERLAP_F_B
        """
        try:
            return _parse(text.strip(), compute_only=False)
        except _Malformed as exc:
            raise FormatError(f"{_clipped(text.strip())}: {exc.reason}") from None

    @property
    def members(self) -> tuple[Action, ...]:
        """The actions run: a group's sub-actions, else the action itself."""
        return self.sub_actions if self.kind is Kind.OVERLAP_F_B else (self,)

    @property
    def is_compute(self) -> bool:
        """A compute kind, or an overlapped group (torch's ``is_compute_op``)."""
        return self.kind.is_compute or self.kind is Kind.OVERLAP_F_B

    def describe(self) -> str:
        """In words, e.g. ``forward of stage 4, micro-batch 0``."""
        if self.kind is Kind.OVERLAP_F_B:
            return "overlapped group of " + " and ".join(a.describe() for a in self.sub_actions)
        mb = "" if self.microbatch is None else f", micro-batch {self.microbatch}"
        return f"{self.kind.description} of stage {self.stage}{mb}"

    def __str__(self) -> str:
        if self.kind is Kind.OVERLAP_F_B:
            return f"({';'.join(map(str, self.sub_actions))}){self.kind.value}"
        mb = "" if self.microbatch is None else self.microbatch
        return f"{self.stage}{self.kind.value}{mb}{self.pipe}"

    def __repr__(self) -> str:
        return f"Action.parse({str(self)!r})"


class OnAction:
    """A record that holds an action in ``action`` (a span of it in time, a call of it): its stage, kind and
    micro-batch read through."""

    __slots__ = ()
    action: Action

    @property
    def stage(self) -> int:
        return self.action.stage

    @property
    def kind(self) -> Kind:
        return self.action.kind

    @property
    def microbatch(self) -> int | None:
        return self.action.microbatch


# --------------------------------------------------------------------------
# The grammar
# --------------------------------------------------------------------------

#: One action: stage, kind (any run of capitals and underscores; checked against :class:`Kind`),
#: micro-batch (optional), pipeline suffix (optional, from a dot).
_ACTION_RE = re.compile(r"(\d+)([A-Z_]+?)(\d*)(\.[^\s,;()]+)?")
_GROUP_RE = re.compile(r"\((.*)\)([A-Z_]+)")
_SINGLE_KINDS = {k.value: k for k in Kind if k is not Kind.OVERLAP_F_B}
#: Most digits a stage or micro-batch number may have (a reader checks it further against its input).
MAX_DIGITS = 18


def _clipped(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to ``limit`` characters of text: a cell or a label in a message stays short
    however long the file's was (the module's own, so that the action type stays a leaf)."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


class _Malformed(Exception):
    """Why a text is not an action (the readers add where it stands)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _parse_one(text: str, compute_only: bool) -> Action:
    form = "{stage}{F|B|I|W}{micro-batch}" if compute_only else "{stage}{kind}[{micro-batch}]"
    m = _ACTION_RE.fullmatch(text)
    if m is None:
        raise _Malformed(f"is not an action of the form {form}, e.g. 3F0, or (..;..)OVERLAP_F_B")
    stage, letters, mb, pipe = m.groups()
    for what, digits in (("stage", stage), ("micro-batch", mb)):
        if len(digits) > MAX_DIGITS:
            raise _Malformed(f"its {what} number has {len(digits)} digits, more than any pipeline's (at most "
                             f"{MAX_DIGITS})")
    kind = _SINGLE_KINDS.get(letters)
    if compute_only and kind is not None and not kind.is_compute:
        raise _Malformed(
            f"{letters} is not a compute action; a compute-only plan holds F, B, I, W and overlapped groups, no "
            "communication or sharding actions (the runtime adds the sends, receives and gradient reductions itself)")
    if kind is None:
        expected = ", ".join(k.value for k in (COMPUTE_KINDS if compute_only else _SINGLE_KINDS.values()))
        raise _Malformed(f"unknown action kind {_clipped(letters)} (expected one of {expected}): not an action of "
                         f"the form {form}")
    if compute_only and not mb:
        raise _Malformed("names no micro-batch (e.g. 3F0 is stage 3's forward of micro-batch 0)")
    if compute_only and pipe:
        raise _Malformed(f"names pipeline {_clipped(pipe)}; torch's CSV runs one pipeline, its actions carry no "
                         f"suffix")
    return Action(int(stage), kind, int(mb) if mb else None, pipe=pipe or "")


def _parse(text: str, compute_only: bool) -> Action:
    """The action ``text`` (stripped) prints; :class:`_Malformed` saying why it is none."""
    if not text.startswith("("):
        return _parse_one(text, compute_only)
    m = _GROUP_RE.fullmatch(text)
    if m is None:
        raise _Malformed("is not an overlapped group of the form (aF;bB)OVERLAP_F_B")
    inner, tag = m.groups()
    if tag != Kind.OVERLAP_F_B:
        raise _Malformed(f"group type {_clipped(tag)} is not supported (only {Kind.OVERLAP_F_B.value})")
    parts = [p.strip() for p in inner.split(";") if p.strip()]
    if not parts:
        raise _Malformed("is an empty overlapped group")
    members = tuple(_parse_one(p, compute_only) for p in parts)
    if len(set(members)) != len(members):
        raise _Malformed("repeats an action inside the group")
    return Action.overlap(*members)


# --------------------------------------------------------------------------
# Compute-only CSV rows
# --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Cell:
    """One non-empty cell of a rank's row: an action (a single one or an overlapped group) at its column.

    ``column`` is the cell's position in its row (counted from 0, empty
    cells included).
    """

    action: Action
    column: int = 0

    @property
    def actions(self) -> tuple[Action, ...]:
        """The actions the cell runs, in order (see :attr:`Action.members`)."""
        return self.action.members

    @property
    def overlapped(self) -> bool:
        return self.action.kind is Kind.OVERLAP_F_B

    def __str__(self) -> str:
        return str(self.action)


def parse_cell(raw: str, *, rank: int = 0, column: int = 0, error: type[SchedSearchError] = FormatError,
               prefix: str = "") -> Cell | None:
    """One compute-only cell's text as a :class:`Cell` (None when empty).

    A malformed cell raises ``error`` with a message that starts with
    ``prefix`` and names the rank, the column and the cell.

    Examples
    --------
    >>> from schedsearch.actions import parse_cell
    >>> parse_cell(" (0F1;7B0)OVERLAP_F_B ", column=4).actions[1]
    Action.parse('7B0')
    >>> parse_cell("0SEND_F1")
    Traceback (most recent call last):
    ...
    schedsearch.errors.FormatError: rank 0, action 0 '0SEND_F1': SEND_F is not a compute action; ...
    """
    text = raw.strip()
    if not text:
        return None
    try:
        action = _parse(text, compute_only=True)
    except _Malformed as exc:
        raise error(f"{prefix}rank {rank}, action {column} {_clipped(text)}: {exc.reason}") from None
    return Cell(action=action, column=column)


def parse_rows(text: str, *, error: type[SchedSearchError] = FormatError,
               prefix: str = "") -> list[tuple[Cell, ...]]:
    """The compute-only CSV ``text`` as one tuple of non-empty cells per line (rank), each at its column.

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
