"""Every example script runs with small defaults (``main(argv)`` returns 0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: small arguments per example (default: none)
SMALL_ARGS: dict[str, list[str]] = {
    "quickstart": ["--devices", "3", "--microbatches", "4", "--memory", "3"],
}


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.stem)
def test_example_runs(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # examples write their outputs to the working directory
    module = load(path)
    assert module.main(SMALL_ARGS.get(path.stem, [])) == 0
    assert capsys.readouterr().out.strip()
