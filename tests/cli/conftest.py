"""CLI tests run in a fresh folder: a command's default ``--out out`` writes there, not into the project."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _in_tmp_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
