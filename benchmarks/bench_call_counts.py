"""How often one ``solve`` call re-derives the same facts.

One :func:`~schedsearch.solve` call (default objective, one worker, seed 0,
deterministic limits, so the counts are the same on every machine) on two
problems, counting the calls of the functions that derive facts of the
problem every strategy shares:

* ``analytic_lower_bound`` (:mod:`schedsearch.bounds.analytic`),
* ``heads_and_tails`` (the same module),
* ``reduced_problem`` (:mod:`schedsearch.rewrite`),
* ``validate`` (:mod:`schedsearch.validate`).

Calls are counted by code object with a profile hook, so a name imported
into another module is counted too. Problems: ``vshape_chunks(4, 8,
memory=5)`` and ``vshape(4, 8, memory=3)``. The benchmark gate
(:mod:`benchmarks.check`, case ``call_counts``) records the counts as
figures that must not grow.

Run: ``python -m benchmarks call_counts``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks._common import print_table, write_results

#: the gate's deterministic settings (one worker, a fixed seed, deterministic limits)
SETTINGS = {"workers": 1, "seed": 0, "deterministic": True, "time_limit_s": 30}


def counted_functions() -> dict[str, Any]:
    """The functions counted, by name, as code objects."""
    import importlib

    analytic = importlib.import_module("schedsearch.bounds.analytic")
    rewrite = importlib.import_module("schedsearch.rewrite")
    validate = importlib.import_module("schedsearch.validate")  # the package binds the function to the name
    return {
        "analytic_lower_bound": analytic.analytic_lower_bound.__code__,
        "heads_and_tails": analytic.heads_and_tails.__code__,
        "reduced_problem": rewrite.reduced_problem.__code__,
        "validate": validate.validate.__code__,
    }


@contextlib.contextmanager
def call_counter() -> Iterator[dict[str, int]]:
    """Count the calls of :func:`counted_functions` made inside (every thread started inside is not
    counted: the library's own work runs in the calling thread)."""
    codes = counted_functions()
    by_code = {code: name for name, code in codes.items()}
    counts = dict.fromkeys(codes, 0)

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            name = by_code.get(frame.f_code)
            if name is not None:
                counts[name] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


def problems() -> dict[str, Callable[[], Any]]:
    from schedsearch.placements import vshape, vshape_chunks

    return {
        "vshape_chunks(4, 8, memory=5)": lambda: vshape_chunks(4, 8, memory=5),
        "vshape(4, 8, memory=3)": lambda: vshape(4, 8, memory=3),
    }


def measure(build: Callable[[], Any], settings: dict[str, Any] = SETTINGS) -> tuple[dict[str, int], Any]:
    """The call counts of one ``solve`` call on ``build()`` (built outside the count) and its result."""
    from schedsearch import solve

    problem = build()
    with call_counter() as counts:
        result = solve(problem, **settings)
    return dict(counts), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="(no effect: the run is already quick)")
    parser.add_argument("--default-options", action="store_true",
                        help="also count with solve's default options (wall-clock limits: counts may vary)")
    args = parser.parse_args(argv)
    modes = {"deterministic": SETTINGS, **({"default": {}} if args.default_options else {})}
    rows = []
    for (name, build), mode in ((p, m) for m in modes for p in problems().items()):
        counts, result = measure(build, modes[mode])
        levels = "/".join(str(lv.value) for lv in result.levels) or str(result.objective)
        rows.append({"problem": name, "options": mode, **counts, "status": result.status.value, "objective": levels,
                     "engine": result.engine})
    print_table(rows)
    write_results("call_counts", rows, settings=SETTINGS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
