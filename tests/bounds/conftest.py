"""Bounds tests: the slow ones (large integer programs) run only when asked for (-m slow)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="large integer program: run with -m slow")
    for item in items:
        if "slow" in item.keywords and item.fspath.dirname.endswith("bounds"):
            item.add_marker(skip)
