"""No package attribute hides a submodule of the same name, except the documented ones.

``import schedsearch.a.b as m`` binds ``getattr(schedsearch.a, "b")``: when the
package exports a function ``b`` (from its module ``b``), ``m`` is the function,
not the module. The scan imports every package and submodule and lists the
names where that happens; only the ones the top-level package docstring names
may remain.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import schedsearch

#: submodule -> why its package's same-named function stays (each named in schedsearch's docstring)
DOCUMENTED = {
    "schedsearch.validate": "the validator's module is the core's vocabulary, imported by that name throughout",
    "schedsearch.plan": "the planner's package and its entry point, as the design names both (schedsearch.plan(pipeline))",
    "schedsearch.handcrafted.chimera": "a published generator's module; a rename waits for the family registry work",
    "schedsearch.handcrafted.dualpipe": "a published generator's module; a rename waits for the family registry work",
    "schedsearch.runtime.profile": "the runtime's profiler; a rename waits for the runtime work in progress",
}

#: deprecated module names kept importable: old name -> the module it is now (importing the old one warns)
DEPRECATED_ALIASES = {
    "schedsearch.placements.pipeline": "schedsearch.placements.chains",
    "schedsearch.encode.modulo": "schedsearch.encode.repetend",
    "schedsearch.sweep": "schedsearch.executors",
    "schedsearch.search.solve": "schedsearch.search.portfolio",
    "schedsearch.search.optimal": "schedsearch.search.exact",
    "schedsearch.search.repetend": "schedsearch.search.repetend_search",
    "schedsearch.search.coarsen": "schedsearch.search.coarsening",
    "schedsearch.search.jobshop": "schedsearch.search.jobshop_search",
    "schedsearch.search.pareto": "schedsearch.search.pareto_front",
    "schedsearch.planner": "schedsearch.plan.planner",
    "schedsearch.pipeline": "schedsearch.plan.pipeline",
    "schedsearch.calibration": "schedsearch.plan.calibration",
    "schedsearch.real_ms": "schedsearch.plan.times",
    "schedsearch.export.torch_actions": "schedsearch.actions",
    "schedsearch.export.torchtitan": "schedsearch.plan.torchtitan",
}


def _packages(package: types.ModuleType):
    yield package
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            yield from _packages(importlib.import_module(f"{package.__name__}.{info.name}"))


def shadowed_submodules() -> set[str]:
    found = set()
    for package in _packages(schedsearch):
        for info in pkgutil.iter_modules(package.__path__):
            name = f"{package.__name__}.{info.name}"
            if info.name == "__main__" or name in DEPRECATED_ALIASES:
                continue
            module = importlib.import_module(name)
            if getattr(package, info.name) is not module:
                found.add(name)
    return found


def test_no_undocumented_function_hides_its_module():
    assert shadowed_submodules() == set(DOCUMENTED)


def test_the_documented_ones_are_in_the_package_docstring():
    for name in DOCUMENTED:
        assert f"``{name}``" in schedsearch.__doc__ or f"``{name.rsplit('.', 1)[1]}``" in schedsearch.__doc__, name


def test_import_as_binds_the_renamed_modules():
    import schedsearch.graphs.operation_dag as operation_dag
    import schedsearch.partition.contraction as contraction
    import schedsearch.search.portfolio as portfolio
    import schedsearch.search.pareto_front as pareto_front
    import schedsearch.search.jobshop_search as jobshop_search
    import schedsearch.search.coarsening as coarsening
    import schedsearch.search.repetend_search as repetend_search
    import schedsearch.search.exact as exact

    assert isinstance(operation_dag, types.ModuleType) and isinstance(contraction, types.ModuleType)
    assert isinstance(portfolio, types.ModuleType) and portfolio.solve is schedsearch.search.solve
    assert isinstance(pareto_front, types.ModuleType) and pareto_front.pareto is getattr(schedsearch.search, 'pareto')
    assert isinstance(jobshop_search, types.ModuleType) and jobshop_search.jobshop is getattr(schedsearch.search, 'jobshop')
    assert isinstance(coarsening, types.ModuleType) and coarsening.coarsen is getattr(schedsearch.search, 'coarsen')
    assert isinstance(repetend_search, types.ModuleType) and repetend_search.repetend is getattr(schedsearch.search, 'repetend')
    assert isinstance(exact, types.ModuleType) and exact.optimal is getattr(schedsearch.search, 'optimal')
    assert operation_dag.random_dag is schedsearch.graphs.random_dag
    assert contraction.contract is schedsearch.partition.contract


def test_the_functions_keep_their_names():
    from schedsearch.search import solve
    from schedsearch.validate import validate

    assert callable(solve) and solve.__module__ == "schedsearch.search.portfolio"
    assert schedsearch.validate is validate


def test_deprecated_module_names_warn_and_give_the_module():
    # a fresh interpreter: the alias warns on its first import only
    code = ("import warnings, importlib; warnings.simplefilter('error');\n"
            "for old, new in {aliases!r}.items():\n"
            "    try:\n"
            "        importlib.import_module(old)\n"
            "    except DeprecationWarning as w:\n"
            "        assert new in str(w), w\n"
            "    else:\n"
            "        raise SystemExit(old + ' did not warn')\n"
            "warnings.simplefilter('ignore')\n"
            "for old, new in {aliases!r}.items():\n"
            "    assert importlib.import_module(old) is importlib.import_module(new)\n"
            "import schedsearch.sweep as s, schedsearch.executors as e; assert s is e and s.get_executor is e.get_executor\n"
            ).format(aliases=DEPRECATED_ALIASES)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
