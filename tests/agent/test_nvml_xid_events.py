"""NVML's Xid events through the boundary: typed notices out, no NVMLError escapes."""

from __future__ import annotations

import dataclasses

import pytest

from fleetmon.agent.nvml import EventWaitError, XidNotice, open_nvml
from fleetmon.sim.nvml import SimulatedNvml


class FakeClock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_registered_gpus_deliver_typed_notices() -> None:
    clock = FakeClock()
    nv = SimulatedNvml("a100*2", clock=clock, start=0.0)
    session = open_nvml(nv)
    events = session.xid_events()
    try:
        assert events.available and events.error == ""
        assert events.register(timeout_s=2.0) == {} and events.registered == {0, 1}
        assert events.wait(0) is None  # nothing yet: a timeout is None, not an error
        nv.inject(1, "xid", code=79)
        notice = events.wait(100)
        assert notice == XidNotice(code=79, gpu=1, uuid=session.inventory(1).uuid,
                                   pci_bus_id=session.inventory(1).values["pci_bus_id"])
        with pytest.raises(dataclasses.FrozenInstanceError):
            notice.code = 1  # type: ignore[misc]
    finally:
        events.close()
        events.close()  # twice is harmless
        session.close()


def test_a_lost_gpu_is_an_error_result_then_draining_goes_on() -> None:
    clock = FakeClock()
    nv = SimulatedNvml("a100*2", clock=clock, start=0.0)
    session = open_nvml(nv)
    events = session.xid_events()
    try:
        events.register(timeout_s=None)
        nv.inject(0, "xid", code=13)
        nv.set_lost(1)  # Xid 79 on GPU 1, and GPU_IS_LOST from the next wait
        codes = [(n.gpu, n.code) for n in events.drain()]
        assert sorted(codes) == [(0, 13), (1, 79)]
        got = events.wait(0)
        assert got is None or isinstance(got, EventWaitError)  # GPU_IS_LOST is reported once, then quiet
    finally:
        events.close()
        session.close()


def test_registering_a_lost_gpu_returns_its_error() -> None:
    nv = SimulatedNvml("a100*2")
    session = open_nvml(nv)
    events = session.xid_events()
    try:
        nv.set_lost(1)
        errors = events.register(timeout_s=2.0)
        assert events.registered == {0} and "lost" in errors[1].lower()
    finally:
        events.close()
        session.close()


class _Broken(SimulatedNvml):
    """A binding whose wait raises something that is not an NVMLError."""

    def nvmlEventSetWait_v2(self, eventSet: object, timeoutms: int) -> None:  # noqa: N802,N803
        raise OSError("libnvidia-ml.so: symbol lookup error")


def test_an_unexpected_binding_error_is_a_result_too() -> None:
    session = open_nvml(_Broken("healthy"))
    events = session.xid_events()
    try:
        events.register(timeout_s=2.0)
        got = events.wait(10)
        assert isinstance(got, EventWaitError) and not got.nvml and "symbol lookup" in got.message
        assert events.drain() == []
    finally:
        events.close()
        session.close()
