"""Where a node's telemetry comes from, and the parsers that turn each source into fleetmon's records.

A node in the fleet file names its source by its URL (issue 12):

* ``http://host:9414`` / ``https://…``: the fleetmon agent (the default; it buffers
  per-minute records, so the collector backfills what it missed);
* ``dcgm+http://host:9400/metrics`` / ``dcgm+https://…``: a dcgm-exporter endpoint
  (:mod:`fleetmon.sources.dcgm` parses its scrape);
* ``ssh://user@host[:port]``: agentless, the vendor's tool (``nvidia-smi -q -x``, amd-smi,
  npu-smi, hl-smi, …: the node's ``tool``, :mod:`fleetmon.sources.ssh_tools`) run over the
  system's OpenSSH client, its output read by that tool's capture format;
* ``file:///path/capture.xml``: a capture added by hand with ``fleetmon import``.

:data:`SOURCES` is the registry of these kinds: each entry says which URL schemes name it, how
the URL is taken apart, how the collector fetches it (:class:`Transport`), which token it gets,
how its answer is parsed and what its status line says; :func:`source_of`, the fleet-file check,
the collector and :func:`node_source` all read it, so no module branches on the kind.

Every parser returns a :class:`~fleetmon.sources.capture.Capture` (NodeInfo, inventory,
one sample per GPU) whose values use the agent's keys and units; what a source cannot
tell is ``None`` with status ``unsupported``, never zero. Polled sources without a buffer
(everything but the agent) have no backfill: :data:`TRAITS` says so, for the node's status.

Core layer: imports fleetmon.records, fields, vocab, pci and errors only (no storage, no
collector); the parsers need only the standard library, defusedxml and prometheus_client.
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import SplitResult, urlsplit

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text

if TYPE_CHECKING:
    from fleetmon.sources.capture import Capture

__all__ = ["NodeSource", "ReadLimits", "SOURCES", "SourceError", "SourceKind", "SourceSpec", "SourceTraits",
           "SourceType", "TRAITS", "Token", "Transport", "answer_name", "node_source", "read_answer", "source_of",
           "source_type"]


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


class Transport(enum.StrEnum):
    """How the collector fetches a source (each is one code path in fleetmon.collector)."""

    AGENT = "agent"
    """The agent's JSON API: inventory, latest, pages of minutes and events after cursors (collector.client)."""
    HTTP = "http"
    """One GET of the source's URL with the agents' HTTP session; the body is parsed (a scrape)."""
    SSH = "ssh"
    """A constant command over the system's OpenSSH client; its standard output is parsed
    (collector.sources.run_ssh; the command is the node's tool's, fleetmon.sources.ssh_tools)."""
    NONE = "none"
    """Not polled (a capture added by hand)."""


class Token(enum.StrEnum):
    """Which bearer token the collector sends to a source."""

    FLEET = "fleet"
    """The node's ``token_file``, else the fleet's (the agents' shared secret)."""
    OWN = "own"
    """Only a ``token_file`` the node names itself: the fleet's secret is never sent to a third party."""
    NONE = "none"
    """None (ssh authenticates with keys)."""


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The collector's per-node limits a parser applies while it reads (fleetmon.collector.limits)."""

    max_gpus: int
    max_series: int


@dataclass(frozen=True, slots=True)
class SourceType:
    """One kind of source: everything the URL check, the collector and the node's status need to know.

    The collector dispatches on these entries (its transport, token, parse), the fleet file and
    :func:`source_of` on ``schemes`` and ``take``, the GUI and reports on ``traits``; a new source that
    uses an existing transport is one entry of :data:`SOURCES`.

    Attributes:
        kind: the source.
        schemes: the URL schemes that name it (lower case).
        shown: how the URL looks, for a message listing the sources (``ssh://``).
        take: the URL (stripped), its parts and its port to a :class:`SourceSpec`; raises SourceError.
        transport: how the collector fetches it.
        token: which bearer token is sent.
        traits: what it can tell, and the status line saying what it cannot.
        reader: the module of ``fleetmon.sources`` that reads its answers ("" for a source that is not
            polled): its ``read_answer(body, tool, limits)`` gives the Capture (``tool``: an ssh node's,
            others ignore it), its ``answer_name(tool, head)`` how a check's message names the answer
            (``/metrics``, ``nvidia-smi -q -x``). By name, imported when first used, as
            :mod:`fleetmon.sources.formats` gathers the parsers: the parsers import this package.
        accept: the HTTP ``Accept`` header of an HTTP transport.
        not_polled: the node's reason when the collector is handed such a node.
    """

    kind: SourceKind
    schemes: tuple[str, ...]
    shown: str
    take: Callable[[str, SplitResult, int | None], SourceSpec]
    transport: Transport
    token: Token
    traits: SourceTraits
    reader: str = ""
    accept: str = ""
    not_polled: str = ""


# Letters, digits, dot, dash, underscore: never a leading dash (ssh would read an option),
# never a shell metacharacter (the value goes into an argv, but be strict anyway).
_SSH_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\]")
_SSH_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _take_agent(text: str, parts: SplitResult, port: int | None) -> SourceSpec:
    return SourceSpec(SourceKind.AGENT, text, parts.hostname or "", port)


