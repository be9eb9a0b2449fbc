"""The one door of the commands that read files: what a path holds, and a clear refusal when it is not what
the command reads.

:func:`identify` resolves a path to an :class:`Input`: the file read (a plan folder, what ``schedsearch
plan --out`` writes, gives its ``plan.json``), its syntax (JSON, TOML, a ``.csv`` file, other text) and
its :class:`InputKind`, decided by the document's own fields (a ``"format"`` tag, the fields a pipeline
description or a search result holds), never by the error a reader would raise. :func:`open_input` is
what a command calls: it refuses, in one line naming the path, what the path holds and what to do with
it, a missing path, a folder without ``plan.json``, an empty or binary file, and a known document of a
kind the command does not read (a pipeline description given to ``run``, a plan given to ``plan``). A
file of no known kind goes on to the command's own reader, whose error names the field at fault.
:func:`plan_of` gives the problem, schedule and metadata of a plan document or search result, for
``run``, ``report`` and ``export`` alike.
"""

from __future__ import annotations

import enum
import json
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import attrs

from schedsearch._io import decode_text
from schedsearch._json import load_document
from schedsearch.errors import FormatError, InvalidProblemError, InvalidScheduleError, ValidationFailedError

__all__ = ["InputKind", "Input", "identify", "open_input", "plan_of", "schedule_in", "PLAN_INPUTS"]


class InputKind(enum.Enum):
    """What a file holds; the value is how a message names it."""

    PIPELINE = "a pipeline description"
    LAYER_MODEL = "a model in layers"
    PLAN = "a plan document"
    RESULT = "a search result"  # holding its schedule (and its problem, unless the problem document is beside it)
    RESULT_SUMMARY = "a search result summary"  # read with the problem and schedule documents beside it
    PROBLEM = "a problem document"
    SCHEDULE = "a schedule document"
    PERIODIC = "a periodic schedule document"
    DAG = "an operation DAG document"
    CSV = "a compute-only CSV"
    CALIBRATION = "a calibration"
    PROFILE = "a profile (the raw figures schedsearch profile measured)"
    RUN_RESULT = "a run's result (what schedsearch run writes)"
    TRACE = "a Chrome trace"
    FRONT = "a Pareto front"
    UNKNOWN = "a document of no kind schedsearch reads"


#: what ``run``, ``report`` and ``export`` read as a plan (a plan folder resolves to its ``plan.json``)
PLAN_INPUTS = (InputKind.PLAN, InputKind.RESULT, InputKind.RESULT_SUMMARY)

#: the syntaxes each kind's reader parses (an unrecognised file of one of them goes on to that reader)
_SYNTAXES: dict[InputKind, tuple[str, ...]] = {
    InputKind.PIPELINE: ("json", "toml"),
    InputKind.CSV: ("csv", "text"),
    InputKind.CALIBRATION: ("json", "toml"),
}

#: how the list of what a command reads names each kind
_TAKES: dict[InputKind, str] = {
    InputKind.PIPELINE: "a pipeline description (TOML or JSON)",
    InputKind.PLAN: "a plan folder or plan document (plan.json)",
    InputKind.RESULT: "a search result (NAME.result.json)",
    InputKind.RESULT_SUMMARY: "a search result (NAME.result.json)",
    InputKind.PROBLEM: "a problem document (NAME.problem.json)",
    InputKind.SCHEDULE: "a schedule document (NAME.schedule.json)",
    InputKind.CSV: "a compute-only CSV (schedule.csv)",
    InputKind.TRACE: "torch profiler traces (Chrome trace JSON)",
}

_FORMATS = {"schedsearch.plan": InputKind.PLAN, "schedsearch.problem": InputKind.PROBLEM,
            "schedsearch.schedule": InputKind.SCHEDULE, "schedsearch.periodic": InputKind.PERIODIC,
            "schedsearch.dag": InputKind.DAG}


@attrs.frozen(kw_only=True)
class Input:
    """A file a command was given.

    ``given`` is the path as named, ``path`` the file read (``given/plan.json`` for a plan folder),
    ``syntax`` one of ``json``, ``toml``, ``csv`` (by the name) and ``text``, ``document`` the parsed
    JSON or TOML (None when it is not one or does not parse; ``syntax_error`` then says why).
    """

    given: Path
    path: Path
    kind: InputKind
    syntax: str
    text: str
    document: Any = None
    syntax_error: str | None = None

    @property
    def folder(self) -> bool:
        """The path named a plan folder (its ``plan.json`` was read)."""
        return self.path != self.given

    @property
    def description(self) -> str:
        return "a plan folder (it holds plan.json)" if self.folder else self.kind.value


