"""The text checks every vendor-tool parser makes before it reads a line: size, encoding, control characters.

A vendor tool's output reaches fleetmon as bytes (an ssh pipe, an imported file) or as text. What
:func:`tool_text` accepts is what a tool writes: UTF-8 (a UTF-8 byte-order mark is dropped), or
UTF-16/UTF-32 *with* a byte-order mark (Windows tools and editors save files so; decoded as the mark
says). Everything else is refused with a one-line :class:`~fleetmon.sources.SourceError`, before any
value is read, so a damaged capture never becomes a wrong value:

* more than ``max_chars`` bytes or characters, or more than :data:`MAX_LINES` lines;
* bytes that are not UTF-8 (and carry no UTF-16/32 byte-order mark);
* a line longer than :data:`MAX_LINE_CHARS` (except in JSON);
* a control character other than tab, line feed and carriage return (NUL, ESC, the C1 range):
  the tools print none, so such text is a binary file, a terminal capture with colours, or an
  attack on whoever reads the values later.

Standard library only (core layer).
"""

from __future__ import annotations

import codecs
import csv
import re

from fleetmon.i18n import N_, Text
from fleetmon.sources import SourceError
from fleetmon.text import printable

__all__ = ["MAX_CHARS", "MAX_LINES", "csv_rows", "last_value_cut", "tool_text"]

MAX_CHARS = 16 * 1024 * 1024
"""Largest output read, in bytes and in characters (the largest real capture is a few KB; an
``xpu-smi dump`` left running for a day at 1 s on 8 devices is about 6 MB)."""
MAX_LINES = 250_000
"""Lines in one output (bounds the work per line)."""
MAX_LINE_CHARS = 4096
"""A longer line is no tool's output (the longest real one is about 250 characters)."""

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))  # UTF-32 LE before UTF-16 LE
_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def tool_text(data: bytes | str, what: str, max_chars: int = MAX_CHARS,
              max_line_chars: int | None = MAX_LINE_CHARS) -> str:
    """``data`` as text, checked (see the module docstring); ``what`` names the format in errors.

    ``max_line_chars``: None for JSON, which a tool may print on one line (the JSON parser is linear).

    Raises:
        SourceError: too large, undecodable, a control character, too many or too long lines.
    """
    if len(data) > max_chars:
        too_large = (N_("{what}: {count} bytes, more than the {limit} an output may have") if isinstance(data, bytes)
                     else N_("{what}: {count} characters, more than the {limit} an output may have"))
        raise SourceError(Text(too_large, what=what, count=len(data), limit=max_chars))
    if isinstance(data, bytes):
        encoding, skip = "utf-8", 0
        for bom, name in _BOMS:
            if data.startswith(bom):
                encoding, skip = name, len(bom)
                break
        try:
            text = data[skip:].decode(encoding)
        except UnicodeDecodeError as exc:
            raise SourceError(Text(N_("{what}: not {encoding} text (byte {byte} cannot be read); save the output "
                                      "as UTF-8"), what=what, encoding=encoding.upper(),
                                   byte=exc.start + skip)) from None
    else:
        text = data.removeprefix("\ufeff")
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise SourceError(Text(N_("{what}: a control character ({character}) in line {line}: not the tool's output"),
                               what=what, character=printable(bad.group()), line=line))
    if text.count("\n") + text.count("\r") > 2 * MAX_LINES:
        raise SourceError(Text(N_("{what}: more than {limit} lines"), what=what, limit=MAX_LINES))
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise SourceError(Text(N_("{what}: more than {limit} lines"), what=what, limit=MAX_LINES))
    for at, row in enumerate(lines, 1):
        if max_line_chars is not None and len(row) > max_line_chars:
            raise SourceError(Text(N_("{what}: line {line} has {count} characters, more than the {limit} a line of "
                                      "the tool's output may have"), what=what, line=at, count=len(row),
                                   limit=max_line_chars))
    # Keep the final line break (or its absence): a cut output lacks it (see :func:`last_value_cut`).
    return "\n".join(lines) + ("\n" if text.endswith(("\n", "\r")) else "")


def csv_rows(text: str) -> list[tuple[int, list[str]]]:
    """(line number, values) of each non-blank line of a ``, ``-separated table, values stripped.

    The stdlib reader (quotes, if a tool ever writes them, are honoured); lines are already bounded
    by :func:`tool_text`.
    """
    out: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        values = next(csv.reader([line], skipinitialspace=True))
        out.append((number, [v.strip() for v in values]))
    return out


_SHAPE = re.compile(r"-?\d{1,20}(?:\.(\d{1,20}))?\s*([^\d\s]{0,16})")


def _shape(value: str) -> tuple[int, str] | None:
    """(digits after the point, unit) of a number such as ``281.13`` or ``100 %``; None for anything else."""
    m = _SHAPE.fullmatch(value.strip())
    return None if m is None else (len(m.group(1) or ""), m.group(2).lower())


def last_value_cut(text: str, rows: list[tuple[int, list[str]]]) -> bool:
    """Whether the output's last row looks cut inside its last value.

    A capture cut mid-line (a copy that stopped, a pipe that broke) can still have the right number
    of values, the last one shortened: ``100 %`` becomes ``10``, ``281.13`` becomes ``281.1``. Tools
    end their output with a line break and print a column in one shape, so: no final line break, and
    the last value shaped unlike the same column in the row before (both numbers) → cut. ``rows``
    are the data rows (no header).
    """
    if text.endswith("\n") or len(rows) < 2 or len(rows[-1][1]) != len(rows[-2][1]) or not rows[-1][1]:
        return False
    last, before = _shape(rows[-1][1][-1]), _shape(rows[-2][1][-1])
    return last is not None and before is not None and last != before
