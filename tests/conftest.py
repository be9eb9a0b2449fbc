"""Test configuration: hypothesis profiles and shared paths.

Profiles (``HYPOTHESIS_PROFILE``): ``ci`` (default, quick), ``dev``,
``thorough`` (nightly-sized). They are the ones the installed pytest plugin
(:mod:`schedsearch.testing.plugin`) registers; registration is idempotent,
so this file and the plugin agree whichever runs first. This suite loads
``ci`` when the variable is unset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schedsearch.testing.plugin import load_profile, profile_from_environment

if load_profile(default="ci") is None:
    raise pytest.UsageError(f"HYPOTHESIS_PROFILE={profile_from_environment()!r}: not a registered profile "
                            f"(ci, dev, thorough)")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder beside the repository (skip when absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("shared data folder not found beside the repository")
    return SHARED_DATA


@pytest.fixture(scope="session")
def dnn_data(shared_data) -> Path:
    """The dnn-partitioning workloads and their reference values (partitioner and CLI tests)."""
    folder = shared_data / "dnn-partitioning"
    if not (folder / "reference_values.json").is_file():
        pytest.skip("dnn-partitioning data not found beside the repository")
    return folder


#: PyTorch's DualPipeV regression CSV, kept in the repository with its provenance
DUALPIPEV_CSV = ROOT / "tests" / "export" / "data" / "dualpipev_4rank_10mb.csv"


@pytest.fixture(scope="session")
def dualpipev_csv() -> Path:
    """PyTorch's own DualPipeV compute-only CSV (4 ranks, 8 stages, 10 micro-batches; runtime and CLI tests)."""
    if not DUALPIPEV_CSV.is_file():
        pytest.skip("the DualPipeV artifact is not in this checkout")
    return DUALPIPEV_CSV
