"""The simulated twin of AMD's ``amdsmi`` Python binding, for tests and the demo (no ROCm needed).

Follows the binding's documented interface (ROCm's ``docs/reference/amdsmi-py-api.md``, py-interface
README): the same function names and arguments, the exception classes ``AmdSmiException`` /
``AmdSmiLibraryException`` (``err_code``, ``err_info``) / ``AmdSmiParameterException``, the enum-like classes
``AmdSmiInitFlags``, ``AmdSmiTemperatureType``, ``AmdSmiTemperatureMetric``, ``AmdSmiMemoryType``,
``AmdSmiClkType``, ``AmdSmiGpuBlock``, the status codes in ``amdsmi_wrapper`` (``AMDSMI_STATUS_NOT_SUPPORTED``),
and the documented return shapes (dicts with the documented keys, ``"N/A"`` where a value is not available,
power in W and power caps in µW, memory in bytes, temperatures in °C as amd-smi prints them).

One object per simulated node (:class:`SimulatedAmdSmi`): it stands in for the module. Values and faults
come from a :mod:`fleetmon.sim.vendors` scenario at the simulated time ``clock() - start``:
``ecc_uncorrectable`` (per block), ``hot``, ``vanish`` (the handle disappears from
``amdsmi_get_processor_handles`` and its calls raise ``AMDSMI_STATUS_NOT_FOUND``), ``hang`` (every call
sleeps), ``init_error`` (``amdsmi_init`` fails as a binding that does not match the installed ROCm, or,
``error: "library"``, :func:`load` raises OSError as when libamd_smi.so cannot be loaded).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fleetmon.sim import vendors

__all__ = ["AmdSmiException", "AmdSmiLibraryException", "SimulatedAmdSmi", "load"]


class AmdSmiException(Exception):
    """The binding's base exception."""


class AmdSmiLibraryException(AmdSmiException):
    """An error of the library: ``err_code`` (an AMDSMI_STATUS_* number) and ``err_info`` (its text)."""

    def __init__(self, err_code: int, err_info: str | None = None) -> None:
        self.err_code = err_code
        self.err_info = err_info or _STATUS_TEXT.get(err_code, "AMDSMI_STATUS_UNKNOWN_ERROR")
        super().__init__(f"Error code:\n\t{err_code} | {self.err_info}")


class AmdSmiParameterException(AmdSmiException):
    """A wrong argument (a handle of another kind, an unknown enum value)."""


class amdsmi_wrapper:  # noqa: N801 - the binding's module name, whose status constants callers compare with
    AMDSMI_STATUS_SUCCESS = 0
    AMDSMI_STATUS_INVAL = 1
    AMDSMI_STATUS_NOT_SUPPORTED = 2
    AMDSMI_STATUS_FAIL_LOAD_SYMBOL = 5
    AMDSMI_STATUS_TIMEOUT = 8
    AMDSMI_STATUS_INIT_ERROR = 18
    AMDSMI_STATUS_NOT_FOUND = 31


_W = amdsmi_wrapper
_STATUS_TEXT = {
    _W.AMDSMI_STATUS_NOT_SUPPORTED: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported",
    _W.AMDSMI_STATUS_FAIL_LOAD_SYMBOL: "AMDSMI_STATUS_FAIL_LOAD_SYMBOL - Fail to load symbol",
    _W.AMDSMI_STATUS_INIT_ERROR: "AMDSMI_STATUS_INIT_ERROR - An error occurred during initialization",
    _W.AMDSMI_STATUS_NOT_FOUND: "AMDSMI_STATUS_NOT_FOUND - Device Not found",
}


class AmdSmiInitFlags:
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1
    INIT_NON_AMD_CPUS = 1 << 2
    INIT_NON_AMD_GPUS = 1 << 3
    INIT_AMD_APUS = INIT_AMD_CPUS | INIT_AMD_GPUS


class AmdSmiTemperatureType:
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2
    HBM_0 = 3
    HBM_1 = 4
    HBM_2 = 5
    HBM_3 = 6
    PLX = 7


