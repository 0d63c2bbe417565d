"""Every capture format fleetmon reads from a file or an SSH command, and telling them apart by content.

A format is a name (``nvidia-smi-xml``, ``npu-smi``, …), the vendor of its devices,
a ``detect(text)`` that says whether a document looks like one of its kind, and a
``parse(data)`` that returns a :class:`~fleetmon.sources.capture.Capture`. Each vendor's
parser module declares its own formats in a module-level ``FORMATS`` mapping; this
module only gathers them, so a new vendor's parser joins ``fleetmon import --format
auto`` by being listed once in :data:`_MODULES`.

Detection reads the document's text: bytes are decoded as UTF-8 (with or without a
BOM) or, with a UTF-16 BOM, as UTF-16 (the Windows tools write that). The first
format whose ``detect`` says yes, in :data:`FORMATS` order, parses it; the order puts
the narrow signatures (an XML root element, a banner) before the wide ones.
"""

from __future__ import annotations

import codecs
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from fleetmon.i18n import N_, Text
from fleetmon.sources import SourceError
from fleetmon.sources.capture import Capture

__all__ = ["FORMATS", "Format", "by_name", "decode", "detect", "names", "parse"]


@dataclass(frozen=True)
class Format:
    """One capture format.

    Attributes:
        name: what ``--format`` takes.
        vendor: the devices' vendor, as :attr:`Capture.vendor` names it.
        detect: whether a document's text is one of this format (cheap; no full parse).
        parse: the document (bytes or text) to a Capture; raises :class:`SourceError`.
    """

    name: str
    vendor: str
    detect: Callable[[str], bool]
    parse: Callable[[bytes | str], Capture]


def _nvidia_xml(text: str) -> bool:
    return text.lstrip().startswith("<") and "<nvidia_smi_log" in text[:65536]


def _nvidia_text(text: str) -> bool:
    head = text[:65536]
    return "NVSMI LOG" in head or ("Driver Version" in head and "NVIDIA" in head)


def _parse_nvidia_xml(data: bytes | str) -> Capture:
    from fleetmon.sources.smi_xml import parse_smi_xml

    return parse_smi_xml(data)


def _parse_nvidia_text(data: bytes | str) -> Capture:
    from fleetmon.sources.smi_text import parse_smi_report

    return parse_smi_report(decode(data) if isinstance(data, bytes) else data)


_NVIDIA: tuple[Format, ...] = (
    Format("nvidia-smi-xml", "nvidia", _nvidia_xml, _parse_nvidia_xml),
    Format("nvidia-smi-text", "nvidia", _nvidia_text, _parse_nvidia_text),
)

_MODULES: tuple[str, ...] = ("amd", "npu_smi", "hl_smi", "xpu_smi", "mthreads")
"""The vendor parser modules (``fleetmon.sources.<name>``) whose ``FORMATS`` join :data:`FORMATS`."""


def _gather() -> tuple[Format, ...]:
    out = list(_NVIDIA)
    for name in _MODULES:
        module = importlib.import_module(f"fleetmon.sources.{name}")
        vendor = str(getattr(module, "VENDOR", name))
        vendors = getattr(module, "FORMAT_VENDORS", {})
        for fmt, (det, parse) in module.FORMATS.items():
            out.append(Format(fmt, str(vendors.get(fmt, vendor)), det, parse))
    names = [f.name for f in out]
    if len(set(names)) != len(names):  # pragma: no cover - guards the modules' tables
        raise ValueError(f"two capture formats share a name: {names}")
    return tuple(out)


FORMATS: tuple[Format, ...] = _gather()


def decode(data: bytes) -> str:
    """A document's text: UTF-16 when it starts with a UTF-16 BOM, else UTF-8 (a UTF-8 BOM dropped).

    Raises:
        SourceError: the bytes are neither.
    """
    try:
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError(Text(N_("not text: neither UTF-8 nor UTF-16 with a byte-order mark"))) from None


def names() -> list[str]:
    """Every format's name, in detection order."""
    return [f.name for f in FORMATS]


def by_name(name: str) -> Format:
    """The format called ``name``.

    Raises:
        SourceError: no format has that name (the message lists them).
    """
    for f in FORMATS:
        if f.name == name:
            return f
    raise SourceError(Text(N_("unknown capture format {name}; known: {choices}"), name=repr(name),
                           choices=", ".join(f.name for f in FORMATS)))


def detect(data: bytes | str) -> Format:
    """The format of a document, by its content.

    Raises:
        SourceError: not text, or no format recognises it (the message lists the formats).
    """
    if isinstance(data, bytes):
        try:
            text = decode(data)
        except SourceError:
            # Some tools write Latin-1 ("38 \xb0C" from amd-smi): telling the format apart needs only the
            # document's shape, so read it as Latin-1 here; the chosen parser decides what it accepts.
            text = data.decode("latin-1")
    else:
        text = data
    for f in FORMATS:
        if f.detect(text):
            return f
    raise SourceError(Text(N_("not a capture fleetmon reads (tried {formats})"),
                           formats=", ".join(f.name for f in FORMATS)))


def parse(data: bytes | str, fmt: str = "auto") -> Capture:
    """Parse a document in the named format, or the one :func:`detect` finds (``auto``).

    Raises:
        SourceError: unknown format, not recognised, or the parser refused the document.
    """
    chosen = detect(data) if fmt == "auto" else by_name(fmt)
    return chosen.parse(data)
