"""Fixtures of the runtime tests."""

from __future__ import annotations

from pathlib import Path

import pytest

#: PyTorch's DualPipeV regression CSV, kept in the repository with its provenance
ARTIFACT = Path(__file__).resolve().parents[1] / "export" / "data" / "dualpipev_4rank_10mb.csv"


@pytest.fixture(scope="session")
def dualpipev_csv() -> Path:
    """PyTorch's own DualPipeV compute-only CSV (4 ranks, 8 stages, 10 micro-batches)."""
    if not ARTIFACT.is_file():
        pytest.skip("the DualPipeV artifact is not in this checkout")
    return ARTIFACT
