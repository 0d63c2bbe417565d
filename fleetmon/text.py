"""Text from outside (a node's stderr, a model name, a label) made safe for a terminal, a log, a CSV and the window."""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 and C1 controls (ESC, BEL, NUL, CSI …), DEL, and the bidirectional overrides and isolates that can
# reorder what a terminal or the window shows. Tab and newline are controls too: a one-line text has none.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, limit: int | None = None) -> str:
    """``text`` with every control character written as a visible escape (ESC → ``\\x1b``), cut to ``limit``.

    Applied where foreign text leaves the program (printed, logged, written to a
    CSV or shown), so a hostile node cannot move the cursor, ring the bell or
    hide text; what is stored keeps its bytes.
    """
    out = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                      text)
    if limit is not None and len(out) > limit:
        out = out[: max(0, limit - 1)] + "…"
    return out
