"""The first-plan benchmark's verdicts: the criterion is a plan at least as short as the heuristic's within
the heuristic's time."""

from __future__ import annotations

import pytest

from benchmarks.bench_first_plan import _compare


@pytest.mark.parametrize("row, expected", [
    # the first plan is late but as short: it does not meet the criterion
    ({"heur_s": 0.010, "heur": 100, "first_s": 0.012, "first": 100, "match_s": 0.012}, (True, False, False)),
    # a longer first plan in time, then one as short in time: the criterion is met
    ({"heur_s": 0.010, "heur": 100, "first_s": 0.002, "first": 120, "match_s": 0.009}, (False, True, True)),
    # a matching plan after the heuristic's time
    ({"heur_s": 0.010, "heur": 100, "first_s": 0.002, "first": 120, "match_s": 0.011}, (False, True, False)),
    # never as short
    ({"heur_s": 0.010, "heur": 100, "first_s": 0.002, "first": 120, "match_s": None}, (False, True, False)),
    # the heuristic gave nothing to compare with
    ({"heur_error": "no checkout", "first_s": 0.002, "first": 120, "match_s": None}, (None, None, None)),
])
def test_the_three_verdicts_of_a_row(row, expected):
    out = _compare(dict(row))
    assert (out["first<=heur"], out["first_s<=heur_s"], out["match_s<=heur_s"]) == expected
