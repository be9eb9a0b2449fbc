"""Every example script runs with small defaults (``main(argv)`` returns 0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: small arguments per example (default: none)
SMALL_ARGS: dict[str, list[str]] = {
    "quickstart": ["--devices", "3", "--microbatches", "4", "--memory", "3"],
    "profile_search_run": ["--microbatches", "4", "--time-limit", "5", "--steps", "2"],
}

#: examples that run models on PyTorch processes: need torch, and are slow
TORCH_EXAMPLES = {"profile_search_run"}


def _examples() -> list:
    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        marks = [pytest.mark.torch, pytest.mark.slow] if path.stem in TORCH_EXAMPLES else []
        out.append(pytest.param(path, marks=marks, id=path.stem))
    return out


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", _examples())
def test_example_runs(path, tmp_path, monkeypatch, capsys):
    if path.stem in TORCH_EXAMPLES:
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)  # examples write their outputs to the working directory
    module = load(path)
    assert module.main(SMALL_ARGS.get(path.stem, [])) == 0
    assert capsys.readouterr().out.strip()
