"""Exports of schedules: ASCII timelines, Chrome/Perfetto traces, PyTorch CSV, plan JSON, plots.

:func:`export` writes one of ``EXPORT_FORMATS`` by name (the CLI's
``schedsearch export --format``):

* ``torch-csv``: PyTorch pipelining compute-only CSV (:mod:`.torch_csv`);
* ``chrome``: Chrome / Perfetto trace JSON (:mod:`.chrome`);
* ``json``: versioned plan document, problem + schedule + metrics (:mod:`.json`);
* ``ascii``: text timeline (:mod:`.ascii`);
* ``png`` / ``svg``: matplotlib Gantt chart (:mod:`.plot`, needs the
  ``plot`` extra); :func:`plot_schedule` returns the matplotlib figure
  and :func:`save_plot` writes it (both loaded on first use, so importing
  this package never imports matplotlib);
* ``html``: a self-contained plan report, Gantt chart with hover details,
  memory per device, metrics, bound and engines (:mod:`.html`).

Tasks are named by one rule everywhere (:mod:`.labels`): ``F3·m12`` is
stage 3's forward of micro-batch 12.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedsearch.errors import FormatError
from schedsearch.export.ascii import render_ascii as render_ascii
from schedsearch.export.chrome import chrome_trace as chrome_trace, write_chrome_trace as write_chrome_trace
from schedsearch.export.json import (
    plan_document as plan_document,
    read_json as read_json,
    write_json as write_json,
)
from schedsearch.export.torch_csv import (
    parse_torch_csv as parse_torch_csv,
    read_torch_csv as read_torch_csv,
    to_torch_csv as to_torch_csv,
    write_torch_csv as write_torch_csv,
)
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule

__all__ = [
    "EXPORT_FORMATS",
    "export",
    "render_ascii",
    "chrome_trace",
    "write_chrome_trace",
    "plan_document",
    "read_json",
    "write_json",
    "parse_torch_csv",
    "read_torch_csv",
    "to_torch_csv",
    "write_torch_csv",
    "plot_schedule",
    "save_plot",
]

#: Names served from :mod:`.plot` on first use: matplotlib is an optional extra.
_LAZY = {"plot_schedule": "schedsearch.export.plot", "save_plot": "schedsearch.export.plot"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'schedsearch.export' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

EXPORT_FORMATS = ("torch-csv", "chrome", "json", "ascii", "png", "svg", "html")


def export(
    problem: Problem,
    schedule: Schedule,
    format: str,
    path: str | Path | None = None,
    **options: Any,
) -> str | Path:
    """Export ``schedule`` in ``format``; write ``path`` if given, else return the text.

    Pictures (``png``, ``svg``) need a path. ``options`` go to the
    format's writer (``time_unit_us`` for chrome, ``labels`` for ascii,
    ``time_scale`` for pictures, ``meta`` for json; ``result``, ``meta``,
    ``table``, ``front`` for html).

    Examples
    --------
    >>> from schedsearch.export import EXPORT_FORMATS, export
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> print(export(problem, one_f_one_b(problem), "torch-csv"))
    0F0,0F1,0B0,0B1
    1F0,1B0,1F1,1B1
    >>> EXPORT_FORMATS
    ('torch-csv', 'chrome', 'json', 'ascii', 'png', 'svg', 'html')
    """
    if format not in EXPORT_FORMATS:
        raise FormatError(f"export: 'format' must be one of {EXPORT_FORMATS}, got {format!r}")
    if format in ("png", "svg"):
        if path is None:
            raise FormatError(f"export: format {format!r} is a picture and needs an output path")
        from schedsearch.export.plot import save_plot

        target = Path(path)
        if target.suffix.lower() != f".{format}":
            target = target.with_suffix(f".{format}")
        return save_plot(problem, schedule, target, **options)
    if format == "torch-csv":
        text = to_torch_csv(problem, schedule)
    elif format == "chrome":
        import json as _json

        from schedsearch.export.chrome import chrome_trace as _trace

        text = _json.dumps(_trace(problem, schedule, **options))
    elif format == "html":
        from schedsearch.export.html import report_html

        text = report_html(problem, schedule, **options)
    elif format == "json":
        from schedsearch.export.json import to_json

        text = to_json(problem, schedule, **options)
    else:
        text = render_ascii(problem, schedule, **options) + "\n"
    if path is None:
        return text
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target
