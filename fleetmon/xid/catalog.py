"""NVIDIA Xid catalog: what each Xid code means, its category, severity and action.

The catalog maps an Xid code to its NVIDIA mnemonic, meaning, a monitor
category, a severity and a recommended action. Facts come from
shared/reference/gpu-faults.md section 1 (NVIDIA Xid catalog and the legacy
Xid table) and the rules X1-X5 of section 8. This module is a data table; the
kernel-log parser is ``fleetmon.xid.parse``.

Categories (``CATEGORIES``, a small closed vocabulary):

- ``application``: the user program is the likely cause (13, 31, 43, 68, 69).
- ``driver``: driver, firmware or GSP software (8, 38, 44, 46, 109, 119, 120).
- ``hardware``: a GPU-internal fault not covered below (61, 62, 110, 143, 158).
- ``memory``: ECC, page retirement, row remapping, memory interface
  (48, 57, 58, 63, 64, 92, 94, 95, 140, 168, 171, 172).
- ``pcie``: the PCIe link, riser or slot (32, 79, 167).
- ``nvlink``: NVLink and the Grace-Hopper C2C link (74, 121, 144-150).
- ``power``: board power and power-smoothing circuitry (54, 162-165).
- ``secondary``: follow-up codes that point at another Xid (45, 154); rule X2
  attributes them to the primary code of the burst.
- ``unknown``: a code this catalog does not know.

Severities: ``critical`` (drain, reset or service the GPU), ``warning`` (needs
attention or watching for recurrence), ``info`` (no action on its own).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetmon.compat import SLOTS
from fleetmon.vocab import Severity


def N_(message: str) -> str:
    """Mark a meaning or action for translation (:func:`fleetmon.i18n.N_`; said in the reader's language where a
    finding shows it). Defined here, not imported: the node agent's archive carries this table, and
    fleetmon.i18n may import Babel, which a node need not have."""
    return message


__all__ = ["BUS_INFO", "CATEGORIES", "SEVERITIES", "XID_CATALOG", "XidInfo", "lookup"]

CATEGORIES: tuple[str, ...] = (
    "application",
    "driver",
    "hardware",
    "memory",
    "pcie",
    "nvlink",
    "power",
    "secondary",
    "unknown",
)
SEVERITIES: tuple[str, ...] = tuple(Severity.most_severe_first())


@dataclass(frozen=True, **SLOTS)
class XidInfo:
    """What one Xid code means and what to do about it.

    Attributes:
        code: the Xid number.
        name: NVIDIA's catalog mnemonic ("" for unknown codes).
        meaning: one-line description.
        category: one of ``CATEGORIES``.
        severity: one of ``SEVERITIES``.
        action: what an operator should do, in words.
        nvidia_action: NVIDIA's resolution bucket(s), "immediate / investigatory".
    """

    code: int
    name: str
    meaning: str
    category: str
    severity: str
    action: str
    nvidia_action: str = ""


_NVLINK5_ACTION = N_(
    "Decode the status words with NVIDIA's Xid 144-150 table; fatal bits: drain and reset "
    "the GPU, check the NVLink cabling/tray; non-fatal: watch for recurrence"
)
_GSP_ACTION = N_(
    "Reset the GPU; a repeat on the same GPU is critical (rule X1); the same code on "
    "several nodes with one driver version points at a driver regression (rule X5)"
)

_ROWS: tuple[XidInfo, ...] = (
    XidInfo(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", N_("GPU stopped processing (idle timeout)"),
            "driver", "warning",
            N_("Restart the application; watch for recurrence (bus and thermal are possible causes)"),
            "RESTART_APP / CONTACT_SUPPORT"),
    XidInfo(13, "ROBUST_CHANNEL_GR_EXCEPTION", N_("Graphics engine exception"),
            "application", "warning",
            N_("Debug the user application; if it recurs across users or jobs, or alongside "
               "hardware Xids, run `dcgmi diag -r 3` to confirm (rule X4)"),
            "RESTART_APP / WORKFLOW_XID_13"),
    XidInfo(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", N_("GPU memory page fault (illegal address)"),
            "application", "warning",
            N_("Debug the user application unless it started after a driver change; if it recurs "
               "across users or jobs, run `dcgmi diag -r 3` to confirm (rule X4)"),
            "RESTART_APP / WORKFLOW_XID_31"),
    XidInfo(32, "ROBUST_CHANNEL_PBDMA_ERROR", N_("Invalid or corrupted push buffer stream"),
            "pcie", "warning",
            N_("Restart the application; if it recurs, check the PCIe link, riser and system memory"),
            "RESTART_APP / CONTACT_SUPPORT"),
    XidInfo(38, "DRIVER_FIRMWARE_ERROR", N_("Driver firmware error"),
            "driver", "warning",
            N_("Reset the GPU; update the driver and firmware if it recurs"),
            "RESET_GPU / UPDATE_SWFW"),
    XidInfo(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", N_("GPU stopped processing (channel reset)"),
            "application", "info",
            N_("No action on its own: the faulting application's channel was reset (rule X4)"),
            "IGNORE / CONTACT_SUPPORT"),
    XidInfo(44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", N_("Graphics engine fault during context switch"),
            "driver", "critical",
            N_("Reset the GPU; if it recurs, update the driver and contact support"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", N_("Preemptive cleanup after an earlier error"),
            "secondary", "info",
            N_("Attribute to the co-occurring Xid (rule X2); alone on NVSwitch systems, restart "
               "Fabric Manager"),
            "WORKFLOW_XID_45 / Solo: RESTART_FM; Not Solo: IGNORE"),
    XidInfo(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", N_("GPU stopped processing (timeout)"),
            "driver", "critical",
            N_("Drain the node and reset the GPU; contact support if it recurs"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(48, "ROBUST_CHANNEL_GPU_ECC_DBE", N_("Double-bit ECC error"),
            "memory", "critical",
            N_("Drain and reset the GPU if followed by Xid 63/64; otherwise run field diagnostics"),
            "WORKFLOW_XID_48"),
    XidInfo(54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", N_("Auxiliary power is not connected to the GPU board"),
            "power", "critical",
            N_("Check the power cabling: reseat the PCIe power connectors, check the PSU and adapters"),
            "CHECK_MECHANICALS / CONTACT_SUPPORT"),
    XidInfo(56, "DISPLAY_ENGINE_ERROR", N_("Display engine error"),
            "hardware", "warning",
            N_("Update the driver; if it recurs, run field diagnostics"),
            "CONTACT_SUPPORT"),
    XidInfo(57, "FB_LINK_TRAINING_ERROR", N_("Error programming the video memory interface"),
            "memory", "warning",
            N_("Reset the GPU; if it recurs, run `dcgmi diag -r 3` to confirm and consider RMA"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(58, "FB_EDC_UNSTABLE", N_("Unstable video memory interface detected (EDC error)"),
            "memory", "warning",
            N_("Check cooling and memory clocks; if it recurs, run `dcgmi diag -r 3` to confirm"),
            "CONTACT_SUPPORT"),
    XidInfo(61, "PMU_BREAKPOINT", N_("Internal micro-controller breakpoint/warning"),
            "hardware", "warning",
            N_("Reset the GPU and report the issue if it recurs"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(62, "PMU_HALT_ERROR", N_("Internal micro-controller halt"),
            "hardware", "critical",
            N_("Drain the node and reset the GPU; check cooling and power; contact support if it recurs"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(63, "INFOROM_DRAM_RETIREMENT_EVENT", N_("Page retirement or row remap recorded"),
            "memory", "warning",
            N_("Reset the GPU at the next job boundary to activate the retirement/remap; track the "
               "count as a memory-degradation trend"),
            "IGNORE / IGNORE"),
    XidInfo(64, "INFOROM_DRAM_RETIREMENT_FAILURE", N_("Page retirement or row remap recording failure"),
            "memory", "critical",
            N_("Reboot now; if it continues, drain the node, triage and report (RMA candidate)"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(68, "ROBUST_CHANNEL_NVDEC0_ERROR", N_("Video decoder (NVDEC0) exception"),
            "application", "warning",
            N_("Restart the application; contact support if it recurs"),
            "RESTART_APP / CONTACT_SUPPORT"),
    XidInfo(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", N_("Graphics engine class error"),
            "application", "warning",
            N_("Restart the application; if it recurs across applications, run field diagnostics"),
            "RESTART_APP / CONTACT_SUPPORT"),
    XidInfo(74, "NVLINK_ERROR", N_("NVLink error"),
            "nvlink", "critical",
            N_("Reset the GPU or reboot the node; the failing part may be the peer GPU or the link"),
            "WORKFLOW_NVLINK_ERR / CONTACT_SUPPORT"),
    XidInfo(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", N_("GPU has fallen off the bus"),
            "pcie", "critical",
            N_("Drain and reboot the node; check the riser, slot, power connectors and PSU, monitor "
               "temperatures, update the SBIOS"),
            "RESTART_BM / CONTACT_SUPPORT"),
    XidInfo(92, "EXCESSIVE_SBE_INTERRUPTS", N_("High single-bit ECC error rate"),
            "memory", "warning",
            N_("Early warning of memory degradation: watch the ECC trend (rule M4)"),
            "IGNORE / CONTACT_SUPPORT"),
    XidInfo(94, "ROBUST_CHANNEL_CONTAINED_ERROR", N_("Contained ECC error"),
            "memory", "warning",
            N_("Restart the affected application; reset the GPU when convenient"),
            "RESTART_APP / IGNORE"),
    XidInfo(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", N_("Uncontained ECC error"),
            "memory", "critical",
            N_("Drain the node and reset the GPU (reboot immediately when MIG is off)"),
            "RESET_GPU / IGNORE"),
    XidInfo(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", N_("Context switch timeout"),
            "driver", "warning",
            N_("Reset the GPU; if it recurs, run `dcgmi diag -r 3` to confirm and contact support"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(110, "SEC_FAULT_ERROR", N_("Security fault error"),
            "hardware", "critical",
            N_("Reset the GPU; contact support if it recurs"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(119, "GSP_RPC_TIMEOUT", N_("GSP RPC timeout"),
            "driver", "warning", _GSP_ACTION, "RESET_GPU / INVESTIGATE_SW"),
    XidInfo(120, "GSP_ERROR", N_("GSP error"),
            "driver", "warning", _GSP_ACTION, "RESET_GPU / INVESTIGATE_SW"),
    XidInfo(121, "C2C_ERROR", N_("C2C link error (Grace-Hopper)"),
            "nvlink", "warning",
            N_("Watch for recurrence; contact support if it repeats"),
            "IGNORE / CONTACT_SUPPORT"),
    XidInfo(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE",
            N_("Unrecovered ECC error: pages could not be offlined or remapped"),
            "memory", "critical",
            N_("Drain the node and reset the GPU; contact support"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(143, "GPU_INIT_ERROR", N_("GPU initialization failure"),
            "hardware", "critical",
            N_("Reset the GPU; if it fails again, drain and contact support"),
            "RESET_GPU / CONTACT_SUPPORT"),
    XidInfo(144, "NVLINK_SAW_ERROR", N_("NVLink5 SAW error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(145, "NVLINK_RLW_ERROR", N_("NVLink5 RLW error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(146, "NVLINK_TLW_ERROR", N_("NVLink5 TLW error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(147, "NVLINK_TREX_ERROR", N_("NVLink5 TREX error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(148, "NVLINK_NVLPW_CTRL_ERROR", N_("NVLink5 NVLPW_CTRL error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(149, "NVLINK_NETIR_ERROR", N_("NVLink5 NETIR error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(150, "NVLINK_MSE_ERROR", N_("NVLink5 MSE error"), "nvlink", "warning",
            _NVLINK5_ACTION, "WORKFLOW_NVLINK5_ERR"),
    XidInfo(154, "GPU_RECOVERY_ACTION_CHANGED", N_("GPU recovery action changed (refers to another Xid)"),
            "secondary", "info",
            N_("Read the recovery action it announces and apply it; attribute to the primary Xid "
               "(rule X2)"),
            "XID_154"),
    XidInfo(158, "GPU_FATAL_TIMEOUT", N_("GPU fatal timeout"),
            "hardware", "critical",
            N_("Drain the node and reset the GPU; contact support"),
            "RESET_GPU / CONTACT_SUPPORT"),
    # 162-168: the NVIDIA catalog leaves the resolution columns blank.
    XidInfo(162, "PSHC_REENGAGED", N_("Power-smoothing circuitry re-engaged"),
            "power", "info", N_("No action; informational"), ""),
    XidInfo(163, "PSHC_DISENGAGED", N_("Power-smoothing circuitry disengaged"),
            "power", "warning", N_("Check board power delivery and the power-smoothing settings"), ""),
    XidInfo(164, "PSHC_LOW_LIFETIME", N_("Power-smoothing circuitry lifetime low"),
            "power", "warning", N_("Plan a service: the power-smoothing circuitry is wearing out"), ""),
    XidInfo(165, "PSHC_ZERO_LIFETIME", N_("Power-smoothing circuitry lifetime exhausted"),
            "power", "warning", N_("Service the board: the power-smoothing circuitry is worn out"), ""),
    XidInfo(167, "PCIE_FATAL_TIMEOUT", N_("PCIe fatal timeout"),
            "pcie", "critical",
            N_("Drain and reboot the node; check the PCIe link, riser and slot"), ""),
    XidInfo(168, "REDUCED_GPU_MEMORY_CAPACITY", N_("Errors in the write-protected memory region"),
            "memory", "warning", N_("Check the reported memory capacity; run `dcgmi diag -r 3` to confirm"), ""),
    XidInfo(171, "UNCORRECTABLE_DRAM_ERROR", N_("Uncorrectable DRAM error (accompanies Xid 48)"),
            "memory", "critical", N_("Handle as Xid 48: drain and reset, run field diagnostics"), ""),
    XidInfo(172, "UNCORRECTABLE_SRAM_ERROR", N_("Uncorrectable SRAM error (accompanies Xid 48)"),
            "memory", "critical", N_("Handle as Xid 48: drain and reset, run field diagnostics"), ""),
)

XID_CATALOG: dict[int, XidInfo] = {row.code: row for row in _ROWS}

BUS_INFO = XidInfo(
    0, "GPU_HAS_FALLEN_OFF_THE_BUS", N_("GPU has fallen off the bus (no Xid logged)"),
    "pcie", "critical", XID_CATALOG[79].action, XID_CATALOG[79].nvidia_action,
)
"""The entry of a "fallen off the bus" kernel message that came without an Xid (code 0)."""


def lookup(code: int) -> XidInfo:
    """Return the catalog entry for ``code``; unknown codes get category "unknown".

    Never raises: any integer gives an entry.
    """
    info = XID_CATALOG.get(code)
    if info is not None:
        return info
    return XidInfo(
        code, "", N_("Xid {code} (not in fleetmon's catalog)").format(code=code), "unknown", "warning",
        N_("Look the code up in NVIDIA's Xid catalog; watch for recurrence"), "",
    )

