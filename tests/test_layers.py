"""Architecture rules checked by scanning imports: the solver-free layers
import no solver, and imports point down only.

Layers, bottom up: the core (``problem``, ``schedule``, ``periodic``,
``validate``, ``result``, ``options``, ``rewrite``, ``timeline``) -> the schedule bounds
(``bounds``; its MIP layer ``bounds.mip`` is loaded only on demand) ->
encoders -> partitioners and search strategies. Beside the core and below
every solver: the placement builders, the handcrafted schedules, the
exporters and the PyTorch runtime, which read and write plans but never
search for one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "schedsearch"

SOLVER_FREE = ["problem.py", "schedule.py", "periodic.py", "validate.py", "result.py", "options.py", "rewrite.py",
               "timeline.py", "errors.py", "status.py", "registry.py", "bounds/__init__.py", "bounds/analytic.py", "bounds/schedule_bounds.py",
               "encode/structure.py", "encode/solve_options.py", "encode/backends.py",
               "encode/repetend.py", "_json.py", "_io.py"]

#: Files that neither search nor encode: the core, and the faces that only read and write plans.
BELOW_SEARCH = ["problem.py", "schedule.py", "periodic.py", "validate.py", "result.py", "options.py", "rewrite.py",
                "timeline.py", "errors.py", "status.py", "registry.py", "_json.py", "_io.py", "placements/*.py", "handcrafted/*.py", "export/*.py",
                "runtime/*.py"]
SEARCH_LAYERS = ("schedsearch.search", "schedsearch.encode", "schedsearch.partition", "schedsearch.bounds.mip")

#: Deferred (function-level) imports of a higher layer that are allowed, and why:
#: ``SearchResult.export()`` hands its problem and plan to :func:`schedsearch.export.export`
#: (solver-free, and it imports no result), a convenience for the user of a result.
DEFERRED_UP = {"result.py": {"schedsearch.export"}}


def imported_modules(path: Path, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def files(patterns: list[str]) -> list[Path]:
    out = [p for pattern in patterns for p in sorted(PACKAGE.glob(pattern))]
    assert out, patterns
    return out


def within(module: str, layers: tuple[str, ...]) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in layers)


def test_solver_free_layers_import_no_solver():
    for path in files(SOLVER_FREE + BELOW_SEARCH):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("z3", "ortools")}
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_core_and_the_faces_below_search_import_no_search_encoder_or_partitioner():
    for path in files(BELOW_SEARCH):
        rel = str(path.relative_to(PACKAGE))
        bad = {m for m in imported_modules(path) if within(m, SEARCH_LAYERS)} - DEFERRED_UP.get(rel, set())
        assert not bad, f"{rel} imports {bad}"
        top = {m for m in imported_modules(path, top_level_only=True) if within(m, SEARCH_LAYERS)}
        assert not top, f"{rel} imports {top} when it loads"


def test_problem_and_schedule_import_nothing_above_them():
    for rel in ("problem.py", "schedule.py", "validate.py", "result.py"):
        mods = {m for m in imported_modules(PACKAGE / rel) if m.startswith("schedsearch.")}
        # _json: the shared JSON-document reader, a leaf below them (next test)
        allowed = {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule", "schedsearch.result",
                   "schedsearch.status", "schedsearch._json"} | DEFERRED_UP.get(rel, set())
        assert mods <= allowed, f"{rel} imports {mods - allowed}"
        top = {m for m in imported_modules(PACKAGE / rel, top_level_only=True) if m.startswith("schedsearch.")}
        assert not top & DEFERRED_UP.get(rel, set()), f"{rel} imports {top} when it loads"


def test_the_timeline_is_a_leaf():
    # the free gaps of devices and channels, shared by the list schedulers and the
    # simulator of device orders: it imports nothing of the package
    mods = {m for m in imported_modules(PACKAGE / "timeline.py") if m.startswith("schedsearch")}
    assert not mods, mods


def test_the_rewrites_stand_on_the_core_only():
    mods = {m for m in imported_modules(PACKAGE / "rewrite.py") if m.startswith("schedsearch")}
    assert mods <= {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule", "schedsearch.validate"}, mods


def test_the_schedule_bounds_stand_below_the_encoders():
    # the encoders read the analytic bounds; the bounds read no encoder, strategy or partitioner, and the
    # package loads its MIP layer only when the assignment LP runs
    for path in files(["bounds/*.py"]):
        if path.name == "mip.py":
            continue
        bad = {m for m in imported_modules(path) if within(m, ("schedsearch.search", "schedsearch.encode",
                                                               "schedsearch.partition"))}
        assert not bad, f"bounds/{path.name} imports {bad}"
    loaded = imported_modules(PACKAGE / "bounds" / "__init__.py") | imported_modules(
        PACKAGE / "bounds" / "schedule_bounds.py", top_level_only=True)
    assert "schedsearch.bounds.mip" not in loaded
    bounds_used = {m for m in imported_modules(PACKAGE / "encode" / "structure.py") if m.startswith("schedsearch.b")}
    assert bounds_used <= {"schedsearch.bounds.analytic"}, bounds_used


def test_partitioners_take_the_search_as_an_argument():
    # partition -> problem -> schedule is one pipeline, with the strategy passed in (no import of search)
    for path in files(["partition/*.py"]):
        bad = {m for m in imported_modules(path) if within(m, ("schedsearch.search", "schedsearch.encode"))}
        assert not bad, f"partition/{path.name} imports {bad}"


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


def loaded_by(module: str) -> list[str]:
    """The modules a fresh interpreter holds after ``import module`` (schedsearch's and the solvers')."""
    code = (f"import {module}, sys; print(sorted(m for m in sys.modules "
            f"if m.split('.')[0] in ('schedsearch', 'ortools', 'z3')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return ast.literal_eval(done.stdout.strip())


@pytest.mark.parametrize("module", ["schedsearch.export", "schedsearch.handcrafted", "schedsearch.bounds",
                                    "schedsearch.rewrite", "schedsearch.timeline", "schedsearch.runtime"])
def test_importing_a_solver_free_layer_loads_no_solver_and_no_search(module):
    loaded = loaded_by(module)
    assert module in loaded
    bad = [m for m in loaded if m.split(".")[0] in ("ortools", "z3") or within(m, SEARCH_LAYERS)]
    assert not bad, f"import {module} loads {bad}"


def test_the_plot_functions_are_exported_without_importing_matplotlib():
    # matplotlib is the optional 'plot' extra: schedsearch.export names plot_schedule and save_plot but
    # loads them (and matplotlib) only when used
    code = ("import sys, schedsearch.export as e; before = 'matplotlib' in sys.modules; "
            "from schedsearch.export import plot_schedule, save_plot; "
            "print(before, 'matplotlib' in sys.modules, plot_schedule.__module__, save_plot.__module__, "
            "'plot_schedule' in e.__all__ and 'plot_schedule' in dir(e))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "False", "schedsearch.export.plot", "schedsearch.export.plot", "True"]
