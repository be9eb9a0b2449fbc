"""Bad pipeline descriptions and plan() arguments: a one-line named error before any search, never a traceback.

Each case changes one thing of a valid description and goes through the
Python API (``Pipeline.from_dict`` then ``plan``) and through the command
line (``schedsearch plan file.json``, a few as TOML text). The executor
and the local engine fail the test if a search starts.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

import schedsearch
from schedsearch.cli import main
from schedsearch.errors import InvalidOptionsError, InvalidPipelineError, NoFittingPlanError, SchedSearchError
from schedsearch.plan.pipeline import Pipeline
from schedsearch.plan import planner as planner_module, table as table_module

STAGE = {"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB", "parameter_bytes": "1 GiB"}
BASE = {"num_ranks": 2, "num_microbatches": 4, "memory_budget_bytes": "8 GiB", "families": ["1f1b"],
        "stages": [STAGE, STAGE]}
BIG = 10**400
NAN = math.nan
INF = math.inf


def top(**changes):
    return lambda doc: doc.update(changes)


def stage(**changes):
    return lambda doc: doc["stages"][0].update(changes)


def drop(field):
    return lambda doc: doc.pop(field)


def stages(value):
    return lambda doc: doc.update(stages=value)


I, N = InvalidPipelineError, NoFittingPlanError
CASES = [
    # (id, change, error, fragment of the message)
    ("ranks 0", top(num_ranks=0), I, "'num_ranks'"),
    ("ranks -1", top(num_ranks=-1), I, "'num_ranks'"),
    ("ranks bool", top(num_ranks=True), I, "'num_ranks'"),
    ("ranks float", top(num_ranks=2.0), I, "'num_ranks'"),
    ("ranks string", top(num_ranks="2"), I, "'num_ranks'"),
    ("ranks huge", top(num_ranks=BIG), I, "'num_ranks'"),
    ("ranks beyond stages", top(num_ranks=3), I, "'num_ranks'"),
    ("ranks null", top(num_ranks=None), I, "'num_ranks'"),
    ("micro-batches 0", top(num_microbatches=0), I, "'num_microbatches'"),
    ("micro-batches 10**9", top(num_microbatches=10**9), I, "'num_microbatches'"),
    ("micro-batches huge", top(num_microbatches=BIG), I, "'num_microbatches'"),
    ("micro-batches bool", top(num_microbatches=True), I, "'num_microbatches'"),
    ("micro-batches float", top(num_microbatches=4.5), I, "'num_microbatches'"),
    ("micro-batches missing", drop("num_microbatches"), I, "missing field"),
    ("unknown field", top(ranks=2), I, "unknown field"),
    ("families 5", top(families=5), I, "'families'"),
    ("families dict", top(families={"1f1b": True}), I, "'families'"),
    ("families empty", top(families=[]), I, "'families'"),
    ("families unknown", top(families=["zb-h2"]), I, "'families'"),
    ("families integer entry", top(families=[1]), I, "'families'"),
    ("families twice", top(families=["1f1b", "1f1b"]), I, "'families'"),
    ("families null", top(families=None), I, "'families'"),
    ("name integer", top(name=5), I, "'name'"),
    ("name list", top(name=["x"]), I, "'name'"),
    ("stage name integer", stage(name=7), I, "'name'"),
    ("stages empty", stages([]), I, "'stages'"),
    ("stages table", stages({}), I, "'stages'"),
    ("stages string", stages("abc"), I, "'stages'"),
    ("stage not a table", stages([5, STAGE]), I, "stage 0"),
    ("stage missing forward", lambda d: d["stages"][0].pop("forward_ms"), I, "missing field"),
    ("stage unknown field", stage(colour=1), I, "unknown field"),
    ("forward negative", stage(forward_ms=-1.0), I, "'forward_ms'"),
    ("forward string", stage(forward_ms="1"), I, "'forward_ms'"),
    ("forward bool", stage(forward_ms=True), I, "'forward_ms'"),
    ("forward NaN", stage(forward_ms=NAN), I, "'forward_ms'"),
    ("forward inf", stage(forward_ms=INF), I, "'forward_ms'"),
    ("forward huge integer", stage(forward_ms=BIG), I, "'forward_ms'"),
    ("forward zero", stage(forward_ms=0.0), I, "'forward_ms'"),
    ("backward beyond 1e12 ms", stage(backward_ms=1e13), I, "'backward_ms'"),
    ("input gradient alone", stage(input_grad_ms=1.0), I, "'weight_grad_ms'"),
    ("weight gradient negative", stage(input_grad_ms=1.0, weight_grad_ms=-0.5), I, "'weight_grad_ms'"),
    ("activation negative", stage(activation_bytes=-1), I, "'activation_bytes'"),
    ("activation unknown unit", stage(activation_bytes="1 XB"), I, "'activation_bytes'"),
    ("activation huge integer", stage(activation_bytes=BIG), I, "'activation_bytes'"),
    ("activation 1e400 GiB", stage(activation_bytes="1e400 GiB"), I, "'activation_bytes'"),
    ("activation bool", stage(activation_bytes=True), I, "'activation_bytes'"),
    ("activation NaN", stage(activation_bytes=NAN), I, "'activation_bytes'"),
    ("activation list", stage(activation_bytes=[1]), I, "'activation_bytes'"),
    ("send negative", stage(send_bytes=-1), I, "'send_bytes'"),
    ("send unknown unit", stage(send_bytes="2 parsecs"), I, "'send_bytes'"),
    ("send huge integer", stage(send_bytes=BIG), I, "'send_bytes'"),
    ("send bool", stage(send_bytes=False), I, "'send_bytes'"),
    ("send NaN", stage(send_bytes=NAN), I, "'send_bytes'"),
    ("send table", stage(send_bytes={"GiB": 1}), I, "'send_bytes'"),
    ("send beyond 2**40 time units", lambda d: d.update(p2p={"bandwidth_bytes_per_s": 1},
                                                        stages=[{**STAGE, "send_bytes": "512 TiB"}] * 2), I, "2**40"),
    ("parameters over the budget", stage(parameter_bytes="9 GiB"), I, "'parameter_bytes'"),
    ("budget text", top(memory_budget_bytes="lots"), I, "'memory_budget_bytes'"),
    ("budget negative", top(memory_budget_bytes=-5), I, "'memory_budget_bytes'"),
    ("budget huge integer", top(memory_budget_bytes=BIG), I, "'memory_budget_bytes'"),
    ("budget below one micro-batch", top(memory_budget_bytes="1.5 GiB"), N, "> budget 1.5 GiB"),
    ("parameter total over the budget", lambda d: d.update(
        num_ranks=1, families=["interleaved"], stages=[{**STAGE, "parameter_bytes": "5 GiB"}] * 2), N, "budget"),
    ("p2p number", top(p2p=5), I, "'p2p'"),
    ("p2p unknown field", top(p2p={"speed": 1}), I, "unknown field"),
    ("p2p latency negative", top(p2p={"latency_ms": -1}), I, "'latency_ms'"),
    ("p2p bandwidth 0", top(p2p={"bandwidth_bytes_per_s": 0}), I, "'bandwidth_bytes_per_s'"),
    ("p2p bandwidth text", top(p2p={"bandwidth_bytes_per_s": "fast"}), I, "'bandwidth_bytes_per_s'"),
    ("p2p time and latency", top(p2p={"time_ms": 1, "latency_ms": 1}), I, "'time_ms'"),
    ("p2p time huge", top(p2p={"time_ms": BIG}), I, "'time_ms'"),
    ("partition unknown", top(partition="auto"), I, "'partition'"),
    ("partition integer", top(partition=1), I, "'partition'"),
    ("partition list", top(partition=["dp"]), I, "'partition'"),
    ("overlap 0", top(fb_overlap_ms=0), I, "'fb_overlap_ms'"),
    ("overlap negative", top(fb_overlap_ms=-1), I, "'fb_overlap_ms'"),
    ("overlap string", top(fb_overlap_ms="1"), I, "'fb_overlap_ms'"),
    ("tolerance 0", top(time_tolerance=0), I, "'time_tolerance'"),
    ("tolerance 1e-12", top(time_tolerance=1e-12), I, "'time_tolerance'"),
    ("tolerance 0.5", top(time_tolerance=0.5), I, "'time_tolerance'"),
    ("tolerance NaN", top(time_tolerance=NAN), I, "'time_tolerance'"),
    ("tolerance bool", top(time_tolerance=True), I, "'time_tolerance'"),
    ("tolerance huge", top(time_tolerance=BIG), I, "'time_tolerance'"),
    ("sizes text", top(microbatch_sizes="8,8,7,7"), I, "'microbatch_sizes'"),
    ("sizes count", top(microbatch_sizes=[8, 8, 8]), I, "'microbatch_sizes'"),
    ("sizes zero", top(microbatch_sizes=[8, 8, 0, 7]), I, "'microbatch_sizes'"),
    ("sizes bool", top(microbatch_sizes=[8, 8, True, 7]), I, "'microbatch_sizes'"),
    ("sizes huge", top(microbatch_sizes=[8, 8, BIG, 7]), I, "'microbatch_sizes'"),
    ("sizes ratio beyond 1e6", top(microbatch_sizes=[1e9, 1, 1, 1]), I, "'microbatch_sizes'"),
    ("time ratio beyond 2**40", lambda d: d.update(stages=[{**STAGE, "forward_ms": 1e-6, "backward_ms": 1e9}] * 2),
     I, "2**40"),
    ("every time zero", lambda d: d.update(partition="dp", stages=[{"forward_ms": 0, "backward_ms": 0}] * 2), I,
     "every stage time is 0"),
    ("memory ratio beyond 2**40", lambda d: d.update(memory_budget_bytes=2**59,
                                                     stages=[{**STAGE, "activation_bytes": 1}] * 2), I, "2**40"),
    ("odd ranks for DualPipe", lambda d: d.update(families=["dualpipe"], num_microbatches=3,
                                                  stages=[{**STAGE, "input_grad_ms": 1.0, "weight_grad_ms": 1.0}] * 2),
     N, "even number"),
    ("no family applies", lambda d: d.update(stages=[STAGE] * 3), N, "no family applies"),
]


def document(change):
    doc = copy.deepcopy(BASE)
    change(doc)
    return doc


class NoSearch:
    """An executor that fails the test when a search starts."""

    name = "none"
    workers = 1

    def run(self, fn, tasks, timeout_s=None):
        raise AssertionError(f"a search started on a bad input ({len(tasks)} tasks)")


def test_the_table_holds_60_cases_or_more():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_api_refuses_with_a_named_error_before_any_search(case):
    _, change, error, fragment = case
    with pytest.raises(SchedSearchError) as info:
        schedsearch.plan(Pipeline.from_dict(document(change)), time_limit_s=1, executor=NoSearch())
    assert type(info.value) is error, (type(info.value).__name__, str(info.value))
    text = str(info.value)
    assert fragment in text, text
    _assert_bounded(text, per_family=error is NoFittingPlanError)


def _assert_bounded(text, per_family):
    """One line; or, when no family fits, a headline and one line per family (with its reason), bounded."""
    lines = text.splitlines()
    if not per_family:
        assert len(lines) == 1 and len(text) < 2000, text
        return
    assert lines[0].endswith(":") and len(lines) >= 2, text
    command = "schedsearch plan: error: "  # the command line's prefix of the message
    message = text[len(command):] if text.startswith(command) else text
    assert len(lines) <= table_module.MAX_ERROR_FAMILIES + 2 and len(message) <= table_module.MAX_ERROR_CHARS, text
    for line in lines[1:]:
        if line.startswith("  ... and "):  # the count of the reasons not shown
            assert line is lines[-1], text
            continue
        assert line.startswith("  ") and ": " in line and len(line) <= table_module.MAX_ERROR_LINE, line


@pytest.fixture
def no_local_search(monkeypatch):
    from schedsearch import executors as sweep

    monkeypatch.setattr(sweep.LocalExecutor, "run", NoSearch.run)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_command_line_refuses_with_one_line(case, tmp_path, capsys, no_local_search):
    _, change, error, fragment = case
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps(document(change)))  # NaN and Infinity as Python's json reads them
    assert main(["plan", str(path), "--out", "", "--time-limit", "1"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("schedsearch plan: error: ") and err.endswith("\n") and fragment in err, err
    _assert_bounded(err[:-1], per_family=error is NoFittingPlanError)
    assert "Traceback" not in out + err


TOML = [
    ("integer beyond 64 bits", "num_ranks = 2\nnum_microbatches = 99999999999999999999999\n", "'num_microbatches'"),
    ("infinite time", "num_ranks = 1\nnum_microbatches = 2\n[[stages]]\nforward_ms = inf\nbackward_ms = 1.0\n",
     "'forward_ms'"),
    ("not TOML", "num_ranks = = 2\n", "not valid toml"),
    ("families a table", "num_ranks = 1\nnum_microbatches = 2\n[families]\nx = 1\n[[stages]]\nforward_ms = 1.0\n"
     "backward_ms = 1.0\n", "'families'"),
]


@pytest.mark.parametrize("case", TOML, ids=[c[0] for c in TOML])
def test_toml_text_is_refused_with_one_line(case, tmp_path, capsys, no_local_search):
    _, text, fragment = case
    path = tmp_path / "pipeline.toml"
    path.write_text(text + ("" if "stages" in text else "[[stages]]\nforward_ms = 1.0\nbackward_ms = 1.0\n"))
    assert main(["plan", str(path), "--out", "", "--time-limit", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment.lower() in err.lower(), err


@pytest.mark.parametrize("name, data, fragment", [
    ("binary.json", b"\xff\xfe\x00{", "the file is UTF-16 text"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("list.json", b"[1, 2]", "must be a table of fields"),
    ("bad.json", b"{num_ranks: 2}", "not valid json"),
])
def test_unreadable_files_are_refused_with_one_line(name, data, fragment, tmp_path, capsys, no_local_search):
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["plan", str(path), "--out", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


GOOD = Pipeline.from_dict(BASE)
ARGUMENTS = [
    ("time limit 0", {"time_limit_s": 0}, "'time_limit_s'"),
    ("time limit NaN", {"time_limit_s": math.nan}, "'time_limit_s'"),
    ("time limit bool", {"time_limit_s": True}, "'time_limit_s'"),
    ("time limit text", {"time_limit_s": "5"}, "'time_limit_s'"),
    ("parallel 0", {"parallel": 0}, "'parallel'"),
    ("parallel bool", {"parallel": True}, "'parallel'"),
    ("seed negative", {"seed": -1}, "'seed'"),
    ("seed beyond int32", {"seed": 2**40}, "'seed'"),
    ("deterministic text", {"deterministic": "yes"}, "'deterministic'"),
    ("address number", {"address": 5}, "'address'"),
]


@pytest.mark.parametrize("case", ARGUMENTS, ids=[c[0] for c in ARGUMENTS])
def test_plan_arguments_are_checked_first(case):
    _, kwargs, fragment = case
    with pytest.raises(InvalidOptionsError, match=fragment):
        schedsearch.plan(GOOD, executor=NoSearch(), **kwargs)
    with pytest.raises(InvalidOptionsError, match=fragment):
        planner_module.plan_sweep(GOOD, executor=NoSearch(), **kwargs)


@pytest.mark.parametrize("old, new, value", [("workers", "parallel", 0), ("engine", "executor", "dask")])
def test_the_old_keywords_still_work_with_a_warning(old, new, value):
    # the deprecated name is read as the new one: its bad value is refused under the new name
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated: use '{new}'"):
        with pytest.raises(InvalidOptionsError, match=f"'{new}'"):
            schedsearch.plan(GOOD, time_limit_s=1, **{old: value})


def test_a_path_is_not_a_pipeline():
    with pytest.raises(InvalidPipelineError, match="'pipeline' must be a Pipeline"):
        schedsearch.plan("pipeline.toml", executor=NoSearch())
