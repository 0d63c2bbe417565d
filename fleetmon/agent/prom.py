"""Prometheus text exposition of the agent's latest samples.

Metric names and labels follow dcgm-exporter wherever a DCGM field carries the
same value (``DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",device="nvidia0",
modelName="…",Hostname="…",DCGM_FI_DRIVER_VERSION="…"}``), so an existing
Prometheus and Grafana dashboards keep working. Values dcgm-exporter does not
have are exported as ``fleetmon_*``. Units follow dcgm-exporter (W, °C, MHz,
MiB) for its names.
"""

from __future__ import annotations

from typing import Any, Iterable

from fleetmon.fields import ALL_FIELDS, THROTTLE_REASONS
from fleetmon.records import GpuInventory, GpuSample, NodeInfo

# dcgm-exporter exposes these as counters; everything else of ours as gauges.
_DCGM_COUNTERS = {
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE",
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, Any]]) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs) + "}"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def render_metrics(node: NodeInfo, inventory: list[GpuInventory], samples: list[GpuSample],
                   agent: dict[str, Any]) -> str:
    """Render the whole /metrics page.

    Args:
        node: the node description (hostname, driver version).
        inventory: GPUs by index.
        samples: the latest sample of each GPU.
        agent: agent self-metrics: uptime_s, sample_lag_s, cycles, buffer_bytes.
    """
    inv_by_index = {g.index: g for g in inventory}
    driver = node.values.get("driver_version") or ""
    lines: list[str] = []

    def gpu_labels(s: GpuSample) -> str:
        inv = inv_by_index.get(s.index)
        return _labels((
            ("gpu", s.index), ("UUID", s.uuid), ("device", f"nvidia{s.index}"),
            ("modelName", inv.name if inv else ""), ("Hostname", node.hostname),
            ("pci_bus_id", (inv.values.get("pci_bus_id") if inv else "") or ""),
            ("DCGM_FI_DRIVER_VERSION", driver),
        ))

    labels = {s.index: gpu_labels(s) for s in samples}
    for f in ALL_FIELDS:
        if f.dcgm:
            name = f.dcgm
            mtype = "counter" if name in _DCGM_COUNTERS else "gauge"
        else:
            name = f"fleetmon_gpu_{f.name}"
            mtype = "gauge"  # our counters can reset on driver reload; expose as gauges
        rows = [(s, s.values.get(f.name)) for s in samples]
        rows = [(s, v) for s, v in rows if v is not None]
        if not rows:
            continue
        unit = f" (in {f.unit})" if f.unit and f.unit not in ("bool", "bits", "") else ""
        lines.append(f"# HELP {name} {f.help}{unit}.")
        lines.append(f"# TYPE {name} {mtype}")
        for s, v in rows:
            lines.append(f"{name}{labels[s.index]} {_fmt(v)}")

    # One 0/1 series per throttle reason: easier to alert on than the bit mask.
    lines.append("# HELP fleetmon_gpu_clocks_event_active Whether a clocks-event (throttle) reason is active.")
    lines.append("# TYPE fleetmon_gpu_clocks_event_active gauge")
    for s in samples:
        mask = s.values.get("throttle_mask")
        if mask is None:
            continue
        base = labels[s.index][:-1]
        for r in THROTTLE_REASONS:
            lines.append(f'fleetmon_gpu_clocks_event_active{base},reason="{r.name}"}} {1 if mask & r.bit else 0}')

    lines.append("# HELP fleetmon_gpu_lost Whether NVML reports the GPU as lost (fell off the bus).")
    lines.append("# TYPE fleetmon_gpu_lost gauge")
    for s in samples:
        lines.append(f"fleetmon_gpu_lost{labels[s.index]} {1 if s.state == 'lost' else 0}")

    lines.append("# HELP fleetmon_gpu_reading_ok Whether the last read of a field succeeded (0: failed or lost).")
    lines.append("# TYPE fleetmon_gpu_reading_ok gauge")
    for s in samples:
        base = labels[s.index][:-1]
        for fname, st in sorted(s.status.items()):
            if st == "unsupported":
                continue
            lines.append(f'fleetmon_gpu_reading_ok{base},field="{fname}",status="{st}"}} 0')

    info = _labels((("Hostname", node.hostname), ("driver_version", driver),
                    ("cuda_driver_version", node.values.get("cuda_driver_version") or ""),
                    ("agent_version", node.agent_version)))
    lines.append("# HELP fleetmon_agent_info Agent and driver versions of this node.")
    lines.append("# TYPE fleetmon_agent_info gauge")
    lines.append(f"fleetmon_agent_info{info} 1")
    for key, help_text in (("uptime_seconds", "Seconds since the agent started."),
                           ("sample_lag_seconds", "Age of the latest sample."),
                           ("buffer_bytes", "Size of the local record buffer on disk.")):
        value = agent.get(key)
        if value is None:
            continue
        lines.append(f"# HELP fleetmon_agent_{key} {help_text}")
        lines.append(f"# TYPE fleetmon_agent_{key} gauge")
        lines.append(f"fleetmon_agent_{key}{_labels([('Hostname', node.hostname)])} {_fmt(value)}")
    return "\n".join(lines) + "\n"
