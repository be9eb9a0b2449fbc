"""Reading JSON documents and checking their shape, with the library's errors.

Shared by the document readers (:meth:`Problem.from_json
<schedsearch.problem.Problem.from_json>`, :meth:`Schedule.from_json
<schedsearch.schedule.Schedule.from_json>`, the plan document): every way
``json.loads`` can fail (bad syntax, nesting deeper than the interpreter's
recursion limit, an integer literal longer than Python converts, duplicate
keys that would silently shadow each other) becomes a
:class:`~schedsearch.errors.FormatError` naming the document.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from schedsearch.errors import FormatError

__all__ = ["load_document", "check_fields", "short_repr", "listed", "missing_numbers"]

_SHORT = 120
_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = 60
_repr.maxother = 60


def short_repr(value: Any) -> str:
    """``repr(value)``, cut to a readable length (values in error messages may be huge or deeply nested)."""
    try:
        text = repr(value)
    except RecursionError:
        return _repr.repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


#: How many items of a list a message shows before it gives the count of the rest.
SHOWN = 5


def listed(items: Sequence[Any], count: int | None = None, shown: int = SHOWN) -> str:
    """The first ``shown`` of ``items`` (each as ``str``), and how many more there are of ``count`` in all
    (default: ``len(items)``): a list in a message stays short however long the list is.

    Examples
    --------
    >>> from schedsearch._json import listed
    >>> listed([2, 3]), listed(range(2, 10**6)), listed([7, 8], count=40)
    ('2, 3', '2, 3, 4, 5, 6 and 999993 more', '7, 8 and 38 more')
    """
    count = len(items) if count is None else count
    head = ", ".join(str(x) for x in items[:shown])
    return head if count <= min(shown, len(items)) else f"{head} and {count - min(shown, len(items))} more"


def missing_numbers(present: Collection[int], top: int, shown: int = SHOWN) -> tuple[list[int], int]:
    """The first ``shown`` numbers of ``0 .. top-1`` not in ``present``, and how many are missing in all.

    Takes time in the size of ``present``, not of ``top`` (a number read from a file may be huge).

    Examples
    --------
    >>> from schedsearch._json import missing_numbers
    >>> missing_numbers({0, 1, 10**9}, 10**9 + 1)
    ([2, 3, 4, 5, 6], 999999998)
    """
    count = top - sum(1 for x in set(present) if 0 <= x < top)
    first: list[int] = []
    x = 0
    while len(first) < min(shown, count) and x < top:
        if x not in present:
            first.append(x)
        x += 1
    return first, count


def _no_duplicates(what: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise FormatError(f"{what}: the field {key!r} appears twice in one object")
            out[key] = value
        return out

    return hook


def load_document(text: Any, what: str) -> dict[str, Any]:
    """Parse ``text`` (str or bytes) as a JSON object; ``what`` names the document in errors."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise FormatError(f"{what}: must be JSON text (str or bytes), got {type(text).__name__}")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates(what))
    except FormatError:
        raise
    except json.JSONDecodeError as exc:
        raise FormatError(f"{what}: not valid JSON ({exc})") from None
    except RecursionError:
        raise FormatError(f"{what}: nested too deeply to read (lists or objects nested beyond the "
                          f"interpreter's recursion limit)") from None
    except UnicodeDecodeError as exc:
        raise FormatError(f"{what}: not UTF-8, UTF-16 or UTF-32 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's int-conversion limit
        raise FormatError(f"{what}: cannot be read ({exc})") from None
    if not isinstance(data, Mapping):
        raise FormatError(f"{what}: must be a JSON object, got {type(data).__name__}")
    return data


def check_fields(entity: str, d: Mapping[Any, Any], known: Iterable[str], required: Iterable[str] = ()) -> None:
    """Raise :class:`FormatError` naming the first unknown or missing field of ``d``."""
    known = tuple(known)
    for key in d:
        if key not in known:
            raise FormatError(f"{entity}: unknown field {short_repr(key)} (known: {', '.join(known)})")
    for key in required:
        if key not in d:
            raise FormatError(f"{entity}: missing field {key!r}")


def check_header(d: Any, kind: str, version: int) -> None:
    """Check that ``d`` is a ``schedsearch.{kind}`` document of format ``version``
    (an integer, not merely equal to one); raise :class:`FormatError` otherwise."""
    if not isinstance(d, Mapping):
        raise FormatError(f"{kind} document: must be a JSON object, got {type(d).__name__}")
    if d.get("format") != f"schedsearch.{kind}":
        raise FormatError(
            f"{kind} document: 'format' must be 'schedsearch.{kind}', got {short_repr(d.get('format'))}"
        )
    found = d.get("version")
    if type(found) is not int or found != version:
        raise FormatError(
            f"{kind} document: 'version' {short_repr(found)} is not supported "
            f"(this library reads the integer {version})"
        )
