"""The docs site: it builds with warnings as errors, and every ```python example in its pages runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
EXAMPLE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    return [(f"{page.name}#{k}", code) for page in PAGES for k, code in enumerate(EXAMPLE.findall(page.read_text()))]


@pytest.mark.parametrize("where,code", _examples(), ids=[w for w, _ in _examples()])
def test_page_example_runs(where, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed (python -m pip install -e '.[docs]')")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                          "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "site" / "cli" / "index.html").is_file()
