"""Review: when every candidate that runs times out without a plan, plan()'s error names the time limit.

The error says so only when *every* row is a TIMEOUT; a candidate skipped for its shape (a family needing more
stages than the description gives, the usual case with several families) brings back the old message, "no
candidate has a plan within the budget", which reads as the memory budget.
"""

from __future__ import annotations

import pytest

import schedsearch
import schedsearch.search.portfolio as portfolio
from schedsearch import Pipeline
from schedsearch.errors import NoFittingPlanError
from schedsearch.result import SearchResult, Status


def _pipeline() -> Pipeline:
    stage = {"forward_ms": 1.0, "backward_ms": 2.0, "input_grad_ms": 1.0, "weight_grad_ms": 1.0,
             "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
    # ZB-V needs 4 stages: its rows are skipped, the 1F1B and ZB-H1 rows run
    return Pipeline(num_ranks=2, num_microbatches=4, memory_budget_bytes="6 GiB", families=["1f1b", "zb-v"],
                    stages=[stage] * 2)


def test_the_error_names_the_time_limit_when_other_candidates_were_skipped(monkeypatch):
    monkeypatch.setattr(portfolio, "HANDCRAFTED_S_PER_TASK", 1e3)  # no published schedule drawn
    monkeypatch.setattr(portfolio, "solve", lambda problem, **kw: SearchResult(status=Status.TIMEOUT, problem=problem))
    with pytest.raises(NoFittingPlanError) as caught:
        schedsearch.plan(_pipeline(), time_limit_s=4, workers=1)
    message = str(caught.value)
    assert "skipped" in message and "TIMEOUT" in message  # the situation: skipped rows beside timed-out ones
    assert "time_limit_s=4" in message
    assert "within the budget" not in message
