"""Line numbers for messages: tomllib gives none, so scan the TOML text."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Locator"]


@dataclass(slots=True)
class _Section:
    name: tuple[str, ...]
    array: bool
    index: int
    header: int
    end: int


class Locator:
    """Find the line of ``table.key`` or ``array[i].key`` in TOML text."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]#]+?)\s*(\]\]?)\s*(?:#.*)?$")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.sections: list[_Section] = [_Section((), False, 0, 0, len(self.lines))]
        counts: dict[tuple[str, ...], int] = {}
        in_string: str | None = None
        for number, line in enumerate(self.lines, start=1):
            if in_string is None:
                match = self._HEADER.match(line)
                if match and len(match.group(1)) == len(match.group(3)):
                    name = _split_dotted(match.group(2))
                    array = match.group(1) == "[["
                    index = counts.get(name, 0)
                    if array:
                        counts[name] = index + 1
                    self.sections[-1].end = number - 1
                    self.sections.append(
                        _Section(name, array, index, number, len(self.lines))
                    )
                    continue
            in_string = _multiline_state(line, in_string)

    def line_of(self, table: tuple[str, ...], index: int | None, key: str | None) -> int:
        """Line of ``key`` in the section (``index``-th for arrays); else nearby."""
        section = self._section(table, index)
        if section is not None:
            if key is not None:
                found = self._find_key(section, key)
                if found:
                    return found
            if section.header:
                return section.header
        # Inline or dotted forms at the root: `fleet = {...}`, `fleet.x = 1`.
        root = self.sections[0]
        if table:
            if key is not None:
                found = self._find_key(root, ".".join(table + (key,)))
                if found:
                    return found
            found = self._find_key(root, table[0])
            if found:
                return found
            for sec in self.sections[1:]:
                if sec.name[: len(table)] == table:
                    return sec.header
        elif key is not None:
            found = self._find_key(root, key)
            if found:
                return found
            for sec in self.sections[1:]:
                if sec.name and sec.name[0] == key:
                    return sec.header
        return 1

    def _section(self, table: tuple[str, ...], index: int | None) -> _Section | None:
        for sec in self.sections:
            if sec.name == table and (not sec.array or index is None or sec.index == index):
                return sec
        return None

    def _find_key(self, section: _Section, key: str) -> int:
        parts = [re.escape(part) for part in key.split(".")]
        quoted = [rf'(?:{p}|"{p}"|\'{p}\')' for p in parts]
        pattern = re.compile(r"^\s*" + r"\s*\.\s*".join(quoted) + r"\s*=")
        in_string: str | None = None
        for number in range(section.header + 1, section.end + 1):
            line = self.lines[number - 1]
            if in_string is None and pattern.match(line):
                return number
            in_string = _multiline_state(line, in_string)
        return 0


def _split_dotted(name: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in name.split("."))


def _multiline_state(line: str, in_string: str | None) -> str | None:
    """Track whether we are inside a ''' or \"\"\" string after ``line``."""
    position = 0
    while True:
        if in_string is None:
            candidates = [
                (line.find(quote, position), quote) for quote in ('"""', "'''")
            ]
            candidates = [(at, quote) for at, quote in candidates if at >= 0]
            comment = line.find("#", position)
            if not candidates:
                return None
            at, quote = min(candidates)
            if 0 <= comment < at:
                return None
            in_string = quote
            position = at + 3
        else:
            at = line.find(in_string, position)
            if at < 0:
                return in_string
            in_string = None
            position = at + 3
