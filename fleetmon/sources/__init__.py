"""Where a node's telemetry comes from, and the parsers that turn each source into fleetmon's records.

A node in the fleet file names its source by its URL (issue 12):

* ``http://host:9414`` / ``https://…``: the fleetmon agent (the default; it buffers
  per-minute records, so the collector backfills what it missed);
* ``dcgm+http://host:9400/metrics`` / ``dcgm+https://…``: a dcgm-exporter endpoint
  (:mod:`fleetmon.sources.dcgm` parses its scrape);
* ``ssh://user@host[:port]``: agentless, ``nvidia-smi -q -x`` run over the system's
  OpenSSH client (:mod:`fleetmon.sources.smi_xml` parses the document);
* ``file:///path/capture.xml``: a capture added by hand with ``fleetmon import-smi``.

Every parser returns a :class:`~fleetmon.sources.capture.Capture` (NodeInfo, inventory,
one sample per GPU) whose values use the agent's keys and units; what a source cannot
tell is ``None`` with status ``unsupported``, never zero. Polled sources without a buffer
(everything but the agent) have no backfill: :data:`TRAITS` says so, for the node's status.

Core layer: imports fleetmon.records, fields, vocab, pci and errors only (no storage, no
collector); the parsers need only the standard library, defusedxml and prometheus_client.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from fleetmon.errors import KnownError

__all__ = ["NodeSource", "SourceError", "SourceKind", "SourceSpec", "SourceTraits", "TRAITS", "node_source", "source_of"]


class SourceError(KnownError):
    """A source's output cannot be used (not a document of its kind, hostile XML, a bad URL)."""


class SourceKind(enum.StrEnum):
    AGENT = "agent"
    DCGM = "dcgm-exporter"
    SSH = "ssh"
    CAPTURE = "capture"


@dataclass(frozen=True, slots=True)
class SourceTraits:
    """What a kind of source can tell (docs/sources.md has the long form).

    Attributes:
        backfill: it buffers records, so a missed poll is fetched later.
        minutes: it gives per-minute min/mean/max (else one instantaneous sample per poll).
        xid_events: it reports Xid events as they happen (dcgm-exporter: only the last code).
        inventory: it gives serial, VBIOS, power limits and the other inventory fields.
        status_note: the line for the node's status, saying what is missing.
    """

    backfill: bool
    minutes: bool
    xid_events: bool
    inventory: bool
    status_note: str


TRAITS: dict[SourceKind, SourceTraits] = {
    SourceKind.AGENT: SourceTraits(True, True, True, True, ""),
    SourceKind.DCGM: SourceTraits(False, False, False, False,
                                  "dcgm-exporter: no buffer, no backfill (a missed poll is a gap); "
                                  "instantaneous samples; inventory limited to its labels"),
    SourceKind.SSH: SourceTraits(False, False, False, True,
                                 "ssh + nvidia-smi: no buffer, no backfill (a missed poll is a gap); "
                                 "instantaneous samples; no Xid events"),
    SourceKind.CAPTURE: SourceTraits(False, False, False, True,
                                     "nvidia-smi capture imported by hand: one instant, no history"),
}


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A node URL taken apart.

    Attributes:
        kind: which source.
        url: what to fetch: the agent's or exporter's http(s) URL (``dcgm+`` removed),
            the ssh URL as given, the file's path for a capture.
        user, host, port: the ssh destination (``user`` may be None: ssh's config decides).
    """

    kind: SourceKind
    url: str
    host: str = ""
    port: int | None = None
    user: str | None = None


# Letters, digits, dot, dash, underscore: never a leading dash (ssh would read an option),
# never a shell metacharacter (the value goes into an argv, but be strict anyway).
_SSH_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\]")
_SSH_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def source_of(url: str) -> SourceSpec:
    """Which source a fleet-file URL names; raises SourceError for a URL no source takes."""
    text = url.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise SourceError(f"{url!r}: bad port") from None
    if scheme in ("http", "https"):
        return SourceSpec(SourceKind.AGENT, text, parts.hostname or "", port)
    if scheme in ("dcgm+http", "dcgm+https"):
        inner = text.split("+", 1)[1]
        return SourceSpec(SourceKind.DCGM, inner, parts.hostname or "", port)
    if scheme == "ssh":
        host = parts.hostname or ""
        raw_host = parts.netloc.rsplit("@", 1)[-1]
        raw_host = raw_host.rsplit(":", 1)[0] if not raw_host.startswith("[") else raw_host.split("]")[0] + "]"
        if not host or not _SSH_HOST.fullmatch(raw_host):
            raise SourceError(f"{url!r}: not a plain host name or address after ssh://")
        user = parts.username
        if user is not None and not _SSH_USER.fullmatch(user):
            raise SourceError(f"{url!r}: the ssh user name may hold only letters, digits, '.', '-' and '_'")
        if parts.password is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise SourceError(f"{url!r}: an ssh URL is ssh://[user@]host[:port] and nothing more")
        return SourceSpec(SourceKind.SSH, text, host, port, user)
    if scheme == "file":
        return SourceSpec(SourceKind.CAPTURE, parts.path)
    raise SourceError(f"{url!r}: unknown source (expected http(s)://, dcgm+http(s)://, ssh:// or file://)")


@dataclass(frozen=True, slots=True)
class NodeSource:
    """What a stored node's source is, for its status line (the GUI, reports, export).

    Attributes:
        kind: the source (AGENT for an unknown or missing URL: the default).
        backfill: whether a missed poll is fetched later.
        note: the status line saying what the source cannot do ("" for the agent).
    """

    kind: SourceKind
    backfill: bool
    note: str

    @property
    def label(self) -> str:
        """``agent``, ``dcgm-exporter``, ``ssh`` or ``capture``."""
        return self.kind.value


def node_source(url: str | None) -> NodeSource:
    """The source of a node from the URL the store keeps for it (``nodes.url``: the fleet file's URL, or the
    ``file://`` URI of an imported capture). No schema column: the URL already says it."""
    kind = SourceKind.AGENT
    if url:
        try:
            kind = source_of(url).kind
        except SourceError:
            pass
    traits = TRAITS[kind]
    return NodeSource(kind, traits.backfill, traits.status_note)
