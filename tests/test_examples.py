"""Every example script runs with small defaults (``main(argv)`` returns 0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from optional import require

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: small arguments per example (default: none)
SMALL_ARGS: dict[str, list[str]] = {
    "quickstart": ["--devices", "3", "--microbatches", "4", "--memory", "3"],
    "profile_search_run": ["--microbatches", "4", "--time-limit", "5", "--steps", "2"],
    # every published schedule, DualPipe's at the size where the search beats it in about a second; each
    # search stops when proven, so a long limit costs nothing and keeps "beats" true on a busy machine
    "reproduce": ["all", "--devices", "4", "--microbatches", "8", "--time-limit", "60"],
    "plan_from_profile": ["--ranks", "4", "--time-limit", "3"],
    "random_graph_two_chips": ["--nodes", "60", "--coarse", "15", "--time-limit", "3"],
}

#: what an example's output must show, and must not
MUST_SHOW: dict[str, list[str]] = {
    # every published schedule with its figures; the search beats DualPipe and DualPipeV
    "reproduce": [f"{title}: " for title in ("GPipe", "1F1B", "interleaved 1F1B (Megatron)",
                                             "interleaved zero bubble (ZB1P)", "ZB-H1 (ZB1P)", "ZB-V", "Chimera",
                                             "DualPipe", "DualPipeV")] + ["the search beats"],
}
MUST_NOT_SHOW: dict[str, list[str]] = {
    "reproduce": ["DIFFERENT"],  # a figure that differs from its published formula
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
        require("torch")
    monkeypatch.chdir(tmp_path)  # examples write their outputs to the working directory
    module = load(path)
    assert module.main(SMALL_ARGS.get(path.stem, [])) == 0
    out = capsys.readouterr().out
    assert out.strip()
    for text in MUST_SHOW.get(path.stem, []):
        assert text in out
    for text in MUST_NOT_SHOW.get(path.stem, []):
        assert text not in out
