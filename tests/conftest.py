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


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    """The fuzzing campaign's table (``tests/fuzz/``), when ``SCHEDSEARCH_FUZZ_TABLE`` asks for it:
    ``-`` prints it, a path also writes its rows there as JSON."""
    import json
    import os

    where = os.environ.get("SCHEDSEARCH_FUZZ_TABLE")
    if not where:
        return
    from fuzzing import campaign_table, table_rows
    from hypothesis import settings

    rows = table_rows()
    if not rows:
        return
    terminalreporter.write_sep("=", f"fuzzing campaign ({settings.default.max_examples} examples a test "
                                    f"in this profile)")
    terminalreporter.write_line(campaign_table(rows))
    if where != "-":
        Path(where).write_text(json.dumps({"max_examples": settings.default.max_examples, "rows": rows},
                                          indent=1) + "\n")
