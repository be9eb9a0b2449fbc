"""Shared helpers for benchmarks: machine description, timing, JSON output.

Every benchmark prints its figures as a table and writes them, with the
machine's description, to ``benchmarks/results/<name>.json`` so runs can be
compared across versions.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """Describe the machine the figures were measured on."""
    try:
        import ortools

        ortools_version = ortools.__version__
    except Exception:  # pragma: no cover - optional in descriptions only
        ortools_version = None
    try:
        import z3

        z3_version = z3.get_version_string()
    except Exception:  # pragma: no cover
        z3_version = None
    mem_total = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem_total = int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover
        pass
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": mem_total,
        "python": sys.version.split()[0],
        "ortools": ortools_version,
        "z3": z3_version,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timed(fn: Callable[[], Any], repeats: int = 1) -> tuple[Any, float, list[float]]:
    """Run ``fn`` ``repeats`` times; return (last result, median seconds, all seconds)."""
    times = []
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times), times


def print_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    """Print rows as an aligned plain-text table."""
    if not rows:
        print("(no rows)")
        return
    columns = columns or list(rows[0])
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def write_results(name: str, rows: list[dict[str, Any]], **extra: Any) -> Path:
    """Write ``rows`` and the machine description to ``results/<name>.json``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {"benchmark": name, "machine": machine(), "rows": rows, **extra}
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    print(f"wrote {path}")
    return path


@contextlib.contextmanager
def revision_trees(repo: Path, revisions: dict[str, str], prefix: str) -> Iterator[dict[str, Path]]:
    """Each side's source tree, by name: a temporary git worktree of its revision (``"."``: ``repo`` as it is).

    The worktrees are removed on exit, so a before/after benchmark runs both
    sides' code one process per row without touching the working tree.
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    trees: dict[str, Path] = {}
    made: list[Path] = []
    try:
        for name, rev in revisions.items():
            if rev == ".":
                trees[name] = repo
                continue
            subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tmp / name), rev],
                           check=True, capture_output=True)
            made.append(tmp / name)
            trees[name] = tmp / name
        yield trees
    finally:
        for tree in made:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


#: The start of a child script that runs the zero-bubble repository's scheduler modules from a fetched copy
#: (``root``, set by the script before it calls ``load``): stub packages for the module path they import
#: themselves under, and ``load(name)``, which executes ``<root>/<package path>/<name>.py`` as that module.
ZB_REPO_LOADER = r'''import importlib.util, json, sys, time, types
pkg = "megatron.core.pipeline_parallel.zerobubble.scheduler"
parts = pkg.split(".")
for i in range(1, len(parts) + 1):
    mod = types.ModuleType(".".join(parts[:i])); mod.__path__ = []
    sys.modules.setdefault(".".join(parts[:i]), mod)
def load(name):
    spec = importlib.util.spec_from_file_location(f"{pkg}.{name}", f"{root}/{pkg.replace('.', '/')}/{name}.py")
    module = importlib.util.module_from_spec(spec); sys.modules[spec.name] = module
    spec.loader.exec_module(module); return module
'''


def run_child(code: str, args: list[Any], timeout_s: float) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (no ``PYTHONPATH``) with ``args``; the JSON object its last line
    prints, or ``{"error": its last error line}``."""
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                         timeout=timeout_s, env=dict(os.environ, PYTHONPATH=""))
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or [""])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])
