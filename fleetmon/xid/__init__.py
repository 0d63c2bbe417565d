"""NVIDIA Xid codes: the catalog (``catalog``, a data table) and the kernel-log parser (``parse``).

Standard library only: the node agent uses both. `fleetmon xid parse FILE` is
``fleetmon.cli.xid``.
"""

from __future__ import annotations

from fleetmon.xid.catalog import BUS_INFO, CATEGORIES, SEVERITIES, XID_CATALOG, XidInfo, lookup
from fleetmon.xid.parse import (
    BusEvent,
    KernelEvent,
    XidEvent,
    XidParser,
    event_severity,
    normalize_pci,
    parse_kernel_events,
    parse_xid_lines,
    parse_xid_text,
    to_json,
)

__all__ = [
    "BUS_INFO",
    "CATEGORIES",
    "SEVERITIES",
    "XID_CATALOG",
    "BusEvent",
    "KernelEvent",
    "XidEvent",
    "XidInfo",
    "XidParser",
    "event_severity",
    "lookup",
    "normalize_pci",
    "parse_kernel_events",
    "parse_xid_lines",
    "parse_xid_text",
    "to_json",
]
