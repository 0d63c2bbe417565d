"""The report's small words in the reader's language: verdicts, severities, counts, ages and spans.

:mod:`fleetmon.health.render` builds its text and HTML from these (docs/i18n.md); the JSON keeps the
English identifiers. The text columns are padded by terminal width, since a CJK character takes two.
"""

from __future__ import annotations

import unicodedata

from fleetmon.i18n import N_, ngettext
from fleetmon.i18n import gettext as _

__all__ = ["SEV", "WORDS", "age", "cols", "days", "gpus", "ljust", "nodes", "span", "upper", "word"]

SEV = {"critical": N_("CRIT"), "warning": N_("WARN"), "info": N_("INFO")}
"""A finding's severity in the text report's four-column field (marked; said with ``_()``)."""

WORDS = {"fail": N_("fail"), "warn": N_("warn"), "pass": N_("pass"), "unreachable": N_("unreachable"),
         "stale": N_("stale"), "unknown": N_("unknown"), "go": N_("go"), "no-go": N_("no-go"),
         "critical": N_("critical"), "warning": N_("warning"), "info": N_("info"), "ok": N_("ok")}
"""The verdict, status and severity words people read."""


def word(value: str) -> str:
    """A verdict, status or severity as the reader's language says it (itself when not in :data:`WORDS`)."""
    return _(WORDS[value]) if value in WORDS else value


def upper(value: str) -> str:
    """:func:`word` in capitals where the language has them ("FAIL"; Chinese has none)."""
    return word(value).upper()


def cols(text: str) -> int:
    """Terminal columns of ``text``: a wide (CJK) character takes two. The standard library's Unicode
    table suffices for the report's words (no combining marks), so no wcwidth dependency."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (``f"{text:<{width}}"`` counts characters)."""
    return text + " " * max(0, width - cols(text))


def nodes(count: int) -> str:
    """"1 node", "3 nodes"."""
    return ngettext("{count} node", "{count} nodes", count).format(count=count)


def gpus(count: int) -> str:
    """"1 GPU", "8 GPUs"."""
    return ngettext("{count} GPU", "{count} GPUs", count).format(count=count)


def days(value: float) -> str:
    """"1 day", "0.5 days", "7 days"."""
    # the count is a float ("0.5 days"): ngettext takes whole numbers, so 1 is asked for by hand
    return _("{days:g} day").format(days=value) if value == 1 else _("{days:g} days").format(days=value)


def age(seconds: float) -> str:
    """"42 min", "6.0 h", "1.5 d": how old a node's newest data is."""
    minutes = seconds / 60.0
    if minutes < 120:
        return _("{minutes:.0f} min").format(minutes=minutes)
    if minutes < 48 * 60:
        return _("{hours:.1f} h").format(hours=minutes / 60)
    return _("{days:.1f} d").format(days=minutes / 1440)


def span(seconds: float) -> str:
    """A report's window: "24 h", "7 days", "30 min"."""
    hours = seconds / 3600
    if hours >= 48:
        return _("{days:.0f} days").format(days=hours / 24)
    if hours >= 1:
        return _("{hours:.0f} h").format(hours=hours)
    return _("{minutes:.0f} min").format(minutes=seconds / 60)
