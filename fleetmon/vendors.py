"""How a vendor reads to a person: its name, its tool and its runtime (issue 23, every surface a user looks at).

The ``vendor`` values are :data:`fleetmon.fields.VENDORS` (stored on nodes and cards);
the fleet views, the versions matrix, the export, the report, the pre-run review and the
GPU detail pane show them through :func:`vendor_name` and say what a device's tool cannot
tell through :func:`reader_tool` ("not reported by npu-smi"). Stdlib only: the agent may import it.
"""

from __future__ import annotations

from fleetmon.fields import DEFAULT_VENDOR, VENDORS

__all__ = ["RUNTIME_NAMES", "VENDOR_NAMES", "VENDOR_TOOLS", "reader_tool", "runtime_name", "vendor_key",
           "vendor_name", "vendor_order"]

VENDOR_NAMES: dict[str, str] = {
    "nvidia": "NVIDIA", "amd": "AMD", "hygon": "Hygon", "huawei": "Huawei Ascend", "intel": "Intel Gaudi",
    "mthreads": "Moore Threads",
}
"""The readable name of each vendor value (every one of :data:`fleetmon.fields.VENDORS`)."""

VENDOR_TOOLS: dict[str, str] = {
    "nvidia": "NVML", "amd": "amd-smi / rocm-smi", "hygon": "hy-smi", "huawei": "npu-smi", "intel": "hl-smi",
    "mthreads": "mthreads-gmi",
}
"""The tool or library a vendor's devices are read through (when the node's answer does not name it)."""

RUNTIME_NAMES: dict[str, str] = {
    "nvidia": "CUDA", "amd": "ROCm", "hygon": "DTK", "huawei": "CANN", "intel": "SynapseAI", "mthreads": "MUSA",
}
"""What a node's ``runtime_version`` is a version of, per vendor (Hygon's DCU toolkit DTK is ROCm-based)."""


def vendor_key(vendor: str | None) -> str:
    """The stored vendor value, lowercase; a row without one is NVIDIA's (databases before issue 23)."""
    return (vendor or DEFAULT_VENDOR).strip().lower() or DEFAULT_VENDOR


def vendor_name(vendor: str | None) -> str:
    """"Huawei Ascend" for ``huawei``; an unknown value is shown as it is (never hidden)."""
    key = vendor_key(vendor)
    return VENDOR_NAMES.get(key, vendor or key)


def vendor_order(vendor: str | None) -> tuple[int, str]:
    """A sort key: the vendors in :data:`VENDORS` order (NVIDIA first), unknown ones after, by name."""
    key = vendor_key(vendor)
    return (VENDORS.index(key) if key in VENDORS else len(VENDORS), key)


def runtime_name(vendor: str | None) -> str:
    """"ROCm" for ``amd``; "runtime" for a vendor without a known one."""
    return RUNTIME_NAMES.get(vendor_key(vendor), "runtime")


def reader_tool(vendor: str | None, agent_version: str | None = None) -> str:
    """The tool a node's readings came through: an imported or agentless capture names it in its
    agent version ("npu-smi (fleetmon 1.4)"), else the vendor's usual tool (:data:`VENDOR_TOOLS`)."""
    if agent_version and " (fleetmon " in agent_version:
        tool = agent_version.split(" (fleetmon ", 1)[0].strip()
        if tool:
            return tool
    return VENDOR_TOOLS.get(vendor_key(vendor), "the vendor's tool")
