"""Fuzzing campaign: plan documents (``plan.json``), search results and their problem and schedule
documents, and calibration files: the readers and the commands that read them (``run --check-only``,
``export``, ``report``, ``validate``).

The valid inputs are what the library writes: a plan of a small pipeline (``schedsearch.plan``,
written as ``plan.json`` with its metadata), a search's ``NAME.result.json``, ``NAME.problem.json`` and
``NAME.schedule.json`` (``schedsearch search --format json``), and a calibration (``Calibration.save``,
TOML and JSON). Each is mutated through the shared tree mutator (numbers pushed to extremes, fields
dropped, wrong types, NaN and infinity, duplicated and reordered records) and read: every mutation is
answered or refused by the library's own error, within the campaign's bounds (``tests/fuzzing.py``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import attempt, attempt_cli, attempt_file, each_number_pushed, examples, mutated, to_toml, written
from schedsearch import Pipeline
from schedsearch import plan as plan_pipeline
from schedsearch.cli._inputs import identify, plan_of
from schedsearch.export import read_json, write_json
from schedsearch.plan.calibration import Calibration


@functools.cache
def _plan_document() -> dict:
    pipeline = Pipeline.from_dict({
        "name": "tiny", "num_ranks": 2, "num_microbatches": 4, "families": ["1f1b"], "p2p": {"time_ms": 0.05},
        "stages": [{"forward_ms": 1.0, "backward_ms": 2.0, "activation_bytes": "1 GiB"},
                   {"forward_ms": 1.5, "backward_ms": 2.5, "activation_bytes": "1 GiB"}]})
    result = plan_pipeline(pipeline, time_limit_s=10, deterministic=True, parallel=1)
    with tempfile.TemporaryDirectory() as folder:
        path = write_json(result.problem, result.schedule, Path(folder) / "plan.json", meta=result.metadata())
        return json.loads(path.read_text())


@functools.cache
def _search_documents() -> dict[str, dict]:
    """``{"result": ..., "problem": ..., "schedule": ...}`` as ``schedsearch search --format json`` writes them."""
    from schedsearch.cli import main

    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        assert main(["search", "--placement", "1f1b", "--devices", "2", "--microbatches", "2", "--format", "json",
                     "--out", folder, "--time-limit", "5", "--deterministic", "--quiet"]) == 0
        return {kind: json.loads(next(Path(folder).glob(f"*.{kind}.json")).read_text())
                for kind in ("result", "problem", "schedule")}


@functools.cache
def _front() -> dict:
    """The Pareto front ``schedsearch pareto --out`` writes (``{placement}-pareto.json``)."""
    from schedsearch.cli import main

    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        assert main(["pareto", "1f1b", "--devices", "2", "--microbatches", "2", "--time-limit", "10",
                     "--deterministic", "--quiet", "--out", folder, "--format", "json"]) == 0
        return json.loads((Path(folder) / "1f1b-pareto.json").read_text())


def _json(tree) -> str:
    return json.dumps(tree, allow_nan=True)


@examples(ci=40)
@given(mutated(_plan_document()))
def test_plan_documents_are_read_or_refused(case) -> None:
    tree, moves = case
    attempt_file("read_json", read_json, "plan.json", _json(tree), describe=moves)


@examples(ci=10)
@given(mutated(_plan_document()))
def test_run_check_only_reads_or_refuses_a_plan_document(case) -> None:
    tree, moves = case
    with written({"plan.json": _json(tree)}) as folder:
        attempt_cli("cli:run --check-only", ["run", str(folder), "--check-only"], describe=moves)


@examples(ci=10)
@given(mutated(_plan_document()), st.sampled_from(["csv", "txt", "json", "trace"]))
def test_export_reads_or_refuses_a_plan_document(case, fmt) -> None:
    tree, moves = case
    with written({"plan.json": _json(tree)}) as folder:
        attempt_cli("cli:export", ["export", str(folder), "--format", fmt, "--out", str(folder / "out")],
                    describe=(fmt, moves))


@examples(ci=5)
@given(mutated(_plan_document()))
def test_report_reads_or_refuses_a_plan_document(case) -> None:
    tree, moves = case
    with written({"plan.json": _json(tree)}) as folder:
        attempt_cli("cli:report", ["report", str(folder), "--out", str(folder / "out")], describe=moves)


@examples(ci=6)
@given(mutated(_front()))
def test_report_reads_or_refuses_a_pareto_front(case) -> None:
    tree, moves = case
    with written({"plan.json": _json(_plan_document()), "front.json": _json(tree)}) as folder:
        attempt_cli("cli:report", ["report", str(folder), "--front", str(folder / "front.json"), "--out",
                                   str(folder / "out")], describe=("front", moves))


@st.composite
def _search_case(draw):
    docs = _search_documents()
    kind = draw(st.sampled_from(("result", "problem", "schedule")))
    tree, moves = draw(mutated(docs[kind]))
    return {**docs, kind: tree}, f"{kind}: {moves}"


def _write_search(folder: Path, docs: dict) -> dict[str, Path]:
    paths = {kind: folder / f"tiny.{kind}.json" for kind in docs}
    for kind, doc in docs.items():
        paths[kind].write_text(_json(doc))
    return paths


def _read_result(path: Path):
    return plan_of(identify(path))


@examples(ci=30)
@given(_search_case())
def test_search_results_are_read_or_refused(case) -> None:
    docs, what = case
    with tempfile.TemporaryDirectory() as folder:
        paths = _write_search(Path(folder), docs)
        attempt("plan_of (result file)", _read_result, paths["result"], describe=what)


@examples(ci=15)
@given(_search_case())
def test_validate_reads_or_refuses_problem_and_schedule_documents(case) -> None:
    docs, what = case
    with tempfile.TemporaryDirectory() as folder:
        paths = _write_search(Path(folder), docs)
        attempt_cli("cli:validate", ["validate", str(paths["problem"]), str(paths["schedule"])], describe=what,
                    answers=(0, 1))  # 1: the violations found, printed


def test_the_unmutated_documents_are_read() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.json"
        path.write_text(_json(_plan_document()))
        problem, schedule, meta = read_json(path)
        assert meta["prediction"]["makespan_ms"] > 0 and schedule.tasks
        paths = _write_search(Path(folder), _search_documents())
        assert _read_result(paths["result"])[1].makespan == 9


# --------------------------------------------------------------------------- calibration files

CALIBRATION = Calibration(latency_ms=0.05, bandwidth_bytes_per_s=10**9, action_overhead_ms=0.02,
                          step_overhead_ms=1.5, residual_ms=0.001, samples=((1024, 0.06), (2**20, 1.1)),
                          backend="gloo", note="loopback").to_dict()


@examples(ci=40)
@given(mutated(CALIBRATION), st.sampled_from(["toml", "json"]))
def test_calibration_files_are_read_or_refused(case, suffix) -> None:
    tree, moves = case
    attempt_file("Calibration.load", Calibration.load, f"calibration.{suffix}",
                 to_toml(tree) if suffix == "toml" else _json(tree), describe=(suffix, moves))


def test_the_unmutated_calibration_is_read() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for suffix in ("toml", "json"):
            path = Calibration.from_dict(CALIBRATION).save(Path(folder) / f"calibration.{suffix}")
            assert Calibration.load(path).to_dict() == CALIBRATION


@pytest.mark.parametrize("value", [math.nan, -1.0, "1", None, 1e300])
def test_a_bad_prediction_in_a_plan_document_is_refused_naming_it(value) -> None:
    from schedsearch.errors import PlanError
    from schedsearch.runtime.trace import Prediction

    with pytest.raises(PlanError, match="plan document: prediction: 'makespan_ms' must be a time in milliseconds"):
        Prediction.from_plan_document({"prediction": {"makespan_ms": value}})


def test_the_commands_read_the_unmutated_plan_document() -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "plan.json").write_text(_json(_plan_document()))
        for argv in (["run", folder, "--check-only"], ["export", folder, "--format", "csv", "--out", folder + "/o"],
                     ["report", folder, "--out", folder + "/r"]):
            status, _, err = attempt_cli("_unmutated", argv)
            assert status == 0, err


def test_every_number_of_the_documents_pushed_to_extremes_is_read_or_refused() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "plan.json"
        for tree, what in each_number_pushed(_plan_document()):
            path.write_text(_json(tree))
            attempt("read_json", read_json, path, describe=what)
        docs = _search_documents()
        for kind in ("result", "problem", "schedule"):
            for tree, what in each_number_pushed(docs[kind]):
                paths = _write_search(Path(folder), {**docs, kind: tree})
                attempt("plan_of (result file)", _read_result, paths["result"], describe=f"{kind}: {what}")
        for suffix in ("toml", "json"):
            path = Path(folder) / f"calibration.{suffix}"
            for tree, what in each_number_pushed(CALIBRATION):
                path.write_text(to_toml(tree) if suffix == "toml" else _json(tree))
                attempt("Calibration.load", Calibration.load, path, describe=(suffix, what))


@pytest.mark.parametrize("point", [5, None, {"makespan": math.nan, "peak_activations": 2},
                                   {"makespan": "18", "peak_activations": 2}])
def test_a_malformed_front_point_is_refused_naming_it(point) -> None:
    front = {**_front(), "points": [*_front()["points"], point]}
    with written({"plan.json": _json(_plan_document()), "front.json": _json(front)}) as folder:
        status, _, err = attempt_cli("cli:report", ["report", str(folder), "--front", str(folder / "front.json"),
                                                    "--out", str(folder / "out")])
    assert status and f"Pareto front: point {len(front['points']) - 1}" in err
