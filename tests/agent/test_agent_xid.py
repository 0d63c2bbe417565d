"""The agent's Xid watcher: NVML's event API and a streamed kernel log into the event buffer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.kernlog import KernelLog
from fleetmon.agent.nvml import open_nvml
from fleetmon.agent.xidwatch import XidWatcher
from fleetmon.records import Event
from fleetmon.sim.nvml import SimulatedNvml

XID119_HEAD = [
    "[ 5000.100000] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting "
    "for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
    "[ 5000.100100] NVRM: GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data 0x0000000000002081 "
    "0x0000000000000004.",
]
XID119_TAIL = [
    "[ 5000.100200] NVRM: GPU4 RPC history (CPU -> GSP):",
    "[ 5000.100300] NVRM:     entry function                   data0              data1",
    "[ 5000.100400] NVRM:      0    103  GSP_RM_ALLOC          0x0000000000002081 0x0000000000000004",
]


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def session():
    s = open_nvml(SimulatedNvml("healthy"))
    yield s
    s.close()


def test_multiline_kernel_message_split_over_two_reads_is_one_event(session, tmp_path: Path):
    log_path = tmp_path / "kern.log"
    log_path.write_text("")
    events: list[Event] = []
    watcher = XidWatcher(session, events.append, kernel_log=KernelLog.from_file(str(log_path)), quiet_flush_s=0.8,
                         kernel_poll_s=0.1)
    stop = threading.Event()
    watcher.start(stop)
    try:
        with open(log_path, "a") as fh:
            fh.write("\n".join(XID119_HEAD) + "\n")
        time.sleep(0.3)  # the reader polls in between (every 0.1 s): the first part arrives alone
        with open(log_path, "a") as fh:
            fh.write("\n".join(XID119_TAIL) + "\n")
        wait_for(lambda: events)
        time.sleep(0.3)
    finally:
        stop.set()
        watcher.close()
    assert len(events) == 1
    (ev,) = events
    assert ev.kind == "xid" and ev.code == 119 and ev.pci_bus_id == "0000:9b:00.0"
    lines = ev.message.split("\n")
    assert len(lines) == 5 and lines[-1].strip().startswith("0    103  GSP_RM_ALLOC")
    assert ev.data["source"] == "kernel" and ev.data["category"] == "driver"


def test_kernel_xid_names_the_gpu_by_pci_address(session, tmp_path: Path):
    pci = session.inventory(1).values["pci_bus_id"]  # "0000:21:00.0"
    log_path = tmp_path / "kern.log"
    log_path.write_text("")
    events: list[Event] = []
    watcher = XidWatcher(session, events.append, kernel_log=KernelLog.from_file(str(log_path)), quiet_flush_s=0.2,
                         kernel_poll_s=0.1)
    stop = threading.Event()
    watcher.start(stop)
    try:
        bus = pci.split(":")[1]
        with open(log_path, "a") as fh:
            fh.write(f"[ 77.0] NVRM: Xid (PCI:0000:{bus}:00): 79, pid=0, GPU has fallen off the bus.\n")
        wait_for(lambda: events)
    finally:
        stop.set()
        watcher.close()
    assert events[0].code == 79 and events[0].uuid == session.inventory(1).uuid
    assert events[0].data["severity"] == "critical"


def test_nvml_xid_events_reach_the_buffer(tmp_path: Path):
    simnvml = SimulatedNvml("healthy")
    s = open_nvml(simnvml)
    buf = Buffer(tmp_path / "x.db")
    watcher = XidWatcher(s, buf.append_event, simulate=True)
    stop = threading.Event()
    watcher.start(stop)
    try:
        wait_for(lambda: watcher.nvml_status == "nvml")
        assert watcher.source == "nvml"
        simnvml.inject(1, "xid", code=94)
        wait_for(lambda: buf.events_after(0))
    finally:
        stop.set()
        time.sleep(0.1)
        s.close()
    (ev,) = buf.events_after(0)
    assert ev["kind"] == "xid" and ev["code"] == 94 and ev["uuid"] == s.inventory(1).uuid
    assert ev["data"]["source"] == "nvml" and ev["data"]["name"] == "ROBUST_CHANNEL_CONTAINED_ERROR"
    buf.close()


class _NoEventApi(SimulatedNvml):
    """A pynvml whose event API fails (an old binding)."""

    def nvmlEventSetCreate(self) -> None:  # noqa: N802 - pynvml's name
        raise RuntimeError("event API missing in this pynvml")


def test_xid_source_says_why_when_nothing_is_readable():
    session = open_nvml(_NoEventApi("healthy"))
    events: list[Event] = []
    watcher = XidWatcher(session, events.append, kernel_log=KernelLog.none("/dev/kmsg: Permission denied; "
                                                                        "journalctl: not found"))
    source = watcher.source
    assert source.startswith("none: ")
    assert "event API missing" in source and "/dev/kmsg: Permission denied" in source
    watcher.start(threading.Event())
    (ev,) = events  # the missing kernel log is an event too
    assert ev.kind == "xid_source" and "Permission denied" in ev.message
    session.close()


def test_hung_gpu_does_not_delay_event_registration():
    s = open_nvml(SimulatedNvml("hung", hang_s=2.0), inventory_wait_s=0.1, call_timeout_s=0.2)
    try:
        t0 = time.monotonic()
        watcher = XidWatcher(s, lambda e: None, simulate=True)
        stop = threading.Event()
        watcher.start(stop)
        assert time.monotonic() - t0 < 0.5
        wait_for(lambda: watcher.nvml_status == "nvml", timeout=4)
        assert 1 not in watcher.status_dict()["registered_gpus"]
        assert {0, 2, 3} <= set(watcher.status_dict()["registered_gpus"])
        stop.set()
    finally:
        s.close()
