"""plan(): what a candidate's share of the time covers (the published schedule is drawn only when it fits)."""

from __future__ import annotations

import pytest

import schedsearch
import schedsearch.search.portfolio as portfolio
from schedsearch import Pipeline, validate
from schedsearch.errors import NoFittingPlanError
from schedsearch.result import SearchResult, Status


def _uniform(num_microbatches: int = 4) -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    return Pipeline(num_ranks=2, num_microbatches=num_microbatches, memory_budget_bytes="6 GiB", families=["1f1b"],
                    stages=[stage] * 2)


def test_a_published_schedule_the_share_cannot_cover_is_not_drawn_and_the_row_says_so(monkeypatch):
    monkeypatch.setattr(portfolio, "HANDCRAFTED_S_PER_TASK", 1e3)  # far beyond any share, on any machine
    # a limit long enough for both searches (each proves its plan at once) on a loaded machine: a candidate
    # whose turn comes after the limit is not searched
    result = schedsearch.plan(_uniform(), time_limit_s=30, parallel=1)

    for row in result.rows:
        assert row.handcrafted is not None and row.handcrafted_ms is None
        assert f"the published {row.handcrafted} was not drawn" in row.note
        assert row.makespan_ms is not None  # the search still has its plan
    assert not validate(result.problem, result.schedule)


def test_a_deterministic_plan_always_draws_the_published_schedule(monkeypatch):
    monkeypatch.setattr(portfolio, "HANDCRAFTED_S_PER_TASK", 1e3)  # the clock must not decide what runs
    result = schedsearch.plan(_uniform(), time_limit_s=4, parallel=1, deterministic=True)
    rows = {r.family: r for r in result.rows}
    assert rows["1F1B"].handcrafted_ms == 15.0 and rows["ZB-H1"].handcrafted_ms == 13.0
    assert all("was not drawn" not in r.note for r in result.rows)


def test_when_no_candidate_finds_a_plan_in_time_the_error_names_the_time_limit(monkeypatch):
    monkeypatch.setattr(portfolio, "HANDCRAFTED_S_PER_TASK", 1e3)  # no published schedule drawn
    # every search runs out of time without a plan (as at 40,000 micro-batches with a few seconds)
    monkeypatch.setattr(portfolio, "solve", lambda problem, **kw: SearchResult(status=Status.TIMEOUT, problem=problem))
    with pytest.raises(NoFittingPlanError, match=r"no candidate found a plan within time_limit_s=4 .*a longer limit"):
        schedsearch.plan(_uniform(), time_limit_s=4, parallel=1)


def _two_families() -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    # ZB-V needs 4 stages: its rows are skipped, the 1F1B and ZB-H1 rows run
    return Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b", "zb-v"],
                    stages=[stage] * 2)


def test_the_time_limit_error_also_when_other_candidates_were_skipped_for_their_shape(monkeypatch):
    monkeypatch.setattr(portfolio, "HANDCRAFTED_S_PER_TASK", 1e3)  # no published schedule drawn
    monkeypatch.setattr(portfolio, "solve", lambda problem, **kw: SearchResult(status=Status.TIMEOUT, problem=problem))
    with pytest.raises(NoFittingPlanError) as caught:
        schedsearch.plan(_two_families(), time_limit_s=4, parallel=1)
    message = str(caught.value)
    assert "skipped" in message and "TIMEOUT" in message  # the situation: skipped rows beside timed-out ones
    assert "time_limit_s=4" in message
    assert "within the budget" not in message
