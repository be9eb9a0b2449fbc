"""The one action type: printed and parsed by one module, as torch prints and parses its actions.

Round trips: every action printed and parsed back is the same action; rows of
cells printed and parsed back are the same cells at the same columns; text
printed by torch's own action type (``_Action``, through the runtime's one
door to torch's internals) parses to the actions torch means and prints back
to the same text; and torch's own parser reads every cell this module prints
as the same action. The handcrafted schedules, the CSV export, the runtime's
plan reader and traces and the profiler-trace importer hold this one type.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from optional import require

from schedsearch import handcrafted
from schedsearch.actions import COMPUTE_KINDS, Action, Cell, Kind, format_rows, kind_order, parse_cell, parse_rows
from schedsearch.errors import FormatError, PlanError
from schedsearch.export import torch_csv
from schedsearch.runtime import plan as runtime_plan
from schedsearch.runtime import profiler_traces, trace

actions = st.builds(Action, stage=st.integers(0, 300), kind=st.sampled_from(COMPUTE_KINDS),
                    microbatch=st.integers(0, 3000))
#: Any single action torch's grammar writes: every kind but the group's, the micro-batch optional.
any_single = st.builds(Action, stage=st.integers(0, 300),
                       kind=st.sampled_from([k for k in Kind if k is not Kind.OVERLAP_F_B]),
                       microbatch=st.none() | st.integers(0, 3000), pipe=st.sampled_from(["", ".up", ".down"]))


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
            row.append(Cell(action=Action.overlap(*acts) if overlapped else acts[0], column=column))
            column += 1
        out.append(row)
    return out


@given(rows())
def test_print_then_parse_gives_the_same_cells_at_the_same_columns(grid):
    text = format_rows(grid)
    assert text.count("\n") == len(grid)
    assert parse_rows(text) == [tuple(row) for row in grid]
    assert format_rows(parse_rows(text)) == text


@given(st.one_of(any_single, st.lists(any_single, min_size=1, max_size=3, unique=True).map(
    lambda members: Action.overlap(*members))))
def test_every_action_prints_and_parses_back_to_itself(action):
    assert Action.parse(str(action)) == action
    assert Action.parse(f"  {action} ") == action


def test_a_kind_is_its_letter_and_the_compute_kinds_are_ordered_once():
    assert [k.value for k in COMPUTE_KINDS] == ["F", "B", "I", "W"]
    assert Kind.FORWARD == "F" and {"F": 1}[Kind.FORWARD] == 1 and f"{Kind.BACKWARD_INPUT}" == "I"
    assert Action(0, "F", 1) == Action(0, Kind.FORWARD, 1)
    assert sorted("WXIBF", key=kind_order) == ["F", "B", "I", "W", "X"]
    with pytest.raises(FormatError, match="action kind 'X'"):
        Action(0, "X", 1)


def test_the_layers_share_the_action_type():
    assert runtime_plan.Action is Action and runtime_plan.Cell is Cell and handcrafted.Action is Action
    text = "0F0,,(0F1;1B0)OVERLAP_F_B,0I0,0W0\n1F0\n"
    rows = torch_csv.parse_torch_csv(text)
    assert all(type(a) is Action for row in rows for a in row)
    assert [[str(a) for a in row] for row in rows] == [["0F0", "(0F1;1B0)OVERLAP_F_B", "0I0", "0W0"], ["1F0"]]
    assert format_rows(parse_rows(text)) == text
    assert profiler_traces.parse_label("PP:(0F1;1B0)OVERLAP_F_B") == rows[0][1]
    assert trace.Compute(rank=0, action=rows[0][0], start_s=0.0, end_s=1.0).to_dict()["kind"] == "F"


def test_a_bad_action_names_its_text_and_why():
    with pytest.raises(FormatError, match=r"^'F3': is not an action"):
        Action.parse(" F3")
    with pytest.raises(FormatError, match="unknown action kind 'X'"):
        Action.parse("0X1")
    assert Action.parse("0SEND_F1").kind is Kind.SEND_F  # any of torch's kinds outside a compute-only file


@pytest.mark.parametrize("text, fragment", [
    ("0SEND_F1", "SEND_F is not a compute action"),
    ("0X1", "unknown action kind 'X'"),
    ("3F", "names no micro-batch"),
    ("F3", "is not an action"),
    ("(0F0;1B0)OVERLAP_X", "group type 'OVERLAP_X' is not supported"),
    ("()OVERLAP_F_B", "empty overlapped group"),
    ("(0F0;0F0)OVERLAP_F_B", "repeats an action"),
    ("0F0.up", "names pipeline '.up'"),
])
@pytest.mark.parametrize("error", [FormatError, PlanError])
def test_a_bad_cell_raises_the_caller_s_error_naming_rank_column_and_cell(text, fragment, error):
    with pytest.raises(error) as info:
        parse_cell(text, rank=2, column=5, error=error, prefix="where: ")
    message = str(info.value)
    assert message.startswith(f"where: rank 2, action 5 {text!r}: ") and fragment in message


def test_columns_that_do_not_increase_are_refused():
    a = Action(0, "F", 0)
    with pytest.raises(FormatError, match="columns must increase"):
        format_rows([[Cell(action=a, column=1), Cell(action=a, column=1)]])


def _torch():
    require("torch")
    from schedsearch.runtime._torch import pipelining_internals

    return pipelining_internals()


def _torch_action(ns, cell: Cell):
    one = [ns.Action(a.stage, ns.ComputationType[a.kind.name], a.microbatch) for a in cell.actions]
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
def test_the_kinds_are_torch_s_by_name_and_letter():
    ns = _torch()
    assert {(t.name, t.value) for t in ns.ComputationType} == {(k.name, k.value) for k in Kind}


@pytest.mark.torch
@given(any_single.filter(lambda a: not a.pipe))
def test_torch_reads_every_single_action_as_printed_here(action):
    ns = _torch()
    theirs = ns.Action.from_str(str(action))
    assert (theirs.stage_index, theirs.computation_type.value, theirs.microbatch_index) == (
        action.stage, action.kind.value, action.microbatch)
    assert str(theirs) == str(action)
