"""Versioned schedule JSON: the problem, the schedule and its metrics in one document.

Document (``"format": "schedsearch.plan"``, ``"version": 1``)::

    {"format": "schedsearch.plan", "version": 1,
     "problem": <Problem.to_dict()>, "schedule": <Schedule.to_dict()>,
     "metrics": <Metrics.to_dict()>, "meta": {...}}

``problem`` and ``schedule`` carry their own format tags and versions;
``metrics`` is informative (recomputed on reading, never trusted); ``meta``
holds free-form notes (a time scale, the generator's name). Reading checks
the tags and versions and, by default, validates the schedule against the
problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedsearch._io import read_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError, InvalidScheduleError, ValidationFailedError
from schedsearch.problem import Problem
from schedsearch.schedule import Schedule, metrics
from schedsearch.validate import assert_valid

__all__ = ["PLAN_FORMAT", "PLAN_FORMAT_VERSION", "plan_document", "to_json", "write_json", "read_json", "from_document"]

PLAN_FORMAT = "schedsearch.plan"
PLAN_FORMAT_VERSION = 1


def plan_document(problem: Problem, schedule: Schedule, *, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The document of ``schedule`` for ``problem`` (see the module docstring).

    It carries the problem, so a plan can be checked and re-used without
    anything else; ``metrics`` are computed for readers, not read back.

    Examples
    --------
    >>> from schedsearch import export, handcrafted, placements
    >>> problem = placements.vshape(2, 2)
    >>> document = export.plan_document(problem, handcrafted.one_f_one_b(problem), meta={"note": "1F1B"})
    >>> sorted(document), document["metrics"]["makespan"], document["meta"]
    (['format', 'meta', 'metrics', 'problem', 'schedule', 'version'], 9, {'note': '1F1B'})
    """
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_FORMAT_VERSION,
        "problem": problem.to_dict(),
        "schedule": schedule.to_dict(),
        "metrics": metrics(problem, schedule).to_dict(),
        "meta": dict(meta or {}),
    }


def to_json(problem: Problem, schedule: Schedule, *, meta: Mapping[str, Any] | None = None, indent: int | None = 2) -> str:
    return json.dumps(plan_document(problem, schedule, meta=meta), indent=indent)


def write_json(problem: Problem, schedule: Schedule, path: str | Path, *, meta: Mapping[str, Any] | None = None) -> Path:
    """Write the document of ``schedule`` for ``problem`` to ``path`` (see :func:`plan_document`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from schedsearch.export import read_json, write_json
    >>> from schedsearch.handcrafted import one_f_one_b
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> schedule = one_f_one_b(problem)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = write_json(problem, schedule, Path(folder) / "plan.json", meta={"by": "hand"})
    ...     print(read_json(path) == (problem, schedule, {"by": "hand"}))
    True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(problem, schedule, meta=meta))
    return path


def from_document(doc: Mapping[str, Any], *, validate: bool = True) -> tuple[Problem, Schedule, dict[str, Any]]:
    """``(problem, schedule, meta)`` of a document; validates the schedule unless told not to."""
    if not isinstance(doc, Mapping):
        raise FormatError("plan document: must be a JSON object")
    if doc.get("format") != PLAN_FORMAT:
        raise FormatError(f"plan document: 'format' must be {PLAN_FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != PLAN_FORMAT_VERSION:
        raise FormatError(
            f"plan document: 'version' {doc.get('version')!r} is not supported (this library reads {PLAN_FORMAT_VERSION})"
        )
    for key in ("problem", "schedule"):
        if key not in doc:
            raise FormatError(f"plan document: missing field {key!r}")
    if not isinstance(doc.get("meta") or {}, Mapping):
        raise FormatError(f"plan document: 'meta' must be an object of notes, got {type(doc['meta']).__name__}")
    problem = Problem.from_dict(doc["problem"])
    schedule = Schedule.from_dict(doc["schedule"])
    if validate:
        try:
            assert_valid(problem, schedule, "schedule of the plan document")
        except ValidationFailedError as exc:
            raise InvalidScheduleError(str(exc)) from None
    return problem, schedule, dict(doc.get("meta") or {})


def read_json(source: str | Path, *, validate: bool = True) -> tuple[Problem, Schedule, dict[str, Any]]:
    """Read a document from a path (or JSON text): ``(problem, schedule, meta)``.

    The schedule is validated against the problem unless ``validate`` is
    False; a plan that breaks the problem's rules raises
    :class:`~schedsearch.errors.InvalidScheduleError`.

    Examples
    --------
    >>> from schedsearch.export import read_json
    >>> from schedsearch.export.json import to_json
    >>> from schedsearch.handcrafted import gpipe
    >>> from schedsearch.placements import vshape
    >>> problem = vshape(2, 2)
    >>> text = to_json(problem, gpipe(problem))
    >>> problem_read, schedule, meta = read_json(text)
    >>> problem_read == problem, schedule.makespan, meta
    (True, 9, {})
    """
    if isinstance(source, Path) or not source.lstrip().startswith("{"):
        text = read_text(source, f"plan document {str(source)!r}")
    else:
        text = source
    return from_document(load_document(text, "plan document"), validate=validate)
