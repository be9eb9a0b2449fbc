"""The ``>>>`` examples in the package's docstrings run, and every public name has one.

One test per module whose source holds an example: the module is imported
and its docstrings run through :mod:`doctest` (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE`` on). Only modules with examples are imported, so
a module that needs an optional dependency (PyTorch, matplotlib) costs
nothing unless it has examples, and then it is skipped when the dependency
is missing.

``test_public_names_have_examples`` keeps the documentation complete: every
function and class exported by the ``__all__`` of the public packages
carries its own docstring with an ``Examples`` section holding a ``>>>``
example (which the first test runs).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from optional import on_ci

import schedsearch

PACKAGE_DIR = Path(schedsearch.__file__).resolve().parent

#: the packages whose ``__all__`` is the public API
PUBLIC_PACKAGES = (
    "schedsearch",
    "schedsearch.search",
    "schedsearch.placements",
    "schedsearch.handcrafted",
    "schedsearch.export",
    "schedsearch.bounds",
    "schedsearch.loaders",
    "schedsearch.partition",
    "schedsearch.testing",
)

#: optional dependencies: a module with examples that needs one is skipped without it (fails on CI)
OPTIONAL = ("torch", "matplotlib")

#: modules that import an optional dependency only when called, and whose examples call it
NEEDS_WHEN_CALLED = {"schedsearch.export.plot": "matplotlib"}

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

_PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)
_EXAMPLES_HEADING = re.compile(r"^\s*Examples\n\s*-{8,}\n", re.MULTILINE)


def modules_with_examples() -> list[str]:
    """Dotted names of the package's modules whose source holds a ``>>>`` prompt."""
    names = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if not _PROMPT.search(path.read_text(encoding="utf-8")):
            continue
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


@pytest.mark.parametrize("module_name", modules_with_examples())
def test_docstring_examples_run(module_name):
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        if error.name and error.name.split(".")[0] in OPTIONAL and not on_ci():
            pytest.skip(f"{module_name} needs {error.name} (CI installs it and fails here without it)")
        raise
    needed = NEEDS_WHEN_CALLED.get(module_name)
    if needed and importlib.util.find_spec(needed) is None and not on_ci():
        pytest.skip(f"{module_name}'s examples need {needed} (CI installs it and fails here without it)")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    tests = finder.find(module, module_name)
    assert tests, f"{module_name}: its source has '>>>' but doctest finds no example"
    for test in tests:
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted
    assert failed == 0, "".join(report)


def public_objects() -> tuple[list[tuple[str, object]], list[str]]:
    """Every function and class the public packages export, once each, and the exports that fail to load."""
    seen: dict[int, tuple[str, object]] = {}
    unloadable = []
    for package_name in PUBLIC_PACKAGES:
        package = importlib.import_module(package_name)
        for name in package.__all__:
            try:
                obj = getattr(package, name)
            except (ImportError, AttributeError) as error:  # a lazily loaded export whose module is missing
                unloadable.append(f"{package_name}.{name} ({error})")
                continue
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in seen:
                seen[id(obj)] = (f"{package_name}.{name}", obj)
    return sorted(seen.values(), key=lambda item: item[0]), unloadable


def test_public_names_load():
    _, unloadable = public_objects()
    assert not unloadable, f"names in __all__ that cannot be loaded: {unloadable}"


def test_public_names_have_examples():
    missing = []
    for qualified, obj in public_objects()[0]:
        doc = obj.__doc__ or ""  # the object's own docstring, not an inherited one
        heading = _EXAMPLES_HEADING.search(doc)
        if heading is None or not _PROMPT.search(doc, heading.end()):
            missing.append(qualified)
    assert not missing, f"{len(missing)} public names lack an 'Examples' section with a '>>>' example: {missing}"


def test_public_examples_are_collected():
    # each public name's examples live in a module the doctest test runs
    collected = set(modules_with_examples())
    for qualified, obj in public_objects()[0]:
        if _PROMPT.search(obj.__doc__ or ""):
            assert obj.__module__ in collected, f"{qualified} is defined in {obj.__module__}, not collected"
