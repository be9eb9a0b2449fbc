"""Reading text files for the loaders, with the library's errors.

:func:`read_text` reads a file as UTF-8 (a UTF-8 byte-order mark is
skipped) and turns every way that can fail into a one-line
:class:`~schedsearch.errors.FormatError` naming the file: it cannot be read,
it is UTF-16 or UTF-32 (a byte-order mark or NUL bytes; editors on Windows
save "Unicode" text that way), or it holds bytes that are not UTF-8 (the
message gives the line). :func:`toml_value` writes one value of a TOML
file (the pipeline and calibration files).
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path
from typing import Any

from schedsearch.errors import FormatError

__all__ = ["read_text", "decode_text", "toml_value"]

_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def decode_text(data: bytes, what: str, error: type[ValueError] = FormatError) -> str:
    """``data`` decoded as UTF-8 (BOM skipped); ``what`` names the file in errors (``error``, of the
    hierarchy: :class:`~schedsearch.errors.FormatError` unless the caller's input has its own)."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise error(f"{what}: the file is {name} text (it starts with a {name} byte-order mark); "
                              f"save it as UTF-8 or ASCII")
    if b"\x00" in data[:4096]:
        raise error(f"{what}: the file holds NUL bytes (UTF-16 or UTF-32 text, or a binary file); "
                          f"save it as UTF-8 or ASCII text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{what}, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                          f"{exc.start}); save the file as UTF-8 or ASCII") from None


def read_text(path: str | os.PathLike[str], what: str, error: type[ValueError] = FormatError) -> str:
    """The text of the file at ``path`` (see the module notes); errors as :func:`decode_text`'s."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{what}: cannot read: {exc.strerror or exc}") from None
    return decode_text(data, what, error)


def toml_value(value: Any) -> str:
    """``value`` (a bool, number, string or list of them) as a TOML value; the pipeline and calibration files."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise FormatError(f"pipeline TOML: cannot write value {value!r} of type {type(value).__name__}")
