"""Names of earlier releases still work, with a DeprecationWarning, and give today's objects."""

from __future__ import annotations

import pytest

from schedsearch.actions import Action


def test_act_and_pair_give_actions_with_a_warning() -> None:
    from schedsearch import handcrafted

    with pytest.warns(DeprecationWarning, match="Action"):
        forward = handcrafted.Act("F", 2, 5)
    with pytest.warns(DeprecationWarning, match="Action"):
        backward = handcrafted.Act("B", 0, 1, ".up")
    assert forward == Action(2, "F", 5) and str(forward) == "2F5"
    assert backward == Action(0, "B", 1, pipe=".up") and str(backward) == "0B1.up"
    with pytest.warns(DeprecationWarning, match="overlap"):
        pair = handcrafted.Pair(forward, backward)
    assert pair == Action.overlap(forward, backward)
    with pytest.raises(AttributeError, match="NoSuchName"):
        handcrafted.NoSuchName  # noqa: B018


def test_act_runs_a_handcrafted_schedule_as_before() -> None:
    from schedsearch.handcrafted import pipeline_view, run_actions
    from schedsearch.placements import chain_pipelines

    problem = chain_pipelines([[0, 1]], 2, 2)
    view = pipeline_view(problem)
    from schedsearch.handcrafted.actions import Act  # noqa: F401  (the old import path)
    with pytest.warns(DeprecationWarning):
        orders = {0: [Act("F", 0, 0), Act("F", 0, 1), Act("B", 0, 0), Act("B", 0, 1)],
                  1: [Act("F", 1, 0), Act("B", 1, 0), Act("F", 1, 1), Act("B", 1, 1)]}
    new = {0: [Action(0, "F", 0), Action(0, "F", 1), Action(0, "B", 0), Action(0, "B", 1)],
           1: [Action(1, "F", 0), Action(1, "B", 0), Action(1, "F", 1), Action(1, "B", 1)]}
    assert run_actions(view, orders, name="old").tasks == run_actions(view, new, name="old").tasks
