"""Packages whose modules share helpers through public-in-package names, never
through each other's private names: ``partition`` (its internal modules
``_common`` and ``_contiguous_model``) and ``placements``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import schedsearch.partition._common as common
import schedsearch.partition._contiguous_model as contiguous_model

PACKAGE = Path(__file__).resolve().parents[1] / "schedsearch"

#: the packages held to the rule
CLEAN_PACKAGES = ("partition", "placements")


def private_imports(source: str) -> list[str]:
    """``module.name`` of every private name imported from a schedsearch module."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("schedsearch"):
            out += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_the_scan_sees_a_private_import() -> None:
    source = "def f():\n    from schedsearch.partition.dp import _x, y\nfrom schedsearch.partition import _common\n"
    assert sorted(private_imports(source)) == ["schedsearch.partition._common", "schedsearch.partition.dp._x"]


@pytest.mark.parametrize("package", CLEAN_PACKAGES)
def test_no_private_name_crosses_modules(package: str) -> None:
    found = {path.name: private_imports(path.read_text()) for path in sorted((PACKAGE / package).rglob("*.py"))}
    assert not {name: names for name, names in found.items() if names}


def test_partition_internal_modules_export_what_they_define() -> None:
    for module in (common, contiguous_model):
        assert module.__all__ and all(not name.startswith("_") and hasattr(module, name) for name in module.__all__)
