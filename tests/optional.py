"""Optional dependencies of the tests: skip where absent, fail on CI.

A developer's environment may lack an extra (``make demo`` installs the core
packages only), and the tests that need it then skip, saying which extra to
install. CI installs every extra the tests use (``make test``), so there a
missing one is a broken set-up and the tests that need it fail instead of
skipping quietly. CI is recognised by the ``CI`` environment variable (set
to anything but ``""``, ``"0"`` or ``"false"``).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

#: module -> the extra of pyproject.toml that installs it
EXTRAS = {"torch": "torch", "matplotlib": "plot", "mkdocstrings": "docs"}


def on_ci() -> bool:
    """Whether the ``CI`` environment variable says this run is CI's."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(module: str) -> ModuleType:
    """Import ``module`` (a dotted name under one of :data:`EXTRAS`).

    Outside CI a missing module skips the calling test (or the whole test
    module, when called at import time) with the extra to install; on CI the
    ``ImportError`` propagates and the test fails.
    """
    top = module.split(".")[0]
    extra = EXTRAS[top]
    if on_ci():
        try:
            return importlib.import_module(module)
        except ImportError as error:
            raise ImportError(f"{module} is not installed, and CI must install the {extra!r} extra "
                              f"(make test does): {error}") from error
    return pytest.importorskip(module, reason=f"{top} is not installed (the {extra!r} extra: "
                                              f"python -m pip install -e '.[{extra}]'; make test installs it)")
