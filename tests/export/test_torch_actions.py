"""The torch CSV's cells: printed and parsed by one module, and as torch prints and parses them.

Round trips: rows of cells printed and parsed back are the same cells at the
same columns; text printed by torch's own action type (``_Action``, through
the runtime's one door to torch's internals) parses to the actions torch
means and prints back to the same text; and torch's own parser reads every
cell this module prints as the same action. Both the CSV export and the
runtime's plan reader go through this module.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from optional import require

from schedsearch.errors import FormatError, PlanError
from schedsearch.export import torch_csv
from schedsearch.export.torch_actions import (
    KINDS,
    NON_COMPUTE,
    OVERLAP_TAG,
    Action,
    Cell,
    format_rows,
    parse_cell,
    parse_rows,
)
from schedsearch.runtime import plan as runtime_plan

actions = st.builds(Action, stage=st.integers(0, 300), kind=st.sampled_from(sorted(KINDS)),
                    microbatch=st.integers(0, 3000))


@st.composite
def cells(draw) -> tuple:
    """(gap before it, actions, overlapped) of one cell."""
    gap = draw(st.integers(0, 2))
    if draw(st.booleans()):
        return gap, (draw(actions),), False
    return gap, tuple(draw(st.lists(actions, min_size=1, max_size=3, unique=True))), True


@st.composite
def rows(draw) -> list[list[Cell]]:
    out = []
    for spec in draw(st.lists(st.lists(cells(), max_size=6), min_size=1, max_size=5)):
        column, row = 0, []
        for gap, acts, overlapped in spec:
            column += gap
            row.append(Cell(actions=acts, column=column, overlapped=overlapped))
            column += 1
        out.append(row)
    return out


@given(rows())
def test_print_then_parse_gives_the_same_cells_at_the_same_columns(grid):
    text = format_rows(grid)
    assert text.count("\n") == len(grid)
    assert parse_rows(text) == [tuple(row) for row in grid]
    assert format_rows(parse_rows(text)) == text


def test_the_export_and_the_runtime_share_the_action_type():
    assert runtime_plan.Action is Action and runtime_plan.Cell is Cell and runtime_plan.KINDS is KINDS
    text = "0F0,,(0F1;1B0)OVERLAP_F_B,0I0,0W0\n1F0\n"
    assert [[str(a) for a in row] for row in torch_csv.parse_torch_csv(text)] == [
        ["0F0", "(0F1;1B0)", "0I0", "0W0"], ["1F0"]]
    assert format_rows(parse_rows(text)) == text


@pytest.mark.parametrize("text, fragment", [
    ("0SEND_F1", "SEND_F is not a compute action"),
    ("0X1", "unknown action kind 'X'"),
    ("3F", "names no micro-batch"),
    ("F3", "is not an action"),
    ("(0F0;1B0)OVERLAP_X", "group type 'OVERLAP_X' is not supported"),
    ("()OVERLAP_F_B", "empty overlapped group"),
    ("(0F0;0F0)OVERLAP_F_B", "repeats an action"),
])
@pytest.mark.parametrize("error", [FormatError, PlanError])
def test_a_bad_cell_raises_the_caller_s_error_naming_rank_column_and_cell(text, fragment, error):
    with pytest.raises(error) as info:
        parse_cell(text, rank=2, column=5, error=error, prefix="where: ")
    message = str(info.value)
    assert message.startswith(f"where: rank 2, action 5 {text!r}: ") and fragment in message


def test_columns_that_do_not_increase_are_refused():
    a = Action(stage=0, kind="F", microbatch=0)
    with pytest.raises(FormatError, match="columns must increase"):
        format_rows([[Cell(actions=(a,), column=1), Cell(actions=(a,), column=1)]])


def _torch():
    require("torch")
    from schedsearch.runtime._torch import pipelining_internals

    return pipelining_internals()


_TORCH_KIND = {"F": "FORWARD", "B": "FULL_BACKWARD", "I": "BACKWARD_INPUT", "W": "BACKWARD_WEIGHT"}


def _torch_action(ns, cell: Cell):
    one = [ns.Action(a.stage, getattr(ns.ComputationType, _TORCH_KIND[a.kind]), a.microbatch) for a in cell.actions]
    if not cell.overlapped:
        return one[0]
    return ns.Action(-1, ns.ComputationType.OVERLAP_F_B, None, tuple(one))


@pytest.mark.torch
@given(rows())
def test_torch_s_printed_actions_parse_and_print_back_to_the_same_text(grid):
    ns = _torch()
    # the text torch writes for these actions: its _Action's string per cell, "" for no action
    lines = []
    for row in grid:
        width = row[-1].column + 1 if row else 0
        by_column = {c.column: _torch_action(ns, c) for c in row}
        lines.append(",".join(str(by_column[k]) if k in by_column else "" for k in range(width)) + "\n")
    text = "".join(lines)
    parsed = parse_rows(text)
    assert format_rows(parsed) == text
    # the same actions torch means, and torch reads back every cell printed here as the same action
    for row, torch_row in zip(parsed, grid):
        for ours, mine in zip(row, torch_row):
            theirs = ns.Action.from_str(str(ours))
            assert theirs == _torch_action(ns, mine)
            assert ours == mine


@pytest.mark.torch
def test_torch_s_other_action_types_are_the_ones_a_compute_only_file_refuses():
    ns = _torch()
    values = {t.value for t in ns.ComputationType}
    assert values - set(KINDS) - {OVERLAP_TAG} == set(NON_COMPUTE)