class AmdSmiTemperatureMetric:
    CURRENT = 0
    MAX = 1
    MIN = 2
    MAX_HYST = 3
    MIN_HYST = 4
    CRITICAL = 5
    CRITICAL_HYST = 6
    EMERGENCY = 7
    EMERGENCY_HYST = 8


class AmdSmiMemoryType:
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiClkType:
    SYS = 0
    GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4
    PCIE = 5


class AmdSmiGpuBlock:
    UMC = 1 << 0
    SDMA = 1 << 1
    GFX = 1 << 2
    MMHUB = 1 << 3
    ATHUB = 1 << 4
    PCIE_BIF = 1 << 5
    HDP = 1 << 6
    XGMI_WAFL = 1 << 7
    DF = 1 << 8
    SMN = 1 << 9
    SEM = 1 << 10
    MP0 = 1 << 11
    MP1 = 1 << 12
    FUSE = 1 << 13


_BLOCK_NAMES = {v: k for k, v in vars(AmdSmiGpuBlock).items() if k.isupper()}


class _Handle:
    """A processor handle (opaque to callers, as the binding's ctypes handles are)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<amdsmi_processor_handle {self.index}>"


def load(scenario: str | dict[str, Any], clock: Callable[[], float] = time.time,
         node_name: str | None = None) -> "SimulatedAmdSmi":
    """The twin for ``scenario`` (as ``import amdsmi`` gives the real binding).

    Raises:
        OSError: the scenario's ``init_error`` is ``"library"`` (libamd_smi.so cannot be loaded).
    """
    entry = vendors.resolve(scenario)
    init = vendors.active(entry, "init_error", 0.0)
    if init is not None and init.get("error") == "library":
        raise OSError("libamd_smi.so: cannot open shared object file: No such file or directory")
    return SimulatedAmdSmi(entry, clock, node_name)


class SimulatedAmdSmi:
    """A simulated ``amdsmi`` module for one node (see the module docstring)."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiParameterException = AmdSmiParameterException
    AmdSmiInitFlags = AmdSmiInitFlags
    AmdSmiTemperatureType = AmdSmiTemperatureType
    AmdSmiTemperatureMetric = AmdSmiTemperatureMetric
    AmdSmiMemoryType = AmdSmiMemoryType
    AmdSmiClkType = AmdSmiClkType
    AmdSmiGpuBlock = AmdSmiGpuBlock
    amdsmi_wrapper = amdsmi_wrapper

    def __init__(self, entry: dict[str, Any], clock: Callable[[], float], node_name: str | None) -> None:
        self.entry = entry
        self.clock = clock
        self.node = node_name
        self.start = clock()
        self.profile = vendors.profile(entry)
        self.initialised = False
        self.handles = [_Handle(i) for i in range(vendors.devices(entry))]
        self.calls = 0

    # -- plumbing --------------------------------------------------------------------------------------

    def _t(self) -> float:
        return self.clock() - self.start

    def _enter(self) -> float:
        self.calls += 1
        if not self.initialised:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_INIT_ERROR)
        t = self._t()
        hang = vendors.active(self.entry, "hang", t)
        if hang is not None:
            time.sleep(float(hang.get("seconds", 3600)))
        return t

    def _dev(self, handle: Any) -> dict[str, Any]:
        if not isinstance(handle, _Handle):
            raise AmdSmiParameterException(f"not a processor handle: {handle!r}")
        t = self._enter()
        state = vendors.device_state(self.entry, handle.index, t, self.node)
        if not state["present"]:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_FOUND)
        return state

    # -- library ---------------------------------------------------------------------------------------

    def amdsmi_init(self, flags: int = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        init = vendors.active(self.entry, "init_error", self._t())
        if init is not None:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_FAIL_LOAD_SYMBOL,
                                         "AMDSMI_STATUS_FAIL_LOAD_SYMBOL - Fail to load symbol "
                                         "(the binding does not match the installed ROCm library)")
        self.initialised = True

    def amdsmi_shut_down(self) -> None:
        self.initialised = False

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        self._enter()
        return {"year": 24, "major": 6, "minor": 3, "release": 0, "build": "sim"}

    def amdsmi_get_rocm_version(self) -> str:
        self._enter()
        return self.profile.runtime

    def amdsmi_get_processor_handles(self) -> list[_Handle]:
        t = self._enter()
        return [h for h in self.handles
                if vendors.device_state(self.entry, h.index, t, self.node)["present"]]

    # -- static ----------------------------------------------------------------------------------------

    def amdsmi_get_gpu_device_bdf(self, handle: Any) -> str:
        return str(self._dev(handle)["bus_id"])

    def amdsmi_get_gpu_device_uuid(self, handle: Any) -> str:
        d = self._dev(handle)
        h = d["uuid_hex"]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-0000-000000000000"

    def amdsmi_get_gpu_asic_info(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        p = self.profile
        return {"market_name": p.name, "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                "subvendor_id": "0x1002", "device_id": p.device_id, "rev_id": "0x01",
                "asic_serial": "0x" + d["uuid_hex"].upper(), "oam_id": "N/A", "num_of_compute_units": 120,
                "target_graphics_version": p.gfx, "subsystem_id": "0x0c34"}

    def amdsmi_get_gpu_board_info(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        return {"model_number": "102-D34314-00", "product_serial": d["serial"], "fru_id": "N/A",
                "product_name": self.profile.board or self.profile.name, "manufacturer_name": "AMD"}

    def amdsmi_get_gpu_vbios_info(self, handle: Any) -> dict[str, Any]:
        self._dev(handle)
        p = self.profile
        return {"name": p.name, "build_date": "2023/05/04 03:23", "part_number": p.vbios, "version": p.vbios,
                "boot_firmware": "N/A"}

    def amdsmi_get_fw_info(self, handle: Any) -> dict[str, Any]:
        self._dev(handle)
        return {"fw_list": [{"fw_name": "SMC", "fw_version": "00.54.29.00"},
                            {"fw_name": "PSP_SOSDRV", "fw_version": "00.17.00.4F"},
                            {"fw_name": "TA_RAS", "fw_version": "27.00.01.62"}]}

    def amdsmi_get_gpu_driver_info(self, handle: Any) -> dict[str, Any]:
        self._dev(handle)
        return {"driver_name": "amdgpu", "driver_version": self.profile.driver, "driver_date": "2024/05/01 00:00"}

    def amdsmi_get_power_cap_info(self, handle: Any, sensor_ind: int = 0) -> dict[str, Any]:
        self._dev(handle)
        cap = int(self.profile.power_cap_w * 1_000_000)
        return {"power_cap": cap, "dpm_cap": 1502, "default_power_cap": cap, "min_power_cap": 0,
                "max_power_cap": cap}

    def amdsmi_get_gpu_memory_total(self, handle: Any, mem_type: int) -> int:
        d = self._dev(handle)
        if mem_type != AmdSmiMemoryType.VRAM:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_SUPPORTED)
        return int(d["mem_total_mib"]) * 1048576

    # -- live ------------------------------------------------------------------------------------------

    def amdsmi_get_temp_metric(self, handle: Any, sensor_type: int, metric: int) -> int:
        d = self._dev(handle)
        p = self.profile
        if metric == AmdSmiTemperatureMetric.CURRENT:
            by_sensor = {AmdSmiTemperatureType.EDGE: d["temp_edge_c"], AmdSmiTemperatureType.HOTSPOT:
                         d["temp_junction_c"], AmdSmiTemperatureType.VRAM: d["temp_mem_c"]}
        elif metric == AmdSmiTemperatureMetric.CRITICAL:
            by_sensor = {AmdSmiTemperatureType.HOTSPOT: p.slowdown_c, AmdSmiTemperatureType.VRAM: p.slowdown_c + 5}
        elif metric == AmdSmiTemperatureMetric.EMERGENCY:
            by_sensor = {AmdSmiTemperatureType.HOTSPOT: p.shutdown_c, AmdSmiTemperatureType.VRAM: p.shutdown_c + 5}
        else:
            by_sensor = {}
        if sensor_type not in by_sensor:  # an MI100 has no HBM_n sensors; limits only for hotspot and VRAM
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_SUPPORTED)
        return int(round(by_sensor[sensor_type]))

    def amdsmi_get_power_info(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        # An MI100 (like every card before MI300) reports the average socket power only.
        return {"socket_power": int(d["power_w"]), "current_socket_power": "N/A",
                "average_socket_power": int(d["power_w"]), "gfx_voltage": 662, "soc_voltage": "N/A",
                "mem_voltage": "N/A", "power_limit": int(self.profile.power_cap_w)}

    def amdsmi_get_gpu_activity(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        return {"gfx_activity": d["util_pct"], "umc_activity": d["util_pct"] // 2, "mm_activity": "N/A"}

    def amdsmi_get_gpu_memory_usage(self, handle: Any, mem_type: int) -> int:
        d = self._dev(handle)
        if mem_type != AmdSmiMemoryType.VRAM:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_SUPPORTED)
        return int(d["mem_used_mib"]) * 1048576

    def amdsmi_get_clock_info(self, handle: Any, clock_type: int) -> dict[str, Any]:
        d = self._dev(handle)
        if clock_type == AmdSmiClkType.GFX:
            return {"clk": d["sclk_mhz"], "min_clk": 300, "max_clk": self.profile.max_sclk_mhz, "clk_locked": False,
                    "clk_deep_sleep": False}
        if clock_type == AmdSmiClkType.MEM:
            return {"clk": d["mclk_mhz"], "min_clk": 900, "max_clk": self.profile.max_mclk_mhz, "clk_locked": "N/A",
                    "clk_deep_sleep": False}
        raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_SUPPORTED)

    def amdsmi_get_pcie_info(self, handle: Any) -> dict[str, Any]:
        self._dev(handle)
        p = self.profile
        return {"pcie_static": {"max_pcie_width": p.pcie_width, "max_pcie_speed": 16000,
                                "pcie_interface_version": p.pcie_gen, "slot_type": "CEM"},
                "pcie_metric": {"pcie_width": p.pcie_width, "pcie_speed": 16000, "pcie_bandwidth": "N/A",
                                "pcie_replay_count": 0, "pcie_l0_to_recovery_count": "N/A",
                                "pcie_replay_roll_over_count": "N/A", "pcie_nak_sent_count": "N/A",
                                "pcie_nak_received_count": "N/A"}}

    def amdsmi_get_energy_count(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        return {"energy_accumulator": int(d["energy_j"] * 1e6 / 15.259), "counter_resolution": 15.259,
                "timestamp": int(self.clock() * 1e9)}

    def amdsmi_get_gpu_total_ecc_count(self, handle: Any) -> dict[str, Any]:
        d = self._dev(handle)
        return {"correctable_count": d["ecc_corr"], "uncorrectable_count": d["ecc_unc"],
                "deferred_count": d["ecc_deferred"]}

    def amdsmi_get_gpu_ecc_count(self, handle: Any, block: int) -> dict[str, Any]:
        d = self._dev(handle)
        name = _BLOCK_NAMES.get(block)
        if name is None:
            raise AmdSmiParameterException(f"not an AmdSmiGpuBlock: {block!r}")
        counts = d["ecc_blocks"].get(name)
        if counts is None:
            raise AmdSmiLibraryException(_W.AMDSMI_STATUS_NOT_SUPPORTED)
        return {"correctable_count": counts["correctable"], "uncorrectable_count": counts["uncorrectable"],
                "deferred_count": counts["deferred"]}

    def amdsmi_get_gpu_bad_page_info(self, handle: Any) -> list[dict[str, Any]]:
        d = self._dev(handle)
        return [{"value": n, "page_address": 0x7F0000 + n * 0x1000, "page_size": 4096, "status": "RESERVED"}
                for n in range(d["ecc_unc"])]  # every uncorrectable UMC error retires its page
