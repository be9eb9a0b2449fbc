"""Architecture rules checked by scanning imports: every module of the package sits in a layer, imports
point down (or stay within their layer), the module import graph has no circle, and the solver-free layers
import no solver.

Layers, bottom up (:data:`LAYERS`): the leaves (errors, the JSON and text readers, the timeline, the
units, the executors, the pipeline action type, the deadline's checkpoints, the collector's freezing) -> the core
 (``problem``, then ``schedule``, then
``validate``, then ``periodic``, ``rewrite``, ``result``, ``options``) -> the problem builders
(``placements``, ``graphs``) -> the handcrafted schedules -> the exporters and the test machinery -> the schedule bounds -> the encoders ->
the partitioners and their loaders -> the search strategies (which compare with the handcrafted
schedules and build problems with the placement builders) -> ``plan`` (the pipeline description, its
calibration, the planner and what it writes for torchtitan) -> ``runtime`` (which runs, profiles and
calibrates plans) -> the package's top (its public names) -> ``cli``.

The graph counts every import: at module level, inside functions and under ``TYPE_CHECKING``. The
deprecated alias modules (``tests/test_module_names.py``) are left out: they only re-export their
successor, and no module of the package may import one.
"""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from test_module_names import DEPRECATED_ALIASES

PACKAGE = Path(__file__).resolve().parents[1] / "schedsearch"

#: The layers, bottom up: (name, module patterns relative to ``schedsearch``; ``""`` is the package
#: itself, ``x.*`` every module below ``x``). A module may import modules of its own layer and below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("leaves", ("errors", "_json", "_io", "_union_find", "timeline", "units", "executors", "status", "registry",
                "actions", "deadline", "heap")),
    ("problem", ("problem",)),
    ("schedule", ("schedule",)),
    ("validator", ("validate",)),
    ("core", ("periodic", "rewrite", "result", "options")),
    ("problem builders", ("placements", "placements.*", "graphs", "graphs.*")),
    ("handcrafted schedules", ("handcrafted", "handcrafted.*")),
    ("exporters and test machinery", ("export", "export.*", "testing", "testing.*")),
    ("bounds", ("bounds", "bounds.*")),
    ("encoders", ("encode", "encode.*")),
    ("partitioners", ("partition", "partition.*", "loaders", "loaders.*")),
    ("search", ("search", "search.*")),
    ("plan", ("plan", "plan.*")),
    ("runtime", ("runtime", "runtime.*")),
    ("package", ("",)),
    ("cli", ("cli", "cli.*", "__main__")),
)

#: Deferred (function-level) imports of a higher layer that are allowed, and why.
DEFERRED_UP = {
    # ``SearchResult.export()`` hands its problem and plan to :func:`schedsearch.export.export`
    # (solver-free, and it imports no result), a convenience for the user of a result
    ("schedsearch.result", "schedsearch.export"),
}

SOLVER_FREE = ["problem.py", "schedule.py", "periodic.py", "validate.py", "result.py", "options.py", "rewrite.py",
               "timeline.py", "errors.py", "status.py", "registry.py", "bounds/__init__.py", "bounds/analytic.py", "bounds/schedule_bounds.py",
               "encode/structure.py", "encode/solve_options.py", "encode/backends.py",
               "encode/repetend.py", "_json.py", "_io.py", "actions.py"]

#: Files that neither search nor encode: the core, and the faces that only read and write plans.
BELOW_SEARCH = ["problem.py", "schedule.py", "periodic.py", "validate.py", "result.py", "options.py", "rewrite.py",
                "timeline.py", "errors.py", "_json.py", "_io.py", "actions.py", "placements/*.py", "handcrafted/*.py", "export/*.py",
                "runtime/*.py"]
