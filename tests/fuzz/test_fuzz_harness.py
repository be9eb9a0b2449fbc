"""The campaign's own rule and mutator (tests/fuzzing.py) do what they say."""

from __future__ import annotations

import math
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import MESSAGE_LIMIT, attempt, attempt_cli, examples, mutated, tally, to_toml
from schedsearch.errors import InvalidProblemError

SAMPLE = {"name": "x", "n": 3, "ratio": 0.5, "flags": [1, 2], "p2p": {"time_ms": 0.05},
          "stages": [{"name": "a", "forward_ms": 1.0}, {"name": "b", "forward_ms": 2.0}]}
SAMPLE_TEXT = to_toml(SAMPLE)


@examples(ci=30)
@given(mutated(SAMPLE))
def test_a_mutated_tree_round_trips_through_toml(case) -> None:
    tree, moves = case
    assert moves
    text = to_toml(tree)
    parsed = tomllib.loads(text)
    def same(a, b):
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        if isinstance(a, dict):
            kept = {k: v for k, v in a.items() if v is not None}
            return isinstance(b, dict) and set(kept) <= set(b) and all(same(v, b[k]) for k, v in kept.items())
        if isinstance(a, list) and any(isinstance(x, dict) for x in a):
            return isinstance(b, list) and [same(x, y) for x, y in zip([x for x in a if isinstance(x, dict)], b)]
        return a == b
    assert all(same(v, parsed[k]) for k, v in tree.items() if v is not None and k in parsed)


@examples(ci=10)
@given(mutated(SAMPLE))
def test_the_mutator_leaves_the_original_alone(case) -> None:
    assert to_toml(SAMPLE) == SAMPLE_TEXT


def test_attempt_counts_answers_and_refusals_and_fails_on_foreign_errors() -> None:
    def refuse():
        raise InvalidProblemError("stage 'x' field 'forward_ms': -1 is negative")

    assert attempt("_harness", lambda: 5) == ("answered", 5)
    assert attempt("_harness", refuse)[0] == "refused"
    with pytest.raises(AssertionError, match="KeyError"):
        attempt("_harness", lambda: {}["missing"])
    with pytest.raises(AssertionError, match="character message"):
        attempt("_harness", lambda: (_ for _ in ()).throw(InvalidProblemError("x" * (MESSAGE_LIMIT + 1))))
    record = tally("_harness")
    assert (record.generated, record.answered, record.refused["InvalidProblemError"], record.tracebacks) == (4, 1, 2, 1)


def test_attempt_stops_a_call_that_runs_past_its_cpu_time() -> None:
    def spin():
        while True:
            pass

    with pytest.raises(AssertionError, match="no answer within"):
        attempt("_harness-hang", spin, cpu_limit_s=0.2)
    assert tally("_harness-hang").hangs == 1


def test_attempt_cli_refuses_with_one_message(tmp_path) -> None:
    status, _, err = attempt_cli("_harness-cli", ["plan", str(tmp_path / "missing.toml")])
    assert status != 0 and err.strip() and "Traceback" not in err
