"""The fuzzing campaign of the descriptions (``tests/fuzzing.py`` holds the rule).

Structured mutations of the samples in ``models/`` (a pipeline description, a model in layers) go
through the real readers (TOML files, and the Python form: ``from_dict`` and the keyword
constructor), and those read are planned (``plan``, the ``plan`` and ``sweep`` commands) with a
small wall-clock limit, one candidate at a time in this process: the rule holds whatever the
machine's speed (a slower machine finds fewer plans, and the CPU time of a call stays within its
wall time). Deterministic mode would not bound these calls: it charges the solver's work to the
limit, not the constructions, and a description pushed to thousands of micro-batches spends
minutes there. Every input must be answered or refused by the library's own error, within the
CPU-time and message bounds, and the command line never prints a traceback.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import schedsearch
from fuzzing import attempt, attempt_cli, attempt_file, each_number_pushed, examples, mutated, to_toml, written
from schedsearch.plan import Pipeline
from schedsearch.plan.layers import LayerModel

MODELS = Path(__file__).resolve().parents[2] / "models"
PIPELINE = tomllib.loads((MODELS / "pipeline.toml").read_text())
LAYERS = tomllib.loads((MODELS / "llama3_8b_layers.toml").read_text())

#: The fields of the keyword constructor, and those it requires.
FIELDS = {f.name for f in attrs.fields(Pipeline)}
REQUIRED = {"num_ranks", "num_microbatches", "stages"}

#: A search's limits in the campaign: a small wall-clock limit, one candidate at a time in this process.
PLAN = {"time_limit_s": 0.5, "parallel": 1}
#: The same on the command line.
PLAN_ARGS = ["--out", "", "--time-limit", "0.5", "--parallel", "1"]


def _progress(line: str) -> bool:
    """A line of the planner's progress log (``[3/9] ZB-V: ...``, one per candidate), not of its message."""
    return re.match(r"\[\d+/\d+\] ", line) is not None


def _read_pipeline(tree: dict, what: object) -> tuple[str, object]:
    return attempt_file("Pipeline.load (TOML)", Pipeline.load, "description.toml", to_toml(tree), describe=what)


def _read_model(tree: dict, what: object) -> tuple[str, object]:
    return attempt_file("LayerModel.load (TOML)", LayerModel.load, "description.toml", to_toml(tree), describe=what)


@examples(ci=40)
@given(mutated(PIPELINE))
def test_a_mutated_pipeline_file_is_read_or_refused(case) -> None:
    tree, moves = case
    _read_pipeline(tree, moves)


@examples(ci=40)
@given(mutated(PIPELINE), st.booleans())
def test_a_mutated_pipeline_in_python_is_built_or_refused(case, keywords) -> None:
    tree, moves = case
    if keywords and REQUIRED <= set(tree) <= FIELDS:
        # the keyword constructor takes what from_dict takes (a call that leaves out or misspells an argument is
        # Python's TypeError, as for any function: from_dict is the door of a document's fields)
        attempt("Pipeline (Python)", lambda: Pipeline(**tree), describe=moves)
    else:
        attempt("Pipeline.from_dict", Pipeline.from_dict, tree, describe=moves)


@examples(ci=8)
@given(mutated(PIPELINE, most=1))
def test_a_mutated_pipeline_file_is_planned_or_refused(case) -> None:
    tree, moves = case
    outcome, pipeline = _read_pipeline(tree, moves)
    if outcome == "answered":
        attempt("plan (pipeline)", schedsearch.plan, pipeline, runtime="any", describe=moves, **PLAN)


@examples(ci=30)
@given(mutated(LAYERS))
def test_a_mutated_layer_model_file_is_read_or_refused(case) -> None:
    tree, moves = case
    _read_model(tree, moves)


@examples(ci=30)
@given(mutated(LAYERS))
def test_a_mutated_layer_model_in_python_is_built_or_refused(case) -> None:
    tree, moves = case
    attempt("LayerModel.from_dict", LayerModel.from_dict, tree, describe=moves)


@examples(ci=3)
@given(mutated(LAYERS, most=1))
def test_a_mutated_layer_model_file_is_planned_or_refused(case) -> None:
    tree, moves = case
    outcome, model = _read_model(tree, moves)
    if outcome == "answered":
        attempt("plan (layer model)", schedsearch.plan, model, describe=moves, **PLAN)


@examples(ci=4)
@given(mutated(PIPELINE, most=1))
def test_the_plan_command_answers_or_refuses_in_one_message(case) -> None:
    tree, moves = case
    with written({"description.toml": to_toml(tree)}) as folder:
        attempt_cli("cli plan", ["plan", str(folder / "description.toml"), *PLAN_ARGS], describe=moves, log=_progress)


@examples(ci=3)
@given(mutated(PIPELINE, most=1), st.sampled_from([["--microbatches", "4,8"], ["--budgets", "1 GiB;24 GiB"],
                                           ["--families", "1f1b", "--families", "zb-v,dualpipev"],
                                           ["--microbatches", "0,-1"], ["--budgets", "lots"]]))
def test_the_sweep_command_answers_or_refuses_in_one_message(case, grid) -> None:
    tree, moves = case
    with written({"description.toml": to_toml(tree)}) as folder:
        argv = ["sweep", str(folder / "description.toml"), *grid, "--time-limit", "0.5", "--parallel", "1",
                "--combined"]
        # exit 1 is an answer: the table printed, no grid point has a plan (each row says why)
        attempt_cli("cli sweep", argv, describe=(moves, grid), answers=(0, 1), log=_progress)


@pytest.mark.parametrize("case", each_number_pushed(PIPELINE), ids=lambda case: case[1])
def test_each_number_of_the_pipeline_pushed_to_an_extreme_is_planned_or_refused(case) -> None:
    tree, what = case
    outcome, pipeline = _read_pipeline(tree, what)
    if outcome == "answered":
        attempt("plan (pipeline)", schedsearch.plan, pipeline, runtime="any", describe=what, **PLAN)


@pytest.mark.parametrize("case", each_number_pushed(LAYERS), ids=lambda case: case[1])
def test_each_number_of_the_layer_model_pushed_to_an_extreme_is_read_or_refused(case) -> None:
    tree, what = case
    _read_model(tree, what)