SEARCH_LAYERS = ("schedsearch.search", "schedsearch.encode", "schedsearch.partition", "schedsearch.bounds.mip")


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("schedsearch", *path.relative_to(PACKAGE).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = module_files()


def imports_of(module: str, path: Path) -> set[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every import of ``module`` (in functions and under
    ``TYPE_CHECKING`` too), each resolved to the longest module name of the package it names."""
    tree = ast.parse(path.read_text())
    top = set()
    stack = list(tree.body)
    while stack:  # module level: the body and what sits in its if/try blocks, not in functions or classes
        node = stack.pop()
        top.add(id(node))
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []) +
                         [h for handler in getattr(node, "handlers", []) for h in handler.body])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            # ``from schedsearch.search import optimal`` names the function the package exports under an
            # alias module's name (the package's attribute is the function), not the alias
            named = [f"{base}.{a.name}" for a in node.names]
            names = [n if n in MODULES and n not in DEPRECATED_ALIASES else base for n in named]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add((name, node.lineno, id(node) in top))
    return out


def layer_of(module: str) -> int | None:
    rel = module.removeprefix("schedsearch").removeprefix(".")
    found = [i for i, (_, patterns) in enumerate(LAYERS) for pattern in patterns if fnmatch.fnmatchcase(rel, pattern)]
    assert len(set(found)) <= 1, f"{module} matches layers {[LAYERS[i][0] for i in found]}"
    return found[0] if found else None


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in MODULES.items():
        if module in DEPRECATED_ALIASES:
            continue
        graph.add_node(module)
        for imported, line, at_top in imports_of(module, path):
            if imported not in DEPRECATED_ALIASES:
                graph.add_edge(module, imported, line=line, at_top=at_top)
    return graph


def test_every_module_sits_in_a_layer():
    unplaced = [m for m in MODULES if m not in DEPRECATED_ALIASES and layer_of(m) is None]
    assert not unplaced, f"place these modules in a layer of LAYERS: {unplaced}"


def test_imports_point_down():
    graph = import_graph()
    upward = []
    for module, imported, data in graph.edges(data=True):
        if layer_of(imported) <= layer_of(module):
            continue
        if (module, imported) in DEFERRED_UP and not data["at_top"]:
            continue
        upward.append(f"{module} (layer {LAYERS[layer_of(module)][0]!r}, line {data['line']}) imports {imported} "
                      f"(layer {LAYERS[layer_of(imported)][0]!r})")
    assert not upward, "\n".join(upward)


def test_the_deferred_upward_imports_are_still_there():
    graph = import_graph()
    stale = [pair for pair in DEFERRED_UP if not graph.has_edge(*pair)]
    assert not stale, f"DEFERRED_UP lists imports that are gone: {stale}"


def test_no_import_circles():
    graph = import_graph()
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_no_module_imports_a_deprecated_alias():
    users = [f"{m} imports {imported} (line {line})" for m, path in MODULES.items() if m not in DEPRECATED_ALIASES
             for imported, line, _ in imports_of(m, path) if imported in DEPRECATED_ALIASES]
    assert not users, users


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


def test_the_runtime_imports_no_search_encoder_or_partitioner():
    # the runtime stands above the planner, yet reads and writes plans only: it reaches a search through
    # the planner, never directly (the layers below search are held there by test_imports_point_down)
    for path in files(["runtime/*.py"]):
        bad = {m for m in imported_modules(path) if within(m, SEARCH_LAYERS)}
        assert not bad, f"runtime/{path.name} imports {bad}"


def test_problem_and_schedule_import_nothing_above_them():
    for rel in ("problem.py", "schedule.py", "validate.py", "result.py"):
        mods = {m for m in imported_modules(PACKAGE / rel) if m.startswith("schedsearch.")}
        # _json: the shared JSON-document reader, a leaf below them (next test); deadline: the call's
        # checkpoints, a leaf the memory profile and the validator count their work at
        deferred = {imported for module, imported in DEFERRED_UP if module == "schedsearch." + rel[:-3]}
        allowed = {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule", "schedsearch.result",
                   "schedsearch.status", "schedsearch._json", "schedsearch.deadline"} | deferred

        assert mods <= allowed, f"{rel} imports {mods - allowed}"


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


def test_the_action_type_is_a_leaf():
    # the one pipeline action type and its grammar: the handcrafted schedules, the exporters, the runtime
    # and the profiler-trace importer all hold it, so it stands below them all
    mods = {m for m in imported_modules(PACKAGE / "actions.py") if m.startswith("schedsearch")}
    assert mods <= {"schedsearch.errors"}, mods


def test_the_exporters_import_no_runtime():
    # what an export shares with the runtime (the planned actions of a schedule) sits below both
    for path in files(["export/*.py"]):
        bad = {m for m in imported_modules(path) if within(m, ("schedsearch.runtime",))}
        assert not bad, f"export/{path.name} imports {bad}"


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
    allowed = {"schedsearch.errors", "schedsearch.problem", "schedsearch.schedule",
               "schedsearch.validate", "schedsearch.placements", "schedsearch.actions"}
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
