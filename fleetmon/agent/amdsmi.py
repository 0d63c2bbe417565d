"""The agent's backend through AMD's own Python binding, ``amdsmi`` (ROCm's libamd_smi).

Needs ROCm's amd-smi library on the node and its Python package (``amdsmi``, installed with ROCm or from
``/opt/rocm/share/amd_smi``) matching that library. Where the binding cannot be imported, the library cannot
be loaded, or ``amdsmi_init`` fails (a binding of another ROCm release), the agent logs one line saying why
and reads the same devices through the ``amd-smi`` tool instead (:mod:`fleetmon.agent.tools`).

Calls (the binding's documented API, ROCm ``amdsmi-py-api.md``) and what they fill:

* inventory: ``amdsmi_get_gpu_asic_info`` (market name, device id, ``asic_serial`` → ``uuid`` as
  ``GPU-<16 hex digits>``, the spelling :mod:`fleetmon.sources.amd` gives rocm-smi's and amd-smi's unique id,
  gfx target → architecture), ``amdsmi_get_gpu_board_info`` (product serial, model number),
  ``amdsmi_get_gpu_device_bdf``, ``amdsmi_get_gpu_vbios_info``, ``amdsmi_get_fw_info`` (the SMC firmware →
  ``firmware_version``; all in ``extra["firmware"]``), ``amdsmi_get_gpu_memory_total(VRAM)``,
  ``amdsmi_get_power_cap_info`` (µW), ``amdsmi_get_temp_metric(HOTSPOT, CRITICAL / EMERGENCY)`` (the limits),
  ``amdsmi_get_pcie_info`` (``pcie_static``), ``amdsmi_get_clock_info`` (maxima); node:
  ``amdsmi_get_gpu_driver_info`` (amdgpu), ``amdsmi_get_rocm_version`` (→ ``runtime_version``).
* sample: ``amdsmi_get_processor_handles`` (a device no longer listed is lost), ``amdsmi_get_temp_metric``
  (``temp_c`` = HOTSPOT, i.e. junction, where the card has it, else EDGE; ``mem_temp_c`` = VRAM; as
  :mod:`fleetmon.sources.amd` picks them), ``amdsmi_get_power_info`` (socket power: current on MI300+,
  average before), ``amdsmi_get_gpu_activity``, ``amdsmi_get_gpu_memory_usage(VRAM)``,
  ``amdsmi_get_clock_info(GFX / MEM)``, ``amdsmi_get_pcie_info`` (``pcie_metric``), ``amdsmi_get_energy_count``,
  ``amdsmi_get_gpu_total_ecc_count`` and ``amdsmi_get_gpu_ecc_count`` per RAS block,
  ``amdsmi_get_gpu_bad_page_info``.

A call answering ``AMDSMI_STATUS_NOT_SUPPORTED`` or ``"N/A"`` leaves its field ``unsupported``; any other
error ``failed``; never zero. ``extra(index)`` holds the names :mod:`fleetmon.sources.amd` documents
(``temp_sensor``, ``temp_edge_c``, ``temp_junction_c``, ``ecc_deferred``, ``ecc_blocks`` {block:
{correctable, uncorrectable, deferred}}, ``gfx_target``, ``firmware``), plus ``bad_pages`` (the count of
``amdsmi_get_gpu_bad_page_info``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from fleetmon.agent.backend import Backend, BackendSpec, BackendUnavailable, register
from fleetmon.agent.polled import PolledBackend, ReadError
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.sources.capture import (
    SAMPLE_FIELDS, Capture, Readings, inventory_readings, make_info, node_readings, sample_readings,
)
from fleetmon.text import one_line, printable

__all__ = ["AmdSmiReader", "open_amdsmi"]

log = logging.getLogger("fleetmon.agent.amdsmi")

_ARCH = {"gfx906": "gcn5", "gfx908": "cdna", "gfx90a": "cdna2", "gfx942": "cdna3", "gfx950": "cdna4",
         "gfx1100": "rdna3"}
_BLOCKS = ("UMC", "SDMA", "GFX", "MMHUB", "ATHUB", "PCIE_BIF", "HDP", "XGMI_WAFL", "DF", "SMN", "SEM", "MP0",
           "MP1", "FUSE")
_MILLI = 1000
"""The binding's docs give temperatures in millidegrees, amd-smi (the same library) prints them in °C: a value
of 1000 or more is read as millidegrees (no sensor reads 1000 °C)."""


class _NoValue(Exception):
    def __init__(self, status: Status) -> None:
        self.status = status


class _Calls:
    """Calls into the binding for one read: each one's error becomes a status, the deadline stops the rest."""

    def __init__(self, amd: Any, deadline: float) -> None:
        self.amd = amd
        self.deadline = deadline
        self.not_supported = getattr(getattr(amd, "amdsmi_wrapper", None), "AMDSMI_STATUS_NOT_SUPPORTED", 2)
        self.not_found = getattr(getattr(amd, "amdsmi_wrapper", None), "AMDSMI_STATUS_NOT_FOUND", 31)
        self.lost = False

    def __call__(self, fn: str, *args: Any) -> Any:
        if time.monotonic() > self.deadline:
            raise _NoValue(Status.FAILED)
        if self.lost:
            raise _NoValue(Status.GPU_LOST)
        try:
            value = getattr(self.amd, fn)(*args)
        except AttributeError:  # an older binding without this function
            raise _NoValue(Status.UNSUPPORTED) from None
        except self.amd.AmdSmiLibraryException as exc:
            code = getattr(exc, "err_code", None)
            if code == self.not_supported:
                raise _NoValue(Status.UNSUPPORTED) from None
            if code == self.not_found:
                self.lost = True
                raise _NoValue(Status.GPU_LOST) from None
            raise _NoValue(Status.FAILED) from None
        except self.amd.AmdSmiException:
            raise _NoValue(Status.FAILED) from None
        return value

    def put(self, r: Readings, name: str, get: Callable[[], Any], conv: Callable[[Any], Any] = lambda v: v) -> Any:
        """Read one field: ``get()`` (making calls) then ``conv``; "N/A" is unsupported, a bad value failed."""
        try:
            raw = get()
        except _NoValue as nv:
            r.put(name, None, nv.status)
            return None
        if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("N/A", "NA", "")):
            r.put(name, None, Status.UNSUPPORTED)
            return None
        try:
            value = conv(raw)
        except (TypeError, ValueError, KeyError):
            r.put(name, None, Status.FAILED)
            return None
        r.put(name, value)
        return value


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(v)
    return float(v)


