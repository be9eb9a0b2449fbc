"""What the planner tells a user: each message names the cause and the fix, and rows carry typed outcomes."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

import schedsearch
from schedsearch import Pipeline
from schedsearch.cli import main
from schedsearch.errors import InvalidProblemError, NoFittingPlanError
from schedsearch.plan import evaluation as evaluation_module, planner as planner_module, table as table_module
from schedsearch.plan.outcome import Reason
from schedsearch.result import Status
from schedsearch.search import portfolio as portfolio_module

SAMPLE = Path(__file__).resolve().parents[1] / "models" / "pipeline.toml"
GIB = 2**30


def _sample(**changes) -> Pipeline:
    return attrs.evolve(Pipeline.load(SAMPLE), **changes)


def test_optimal_only_when_every_level_is_proven():
    # deterministic: the same rows on every machine. On the sample, V 1F1B and interleaved 1F1B v=2 meet their
    # makespan bound without a proof of their peak memory: FEASIBLE, and the note under them says which proof is open
    result = schedsearch.plan(_sample(), time_limit_s=5, parallel=1, deterministic=True)
    table = result.table().splitlines()
    open_peak = [r for r in result.rows if r.makespan_proven and not r.peak_proven]
    assert open_peak, result.table()
    for row in result.rows:
        assert (row.status is Status.OPTIMAL) == (row.makespan_proven and row.peak_proven), row
    for row in open_peak:
        assert row.status is Status.FEASIBLE
        at = next(i for i, line in enumerate(table) if line[4:].startswith(row.family + " "))
        assert "FEASIBLE" in table[at] and "OPTIMAL" not in table[at]
        assert table[at + 1].strip() == table_module.PEAK_NOT_PROVEN
    for i, line in enumerate(table[:-1]):  # no OPTIMAL row has a proof left open under it
        if " OPTIMAL " in line:
            assert "not proven" not in table[i + 1], (line, table[i + 1])


def test_rows_carry_a_typed_reason_and_the_table_its_mark():
    result = schedsearch.plan(_sample(memory_budget_bytes=8 * GIB), time_limit_s=5, parallel=1, deterministic=True)
    reasons = {r.family: r.reason for r in result.rows}
    assert reasons["interleaved 1F1B v=3"] is Reason.SHAPE  # 12 stages of 8 layers
    assert reasons["ZB-V"] is Reason.MEMORY and reasons["DualPipe"] is Reason.MEMORY
    for row in result.rows:
        if row.reason is not None and row.reason.left_out:
            assert row.makespan_ms is None and row.mark == "skipped" and row.status is row.reason.status
        d = row.to_dict()
        assert d["status"] == row.status.value and d["mark"] == row.mark
    assert {r.status for r in result.rows if r.reason is Reason.MEMORY} == {Status.INFEASIBLE}


def test_the_published_schedule_not_drawn_says_what_ran_out(monkeypatch):
    # an estimate of 1000 s per task instance: whatever the machine, the share cannot cover drawing it
    monkeypatch.setattr(portfolio_module, "HANDCRAFTED_S_PER_TASK", 1e3)
    pipeline = _sample(families=("1f1b",), num_microbatches=4)
    result = schedsearch.plan(pipeline, time_limit_s=2, parallel=1)
    notes = [r.note for r in result.rows if "was not drawn" in r.note]
    assert len(notes) == 2, result.table()  # 1F1B and ZB-H1
    for note in notes:
        assert "0.0 s" not in note, note
        assert re.search(r"the candidate's share of the time limit \(\d+(\.\d+)? m?s\) (had [\d.]+ m?s left|was "
                         r"used up)", note), note
        assert re.search(r"take about \d+ s at \d+ task instances \(a longer time_limit_s", note), note


@pytest.mark.parametrize("seconds, words", [
    (0.0, "under 0.01 ms"), (4e-4, "0.4 ms"), (0.0123, "12 ms"), (0.5, "500 ms"), (3.44, "3.4 s"), (120.0, "120 s"),
])
def test_seconds_read_with_two_figures(seconds, words):
    assert evaluation_module._seconds(seconds) == words


def test_the_note_says_when_the_share_was_used_up_before_drawing():
    note = evaluation_module._not_drawn_note("1F1B", 4000, share_s=1.0, spent_s=1.5, need_s=0.02)
    assert note == ("the published 1F1B was not drawn: the candidate's share of the time limit (1 s) was used up "
                    "(1.5 s went to the work before it), and drawing it and proving it against the bound take about "
                    "20 ms at 4000 task instances (a longer time_limit_s, or fewer candidates at once, gives it time)")


def test_a_refused_integer_problem_is_told_without_the_models_text(monkeypatch):
    # a memory budget the planner's own check lets through (as if it were short of the model's): the model's
    # memory proof refuses the problem (DualPipe's two parameter copies, 9.125 GiB on rank 0, are over 9 GiB),
    # and the row says so in the description's terms
    monkeypatch.setattr(planner_module, "_over_budget", lambda pipeline, c, stages, units, amounts: ("", units, 0))
    pipeline = _sample(memory_budget_bytes=9 * GIB, families=("dualpipe", "1f1b"))
    prepared = planner_module._prepare(pipeline, time_limit_s=5, parallel=1, deterministic=True, seed=0)
    rows = {r.family: r for r in prepared.skipped}
    assert rows["DualPipe"].reason is Reason.MEMORY and rows["DualPipe"].status is Status.INFEASIBLE
    note = rows["DualPipe"].note
    assert note.startswith("no DualPipe plan keeps every rank within the budget 9 GiB") and "memory_budget_bytes" in note
    assert "refuses" not in note and "block '" not in note and "'memory'" not in note


def test_any_other_refusal_is_an_error_inside_the_library(monkeypatch):
    real = planner_module.candidate_times

    def refusing(pipeline, candidate, *args, **kwargs):
        if candidate.family == "dualpipe":
            raise InvalidProblemError("placement: an internal text the user must not read")
        return real(pipeline, candidate, *args, **kwargs)

    monkeypatch.setattr(planner_module, "candidate_times", refusing)
    result = schedsearch.plan(_sample(families=("dualpipe", "1f1b")), time_limit_s=5, parallel=1, deterministic=True)
    row = next(r for r in result.rows if r.family == "DualPipe")
    assert row.reason is Reason.MODEL and row.mark == "skipped"
    assert "internal text" not in result.table() and "please report it" in row.note


def test_no_family_fits_gives_the_first_reasons_and_a_count_and_keeps_every_reason(tmp_path, capsys):
    with pytest.raises(NoFittingPlanError) as info:
        schedsearch.plan(_sample(memory_budget_bytes=6 * GIB), time_limit_s=5)
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == ("no schedule family fits (the least any family holds at once on a rank is 7.5625 GiB: a "
                        "memory_budget_bytes of at least that lets its search start):")
    assert len(text) <= table_module.MAX_ERROR_CHARS
    assert all(len(line) <= table_module.MAX_ERROR_LINE for line in lines[1:])
    # every family once in the error's reasons, with its reason
    labels = [c.label for c in planner_module.candidates(_sample())]
    assert sorted(family for family, _ in info.value.reasons) == sorted(labels)
    assert ("interleaved 1F1B v=3", "needs 12 stages, the description gives 8 layers: give the layers per entry "
            "(layers_per_entry, --layers-per-entry) to plan it in layers") in info.value.reasons
    # the message shows the first reasons, then counts the families of the rest
    shown = [f for line in lines[1:-1] for f in line.split(": ")[0].strip().split(", ")]
    assert shown and lines[-1].startswith("  ... and ")
    assert lines[-1].endswith(f"({len(labels) - len(shown)} families)")
    # the command line prints the same message on standard error, every reason on standard output
    path = tmp_path / "pipeline.toml"
    path.write_text(SAMPLE.read_text().replace('memory_budget_bytes = "24 GiB"', 'memory_budget_bytes = "6 GiB"'))
    assert main(["plan", str(path), "--out", "", "--time-limit", "5"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"schedsearch plan: error: {lines[0]}", *lines[1:]]
    assert all(f"  {family}: {why}" in out.splitlines() for family, why in info.value.reasons)


def test_a_long_list_of_reasons_is_bounded():
    entries = [(f"family {k}", f"reason {k}") for k in range(40)]
    text = table_module._per_family("no schedule family fits", entries)
    lines = text.splitlines()
    assert len(lines) == table_module.MAX_ERROR_FAMILIES + 2
    assert lines[-1] == f"  ... and {40 - table_module.MAX_ERROR_FAMILIES} more reasons ({40 - table_module.MAX_ERROR_FAMILIES} families)"
    long = table_module._per_family("head", [("f", "x" * 1000)]).splitlines()[1]
    assert len(long) == table_module.MAX_ERROR_LINE and long.endswith(" ...")
    # long reasons: as many lines as fit in the message's bound, the rest counted
    text = table_module._per_family("h" * 1000, [(f"family {k}", "y" * 1000 + str(k)) for k in range(40)])
    assert len(text) <= table_module.MAX_ERROR_CHARS and text.splitlines()[-1].startswith("  ... and ")


def test_a_gap_from_memory_rounding_is_blamed_on_the_memory_not_the_times():
    # the times are whole milliseconds (exact on a 1 ms unit); the amounts (1 GiB + 1 B activations, a budget near
    # 0.75 TiB) leave the schedule model's range on the 1-byte unit that would divide them all, so they are rounded
    # to a coarser unit: the rounded budget holds one activation per rank where the bytes hold two (1F1B's 15 ms on
    # 2 ranks, 4 micro-batches); the search is optimal for the rounded problem, 9 ms above the real bound
    part = 3 * 2**40 // 4
    pipeline = Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes=part + 3 + 2 * GIB + 2, families=["1f1b"],
                        stages=[{"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
                                 "activation_bytes": GIB + 1, "parameter_bytes": part + 3}] * 2)
    result = schedsearch.plan(pipeline, time_limit_s=20, parallel=1, deterministic=True, runtime="any")
    row = next(r for r in result.rows if r.family == "1F1B")
    assert (row.makespan_ms, row.bound_ms) == (24.0, 15.0)
    assert "memory amounts rounded to" in row.note and "(the times are exact)" in row.note, row.note
    assert "times rounded" not in row.note, row.note
