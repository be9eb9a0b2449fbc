"""Write every export of a schedule at once (what the examples and ``reproduce --out-dir`` produce).

Files ``{stem}.trace.json`` (Chrome / Perfetto), ``{stem}.plan.json``
(plan document), ``{stem}.txt`` (ASCII timeline), ``{stem}.csv`` (PyTorch
compute-only CSV, skipped when the format cannot express the schedule:
two pipelines, multi-device blocks) and ``{stem}.png`` (skipped without
matplotlib).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedsearch.errors import FormatError, UnsupportedFeatureError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = ["write_bundle"]


def write_bundle(
    problem: Problem,
    schedule: Schedule,
    out_dir: str | Path,
    stem: str,
    *,
    time_scale: int = 1,
    meta: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write the exports of ``schedule`` under ``out_dir``; return the paths written."""
    from schedsearch.export import export

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = out / stem
    written = [
        export(problem, schedule, "chrome", Path(f"{base}.trace.json")),
        export(problem, schedule, "json", Path(f"{base}.plan.json"), meta={"time_scale": time_scale, **dict(meta or {})}),
        export(problem, schedule, "ascii", Path(f"{base}.txt")),
    ]
    try:
        written.append(export(problem, schedule, "torch-csv", Path(f"{base}.csv")))
    except FormatError:
        pass
    try:
        written.append(export(problem, schedule, "png", Path(f"{base}.png"), time_scale=time_scale))
    except UnsupportedFeatureError:
        pass
    return written
