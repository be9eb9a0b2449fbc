"""examples/test_my_scheduler.py: the property passes without the planted bug, and
with it hypothesis fails and shrinks the counterexample to a minimal pipeline."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from schedsearch.testing import CheckFailed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "test_my_scheduler.py"


def load():
    spec = importlib.util.spec_from_file_location("example_test_my_scheduler", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_property_holds_without_the_bug():
    assert load().run_property(buggy=False) is None


def test_the_planted_bug_is_found_and_shrunk_to_a_minimal_pipeline():
    example = load()
    found = example.run_property(buggy=True)
    assert found is not None
    problem, error = found
    # one stage (F0, B0) on one device, two micro-batches, capacity one activation:
    # the buggy warm-up runs both forwards first and holds two
    assert example.size(problem) == (2, 2, 1)
    assert [d.memory for d in problem.cluster.devices] == [1]
    assert isinstance(error, CheckFailed) and [v.kind for v in error.violations] == ["memory"]
    assert example.BUGGY is load().BUGGY  # restored


def test_the_scheduler_declines_what_it_cannot_fit():
    from schedsearch.placements import vshape

    example = load()
    # stage 0 of 3 needs 3 activations in 1F1B
    assert example.one_f_one_b(vshape(3, 4, memory=2)) is None
    plan = example.one_f_one_b(vshape(3, 4, memory=3))
    assert plan is not None and plan.makespan == (4 + 3 - 1) * 3