def _kind_of(document: Any, syntax: str) -> InputKind:
    """The kind of a parsed JSON or TOML document, by its own fields."""
    if not isinstance(document, Mapping):
        return InputKind.UNKNOWN
    tag = document.get("format")
    if isinstance(tag, str) and tag in _FORMATS:
        return _FORMATS[tag]
    keys = set(document)
    if "status" in keys and syntax == "json":
        return InputKind.RESULT if "schedule" in keys else InputKind.RESULT_SUMMARY
    if {"layers", "global_batch"} <= keys:
        return InputKind.LAYER_MODEL
    if "num_ranks" in keys or ("stages" in keys and isinstance(document.get("stages"), list)):
        return InputKind.PIPELINE
    if {"latency_ms", "action_overhead_ms", "step_overhead_ms"} <= keys:
        return InputKind.CALIBRATION
    if {"sizes", "time_unit_s", "memory_unit_bytes", "stages"} <= keys:
        return InputKind.PROFILE
    if {"grads_equal", "ranks", "num_processes"} <= keys:
        return InputKind.RUN_RESULT
    if isinstance(document.get("traceEvents"), list):
        return InputKind.TRACE
    if isinstance(document.get("points"), list):
        return InputKind.FRONT
    return InputKind.UNKNOWN


def _syntax_of(path: Path, text: str) -> tuple[str, Any, str | None]:
    """``(syntax, document, error)``: the name's suffix decides JSON, TOML or CSV; other names, the text."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv", None, None
    if suffix == ".json" or (suffix != ".toml" and text.lstrip()[:1] in ("{", "[")):
        try:
            return "json", load_document(text, "JSON"), None
        except FormatError as exc:
            error = str(exc).removeprefix("JSON: ")
            try:  # a JSON list is still JSON: its reader names what it wanted instead
                data = json.loads(text)
            except (ValueError, RecursionError):
                return "json", None, error
            return ("json", None, error) if isinstance(data, Mapping) else ("json", data, None)
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        if suffix == ".toml":
            return "toml", None, f"not valid TOML ({exc})"
        return "text", None, None
    if suffix == ".toml" or data:
        return "toml", data, None
    return "text", None, None


def identify(path: str | Path, command: str = "", takes: Collection[InputKind] = ()) -> Input:
    """What ``path`` holds (see the module notes).

    A missing path, a folder without ``plan.json``, a file that cannot be read, an empty file and one that
    is not UTF-8 text raise :class:`~schedsearch.errors.FormatError` naming the path; ``command`` and
    ``takes`` (the kinds it reads) only shape that message.
    """
    given = Path(path)
    if not given.exists():
        raise FormatError(f"{str(given)!r}: no such file or folder{_reads(command, takes, '; ')}")
    target = given
    if given.is_dir():
        target = given / "plan.json"
        if not target.is_file():
            what = " with no plan.json in it (the plan document schedsearch plan --out writes)" \
                if InputKind.PLAN in takes or not takes else ", not a file"
            raise FormatError(f"{str(given)!r} is a folder{what}{_reads(command, takes, '; ')}")
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise FormatError(f"{str(target)!r}: cannot read: {exc.strerror or exc}{_reads(command, takes, '; ')}") from None
    if not data.strip():
        raise FormatError(f"{str(target)!r} is empty{_reads(command, takes, '; ')}")
    text = decode_text(data, repr(str(target)))
    syntax, document, error = _syntax_of(target, text)
    if syntax == "csv":
        kind = InputKind.CSV
    elif document is None:
        kind = InputKind.UNKNOWN
    else:
        kind = _kind_of(document, syntax)
    return Input(given=given, path=target, kind=kind, syntax=syntax, text=text, document=document,
                 syntax_error=error)


def _reads(command: str, takes: Collection[InputKind], lead: str) -> str:
    if not command or not takes:
        return ""
    names = list(dict.fromkeys(_TAKES.get(k, k.value) for k in takes))
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"{lead}{command} takes {listed}"


def _next_step(inp: Input, command: str) -> str:
    """What to do with a file of ``inp``'s kind, the commands written out."""
    p, kind = str(inp.given), inp.kind
    if kind is InputKind.PIPELINE:
        then = command if command in ("run", "report", "export") else "run"
        return f"plan it first: schedsearch plan {p} --out DIR, then schedsearch {then} DIR"
    if kind is InputKind.LAYER_MODEL:
        then = command if command in ("run", "report", "export") else "run"
        return f"plan it first: schedsearch plan {p} --out DIR, then schedsearch {then} DIR"
    if kind is InputKind.PLAN:
        return f"run it with schedsearch run {p}, or write its report with schedsearch report {p}"
    if kind in (InputKind.RESULT, InputKind.RESULT_SUMMARY):
        return f"write its report with schedsearch report {p}, or run it with schedsearch run {p}"
    if kind is InputKind.CSV:
        return (f"run it with schedsearch run {p}; a CSV holds no planned times, so reports, exports and "
                f"--emulate read the plan document it was written from")
    if kind is InputKind.PROBLEM:
        return (f"search it with schedsearch search --problem {p}, or check a schedule against it with "
                f"schedsearch validate {p} SCHEDULE")
    if kind is InputKind.SCHEDULE:
        return f"check it against its problem with schedsearch validate PROBLEM {p}"
    if kind is InputKind.CALIBRATION:
        return f"name it in a pipeline description (calibration = {json.dumps(inp.path.name)}) and plan that"
    if kind is InputKind.PROFILE:
        return ("search the NAME.problem.json written beside it (schedsearch search --problem), or profile with "
                "--calibrate for a pipeline description to plan")
    if kind is InputKind.RUN_RESULT:
        return "give the plan that was run instead"
    if kind is InputKind.TRACE:
        return "open it in Perfetto; schedsearch profile --traces reads torch profiler traces"
    if kind is InputKind.FRONT:
        return f"plot it beside a plan with schedsearch report PLAN --front {p}"
    if kind is InputKind.DAG:
        return f"schedule it with schedsearch jobshop {p}"
    return ""


