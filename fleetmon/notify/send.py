"""Sending one message to one destination with Apprise; the URL's secret read from its file.

Apprise (https://github.com/caronc/apprise) speaks the services; it reports a
failure as a false result carrying its log, not an exception: the result's
warnings become one line naming the destination and what went wrong (the URL,
which holds the secret, left out).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from fleetmon.errors import KnownError
from fleetmon.fleet.notify import SECRET, NotifySpec
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.text import printable
from fleetmon.tokens import TokenFileError, read_secret_file

__all__ = ["DeliveryError", "Destination", "resolve_url"]


class DeliveryError(KnownError):
    """A destination that cannot be set up (its files, its URL) or a message it did not take.

    Its message is "notify NAME: REASON" (an :class:`i18n.Text`, said in the reader's language by
    ``i18n.message_of``); ``reason`` is the part after the destination's name (``notify test`` prints it
    beside the name).
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(Text(N_("notify {name}: {reason}"), name=name, reason=reason))
        self.name = name
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:  # copy and pickle: made again from name and reason
        return (DeliveryError, (self.name, self.reason))


def resolve_url(spec: NotifySpec) -> str:
    """The Apprise URL of ``spec`` with its secret: ``url_file``'s content, or ``url`` with ``{secret}``
    replaced by ``secret_file``'s.

    Raises:
        DeliveryError: a file cannot be used (mode, missing, empty: one line).
    """
    try:
        if spec.url_file is not None:
            return read_secret_file(spec.url_file, N_("url file"))
        url = spec.url or ""
        if spec.secret_file is not None:
            url = url.replace(SECRET, read_secret_file(spec.secret_file))
        return url
    except TokenFileError as exc:
        raise DeliveryError(spec.name, reason_of(exc)) from exc


class _ThreadLog(logging.Handler):
    """The Apprise log records of one thread (Apprise says why a send failed only in its log)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


class Destination:
    """One ``[[notify]]`` destination, ready to send (its URL resolved and accepted by Apprise).

    Raises:
        DeliveryError: the URL's file cannot be used, or Apprise does not know the URL.
    """

    def __init__(self, spec: NotifySpec) -> None:
        import apprise

        self.spec = spec
        self.name = spec.name
        url = resolve_url(spec)
        self._apprise = apprise.Apprise()
        handler = _ThreadLog()
        log = logging.getLogger("apprise")
        log.addHandler(handler)
        try:
            added = self._apprise.add(url)
        finally:
            log.removeHandler(handler)
        if not added:
            scheme = url.partition("://")[0] if "://" in url else url[:20]
            # The URL holds the secret: only its scheme is named. Apprise's own words stay as it logs them.
            if handler.messages:
                reason = Text(N_("Apprise does not accept the {scheme}:// URL: {why}; see https://appriseit.com/"),
                              scheme=scheme, why=_strip(f": {handler.messages[-1]}", url)[2:])  # cut as before
            else:
                reason = Text(N_("Apprise does not accept the {scheme}:// URL; see https://appriseit.com/"),
                              scheme=scheme)
            raise DeliveryError(spec.name, reason)
        self._url = url
        self._text = apprise.NotifyFormat.TEXT  # plain lines: a service that wants HTML or Markdown gets them converted

    def send(self, title: str, body: str) -> None:
        """Deliver one message.

        Raises:
            DeliveryError: the service did not take it (one line: what Apprise logged, secrets left out).
        """
        try:
            result = self._apprise.notify(title=title, body=body, body_format=self._text)
        except Exception as exc:  # Apprise catches its plugins' errors; anything else is one line too
            raise DeliveryError(self.name, f"{type(exc).__name__}: {_strip(str(exc), self._url)}") from exc
        if not result:
            # The result's log (Apprise 2) says why; its plugins run on a pool thread of Apprise's.
            logs = getattr(result, "logs", None)
            entries = list(logs()) if callable(logs) else []
            lines = [str(getattr(e, "message", e)) for e in entries
                     if str(getattr(e, "level", "WARNING")) in ("WARNING", "ERROR", "CRITICAL")]
            why = "; ".join(dict.fromkeys(lines))  # Apprise's own words, as it logs them
            raise DeliveryError(self.name, _strip(why, self._url) if why else Text(N_("not delivered")))


def _strip(text: str, url: str) -> str:
    """``text`` on one line, printable, with the secret URL's path and query left out."""
    head = url.split("?", 1)[0]
    out = text.replace(url, "<url>").replace(head, "<url>") if url else text
    return " ".join(printable(out).split())[:400]


def destinations(specs: Any) -> tuple[list[Destination], list[str]]:
    """The destinations of ``specs`` that can send, and a one-line error for each that cannot (an
    :class:`i18n.Text`: the collector logs its English)."""
    ok: list[Destination] = []
    errors: list[str] = []
    for spec in specs:
        try:
            ok.append(Destination(spec))
        except DeliveryError as exc:
            errors.append(exc.args[0])
    return ok, errors
