"""Run every benchmark module (``python -m benchmarks [NAME ...]``).

A benchmark is a module ``benchmarks/bench_*.py`` with a ``main(argv)``
function. With names, only the matching modules run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    here = Path(__file__).resolve().parent
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_")
    )
    wanted = [n for n in names if not argv or any(a in n for a in argv)]
    for name in wanted:
        print(f"\n=== {name}")
        module = importlib.import_module(f"benchmarks.{name}")
        module.main([])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
