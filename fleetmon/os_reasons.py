"""The connection failures a fleet sees every day, said in the reader's language (docs/i18n.md).

``os.strerror`` gives the C library's English ("Connection refused"); the collector's client and the
Prometheus history source put it in their one-line reasons. These five are marked for the catalog, kept
only where the C library says exactly that (so the English stays byte for byte); any other error number
keeps the C library's words. Standard library only (core layer).
"""

from __future__ import annotations

import errno
import os

from fleetmon.i18n import N_, Text

__all__ = ["OS_REASONS", "os_reason"]

_MARKED: dict[int, str] = {
    errno.ECONNREFUSED: Text(N_("Connection refused")),
    errno.ETIMEDOUT: Text(N_("Connection timed out")),
    errno.EHOSTUNREACH: Text(N_("No route to host")),
    errno.ENETUNREACH: Text(N_("Network is unreachable")),
    errno.ECONNRESET: Text(N_("Connection reset by peer")),
}
OS_REASONS: dict[int, str] = {k: v for k, v in _MARKED.items() if os.strerror(k) == v}
"""Error number → the C library's words as an :class:`~fleetmon.i18n.Text` (only those it says as marked)."""


def os_reason(number: int) -> str:
    """``os.strerror(number)``, said in the reader's language where :data:`OS_REASONS` has it."""
    return OS_REASONS.get(number, os.strerror(number))
