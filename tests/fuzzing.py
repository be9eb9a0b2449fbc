"""The fuzzing campaign's rule and its bookkeeping (``tests/fuzz/``).

Every input a campaign generates for a reader or a public entry must meet one rule:

- it is **answered** (the call returns), or **refused** by the library's own error
  (:class:`schedsearch.errors.SchedSearchError` and its subclasses) or, for a CLI, by an exit
  status with one message on standard error and no traceback;
- within :data:`CPU_LIMIT_S` seconds of process CPU time (measured by ``ITIMER_PROF``, so the bound
  does not depend on how busy the machine is); a call still running then counts as a hang;
- with a message of at most :data:`MESSAGE_LIMIT` characters.

:func:`attempt` and :func:`attempt_cli` enforce the rule and count every input in a :class:`Tally`
per target (a reader or an entry); a broken rule fails the test with the input named. At the end of
the session the tallies are printed as the campaign's table when ``SCHEDSEARCH_FUZZ_TABLE`` is set
(to a file path to write them as JSON too, or to ``-`` to print only): see ``tests/conftest.py``.

:func:`mutated` is the structured mutator the campaigns share: it takes a valid input as a tree of
dicts, lists and scalars (a parsed TOML or JSON file) and pushes numbers to extremes, drops fields,
swaps in wrong types, NaN and infinity, and duplicates or reorders records. :func:`to_toml` writes
such a tree back as TOML, so a mutated description goes through the real reader.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import signal
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
import pathlib
from typing import Any, Callable

from hypothesis import settings
from hypothesis import strategies as st

from schedsearch.errors import SchedSearchError

#: Largest message (an error's text, or a CLI's standard error) an input may produce.
MESSAGE_LIMIT = 600
#: Process CPU seconds one input may take before it counts as a hang.
CPU_LIMIT_S = 30.0


@dataclass
class Tally:
    """What one target (a reader or an entry) did with the inputs generated for it."""

    target: str
    generated: int = 0
    answered: int = 0
    refused: Counter = field(default_factory=Counter)  # error type name -> count
    max_cpu_s: float = 0.0
    max_message: int = 0
    tracebacks: int = 0
    hangs: int = 0

    def row(self) -> dict[str, Any]:
        return {"target": self.target, "generated": self.generated, "answered": self.answered,
                "refused": sum(self.refused.values()), "refused_by": dict(sorted(self.refused.items())),
                "max_cpu_s": round(self.max_cpu_s, 3), "max_message": self.max_message,
                "tracebacks": self.tracebacks, "hangs": self.hangs}


#: target -> its tally, filled as the campaign runs (one session)
TALLIES: dict[str, Tally] = {}


def tally(target: str) -> Tally:
    return TALLIES.setdefault(target, Tally(target))


class _Hang(BaseException):
    """Raised by the CPU-time alarm inside the call under test (a BaseException, so no
    ``except Exception`` in the library swallows it)."""


@contextlib.contextmanager
def _cpu_alarm(limit_s: float):
    def fire(signum, frame):  # noqa: ARG001
        # fire again soon: an exception raised where Python swallows it (a garbage-collector callback, a
        # destructor) must not let the call run on unbounded
        signal.setitimer(signal.ITIMER_PROF, 0.05)
        raise _Hang()

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def attempt(target: str, call: Callable[..., Any], *args: Any, describe: Any = None,
            cpu_limit_s: float = CPU_LIMIT_S, **kwargs: Any) -> tuple[str, Any]:
    """Call ``call(*args, **kwargs)`` under the campaign's rule and count it for ``target``.

    Returns ``("answered", value)`` or ``("refused", error)``. Fails (``AssertionError`` naming the
    input, or ``describe`` when given) on any other exception, a hang or an over-long message.
    """
    record = tally(target)
    record.generated += 1
    what = _short(describe if describe is not None else (args, kwargs))
    start = time.process_time()
    try:
        with _cpu_alarm(cpu_limit_s):
            value = call(*args, **kwargs)
    except _Hang:
        record.hangs += 1
        raise AssertionError(f"{target}: no answer within {cpu_limit_s} s of CPU time for {what}") from None
    except SchedSearchError as exc:
        record.max_cpu_s = max(record.max_cpu_s, time.process_time() - start)
        record.refused[type(exc).__name__] += 1
        message = str(exc)
        record.max_message = max(record.max_message, len(message))
        assert message.strip(), f"{target}: {type(exc).__name__} with an empty message for {what}"
        assert len(message) <= MESSAGE_LIMIT, (
            f"{target}: a {len(message)}-character message for {what}: {message[:400]}...")
        return "refused", exc
    except Exception as exc:  # anything else is a defect the campaign reports
        record.tracebacks += 1
        raise AssertionError(f"{target}: {type(exc).__name__} (not the library's own error) for {what}:\n"
                             f"{''.join(traceback.format_exception(exc))[-2000:]}") from None
    record.max_cpu_s = max(record.max_cpu_s, time.process_time() - start)
    record.answered += 1
    return "answered", value


def attempt_cli(target: str, argv: list[str], *, describe: Any = None,
                cpu_limit_s: float = CPU_LIMIT_S, answers: tuple[int, ...] = (0,),
                log: Callable[[str], bool] | None = None) -> tuple[int, str, str]:
    """Run ``schedsearch ARGV`` in this process under the campaign's rule; count it for ``target``.

    Returns ``(exit status, stdout, stderr)``. A status in ``answers`` is an answer (``validate``
    answers 1 when it finds violations); any other is a refusal and must come with a message on
    standard error, at most :data:`MESSAGE_LIMIT` characters and no traceback. ``log`` tells the
    lines of standard error that are the command's progress log (``plan`` prints one per
    candidate there), not its message: they are left out of the message's length.
    """
    from schedsearch.cli import main

    record = tally(target)
    record.generated += 1
    what = _short(describe if describe is not None else argv)
    out, err = io.StringIO(), io.StringIO()
    start = time.process_time()
    try:
        with _cpu_alarm(cpu_limit_s), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse's own refusal
                status = exc.code if isinstance(exc.code, int) else 2
    except _Hang:
        record.hangs += 1
        raise AssertionError(f"{target}: no answer within {cpu_limit_s} s of CPU time for {what}") from None
    except Exception as exc:
        record.tracebacks += 1
        raise AssertionError(f"{target}: the CLI let {type(exc).__name__} escape for {what}:\n"
                             f"{''.join(traceback.format_exception(exc))[-2000:]}") from None
    record.max_cpu_s = max(record.max_cpu_s, time.process_time() - start)
    stderr = err.getvalue()
    if "Traceback (most recent call last)" in stderr:
        record.tracebacks += 1
        raise AssertionError(f"{target}: a traceback on standard error for {what}:\n{stderr[-2000:]}")
    if status not in answers:
        record.refused[f"exit {status}"] += 1
        assert stderr.strip(), f"{target}: exit status {status} with nothing on standard error for {what}"
    else:
        record.answered += 1
    message = stderr if log is None else "".join(line for line in stderr.splitlines(keepends=True) if not log(line))
    record.max_message = max(record.max_message, len(message))
    assert len(message) <= MESSAGE_LIMIT, (
        f"{target}: {len(message)} characters on standard error for {what}: {message[:400]}...")
    return status, out.getvalue(), stderr


@contextlib.contextmanager
def written(files: dict[str, str]) -> Iterator[pathlib.Path]:
    """A temporary folder holding ``files`` (name -> text), removed afterwards: where a reader or a
    command finds the input under test."""
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            (pathlib.Path(folder) / name).write_text(text)
        yield pathlib.Path(folder)


def attempt_file(target: str, read: Callable[..., Any], name: str, text: str, *, describe: Any = None,
                 **kwargs: Any) -> tuple[str, Any]:
    """:func:`attempt` of ``read(path)`` on a file ``name`` holding ``text``."""
    with written({name: text}) as folder:
        return attempt(target, read, folder / name, describe=describe, **kwargs)


def examples(ci: int) -> settings:
    """Settings of a campaign test: ``ci`` examples in the ``ci`` profile, scaled with the loaded
    profile's ``max_examples`` (the ``thorough`` profile runs about eight times as many)."""
    scale = settings.default.max_examples / 60
    return settings(settings.default, max_examples=max(1, round(ci * scale)))