def _take_dcgm(text: str, parts: SplitResult, port: int | None) -> SourceSpec:
    return SourceSpec(SourceKind.DCGM, text.split("+", 1)[1], parts.hostname or "", port)


def _take_ssh(text: str, parts: SplitResult, port: int | None) -> SourceSpec:
    host = parts.hostname or ""
    raw_host = parts.netloc.rsplit("@", 1)[-1]
    raw_host = raw_host.rsplit(":", 1)[0] if not raw_host.startswith("[") else raw_host.split("]")[0] + "]"
    if not host or not _SSH_HOST.fullmatch(raw_host):
        raise SourceError(Text(N_("{url}: not a plain host name or address after ssh://"), url=repr(text)))
    user = parts.username
    if user is not None and not _SSH_USER.fullmatch(user):
        raise SourceError(Text(N_("{url}: the ssh user name may hold only letters, digits, '.', '-' and '_'"),
                               url=repr(text)))
    if parts.password is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SourceError(Text(N_("{url}: an ssh URL is ssh://[user@]host[:port] and nothing more"), url=repr(text)))
    return SourceSpec(SourceKind.SSH, text, host, port, user)


def _take_capture(text: str, parts: SplitResult, port: int | None) -> SourceSpec:
    return SourceSpec(SourceKind.CAPTURE, parts.path)


_NO_BACKFILL = "no buffer, no backfill (a missed poll is a gap); instantaneous samples"

SOURCES: dict[SourceKind, SourceType] = {t.kind: t for t in (
    SourceType(SourceKind.AGENT, ("http", "https"), "http(s)://", _take_agent, Transport.AGENT, Token.FLEET,
               SourceTraits(True, True, True, True, "")),
    SourceType(SourceKind.DCGM, ("dcgm+http", "dcgm+https"), "dcgm+http(s)://", _take_dcgm, Transport.HTTP,
               Token.OWN, SourceTraits(False, False, False, False,
                                       f"dcgm-exporter: {_NO_BACKFILL}; inventory limited to its labels"),
               reader="dcgm", accept="text/plain;version=0.0.4;q=0.9, */*;q=0.1"),
    SourceType(SourceKind.SSH, ("ssh",), "ssh://", _take_ssh, Transport.SSH, Token.NONE,
               SourceTraits(False, False, False, True,
                            f"ssh + the vendor's tool (nvidia-smi, amd-smi, npu-smi, …): {_NO_BACKFILL}; "
                            "no Xid events"),
               reader="ssh_tools"),
    SourceType(SourceKind.CAPTURE, ("file",), "file://", _take_capture, Transport.NONE, Token.NONE,
               SourceTraits(False, False, False, True, "capture imported by hand: one instant, no history"),
               not_polled="capture: not polled; a capture is added with `fleetmon import`"),
)}
"""Every kind of source, by kind: the one table the URL check, the collector's dispatch and the node's status
read (docs/architecture.md, "Sources")."""

TRAITS: dict[SourceKind, SourceTraits] = {kind: t.traits for kind, t in SOURCES.items()}
"""What each kind can tell (from :data:`SOURCES`)."""

_BY_SCHEME: dict[str, SourceType] = {scheme: t for t in SOURCES.values() for scheme in t.schemes}


def source_type(kind: SourceKind) -> SourceType:
    """The registry entry of ``kind``."""
    return SOURCES[kind]


class _Reader(Protocol):
    """What a :attr:`SourceType.reader` module provides."""

    def read_answer(self, body: bytes, tool: str, limits: ReadLimits) -> Capture: ...

    def answer_name(self, tool: str, head: bytes) -> str: ...


def _reader(kind: SourceKind) -> _Reader:
    name = SOURCES[kind].reader
    if not name:
        raise SourceError(Text(N_("{kind}: not a polled source"), kind=kind.value))
    return cast(_Reader, importlib.import_module(f"fleetmon.sources.{name}"))


def read_answer(kind: SourceKind, body: bytes, tool: str, limits: ReadLimits) -> Capture:
    """The capture in one answer of a ``kind`` source, by the entry's reader.

    Raises:
        SourceError: not a document of its kind, past a limit, or a kind that is not polled.
    """
    return _reader(kind).read_answer(body, tool, limits)


def answer_name(kind: SourceKind, tool: str, head: bytes) -> str:
    """How a check's message names an answer of a ``kind`` source (``/metrics``, ``amd-smi static/metric
    --json``), from the node's ``tool`` and the answer's first bytes."""
    return _reader(kind).answer_name(tool, head)


def source_of(url: str) -> SourceSpec:
    """Which source a fleet-file URL names; raises SourceError for a URL no source takes."""
    text = url.strip()
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise SourceError(Text(N_("{url}: bad port"), url=repr(url))) from None
    kind = _BY_SCHEME.get(parts.scheme.lower())
    if kind is None:
        shown = [t.shown for t in SOURCES.values()]
        raise SourceError(Text(N_("{url}: unknown source (expected {choices} or {last})"), url=repr(url),
                               choices=", ".join(shown[:-1]), last=shown[-1]))
    return kind.take(text, parts, port)


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
