"""PyTorch compute-only CSV: export, parse, import, round trip, and the schedules it cannot express."""

from __future__ import annotations

import attrs
import pytest

from schedsearch.actions import Action
from schedsearch.errors import FormatError
from schedsearch.export.torch_csv import (
    parse_torch_csv,
    read_torch_csv,
    stage_to_rank,
    to_torch_csv,
    torch_cells,
    write_torch_csv,
)
from schedsearch.handcrafted import reproduce
from schedsearch.placements import tessel_m, vshape
from schedsearch.schedule import Schedule

SINGLE_PIPELINE = ["gpipe", "1f1b", "interleaved", "interleaved-zb", "zb-h1", "zb-v", "dualpipev"]


@pytest.mark.parametrize("name", SINGLE_PIPELINE)
def test_round_trip(name, tmp_path):
    rep = reproduce(name)
    text = to_torch_csv(rep.problem, rep.schedule)
    path = write_torch_csv(rep.problem, rep.schedule, tmp_path / f"{name}.csv")
    back = read_torch_csv(rep.problem, path)
    assert back.tasks == rep.schedule.tasks  # handcrafted schedules are as soon as possible
    assert to_torch_csv(rep.problem, back) == text
    # one row per rank, every task once
    rows = parse_torch_csv(text)
    assert len(rows) == len(rep.problem.cluster.devices)


def test_letters_and_stage_indices_follow_the_mapping():
    rep = reproduce("interleaved", devices=2, chunks=2, microbatches=2)
    cells = torch_cells(rep.problem, rep.schedule)
    assert stage_to_rank(rep.problem) == {0: 0, 1: 1, 2: 0, 3: 1}  # "loop"
    assert set(cells[0]) == {"0F0", "0F1", "2F0", "2F1", "0B0", "0B1", "2B0", "2B1"}
    zbv = reproduce("zb-v", devices=2, microbatches=3)
    assert stage_to_rank(zbv.problem) == {0: 0, 1: 1, 2: 1, 3: 0}  # "v"
    assert {c[1:2] for c in torch_cells(zbv.problem, zbv.schedule)[0]} == {"F", "I", "W"}


def test_overlapped_pairs_and_fused_backwards():
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    cells = [c for row in torch_cells(rep.problem, rep.schedule) for c in row]
    assert any(c.endswith(")OVERLAP_F_B") for c in cells)
    assert any(c[1:2] == "B" and not c.startswith("(") for c in cells)  # a full backward: fused I + W
    back = read_torch_csv(rep.problem, to_torch_csv(rep.problem, rep.schedule))
    assert back.tasks == rep.schedule.tasks


@pytest.mark.parametrize("name", ["chimera", "dualpipe"])
def test_two_pipelines_cannot_be_expressed(name):
    rep = reproduce(name)
    with pytest.raises(FormatError, match="2 pipelines"):
        to_torch_csv(rep.problem, rep.schedule)


def test_a_block_on_several_devices_cannot_be_expressed():
    p = tessel_m(2, 1)
    from schedsearch.handcrafted import schedule_from_orders

    s = schedule_from_orders(p, {"d0": [("FS", 0), ("F0", 0), ("B0", 0), ("BS", 0)],
                                 "d1": [("FS", 0), ("F1", 0), ("B1", 0), ("BS", 0)]})
    with pytest.raises(FormatError, match="not one pipeline"):
        to_torch_csv(p, s)


def test_an_undeclared_kind_of_group_cannot_be_expressed():
    rep = reproduce("dualpipev", devices=2, microbatches=4)
    # tag a plain forward and weight gradient of one device as a group: not F&B, not a full backward
    tasks = list(rep.schedule.tasks)
    f = next(t for t in tasks if t.block == "F0" and t.microbatch == 0)
    w = next(t for t in tasks if t.block == "W3" and t.overlap is None)
    fake = [attrs.evolve(t, overlap="odd", start=0, end=1) if t in (f, w) else t for t in tasks]
    with pytest.raises(FormatError, match="neither a full backward"):
        to_torch_csv(rep.problem, Schedule(tasks=fake))


def test_parse_reads_cells_pairs_and_empty_cells():
    rows = parse_torch_csv("0F0,,(0F1;3B0)OVERLAP_F_B,0I0,0W0\n1F0\n")
    assert rows == [[Action(0, "F", 0), Action.overlap(Action(0, "F", 1), Action(3, "B", 0)), Action(0, "I", 0),
                     Action(0, "W", 0)],
                    [Action(1, "F", 0)]]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("0F0,0SEND_F0\n", "no communication"),
        ("0X0\n", "not an action"),
        ("(0F0)OVERLAP_F_B\n", "two actions"),
        ("(0B0;1F0)OVERLAP_F_B\n", "a forward then a full backward"),
    ],
)
def test_parse_errors(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        parse_torch_csv(text)


def test_import_checks_ranks_and_stages():
    p = vshape(2, 1)
    with pytest.raises(FormatError, match="stage 1 is on rank 1"):
        read_torch_csv(p, "0F0,1F0,1B0,0B0\n\n")
    with pytest.raises(FormatError, match="3 ranks"):
        read_torch_csv(p, "0F0,0B0\n1F0,1B0\n0F0\n")
    with pytest.raises(FormatError, match="not in 0..1"):
        read_torch_csv(p, "0F0,5F0\n")
    from schedsearch.handcrafted import DeadlockError

    with pytest.raises(DeadlockError):
        read_torch_csv(p, "0B0,0F0\n1F0,1B0\n")
    assert read_torch_csv(p, "0F0,0B0\n1F0,1B0\n").makespan == 6