# ---------------------------------------------------------------------------------------------
# Structured mutation of valid inputs

#: Numbers a mutation pushes a field to.
EXTREMES: tuple[Any, ...] = (0, -1, 1, 2**31, 2**63, 10**9, 10**30, -(10**9), 0.0, -0.0, 1e-300, 1e308,
                             -1e308, math.inf, -math.inf, math.nan, 0.5, -0.5)
#: Values of the wrong type a mutation swaps in.
WRONG_TYPES: tuple[Any, ...] = ("", "abc", "1", "nan", "1e999", True, False, None, [], [1, 2], {}, {"a": 1})

Path = tuple[Any, ...]


def _paths(tree: Any, prefix: Path = ()) -> list[Path]:
    found: list[Path] = [prefix] if prefix else []
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found += _paths(value, prefix + (index,))
    return found


def _get(tree: Any, path: Path) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _copy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _copy(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_copy(value) for value in tree]
    return tree


def _mutate_once(draw: Callable[[Any], Any], tree: Any) -> tuple[Any, str]:
    paths = _paths(tree)
    if not paths:
        return tree, "unchanged"
    path = draw(st.sampled_from(paths))
    parent, key = _get(tree, path[:-1]), path[-1]
    value = parent[key]
    moves = ["extreme", "wrong type", "drop"]
    if isinstance(value, list) and value:
        moves += ["duplicate", "reorder", "empty"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        moves += ["scale"]
    move = draw(st.sampled_from(moves))
    if move == "extreme":
        parent[key] = draw(st.sampled_from(EXTREMES))
    elif move == "wrong type":
        parent[key] = _copy(draw(st.sampled_from(WRONG_TYPES)))  # a copy: a later move may change it in place
    elif move == "drop":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif move == "duplicate":
        index = draw(st.integers(0, len(value) - 1))
        value.insert(index, _copy(value[index]))
    elif move == "reorder":
        parent[key] = draw(st.permutations(value))
    elif move == "empty":
        parent[key] = []
    else:  # scale a number by a power of ten
        factor = draw(st.sampled_from((1e-9, 1e-3, 10, 1e3, 1e6, 1e12)))
        parent[key] = type(value)(value * factor) if isinstance(value, int) and factor >= 1 else value * factor
    return tree, f"{move} at {'.'.join(map(str, path))}"


@st.composite
def mutated(draw: Callable[[Any], Any], tree: Any, *, most: int = 3) -> tuple[Any, list[str]]:
    """A copy of ``tree`` with 1 to ``most`` structured mutations, and what they were."""
    copy = _copy(tree)
    done = []
    for _ in range(draw(st.integers(1, most))):
        copy, what = _mutate_once(draw, copy)
        done.append(what)
    return copy, done


#: The numbers :func:`each_number_pushed` puts in every numeric field in turn.
PUSHED: tuple[Any, ...] = (-1, 10**9, 2**63, 1e308, math.nan)


def each_number_pushed(tree: Any, values: tuple[Any, ...] = PUSHED) -> list[tuple[Any, str]]:
    """Copies of ``tree`` with one numeric field (not a bool) set to one of ``values``, every field and
    value in turn, and what was changed: the extremes, deterministically, where a random mutation
    would reach a given field only by luck. The ``thorough`` profile reads them all; a smaller one a
    share in proportion (every eighth in ``ci``), evenly spread."""
    out = []
    for path in _paths(tree):
        value = _get(tree, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            for pushed in values:
                copy = _copy(tree)
                _get(copy, path[:-1])[path[-1]] = pushed
                out.append((copy, f"{'.'.join(map(str, path))} = {pushed!r}"))
    step = max(1, round(500 / settings.default.max_examples))
    return out[::step]


# ---------------------------------------------------------------------------------------------
# TOML writer for mutated trees (tomllib reads, it does not write)

def _toml_key(key: Any) -> str:
    key = str(key)
    return key if key and all(ch.isalnum() or ch in "-_" for ch in key) else json.dumps(key)


def _toml_scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list) and not any(isinstance(item, dict) for item in value):
        items = [_toml_scalar(item) for item in value]
        return None if None in items else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    if isinstance(value, dict) and not value:
        return "{}"
    return None


def to_toml(tree: dict[str, Any]) -> str:
    """``tree`` (dicts, lists, scalars; ``None`` values left out, as TOML has no null) as TOML text."""
    lines: list[str] = []

    def table(node: dict[str, Any], prefix: list[str]) -> None:
        nested: list[tuple[str, Any]] = []
        for key, value in node.items():
            if value is None:
                continue
            text = _toml_scalar(value)
            if text is not None:
                lines.append(f"{_toml_key(key)} = {text}")
            else:
                nested.append((key, value))
        for key, value in nested:
            name = prefix + [_toml_key(key)]
            if isinstance(value, dict):
                lines.append(f"\n[{'.'.join(name)}]")
                table(value, name)
            else:  # a list holding tables: an array of tables; its plain items are left out
                for item in value:
                    if isinstance(item, dict):
                        lines.append(f"\n[[{'.'.join(name)}]]")
                        table(item, name)

    table(tree, [])
    return "\n".join(lines) + "\n"


def table_rows() -> list[dict[str, Any]]:
    """The tallies' rows, one per target, leaving out the harness's own (names starting ``_``)."""
    return [TALLIES[name].row() for name in sorted(TALLIES) if not name.startswith("_")]


def campaign_table(rows: list[dict[str, Any]] | None = None) -> str:
    """The tallies as a Markdown table, one row per target."""
    rows = rows if rows is not None else table_rows()
    head = ("| target | generated | answered | refused (by type) | max CPU s | max message | tracebacks | "
            "hangs |\n|---|---:|---:|---|---:|---:|---:|---:|")
    body = []
    for row in rows:
        by = ", ".join(f"{name} {count}" for name, count in row["refused_by"].items())
        body.append(f"| {row['target']} | {row['generated']} | {row['answered']} | {row['refused']}"
                    f"{f' ({by})' if by else ''} | {row['max_cpu_s']} | {row['max_message']} | "
                    f"{row['tracebacks']} | {row['hangs']} |")
    return "\n".join([head, *body])
