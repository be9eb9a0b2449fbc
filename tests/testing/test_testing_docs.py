"""The snippets of the README's "Test your own scheduler" section and of docs/testing.md run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Test your own scheduler")
    return text[start:text.index("\n## ", start + 1)]


SNIPPETS = [pytest.param(code, id=f"README-{i}") for i, code in enumerate(python_blocks(readme_section()))]
SNIPPETS += [pytest.param(code, id=f"docs-testing-{i}")
             for i, code in enumerate(python_blocks((ROOT / "docs" / "testing.md").read_text()))]


def test_there_are_snippets():
    assert len(SNIPPETS) >= 3


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs(code):
    exec(compile(code, "<snippet>", "exec"), {"__name__": "snippet"})
