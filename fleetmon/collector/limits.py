"""Stated limits on what one agent may send the collector, in one place.

An answer that breaks one of these makes that node's poll fail with a one-line
reason (``"<path>: <what> <field> <why>"``, see :mod:`fleetmon.collector.validate`)
and nothing of that poll reaches storage; the one exception is an event
message longer than :data:`MAX_MESSAGE_CHARS`, which is cut, not rejected.
The figures leave a wide margin above anything a real agent sends (measured:
a page of 2,000 minutes of an 8-GPU A100 node is 3.6 MB of JSON) while keeping
every stored integer far inside SQLite's signed 64-bit range.
"""

from __future__ import annotations

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest answer accepted, counted after decompression. The agent's biggest
page (5,000 minutes) is about 9 MB; a gzip bomb stops here instead of filling
memory. Decoding 16 MB of JSON holds the event loop for ≈ 0.3 s (CPython's C
decoder keeps the GIL, so a thread would not free the loop: measured)."""

MAX_COMPRESSED_CHUNK = 256 * 1024
"""Compressed bytes read from the socket at a time; with a max-length inflater
one read never expands past the remaining :data:`MAX_BODY_BYTES`."""

MAX_JSON_ITEMS = 1_000_000
"""Separators (``,`` and ``:``) in one answer: bounds the parsed document, whose
objects cost up to 24× their JSON text (``[{},{},…]``). A 5,000-minute page has
≈ 450,000; 1 M items parse to ≤ ≈ 100 MB."""

MEMORY_PER_NODE_BYTES = 160 * 1024 * 1024
"""Stated bound on the memory one node's request in flight may take: body
(≤ 16 MiB) + inflater + parsed document (≤ ≈ 100 MB) + the checked records.
Tests poll a gzip bomb and assert the process grew by less than this."""

MAX_GPUS_PER_NODE = 64
"""GPUs in one /v1/node or /v1/latest answer (the largest real nodes hold 16)."""

MAX_DCGM_SERIES = 32_768
"""Sample lines read from one dcgm-exporter scrape (64 GPUs × 8 MIG entities × 64 metrics; a real
8-GPU scrape has ≈ 300, with MIG and profiling metrics a few thousand). The reader stops at the
first line past it, and at the first GPU past :data:`MAX_GPUS_PER_NODE`: a 100,000-GPU scrape
costs 65 GPUs' worth of reading. Lines of any kind are bounded at 4× this before any parsing."""

MAX_UUIDS_PER_POLL = 2 * MAX_GPUS_PER_NODE
"""Distinct GPU UUIDs among one poll's minutes and events (a backlog may span a
card swap, so twice the per-node figure)."""

MAX_INDEX = 1023
"""Largest GPU index (NVML enumerates far fewer; 0..1023 keeps it a small integer)."""

MAX_SEQ = 2**53
"""Largest sequence number (agent cursors; also the largest integer a JSON
reader in any language keeps exactly)."""

MAX_SAMPLES_PER_MINUTE = 100_000
"""Largest ``n`` of one minute (the agent samples about once a second)."""

MAX_EVENT_CODE = 2**32 - 1
"""Largest event ``code`` (Xid numbers are small; codes are unsigned 32-bit)."""

MAX_ABS_VALUE = 1e15
"""Largest magnitude of any telemetry or inventory number (energy since driver
load in mJ reaches ≈ 3e13 after a year at 1 kW). Stored scaled by ≤ 10, it stays
far inside SQLite's INTEGER range; infinity and NaN never pass."""

MAX_FUTURE_S = 7 * 86_400.0
"""A record timestamp more than this (a week) ahead of the collector's clock is
rejected (a minute in the year 3000); agents with a clock hours or days off
still pass, and their skew is recorded. (One day would do for real agents, but
tests/integration/test_collector_kill9.py writes a backlog reaching 4 days ahead.)"""

MAX_UUID_CHARS = 96
"""Longest GPU UUID (NVIDIA's are 40; MIG device UUIDs about 60)."""

MAX_NAME_CHARS = 256
"""Longest short string: names, serials, vbios, hostname, versions, states,
kinds, PCI addresses, value strings and value keys."""

MAX_MESSAGE_CHARS = 4096
"""Event messages longer than this are cut to it (ending in "…"), not rejected:
the event itself is worth keeping."""

MAX_EVENT_DATA_CHARS = 16_384
"""Largest event ``data`` object, as compact JSON."""

MAX_VALUES_KEYS = 256
"""Keys in one ``values`` or ``status`` object (a minute has ≈ 75)."""

MAX_GPUS_SEEN_PER_NODE = 2 * MAX_GPUS_PER_NODE
"""Distinct GPU UUIDs one node may have been seen with within :data:`GPUS_SEEN_SPAN_S` (issue 20,
item 9). A source that invents new UUIDs on every poll (a broken or hostile dcgm-exporter) would
otherwise add a GPU row and two inventory changes per UUID per poll, without end. Past it the
node's new UUIDs are refused (their records are not stored, counted in ``nodes.refused_uuids``,
and ``nodes.notice`` says why); its known cards keep being stored. Twice the per-answer figure:
a node whose every card was swapped within the span still fits."""

GPUS_SEEN_SPAN_S = 86_400.0
"""The span of :data:`MAX_GPUS_SEEN_PER_NODE`: a card counts while it was seen on the node within
this long (so the cap bounds a node to that many new GPU rows per day)."""