def open_input(path: str | Path, command: str, takes: Collection[InputKind]) -> Input:
    """The file ``path`` names, checked to be one of ``takes`` (the kinds ``command`` reads).

    A known kind the command does not read is refused with what it is and what to do with it; a file of
    no known kind (or one that does not parse) goes on, as the first of ``takes`` whose reader parses its
    syntax, to that reader, which names the fault; with no such reader it is refused here.
    """
    inp = identify(path, command, takes)
    if inp.kind in takes:
        return inp
    if inp.kind is InputKind.UNKNOWN:
        for kind in takes:
            if inp.syntax in _SYNTAXES.get(kind, ("json",)):
                return inp
        what = inp.syntax_error or f"{'JSON' if inp.syntax == 'json' else 'TOML' if inp.syntax == 'toml' else 'text'} " \
                                   f"of no kind schedsearch reads"
        raise FormatError(f"{str(inp.given)!r}: {what}{_reads(command, takes, '; ')}")
    step = _next_step(inp, command)
    raise FormatError(f"{str(inp.given)!r} is {inp.description}{_reads(command, takes, '; ')}"
                      f"{'. ' + step[0].upper() + step[1:] if step else ''}")


def schedule_in(inp: Input) -> Any:
    """The schedule of a schedule document or of a search result that holds one."""
    from schedsearch.schedule import Schedule

    if inp.kind in (InputKind.RESULT, InputKind.RESULT_SUMMARY) and isinstance(inp.document, Mapping) \
            and "schedule" in inp.document:
        if inp.document["schedule"] is None:
            raise FormatError(f"{str(inp.given)!r} holds no schedule (the search found no plan)")
        return Schedule.from_dict(inp.document["schedule"])
    return Schedule.from_json(inp.text)


def plan_of(inp: Input) -> tuple[Any, Any, dict[str, Any]]:
    """``(problem, schedule, meta)`` of a plan document or a search result, the schedule validated.

    A search result holds its problem and schedule, or is read with the ``NAME.problem.json`` and
    ``NAME.schedule.json`` beside it (``NAME.result.json``) for what it does not hold; its ``meta`` is
    ``{"result": ...}`` (the result without its problem and schedule).
    """
    from schedsearch.export.json import PLAN_FORMAT, from_document
    from schedsearch.problem import Problem
    from schedsearch.validate import assert_valid

    p = str(inp.given)
    if inp.kind is InputKind.PLAN:
        try:
            return from_document(inp.document)
        except (FormatError, InvalidProblemError, InvalidScheduleError) as exc:  # the document's own fault: name it
            raise type(exc)(f"{p!r}: {exc}") from None
    if inp.syntax_error is not None:
        raise FormatError(f"{p!r}: {inp.syntax_error}")
    if inp.kind not in (InputKind.RESULT, InputKind.RESULT_SUMMARY):
        raise FormatError(f"{p!r} is neither a plan document ('format': {PLAN_FORMAT!r}) nor a search result "
                          f"(NAME.result.json)")
    doc = inp.document
    stem = inp.path.name.removesuffix(".json").removesuffix(".result")
    siblings = {key: inp.path.with_name(f"{stem}.{key}.json") for key in ("problem", "schedule")
                if not isinstance(doc.get(key), Mapping) and not (key == "schedule" and key in doc)}
    if not all(path.is_file() for path in siblings.values()):
        raise FormatError(f"{p!r} is a search result without its {' and '.join(siblings)}; it needs "
                          f"{' and '.join(path.name for path in siblings.values())} beside it")
    problem = Problem.from_dict(doc["problem"]) if "problem" not in siblings else \
        Problem.from_json(identify(siblings["problem"]).text)
    schedule = schedule_in(inp) if "schedule" not in siblings else \
        schedule_in(identify(siblings["schedule"]))
    try:
        assert_valid(problem, schedule, "schedule")
    except ValidationFailedError as exc:
        raise InvalidScheduleError(str(exc)) from None
    return problem, schedule, {"result": {k: v for k, v in doc.items() if k not in ("problem", "schedule")}}
