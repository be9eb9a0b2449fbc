"""Run every benchmark module (``python -m benchmarks [NAME ...]``).

A benchmark is a module ``benchmarks/bench_*.py`` with a ``main(argv)``
function. ``python -m benchmarks check`` runs the benchmark gate instead
(:mod:`benchmarks.check`: a quick, reproducible subset of every benchmark
against the recorded figures). With names, only the matching modules run; flags after the names
(``python -m benchmarks vhalf --quick``) go to each of them.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:  # the benchmark gate (benchmarks/check.py)
        from benchmarks.check import main as check

        return check(argv[1:])
    # names select modules; everything from the first flag on goes to each selected module
    first_flag = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    selectors, flags = argv[:first_flag], argv[first_flag:]
    here = Path(__file__).resolve().parent
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_")
    )
    wanted = [n for n in names if not selectors or any(a in n for a in selectors)]
    for name in wanted:
        print(f"\n=== {name}")
        module = importlib.import_module(f"benchmarks.{name}")
        module.main(list(flags))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
