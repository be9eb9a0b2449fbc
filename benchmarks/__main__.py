"""Run every benchmark module (``python -m benchmarks [NAME ...]``).

A benchmark is a module ``benchmarks/bench_*.py`` with a ``main(argv)``
function. ``python -m benchmarks check`` runs the benchmark gate instead
(:mod:`benchmarks.check`: a quick, reproducible subset of every benchmark
against the recorded figures). With names, only the matching modules run: a
module's own name (``scaling``) selects it alone, any other name every module
whose name holds it (``repetend``); flags after the names
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
    for name in selected(names, selectors):
        print(f"\n=== {name}")
        module = importlib.import_module(f"benchmarks.{name}")
        module.main(list(flags))
    return 0


def selected(names: list[str], selectors: list[str]) -> list[str]:
    """The benchmark modules ``selectors`` name: all without any; a module's own name (``scaling`` for
    ``bench_scaling``) selects it alone, any other name every module whose name holds it (``repetend``).

    >>> selected(["bench_repetend", "bench_repetend_scaling", "bench_scaling"], ["scaling"])
    ['bench_scaling']
    >>> selected(["bench_repetend", "bench_repetend_scaling", "bench_scaling"], ["repetend_s", "scal"])
    ['bench_repetend_scaling', 'bench_scaling']
    """
    return [n for n in names if not selectors
            or any(f"bench_{a}" == n or (f"bench_{a}" not in names and a in n) for a in selectors)]


if __name__ == "__main__":
    raise SystemExit(main())
