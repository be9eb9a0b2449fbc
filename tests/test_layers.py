"""Architecture rules checked by scanning imports: the solver-free layers
import no solver, and imports point down only."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "schedsearch"

SOLVER_FREE = ["problem.py", "schedule.py", "periodic.py", "validate.py", "result.py", "errors.py", "bounds/analytic.py",
               "encode/structure.py", "encode/base.py", "_json.py", "_io.py"]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_solver_free_layers_import_no_solver():
    for rel in SOLVER_FREE:
        path = PACKAGE / rel
        if not path.exists():
            continue
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("z3", "ortools")}
        assert not bad, f"{rel} imports {bad}"


def test_problem_and_schedule_import_nothing_above_them():
    for rel in ("problem.py", "schedule.py", "validate.py", "result.py"):
        mods = {m for m in imported_modules(PACKAGE / rel) if m.startswith("schedsearch.")}
        # _json: the shared JSON-document reader, a leaf below them (next test)
        allowed = {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule", "schedsearch.result",
                   "schedsearch._json"}
        assert mods <= allowed, f"{rel} imports {mods - allowed}"


def test_the_reading_helpers_are_leaves():
    for rel in ("_json.py", "_io.py"):
        mods = {m for m in imported_modules(PACKAGE / rel) if m.startswith("schedsearch.")}
        assert mods <= {"schedsearch.errors"}, f"{rel} imports {mods}"


def test_each_backend_keeps_to_its_solver():
    for backend, foreign in (("cpsat", "z3"), ("z3", "ortools")):
        for path in (PACKAGE / "encode" / backend).glob("*.py"):
            assert not {m for m in imported_modules(path) if m.split(".")[0] == foreign}, path


def test_the_oracle_shares_no_code_with_what_it_checks():
    # the brute-force oracle is the independent judge of the encoders and the bounds
    mods = {m for m in imported_modules(PACKAGE / "testing" / "oracle.py") if m.startswith("schedsearch")}
    for layer in ("schedsearch.encode", "schedsearch.bounds", "schedsearch.search"):
        assert not {m for m in mods if m == layer or m.startswith(layer + ".")}, f"oracle imports {mods}"
    assert mods <= {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule"}, mods


def test_the_test_machinery_stays_below_the_solvers():
    # schedsearch.testing: the model, the validator and the placement builders; no encoder, bound or search
    allowed = {"schedsearch", "schedsearch.errors", "schedsearch.problem", "schedsearch.schedule",
               "schedsearch.validate", "schedsearch.placements"}
    for path in (PACKAGE / "testing").glob("*.py"):
        mods = {m for m in imported_modules(path) if m.split(".")[0] in ("schedsearch", "z3", "ortools")}
        bad = {m for m in mods if m not in allowed and not m.startswith("schedsearch.testing")}
        assert not bad, f"testing/{path.name} imports {bad}"
