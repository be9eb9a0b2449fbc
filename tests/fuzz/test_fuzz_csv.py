"""Fuzzing campaign: torch's compute-only pipeline CSVs (the runtime's plan reader, the CSV import, ``run
--check-only``).

The valid inputs are the CSVs the library's own export writes for published schedules (1F1B, ZB-H1,
interleaved, DualPipeV) and PyTorch's own DualPipeV CSV; each is mutated cell by cell (big stage and
micro-batch numbers, cells dropped, duplicated, swapped or garbled, rows added, dropped or emptied)
and through the shared tree mutator, then read: every mutation is answered or refused by the
library's own error, within the campaign's bounds (``tests/fuzzing.py``).
"""

from __future__ import annotations

import csv
import functools
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import attempt, attempt_cli, examples, mutated
from schedsearch.errors import PlanError
from schedsearch.export import read_torch_csv, to_torch_csv
from schedsearch.handcrafted import reproduce
from schedsearch.runtime.plan import parse_plan

FAMILIES = ("1f1b", "zb-h1", "interleaved", "dualpipev")
DUALPIPEV_CSV = Path(__file__).resolve().parents[1] / "export" / "data" / "dualpipev_4rank_10mb.csv"
#: Numbers a cell's stage or micro-batch is pushed to (as text: some are longer than Python converts).
BIG = ("3", "4", "1000", "1000000", "1000000000", str(2**63), "1" + "0" * 30, "1" + "0" * 5000)
GARBLED = ("", " ", "F0", "0X0", "0SEND_F0", "(0F0;1B0)OVERLAP_F_B", "(0F0)OVERLAP_F_B", "((", "0F", "-1F0",
           "0F-1", "0F0.up", "٣F0", "0F0;0B0", '"', "0" * 100000 + "F0")


@functools.cache
def _written(name: str):
    rep = reproduce(name, devices=2, microbatches=4)
    return rep.problem, to_torch_csv(rep.problem, rep.schedule)


def _source(name: str) -> str:
    return DUALPIPEV_CSV.read_text() if name == "pytorch dualpipev" else _written(name)[1]


def _cells(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text))]


def _text(rows: list) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[str(c) for c in row] if isinstance(row, list) else [str(row)]
                                                    for row in rows])
    return out.getvalue()


@st.composite
def _csv_case(draw) -> tuple[str, str, str]:
    name = draw(st.sampled_from((*FAMILIES, "pytorch dualpipev")))
    rows = _cells(_source(name))
    move = draw(st.sampled_from(["big", "garble", "swap", "drop row", "add row", "tree"]))
    r = draw(st.integers(0, len(rows) - 1))
    filled = [c for c, cell in enumerate(rows[r]) if cell]
    if move == "big" and filled:
        c = draw(st.sampled_from(filled))
        single = re.fullmatch(r"(\d+)([A-Z]+)(\d+)", rows[r][c])
        stage, kind, mb = single.groups() if single else ("0", "F", "0")
        number = draw(st.sampled_from(BIG))
        rows[r][c] = f"{number}{kind}{mb}" if draw(st.booleans()) else f"{stage}{kind}{number}"
        what = f"cell {r},{c} -> {rows[r][c][:40]}"
    elif move == "garble" and filled:
        c = draw(st.sampled_from(filled))
        rows[r][c] = draw(st.sampled_from(GARBLED))
        what = f"cell {r},{c} -> {rows[r][c][:40]!r}"
    elif move == "swap" and len(filled) > 1:
        a, b = draw(st.sampled_from(filled)), draw(st.sampled_from(filled))
        rows[r][a], rows[r][b] = rows[r][b], rows[r][a]
        what = f"row {r}: cells {a} and {b} swapped"
    elif move == "drop row":
        rows.pop(r)
        what = f"row {r} dropped"
    elif move == "add row":
        rows.insert(r, list(draw(st.sampled_from([[], ["0F0"], rows[r], ["9F9", "9B9"]]))))
        what = f"row added at {r}"
    else:
        rows, moves = draw(mutated(rows))
        what = f"tree {moves}"
    return name, _text(rows), f"{name}: {what}"


@examples(ci=60)
@given(_csv_case())
def test_csv_plans_are_read_or_refused(case) -> None:
    _, text, what = case
    attempt("parse_plan", parse_plan, text, describe=what)


@examples(ci=40)
@given(_csv_case())
def test_csv_imports_are_read_or_refused(case) -> None:
    name, text, what = case
    problem = _written("dualpipev" if name == "pytorch dualpipev" else name)[0]
    attempt("read_torch_csv", read_torch_csv, problem, text, describe=what)


@examples(ci=15)
@given(_csv_case())
def test_run_check_only_answers_or_refuses_in_one_line(case) -> None:
    _, text, what = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schedule.csv"
        path.write_text(text)
        attempt_cli("cli:run --check-only", ["run", str(path), "--check-only"], describe=what)


def test_the_unmutated_csvs_are_read() -> None:
    for name in FAMILIES:
        problem, text = _written(name)
        assert parse_plan(text).num_microbatches == 4
        assert read_torch_csv(problem, text).tasks


# --------------------------------------------------------------------------- the cases that once broke a reader

@pytest.mark.parametrize("cell", ["1000000F0", "1000000000F0", "0F1000000", "0F1000000000", "999999999999999999F0"])
def test_a_big_number_in_a_cell_is_refused_at_once_in_a_short_message(cell) -> None:
    text = f"0F0,0B0,{cell}\n1F0,1B0\n"
    outcome, error = attempt("_examples", parse_plan, text, cpu_limit_s=5)
    assert outcome == "refused" and isinstance(error, PlanError) and len(str(error)) < 400
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schedule.csv"
        path.write_text(text)
        status, _, err = attempt_cli("_examples", ["run", str(path), "--check-only"], cpu_limit_s=5)
    assert status and len(err) < 400


def test_a_missing_stage_list_names_the_first_few_and_a_count() -> None:
    with pytest.raises(PlanError, match=r"plan: stages 2, 3, 4, 5, 6 and 999993 more appear in no rank's row"):
        parse_plan("0F0,0B0,1000000F0\n1F0,1B0\n")


@pytest.mark.parametrize("source", ["0F0," * 3000, Path("/nonexistent/schedule.csv"), "0F0,0B0"])
def test_the_csv_import_names_a_source_it_cannot_use(source) -> None:
    assert attempt("read_torch_csv", read_torch_csv, _written("1f1b")[0], source)[0] == "refused"