def _celsius(v: Any) -> float:
    x = _num(v)
    return round(x / _MILLI, 1) if abs(x) >= _MILLI else x


def _na(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip().upper() in ("N/A", "NA", ""))


class AmdSmiReader:
    """A :class:`fleetmon.agent.polled.Reader` over the ``amdsmi`` binding (an initialised module)."""

    name = "amdsmi"
    vendor = "amd"

    def __init__(self, amd: Any) -> None:
        self.amd = amd

    def _handles(self, calls: _Calls) -> list[Any]:
        try:
            return list(calls("amdsmi_get_processor_handles"))
        except _NoValue as nv:
            raise ReadError(Text(N_("amdsmi_get_processor_handles failed ({status})"),
                                 status=nv.status.value)) from None

    def inventory(self, timeout_s: float) -> Capture:
        amd = self.amd
        calls = _Calls(amd, time.monotonic() + timeout_s)
        gpus, samples, extras = [], [], []
        node = node_readings()
        for pos, h in enumerate(self._handles(calls)):
            inv, extra = inventory_readings(), dict[str, Any]()
            inv.put("index", pos)
            asic: dict[str, Any] = {}
            try:
                asic = dict(calls("amdsmi_get_gpu_asic_info", h))
            except _NoValue as nv:
                for name in ("name", "uuid", "pci_device_id", "architecture"):
                    inv.put(name, None, nv.status)
            if asic:
                calls.put(inv, "name", lambda: asic.get("market_name"), lambda v: printable(str(v), 96))
                calls.put(inv, "uuid", lambda: asic.get("asic_serial"),
                          lambda v: f"GPU-{int(str(v), 16):016x}")
                calls.put(inv, "pci_device_id", lambda: asic.get("device_id"),
                          lambda v: f"0x{int(str(v), 16):04X}1002")
                gfx = asic.get("target_graphics_version")
                if not _na(gfx):
                    extra["gfx_target"] = str(gfx)
                inv.put("architecture", _ARCH.get(str(gfx)))
            board: dict[str, Any] = {}
            try:
                board = dict(calls("amdsmi_get_gpu_board_info", h))
            except _NoValue as nv:
                inv.put("serial", None, nv.status)
            calls.put(inv, "serial", lambda: board.get("product_serial"), lambda v: printable(str(v), 64))
            calls.put(inv, "board_part_number", lambda: board.get("model_number"), lambda v: printable(str(v), 64))
            calls.put(inv, "pci_bus_id", lambda: calls("amdsmi_get_gpu_device_bdf", h), normalize_bus_id)
            calls.put(inv, "vbios", lambda: calls("amdsmi_get_gpu_vbios_info", h)["version"],
                      lambda v: printable(str(v), 64))
            try:
                fw = {str(f["fw_name"]): str(f["fw_version"]) for f in calls("amdsmi_get_fw_info", h)["fw_list"]}
                extra["firmware"] = fw
                inv.put("firmware_version", fw.get("SMC") or fw.get("PM"))
            except (_NoValue, KeyError, TypeError):
                inv.put("firmware_version", None, Status.UNSUPPORTED)
            calls.put(inv, "memory_total_mib",
                      lambda: calls("amdsmi_get_gpu_memory_total", h, amd.AmdSmiMemoryType.VRAM),
                      lambda v: int(_num(v)) // 1048576)
            cap: dict[str, Any]
            try:
                cap = dict(calls("amdsmi_get_power_cap_info", h, 0))
            except _NoValue as nv:
                cap = {k: nv for k in ("power_cap", "default_power_cap", "min_power_cap", "max_power_cap")}
            for name, key in (("power_enforced_w", "power_cap"), ("power_default_w", "default_power_cap"),
                              ("power_min_w", "min_power_cap"), ("power_max_w", "max_power_cap")):
                calls.put(inv, name, _getter(cap, key), lambda v: round(_num(v) / 1e6, 3))
            t = amd.AmdSmiTemperatureType
            m = amd.AmdSmiTemperatureMetric
            calls.put(inv, "temp_slowdown_c", lambda: calls("amdsmi_get_temp_metric", h, t.HOTSPOT, m.CRITICAL),
                      _celsius)
            calls.put(inv, "temp_shutdown_c", lambda: calls("amdsmi_get_temp_metric", h, t.HOTSPOT, m.EMERGENCY),
                      _celsius)
            try:
                static = dict(calls("amdsmi_get_pcie_info", h)["pcie_static"])
            except (_NoValue, KeyError, TypeError):
                static = {}
            calls.put(inv, "pcie_max_width", lambda: static.get("max_pcie_width"), lambda v: int(_num(v)))
            calls.put(inv, "pcie_max_gen", lambda: static.get("pcie_interface_version"), lambda v: int(_num(v)))
            calls.put(inv, "max_sm_clock_mhz", lambda: calls("amdsmi_get_clock_info", h, amd.AmdSmiClkType.GFX)[
                "max_clk"], lambda v: int(_num(v)))
            calls.put(inv, "max_mem_clock_mhz", lambda: calls("amdsmi_get_clock_info", h, amd.AmdSmiClkType.MEM)[
                "max_clk"], lambda v: int(_num(v)))
            if node.values.get("driver_version") is None:
                calls.put(node, "driver_version", lambda: calls("amdsmi_get_gpu_driver_info", h)["driver_version"],
                          lambda v: printable(str(v), 64))
            uuid = inv.values.get("uuid") or f"unknown-gpu-{pos}-{inv.values.get('pci_bus_id') or 'amdsmi'}"
            inv.put("uuid", uuid)
            gpus.append(GpuInventory(uuid=str(uuid), index=pos, name=str(inv.values.get("name") or "unknown"),
                                     values=inv.values, status=inv.status))
            s = sample_readings()
            samples.append(GpuSample(ts=0.0, uuid=str(uuid), index=pos, values=s.values, status=s.status))
            extras.append(extra)
        calls.put(node, "runtime_version", lambda: calls("amdsmi_get_rocm_version"),
                  lambda v: printable(str(v[-1] if isinstance(v, tuple) else v), 64))  # some releases: (ok, text)
        node.put("gpu_count", len(gpus))
        return Capture(source="amdsmi", info=make_info("", node, "amdsmi"), gpus=gpus, samples=samples,
                       vendor="amd", extra=extras)

    def sample(self, timeout_s: float) -> Capture:
        amd = self.amd
        deadline = time.monotonic() + timeout_s
        gpus, samples, extras = [], [], []
        for pos, h in enumerate(self._handles(_Calls(amd, deadline))):
            calls = _Calls(amd, deadline)
            inv, s, extra = inventory_readings(), sample_readings(), dict[str, Any]()
            calls.put(inv, "pci_bus_id", lambda: calls("amdsmi_get_gpu_device_bdf", h), normalize_bus_id)
            self._sample(calls, h, s, extra)
            if calls.lost:
                s.mark_lost(SAMPLE_FIELDS)
            uuid = f"amdsmi-{pos}"
            inv.put("uuid", uuid)
            state = "lost" if calls.lost else "ok"
            gpus.append(GpuInventory(uuid=uuid, index=pos, name="", values=inv.values, status=inv.status, state=state))
            samples.append(GpuSample(ts=0.0, uuid=uuid, index=pos, values=s.values, status=s.status, state=state))
            extras.append(extra)
        return Capture(source="amdsmi", info=make_info("", node_readings(), "amdsmi"), gpus=gpus, samples=samples,
                       vendor="amd", extra=extras)

    def _sample(self, calls: _Calls, h: Any, s: Readings, extra: dict[str, Any]) -> None:
        amd = self.amd
        t, m = amd.AmdSmiTemperatureType, amd.AmdSmiTemperatureMetric
        temps = {}
        for sensor, name in ((t.HOTSPOT, "temp_junction_c"), (t.EDGE, "temp_edge_c")):
            r = sample_readings()
            value = calls.put(r, "temp_c", _caller(calls, "amdsmi_get_temp_metric", h, sensor, m.CURRENT), _celsius)
            temps[name] = (value, r.status.get("temp_c"))
            if value is not None:
                extra[name] = value
        junction, edge = temps["temp_junction_c"], temps["temp_edge_c"]
        if junction[0] is not None:
            s.put("temp_c", junction[0])
            extra["temp_sensor"] = "junction"
        elif edge[0] is not None:
            s.put("temp_c", edge[0])
            extra["temp_sensor"] = "edge"
        else:
            s.put("temp_c", None, Status(junction[1] if junction[1] == Status.FAILED.value else edge[1]))
        calls.put(s, "mem_temp_c", lambda: calls("amdsmi_get_temp_metric", h, t.VRAM, m.CURRENT), _celsius)
        try:
            power = dict(calls("amdsmi_get_power_info", h))
        except _NoValue as nv:
            power = {"socket_power": nv, "power_limit": nv}
        socket = power.get("current_socket_power")
        if _na(socket):
            socket = power.get("average_socket_power", power.get("socket_power"))
        calls.put(s, "power_w", lambda: _raise_nv(socket), _num)
        calls.put(s, "power_limit_w", lambda: _raise_nv(power.get("power_limit")), _num)
        try:
            act = dict(calls("amdsmi_get_gpu_activity", h))
        except _NoValue as nv:
            act = {"gfx_activity": nv, "umc_activity": nv}
        calls.put(s, "util_gpu_pct", lambda: _raise_nv(act.get("gfx_activity")), _num)
        calls.put(s, "util_mem_pct", lambda: _raise_nv(act.get("umc_activity")), _num)
        used = calls.put(s, "mem_used_mib", lambda: calls("amdsmi_get_gpu_memory_usage", h, amd.AmdSmiMemoryType.VRAM),
                         lambda v: int(_num(v)) // 1048576)
        r = sample_readings()
        total = calls.put(r, "mem_free_mib", lambda: calls("amdsmi_get_gpu_memory_total", h, amd.AmdSmiMemoryType.VRAM),
                          lambda v: int(_num(v)) // 1048576)
        s.put("mem_free_mib", None if total is None or used is None else total - used,
              Status.OK if total is not None and used is not None else Status(r.status.get("mem_free_mib",
                                                                                             "unsupported")))
        calls.put(s, "sm_clock_mhz", lambda: calls("amdsmi_get_clock_info", h, amd.AmdSmiClkType.GFX)["clk"],
                  lambda v: int(_num(v)))
        calls.put(s, "mem_clock_mhz", lambda: calls("amdsmi_get_clock_info", h, amd.AmdSmiClkType.MEM)["clk"],
                  lambda v: int(_num(v)))
        try:
            metric = dict(calls("amdsmi_get_pcie_info", h)["pcie_metric"])
        except (_NoValue, KeyError, TypeError):
            metric = {}
        calls.put(s, "pcie_width", lambda: metric.get("pcie_width"), lambda v: int(_num(v)))
        calls.put(s, "pcie_replay", lambda: metric.get("pcie_replay_count"), lambda v: int(_num(v)))
        # pcie_speed is in MT/s (16000 = 16 GT/s = Gen 4)
        gens = {2500: 1, 5000: 2, 8000: 3, 16000: 4, 32000: 5, 64000: 6}
        calls.put(s, "pcie_gen", lambda: metric.get("pcie_speed"), lambda v: gens[int(_num(v))])
        calls.put(s, "energy_mj", lambda: calls("amdsmi_get_energy_count", h),
                  lambda e: round(_num(e["energy_accumulator"]) * _num(e["counter_resolution"]) / 1000.0, 3))
        try:
            total_ecc = dict(calls("amdsmi_get_gpu_total_ecc_count", h))
        except _NoValue as nv:
            total_ecc = {"correctable_count": nv, "uncorrectable_count": nv}
        calls.put(s, "ecc_corr_vol", lambda: _raise_nv(total_ecc.get("correctable_count")), lambda v: int(_num(v)))
        calls.put(s, "ecc_unc_vol", lambda: _raise_nv(total_ecc.get("uncorrectable_count")), lambda v: int(_num(v)))
        deferred = total_ecc.get("deferred_count")
        if isinstance(deferred, int):
            extra["ecc_deferred"] = deferred
        blocks: dict[str, dict[str, int]] = {}
        for block in _BLOCKS:
            code = getattr(amd.AmdSmiGpuBlock, block, None)
            if code is None:
                continue
            try:
                counts = dict(calls("amdsmi_get_gpu_ecc_count", h, code))
            except _NoValue:
                continue  # a block this card has no RAS for: absent, never zero
            got = {k: int(v) for k in ("correctable", "uncorrectable", "deferred")
                   if isinstance(v := counts.get(f"{k}_count"), int)}
            if got:
                blocks[block] = got
        if blocks:
            extra["ecc_blocks"] = blocks
        try:
            extra["bad_pages"] = len(list(calls("amdsmi_get_gpu_bad_page_info", h)))
        except (_NoValue, TypeError):
            pass

    def close(self) -> None:
        try:
            self.amd.amdsmi_shut_down()
        except Exception:  # shutting down a library that failed: nothing left to do
            pass


def _getter(d: dict[str, Any], key: str) -> Callable[[], Any]:
    return lambda: _raise_nv(d.get(key))


def _caller(calls: _Calls, fn: str, *args: Any) -> Callable[[], Any]:
    return lambda: calls(fn, *args)


def _raise_nv(value: Any) -> Any:
    if isinstance(value, _NoValue):
        raise value
    return value


def load_amdsmi(simulate: str | None, clock: Callable[[], float], node_name: str | None) -> Any:
    """The binding (``import amdsmi``), or the scenario's twin (:mod:`fleetmon.sim.amdsmi`)."""
    if simulate is not None:
        from fleetmon.sim.amdsmi import load

        return load(simulate, clock, node_name)
    import importlib

    return importlib.import_module("amdsmi")


def open_amdsmi(*, known_inventory: list[dict[str, Any]] | None = None, inventory_wait_s: float = 2.0,
                simulate: str | None = None, clock: Callable[[], float] | None = None,
                node_name: str | None = None, module: Any = None) -> Backend:
    """Open the amdsmi backend; where the binding cannot be used, the ``amd-smi`` tool backend (one log line).

    Raises:
        BackendUnavailable: neither the binding nor the amd-smi tool can be used (both reasons).
    """
    clock = clock or time.time
    why: str | None = None
    try:
        amd = module if module is not None else load_amdsmi(simulate, clock, node_name)
        amd.amdsmi_init(amd.AmdSmiInitFlags.INIT_AMD_GPUS)
    except ImportError as exc:
        why = Text(N_("the amdsmi package cannot be imported ({error})"), error=str(exc))
    except OSError as exc:
        why = Text(N_("ROCm's amd-smi library cannot be loaded ({error})"), error=str(exc))
    except Exception as exc:  # AmdSmiLibraryException (or another error) from amdsmi_init
        if not type(exc).__name__.startswith("AmdSmi"):
            raise
        why = Text(N_("amdsmi_init failed: {error} (a binding not matching ROCm?)"),
                   error=one_line(str(exc), 160))
    if why is None:
        try:
            return PolledBackend(AmdSmiReader(amd), inventory_wait_s=max(inventory_wait_s, 10.0))
        except BackendUnavailable as exc:
            why = reason_of(exc)
    log.warning("amdsmi binding not usable: %s; reading the devices through the amd-smi tool instead", why)
    from fleetmon.agent.tools import open_tool

    try:
        return open_tool("amd-smi", known_inventory=known_inventory, inventory_wait_s=inventory_wait_s,
                         simulate=simulate, clock=clock, node_name=node_name, note=f"amdsmi: {why}")
    except BackendUnavailable as exc:
        raise BackendUnavailable(Text(N_("amdsmi: {why}; amd-smi: {reason}"), why=why, reason=reason_of(exc))) from exc


def _probe() -> str | None:
    import importlib.util

    if importlib.util.find_spec("amdsmi") is None:
        return Text(N_("the amdsmi Python package (ROCm's binding) is not installed"))
    return None


register(BackendSpec("amdsmi", "amd", N_("ROCm's amd-smi library and its Python binding (the amdsmi package); "
                                         "falls back to the amd-smi tool"), _probe, open_amdsmi))
