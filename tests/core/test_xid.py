"""Tests for fleetmon.xid (catalog, parser), `fleetmon xid parse` (fleetmon.cli.xid) and fleetmon.agent.kernlog."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

from fleetmon import xid
from fleetmon.agent import kernlog
from fleetmon.cli import xid as xidcli
from fleetmon.xid import BusEvent, XidEvent, XidParser

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "E_xid_kernel_logs"

# ---------------------------------------------------------------- catalog

REQUIRED_CODES = [
    8, 13, 31, 32, 38, 43, 44, 45, 48, 54, 56, 57, 58, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94,
    95, 109, 110, 119, 120, 121, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154, 158, 162,
    163, 164, 165, 167,
]


@pytest.mark.parametrize("code", REQUIRED_CODES)
def test_catalog_has_code(code: int) -> None:
    info = xid.lookup(code)
    assert info.code == code
    assert info.name and info.meaning and info.action
    assert info.category in xid.CATEGORIES and info.category != "unknown"
    assert info.severity in xid.SEVERITIES


@pytest.mark.parametrize(
    ("code", "category", "severity"),
    [
        (13, "application", "warning"),
        (31, "application", "warning"),
        (43, "application", "info"),
        (45, "secondary", "info"),
        (48, "memory", "critical"),
        (54, "power", "critical"),
        (79, "pcie", "critical"),
        (74, "nvlink", "critical"),
        (95, "memory", "critical"),
        (119, "driver", "warning"),
        (154, "secondary", "info"),
        (167, "pcie", "critical"),
    ],
)
def test_catalog_classification(code: int, category: str, severity: str) -> None:
    info = xid.lookup(code)
    assert (info.category, info.severity) == (category, severity)


@pytest.mark.parametrize("code", [1, 2, 999, 10**9])
def test_lookup_unknown_code_is_unknown(code: int) -> None:
    info = xid.lookup(code)
    assert info.category == "unknown"
    assert info.action


def test_xid_event_rejects_code_zero() -> None:
    with pytest.raises(ValueError):
        XidEvent(code=0, pci_address="0000:01:00.0", raw_pci="0000:01:00")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0000:38:00", "0000:38:00.0"),
        ("PCI:0000:38:00", "0000:38:00.0"),
        ("38:00", "0000:38:00.0"),
        ("00000000:3B:00.0", "0000:3b:00.0"),
        ("0018:01:00", "0018:01:00.0"),
        ("0000:CB:00.1", "0000:cb:00.1"),
    ],
)
def test_normalize_pci(raw: str, expected: str) -> None:
    assert xid.normalize_pci(raw) == expected


# ---------------------------------------------------------------- line formats

XID_LINE = "NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x1"

FORMAT_CASES = [
    # (id, line, expected attributes)
    ("dmesg-uptime", "[ 1843.308145] " + XID_LINE,
     {"code": 13, "uptime_s": 1843.308145, "time": None, "pid": None, "process": None,
      "message": "Graphics Exception: ESR 0x1"}),
    ("dmesg-ctime", "[Fri Aug 30 11:43:09 2024] " + XID_LINE,
     {"time": "2024-08-30T11:43:09", "uptime_s": None}),
    ("dmesg-ctime-padded-day", "[Sun Feb  2 01:02:03 2025] " + XID_LINE,
     {"time": "2025-02-02T01:02:03"}),
    ("iso-comma", "2025-01-21T02:21:33,498559+00:00 " + XID_LINE,
     {"time": "2025-01-21T02:21:33.498559+00:00"}),
    ("facility-iso", "kern  :warn  : 2025-01-21T02:21:33,498559+00:00 " + XID_LINE,
     {"time": "2025-01-21T02:21:33.498559+00:00", "pci_address": "0000:38:00.0"}),
    ("facility-uptime", "kern  :err   : [  12.500000] " + XID_LINE, {"uptime_s": 12.5}),
    ("journald", "Nov 29 11:28:11 zeus kernel: NVRM: Xid (PCI:0000:c1:00): 31, pid=12890, "
     "Ch 0000003b, intr 00000000. MMU Fault", {"code": 31, "host": "zeus", "pid": 12890,
     "process": None, "time": "2020-11-29T11:28:11", "message": "Ch 0000003b, intr 00000000. MMU Fault"}),
    ("journald-short-iso", "2025-01-21T02:21:33+0000 gpu-node-7 kernel: " + XID_LINE,
     {"time": "2025-01-21T02:21:33+00:00", "host": "gpu-node-7"}),
    ("syslog-with-uptime", "Nov 29 11:28:11 zeus kernel: [ 99.000001] " + XID_LINE,
     {"host": "zeus", "uptime_s": 99.000001, "time": "2020-11-29T11:28:11"}),
    ("bare-kernel", "kernel: " + XID_LINE, {"code": 13, "time": None, "host": None}),
    ("none", XID_LINE, {"code": 13, "time": None, "uptime_s": None, "line_no": 1}),
    ("kmsg-record", "4,1234,5678901,-;" + XID_LINE, {"uptime_s": 5.678901}),
    ("pid-and-name", "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s",
     {"pid": 2024380, "process": "nvidia-smi", "message": "Timeout after 6s"}),
    ("no-pid", "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.",
     {"code": 79, "pid": None, "message": "GPU has fallen off the bus."}),
    ("no-nvrm-prefix", "Xid (PCI:0000:38:00): 79, pid=1234, GPU has fallen off the bus.",
     {"code": 79, "pid": 1234, "pci_address": "0000:38:00.0"}),
    ("legacy-no-pci-tag", "NVRM: Xid (0000:01:00): 32, Channel ID 00000003 Intr 00040000",
     {"code": 32, "raw_pci": "0000:01:00", "pci_address": "0000:01:00.0",
      "message": "Channel ID 00000003 Intr 00040000"}),
    ("legacy-no-domain", "NVRM: Xid (01:00): 13, 0003 00000000 0000a097",
     {"pci_address": "0000:01:00.0"}),
    ("function-present", "NVRM: Xid (PCI:0000:b3:00.0): 79, GPU has fallen off the bus",
     {"pci_address": "0000:b3:00.0", "raw_pci": "0000:b3:00.0"}),
    ("domain-0018", "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2)",
     {"pci_address": "0018:01:00.0", "raw_pci": "0018:01:00"}),
    ("uppercase-hex", "NVRM: Xid (PCI:0000:CB:00): 13, x", {"pci_address": "0000:cb:00.0", "raw_pci": "0000:CB:00"}),
    ("caused-by", "NVRM: Xid (PCI:0000:01:00): 45, pid=77, name=python3, Ch 00000010 caused by previous Xid 149",
     {"code": 45, "caused_by": 149, "pid": 77, "process": "python3"}),
    ("mig", "NVRM: Xid (PCI:0000:07:00 GPU-I:03 GPU-CI:01): 94, pid=5, name=a, Ch 00000008",
     {"code": 94, "pci_address": "0000:07:00.0", "gpu_instance_id": 3, "compute_instance_id": 1}),
    ("quoted-pid", "NVRM: Xid (PCI:0000:07:00): 43, pid='5151', name=b, Ch 00000008", {"pid": 5151}),
]


@pytest.mark.parametrize(("line", "expected"), [c[1:] for c in FORMAT_CASES], ids=[c[0] for c in FORMAT_CASES])
def test_parse_xid_formats(line: str, expected: dict[str, object]) -> None:
    events = list(xid.parse_xid_lines([line], year=2020))
    assert len(events) == 1
    for key, value in expected.items():
        assert getattr(events[0], key) == value, key


def test_parse_xid_text_line_numbers_and_crlf() -> None:
    text = "noise\r\n[ 1.0] " + XID_LINE + "\r\nmore noise\r\n[ 9.0] " + XID_LINE + "\r\n"
    events = xid.parse_xid_text(text)
    assert [e.line_no for e in events] == [2, 4]
    assert events[0].message == "Graphics Exception: ESR 0x1"


def test_syslog_date_without_year_is_not_in_future() -> None:
    (event,) = xid.parse_xid_lines(["Jan  1 00:00:01 h kernel: " + XID_LINE])
    assert event.time is not None and event.time.endswith("-01-01T00:00:01")


def test_gpu_at_line_gives_uuid() -> None:
    lines = [
        "NVRM: GPU at PCI:0000:9b:00: GPU-509665AD-b600-ac93-3616-d754b23d636d",
        "NVRM: GPU at PCI:0000:08:00: GPU-UID",  # redacted, not a UUID
        "NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=x, Timeout",
        "NVRM: Xid (PCI:0000:08:00): 31, pid=2, name=y, Ch 1",
    ]
    a, b = xid.parse_xid_lines(lines)
    assert a.gpu_uuid == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert b.gpu_uuid is None


# ---------------------------------------------------------------- multi-line

XID79_BLOCK = """\
[ 5000.100000] NVRM: GPU at PCI:0000:3b:00: GPU-4c3f0a2e-1111-2222-3333-444455556666
[ 5000.100001] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
[ 5000.100002] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
[ 5000.100003] NVRM: GPU 0000:3b:00.0: GPU serial number is 1322120000000.
[ 5000.100004] NVRM: A GPU crash dump has been created. If possible, please run
NVRM: nvidia-bug-report.sh as root to collect this data before
NVRM: the NVIDIA kernel module is unloaded.
[ 5001.000000] nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state
"""


def test_xid79_continuation_lines_joined() -> None:
    events = list(xid.parse_kernel_events(XID79_BLOCK.splitlines()))
    assert len(events) == 1
    (event,) = events
    assert isinstance(event, XidEvent) and event.code == 79
    assert event.line_no == 2
    assert event.gpu_uuid == "GPU-4c3f0a2e-1111-2222-3333-444455556666"
    lines = event.message.split("\n")
    assert lines[0] == "GPU has fallen off the bus."
    assert lines[1] == "GPU 0000:3b:00.0: GPU has fallen off the bus."
    assert lines[-1] == "the NVIDIA kernel module is unloaded."
    assert len(lines) == 6


XID119_BLOCK = """\
[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).
[Sun Feb 23 16:24:18 2025] NVRM: GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data 0x0000000000002081 0x0000000000000004.
[Sun Feb 23 16:24:18 2025] NVRM: GPU4 RPC history (CPU -> GSP):
[Sun Feb 23 16:24:18 2025] NVRM:     entry function                   data0              data1
[Sun Feb 23 16:24:18 2025] NVRM:      0    103  GSP_RM_ALLOC          0x0000000000002081 0x0000000000000004
[Sun Feb 23 16:24:18 2025] CPU: 17 PID: 2024380 Comm: nvidia-smi Tainted: P           OE     5.15.0-112-generic
[Sun Feb 23 16:24:18 2025] Hardware name: Dell Inc. PowerEdge XE9680/0KK0RG, BIOS 2.3.5 09/10/2024
[Sun Feb 23 16:24:18 2025] Call Trace:
[Sun Feb 23 16:24:18 2025]  <TASK>
[Sun Feb 23 16:24:18 2025]  show_stack+0x52/0x5c
[Sun Feb 23 16:24:18 2025]  </TASK>
[Sun Feb 23 16:24:18 2025] NVRM: GPU Board Serial Number: 1650124014249
[Sun Feb 23 16:24:30 2025] NVRM: GPU4 RPC history (CPU -> GSP):
"""


def test_xid119_rpc_table_and_stack_trace_joined() -> None:
    (event,) = xid.parse_xid_lines(XID119_BLOCK.splitlines())
    lines = event.message.split("\n")
    assert lines[0].startswith("Timeout after 6s")
    assert lines[1].startswith("GPU4 GSP RPC buffer")
    assert lines[3].startswith("    entry function")
    assert "Call Trace:" in lines
    assert lines[-1] == " </TASK>"
    assert len(lines) == 11  # the serial-number line and the later line are not joined


def test_continuation_not_joined_after_time_gap() -> None:
    lines = [
        "[ 100.0] NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=x, Timeout",
        "[ 200.0] NVRM: GPU4 RPC history (CPU -> GSP):",
    ]
    (event,) = xid.parse_xid_lines(lines)
    assert event.message == "Timeout"


def test_streaming_parser_holds_event_until_flush() -> None:
    parser = XidParser()
    assert parser.feed("[ 1.0] " + XID_LINE + "\n") == []
    assert parser.feed("[ 1.0] NVRM: GPU4 RPC history (CPU -> GSP):") == []
    (event,) = parser.flush()
    assert isinstance(event, XidEvent) and event.message.endswith("GPU4 RPC history (CPU -> GSP):")
    assert parser.flush() == []


# ---------------------------------------------------------------- fallen off the bus without Xid


@pytest.mark.parametrize(
    ("lines", "pci", "first_line"),
    [
        (["[ 7.5] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."], "0000:3b:00.0", 1),
        (["Nov 29 11:28:11 zeus kernel: NVRM: The NVIDIA GPU 0000:0e:00.0 (PCI ID: 10de:1b06) installed "
          "in this system has fallen off the bus and is not responding to commands."], "0000:0e:00.0", 1),
        (["[ 7.5] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1e07) installed in this",
          "[ 7.5] NVRM: system has fallen off the bus and is not responding to commands."], "0000:01:00.0", 1),
        (["NVRM: GPU has fallen off the bus."], "", 1),
    ],
)
def test_fallen_off_bus_without_xid_is_bus_event(lines: list[str], pci: str, first_line: int) -> None:
    events = list(xid.parse_kernel_events(lines))
    assert len(events) == 1
    (event,) = events
    assert isinstance(event, BusEvent)
    assert event.pci_address == pci
    assert event.line_no == first_line
    assert "fallen off the bus" in event.message
    assert list(xid.parse_xid_lines(lines)) == []


def test_fallen_off_bus_for_other_gpu_after_xid79_is_separate() -> None:
    lines = [
        "[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.",
        "[ 1.0] NVRM: GPU 0000:5e:00.0: GPU has fallen off the bus.",
    ]
    events = list(xid.parse_kernel_events(lines))
    assert [type(e).__name__ for e in events] == ["XidEvent", "BusEvent"]
    assert events[1].pci_address == "0000:5e:00.0"


# ---------------------------------------------------------------- JSON


def test_to_json_keys_and_gpu_map() -> None:
    (event,) = xid.parse_xid_lines(["[ 3.0] NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, DBE"])
    doc = xid.to_json(event, {"00000000:19:00.0": "GPU-aaaa"})
    assert list(doc) == [
        "kind", "code", "name", "pci_address", "gpu", "time", "uptime_s", "message", "caused_by",
        "pid", "process", "meaning", "category", "severity", "action",
    ]
    assert doc["gpu"] == "GPU-aaaa"
    assert (doc["code"], doc["category"], doc["severity"]) == (48, "memory", "critical")
    assert doc["uptime_s"] == 3.0 and doc["time"] is None
    assert xid.to_json(event)["gpu"] is None
    json.dumps(doc)


@pytest.mark.parametrize(
    ("message", "severity"),
    [
        ("NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000)", "critical"),
        ("SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008)", "warning"),
    ],
)
def test_nvlink5_severity_from_message(message: str, severity: str) -> None:
    (event,) = xid.parse_xid_lines([f"NVRM: Xid (PCI:0000:01:00): 149, {message}"])
    assert xid.to_json(event)["severity"] == severity


def test_to_json_bus_event_and_unknown_code() -> None:
    (bus,) = xid.parse_kernel_events(["NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."])
    doc = xid.to_json(bus, {"0000:3b:00": "GPU-b"})
    assert (doc["kind"], doc["code"], doc["gpu"], doc["category"]) == ("bus", None, "GPU-b", "pcie")
    (unknown,) = xid.parse_xid_lines(["NVRM: Xid (PCI:0000:01:00): 4242, whatever"])
    assert xid.to_json(unknown)["category"] == "unknown"


# ---------------------------------------------------------------- garbage


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\x02\xff\ufffd" * 100,
        "NVRM: Xid (PCI:zzzz:38:00): 13, bad pci",
        "NVRM: Xid (PCI:0000:38:00): , no code",
        "NVRM: Xid (PCI:0000:38:00): 0, zero code",
        "NVRM: Xid (PCI:0000:38:00",
        "[ 12.3 NVRM: Xid",
        "[Fri Foo 99 99:99:99 2024] nothing",
        "Feb 30 10:00:00 h kernel: NVRM: nothing",
        "x" * 200000,
        "kern  :warn  : 9999-99-99T99:99:99,1+00:00 hi",
    ],
)
def test_garbage_yields_no_events(text: str) -> None:
    assert list(xid.parse_kernel_events(text.splitlines())) == []


def test_random_bytes_do_not_crash() -> None:
    import random

    rng = random.Random(1234)
    blob = bytes(rng.randrange(256) for _ in range(20000)).decode("utf-8", errors="replace")
    list(xid.parse_kernel_events(blob.splitlines()))
    list(xid.parse_kernel_events((blob[:50] + XID_LINE[: rng.randrange(len(XID_LINE))]) for _ in range(50)))


# ---------------------------------------------------------------- fixtures

# Per-file expected Xid codes (exact multiset of codes) and bus events.
FIXTURE_EXPECTED: dict[str, dict[int, int]] = {
    "gpud_dmesg-with-xid-119.log": {119: 5},
    "gpud_dmesg.decode.iso.log.0": {13: 629, 43: 7},
    "gpud_tail_dmesg.0.log": {48: 1, 63: 1, 94: 9},
    "issue_NVSentinel-155_comment_xid79.log": {79: 1},
    "issue_bumblebee-677_legacy-format_xid32_31.log": {32: 2, 31: 1},
    "issue_dxvk-1799_journalctl-k_xid31_rtx2080.log": {31: 2},
    "issue_gpud-pr1160-pr1174_kmsg_xid144_145_149_nvlink.log": {144: 1, 145: 1, 149: 3},
    "issue_gpud-pr46_dmesg-ctime_xid13_109.log": {13: 3, 109: 1},
    "issue_open-gpu-kernel-modules-363_no-timestamp_xid31_gtx1660ti.log": {31: 2},
}

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")


def _fixture_events(name: str) -> list[xid.KernelEvent]:
    with open(FIXTURES / name, "rb") as f:
        return list(xid.parse_kernel_events(raw.decode("utf-8", errors="replace") for raw in f))


@needs_fixtures
def test_every_fixture_file_is_covered() -> None:
    names = {p.name for p in FIXTURES.iterdir() if p.is_file() and p.name != "PROVENANCE.md"}
    assert names == set(FIXTURE_EXPECTED)


@needs_fixtures
@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECTED))
def test_fixture_expected_codes(name: str) -> None:
    if not (FIXTURES / name).is_file():
        pytest.skip(f"{name} not present")
    events = _fixture_events(name)
    assert len(events) >= 1
    counts: dict[int, int] = {}
    for event in events:
        assert isinstance(event, XidEvent)
        counts[event.code] = counts.get(event.code, 0) + 1
        doc = xid.to_json(event)
        assert doc["category"] in xid.CATEGORIES
        json.dumps(doc)
    assert counts == FIXTURE_EXPECTED[name]


@needs_fixtures
def test_fixture_xid119_multiline_joined() -> None:
    events = _fixture_events("gpud_dmesg-with-xid-119.log")
    first = events[0]
    assert isinstance(first, XidEvent)
    assert first.pid == 2024380 and first.process == "nvidia-smi"
    assert first.time == "2025-02-23T16:24:18"
    assert first.gpu_uuid == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert "GPU4 RPC event history (CPU <- GSP):" in first.message
    assert "Call Trace:" in first.message and first.message.endswith("</TASK>")
    assert "\n" not in events[1].message


@needs_fixtures
def test_fixture_pci_domains_preserved() -> None:
    events = _fixture_events("issue_gpud-pr1160-pr1174_kmsg_xid144_145_149_nvlink.log")
    addresses = {(e.code, e.pci_address) for e in events if isinstance(e, XidEvent)}
    assert (149, "0019:01:00.0") in addresses
    assert (145, "0018:01:00.0") in addresses
    assert (144, "0000:01:00.0") in addresses


@needs_fixtures
@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("gpud_dmesg.decode.iso.log.0", {"time": "2025-01-21T02:21:33.498559+00:00", "pid": None,
                                         "pci_address": "0000:38:00.0"}),
        ("issue_bumblebee-677_legacy-format_xid32_31.log", {"uptime_s": 24128.828315,
                                                            "message": "Channel ID 00000000 intr 00004000"}),
        ("issue_dxvk-1799_journalctl-k_xid31_rtx2080.log", {"host": "zeus", "pid": 12890, "process": None}),
        ("issue_gpud-pr46_dmesg-ctime_xid13_109.log", {"time": "2024-08-30T11:43:09"}),
        ("issue_open-gpu-kernel-modules-363_no-timestamp_xid31_gtx1660ti.log",
         {"time": None, "uptime_s": None, "process": "chrome", "line_no": 2}),
    ],
)
def test_fixture_first_event_fields(name: str, attrs: dict[str, object]) -> None:
    first = _fixture_events(name)[0]
    for key, value in attrs.items():
        assert getattr(first, key) == value, key


# ---------------------------------------------------------------- CLI


def test_main_parse_file(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(
        b"\xff\xfe garbage\n"
        + XID79_BLOCK.encode()
        + b"[ 9.0] NVRM: GPU 0000:5e:00.0: GPU has fallen off the bus.\n"
    )
    gpus = tmp_path / "gpus.json"
    gpus.write_text(json.dumps({"0000:5e:00.0": "GPU-5e"}))
    out = io.StringIO()
    assert xidcli.main_parse(str(log), str(gpus), stdout=out) == 0
    docs = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [d["kind"] for d in docs] == ["xid", "bus"]
    assert docs[0]["code"] == 79 and docs[0]["gpu"] == "GPU-4c3f0a2e-1111-2222-3333-444455556666"
    assert docs[1]["gpu"] == "GPU-5e"


def test_main_parse_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ("[ 1.0] " + XID_LINE + "\n").encode() + b"\x80\x81 binary\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    out = io.StringIO()
    assert xidcli.main_parse("-", stdout=out) == 0
    (doc,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert doc["code"] == 13 and doc["uptime_s"] == 1.0


@pytest.mark.parametrize("kind", ["missing", "directory", "bad-map"])
def test_main_parse_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    log = tmp_path / "kern.log"
    log.write_text(XID_LINE + "\n")
    if kind == "missing":
        args: tuple[str, str | None] = (str(tmp_path / "nope.log"), None)
        bad = args[0]
    elif kind == "directory":
        args = (str(tmp_path), None)
        bad = args[0]
    else:
        gpus = tmp_path / "gpus.json"
        gpus.write_text("[1, 2]")
        args = (str(log), str(gpus))
        bad = str(gpus)
    out = io.StringIO()
    assert xidcli.main_parse(*args, stdout=out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"fleetmon xid parse: cannot read {bad}: ")
    assert out.getvalue() == ""


def test_add_arguments() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    xidcli.add_arguments(parser)
    ns = parser.parse_args(["-", "--gpus", "map.json"])
    assert (ns.file, ns.gpus) == ("-", "map.json")
    assert parser.parse_args(["kern.log"]).gpus is None


# ---------------------------------------------------------------- kernlog


def test_kernlog_from_file_follows_appends(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_text("old line before start\n")
    with kernlog.KernelLog.from_file(str(path)) as log:
        assert log.status == f"file:{path}"
        assert log.poll() == []
        with open(path, "a") as f:
            f.write("[ 1.0] " + XID_LINE + "\n[ 1.0] partial")
        assert log.poll() == ["[ 1.0] " + XID_LINE]
        with open(path, "a") as f:
            f.write(" line\n")
        assert log.poll() == ["[ 1.0] partial line"]


def test_kernlog_lines_feed_parser(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_text("")
    log = kernlog.KernelLog.from_file(str(path))
    parser = XidParser()
    with open(path, "a") as f:
        f.write(XID79_BLOCK)
    events = [e for line in log.poll() for e in parser.feed(line)]
    events += parser.flush()
    log.close()
    assert [getattr(e, "code", None) for e in events] == [79]


def test_kernlog_from_file_from_start_and_max_lines(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_text("".join(f"line {i}\n" for i in range(25)))
    log = kernlog.KernelLog.from_file(str(path), from_start=True, max_lines=10)
    got = log.poll() + log.poll() + log.poll() + log.poll()
    log.close()
    assert got == [f"line {i}" for i in range(25)]


def test_kernlog_from_file_truncation_and_late_creation(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    log = kernlog.KernelLog.from_file(str(path))
    assert log.status.startswith("none: ") and log.poll() == []
    path.write_text("first\nsecond\n")
    assert log.poll() == ["first", "second"]
    path.write_text("x\n")  # truncated and rewritten
    assert log.poll() == ["x"]
    os.replace(tmp_path / "later.log", tmp_path / "later.log.1")
    (tmp_path / "later.log").write_text("rotated\n")
    assert log.poll() == ["rotated"]
    log.close()
    log.close()


def test_open_kernel_log_none_names_reasons(tmp_path: Path) -> None:
    log = kernlog.open_kernel_log(
        kmsg_path=str(tmp_path / "no-kmsg"), journalctl="fleetmon-no-such-journalctl"
    )
    assert log.status == (
        f"none: {tmp_path / 'no-kmsg'}: No such file or directory; fleetmon-no-such-journalctl: not found"
    )
    assert log.poll() == []
    log.close()


def test_open_kernel_log_falls_back_to_command(tmp_path: Path) -> None:
    script = tmp_path / "journalctl"
    line = "2025-01-21T02:21:33+0000 h kernel: NVRM: Xid (PCI:0000:38:00): 13, pid=4, name=a, x"
    script.write_text(f"#!/bin/sh\necho '{line}'\nexec sleep 30\n")
    script.chmod(0o755)
    log = kernlog.open_kernel_log(kmsg_path=str(tmp_path / "no-kmsg"), journalctl=str(script))
    try:
        assert log.status == "journald"
        lines: list[str] = []
        for _ in range(250):
            lines += log.poll()
            if lines:
                break
            time.sleep(0.02)
        (event,) = xid.parse_xid_lines(lines)
        assert event.host == "h" and event.code == 13
    finally:
        log.close()


def test_open_kernel_log_command_failing_at_once(tmp_path: Path) -> None:
    script = tmp_path / "journalctl"
    script.write_text("#!/bin/sh\necho 'No journal files were found.' >&2\nexit 1\n")
    script.chmod(0o755)
    log = kernlog.open_kernel_log(kmsg_path=str(tmp_path / "no-kmsg"), journalctl=str(script))
    assert log.status.startswith("none: ")
    assert "No journal files were found." in log.status


def test_command_source_bounded_queue(tmp_path: Path) -> None:
    script = tmp_path / "spew"
    script.write_text("#!/bin/sh\ni=0\nwhile [ $i -lt 50 ]; do echo line$i; i=$((i+1)); done\nexec sleep 30\n")
    script.chmod(0o755)
    log = kernlog.KernelLog.from_command([str(script)], max_lines=10)
    try:
        for _ in range(250):
            if log.dropped >= 40:
                break
            time.sleep(0.02)
        assert log.dropped == 40
        assert log.poll() == [f"line{i}" for i in range(10)]
    finally:
        log.close()


@pytest.mark.parametrize(
    ("record", "lines"),
    [
        ("4,1234,5678901,-;NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n SUBSYSTEM=pci\n",
         ["[    5.678901] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."]),
        ("6,1,1843308145,c;NVRM: A GPU crash dump has been created.\\x0aNVRM: nvidia-bug-report.sh",
         ["[ 1843.308145] NVRM: A GPU crash dump has been created.", "NVRM: nvidia-bug-report.sh"]),
        ("not a record", []),
    ],
)
def test_kmsg_record_to_lines(record: str, lines: list[str]) -> None:
    assert kernlog.kmsg_record_to_lines(record) == lines


def test_kmsg_lines_parse_as_xid() -> None:
    lines = kernlog.kmsg_record_to_lines("3,7,2000000,-;NVRM: Xid (PCI:0000:01:00): 48, pid=9, name=a, DBE")
    (event,) = xid.parse_xid_lines(lines)
    assert (event.code, event.uptime_s, event.pid) == (48, 2.0, 9)


def test_kmsg_source_unseekable_raises(tmp_path: Path) -> None:
    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    keep = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError):
            kernlog.KernelLog.from_kmsg(str(fifo))
    finally:
        os.close(keep)


class FakeKmsg:
    """Stands in for the os calls on /dev/kmsg: one record per read, EAGAIN when empty."""

    def __init__(self) -> None:
        self.reads: list[bytes | OSError] = []
        self.closed = False

    def open(self, path: str, flags: int) -> int:
        assert flags & os.O_NONBLOCK
        return 99

    def lseek(self, fd: int, pos: int, how: int) -> int:
        assert (fd, pos, how) == (99, 0, os.SEEK_END)
        return 0

    def read(self, fd: int, n: int) -> bytes:
        if not self.reads:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        item = self.reads.pop(0)
        if isinstance(item, OSError):
            raise item
        return item

    def close(self, fd: int) -> None:
        self.closed = True


def test_kmsg_source_reads_records_and_counts_losses(monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    fake = FakeKmsg()
    for name in ("open", "lseek", "read", "close"):
        monkeypatch.setattr(os, name, getattr(fake, name))  # kernlog calls os.* directly
    log = kernlog.open_kernel_log(kmsg_path="/dev/kmsg", journalctl=None)
    assert log.status == "kmsg"
    assert log.poll() == []
    fake.reads = [
        b"4,10,1000000,-;NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n",
        OSError(errno.EPIPE, "Broken pipe"),
        b"4,14,2000000,-;hello\n SUBSYSTEM=pci\n",
    ]
    assert log.poll() == [
        "[    1.000000] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
        "[    2.000000] hello",
    ]
    assert log.dropped == 3  # records 11..13 were overwritten (EPIPE, then a seq gap)
    fake.reads = [OSError(errno.EIO, "Input/output error")]
    assert log.poll() == []
    assert log.status == "none: kmsg read failed: Input/output error"
    assert fake.closed
