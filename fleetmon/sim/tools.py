"""Simulated twins of the vendors' command-line tools: ``python -m fleetmon.sim.tools TOOL ARGS...``.

Each prints what the real tool prints for the commands the agent's tool backends (and the SSH source) run,
in the layouts of the captures in ../shared/fixtures/F_other_vendors (PROVENANCE.md section F), with values
from a scenario of :mod:`fleetmon.sim.vendors` at the current simulated time:

* ``amd-smi static --json`` / ``metric --json`` / ``list --json`` / ``version --json`` (the ROCm 6 bare-list
  layout, readings as ``{"value", "unit"}`` objects, ``"N/A"`` where the device has none);
* ``rocm-smi --showallinfo --json`` (``{"cardN": {...}, "system": {...}}``, every value a string);
* ``hy-smi ... --json`` (Hygon: ``HCU use (%)``, MiB, ``Temperature (Sensor core)``);
* ``npu-smi info`` (the 24.x table), ``info -m``, ``info -t board -i N`` and ``info -t health -i N -c C``;
* ``hl-smi -Q FIELDS -f csv,noheader`` (units inside the values, ``N/A``);
* ``mthreads-gmi -q`` (``Title : value`` lines).

The scenario and the start come from the JSON file named by ``FLEETMON_SIM_STATE`` (``{"scenario": name,
path or dict, "epoch": Unix s, "node": name}``, read at every call, so a test may change it while an agent
runs); the simulated time is ``FLEETMON_SIM_NOW`` (the agent's clock, passed by the backend) or the wall
clock. Tool faults (``hang``, ``garbage``, ``exit``) act here; device faults through
:func:`fleetmon.sim.vendors.device_state`.

:func:`install` writes a wrapper script per tool into a directory (``#!/bin/sh`` + ``exec python -m
fleetmon.sim.tools NAME "$@"``), which the agent then runs as it would run the real tool.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from fleetmon.sim import vendors

TOOLS = ("amd-smi", "rocm-smi", "hy-smi", "npu-smi", "hl-smi", "mthreads-gmi")
STATE_ENV = "FLEETMON_SIM_STATE"
NOW_ENV = "FLEETMON_SIM_NOW"


def install(directory: Path, state: Path, python: str | None = None) -> dict[str, Path]:
    """Write an executable wrapper per tool into ``directory``; returns {tool: path}.

    The twin runs with ``python -S`` (no site-packages: it needs only the standard library and this
    package, found through PYTHONPATH), so a call costs a fraction of a second as a real tool's does.
    """
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    py = python or sys.executable
    root = Path(__file__).resolve().parents[2]  # this checkout, for an agent run from a source tree
    for tool in TOOLS:
        path = directory / tool
        path.write_text("#!/bin/sh\n"
                        f"export {STATE_ENV}={shlex.quote(str(state))}\n"
                        f"export PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                        f"exec {shlex.quote(py)} -S -m fleetmon.sim.tools {tool} \"$@\"\n")
        path.chmod(0o755)
        out[tool] = path
    return out


def write_state(path: Path, scenario: str | dict[str, Any], epoch: float, node: str | None) -> None:
    """The state file the wrappers point at (written whole, then renamed: a tool never reads half of it)."""
    if isinstance(scenario, str) and os.path.isfile(scenario):
        scenario = os.path.abspath(scenario)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"scenario": scenario, "epoch": epoch, "node": node}))
    tmp.replace(path)


def _load() -> tuple[dict[str, Any], float, str | None]:
    with open(os.environ[STATE_ENV], encoding="utf-8") as fh:
        state = json.load(fh)
    entry = vendors.resolve(state["scenario"])
    now = float(os.environ.get(NOW_ENV) or time.time())
    return entry, now - float(state["epoch"]), state.get("node")


def _vu(value: Any, unit: str) -> Any:
    return "N/A" if value is None else {"value": value, "unit": unit}


# -- amd-smi ---------------------------------------------------------------------------------------------


def _amd_static(entry: dict[str, Any], i: int, d: dict[str, Any]) -> dict[str, Any]:
    p = vendors.profile(entry)
    return {
        "gpu": i,
        "asic": {"market_name": p.name, "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                 "subvendor_id": "0x1002", "device_id": p.device_id, "subsystem_id": p.device_id, "rev_id": "0x00",
                 "asic_serial": "0x" + d["uuid_hex"].upper(), "oam_id": i, "num_compute_units": 304,
                 "target_graphics_version": p.gfx},
        "bus": {"bdf": d["bus_id"], "max_pcie_width": p.pcie_width, "max_pcie_speed": _vu(8 * 2 ** (p.pcie_gen - 3),
                                                                                            "GT/s"),
                "pcie_interface_version": f"Gen {p.pcie_gen}", "slot_type": "OAM"},
        "vbios": {"name": p.name, "build_date": "2024/05/01 10:00", "part_number": p.vbios, "version": p.vbios},
        "limit": {"ppt0": {"max_power_limit": _vu(p.power_cap_w, "W"), "min_power_limit": _vu(0, "W"),
                           "socket_power_limit": _vu(p.power_cap_w, "W")},
                  "slowdown_edge_temperature": "N/A", "slowdown_hotspot_temperature": _vu(p.slowdown_c, "C"),
                  "slowdown_vram_temperature": _vu(p.slowdown_c + 5, "C"), "shutdown_edge_temperature": "N/A",
                  "shutdown_hotspot_temperature": _vu(p.shutdown_c, "C"),
                  "shutdown_vram_temperature": _vu(p.shutdown_c + 5, "C")},
        "driver": {"name": "amdgpu", "version": p.driver},
        "board": {"model_number": "102-G30211-0C", "product_serial": d["serial"], "fru_id": "N/A",
                  "product_name": p.board or p.name, "manufacturer_name": "AMD"},
        "ras": {"eeprom_version": "0x10000", "bad_page_threshold": 128, "bad_page_threshold_exceeded": "False",
                "parity_schema": "DISABLED", "single_bit_schema": "DISABLED", "double_bit_schema": "DISABLED",
                "poison_schema": "ENABLED", "ecc_block_state": {b: "ENABLED" for b in d["ecc_blocks"]}},
        "vram": {"type": "HBM", "vendor": "SAMSUNG", "size": _vu(p.memory_mib, "MB"), "bit_width": 8192},
    }


def _amd_metric(i: int, d: dict[str, Any]) -> dict[str, Any]:
    return {
        "gpu": i,
        "usage": {"gfx_activity": _vu(d["util_pct"], "%"), "umc_activity": _vu(d["util_pct"] // 2, "%"),
                  "mm_activity": "N/A"},
        "power": {"socket_power": _vu(d["power_w"], "W"), "gfx_voltage": "N/A", "soc_voltage": "N/A",
                  "mem_voltage": "N/A", "throttle_status": "UNTHROTTLED", "power_management": "ENABLED"},
        "clock": {"gfx_0": {"clk": _vu(d["sclk_mhz"], "MHz"), "min_clk": _vu(300, "MHz"),
                            "max_clk": _vu(vendors_max(d, "sclk"), "MHz")},
                  "mem_0": {"clk": _vu(d["mclk_mhz"], "MHz"), "min_clk": _vu(900, "MHz"),
                            "max_clk": _vu(vendors_max(d, "mclk"), "MHz")}},
        "temperature": {"edge": "N/A", "hotspot": _vu(d["temp_junction_c"], "C"), "mem": _vu(d["temp_mem_c"], "C")},
        "pcie": {"width": 16, "speed": _vu(32, "GT/s"), "replay_count": 0, "l0_to_recovery_count": 0,
                 "replay_roll_over_count": 0, "nak_sent_count": 0, "nak_received_count": 0},
        "ecc": {"total_correctable_count": d["ecc_corr"], "total_uncorrectable_count": d["ecc_unc"],
                "total_deferred_count": d["ecc_deferred"], "cache_correctable_count": 0,
                "cache_uncorrectable_count": 0},
        "ecc_blocks": {b: {"correctable_count": c["correctable"], "uncorrectable_count": c["uncorrectable"],
                           "deferred_count": c["deferred"]} for b, c in d["ecc_blocks"].items()},
        "mem_usage": {"total_vram": _vu(d["mem_total_mib"], "MB"), "used_vram": _vu(d["mem_used_mib"], "MB"),
                      "free_vram": _vu(d["mem_total_mib"] - d["mem_used_mib"], "MB")},
        "energy": {"total_energy_consumption": _vu(d["energy_j"], "J")},
        "fan": {"speed": "N/A", "max": "N/A", "rpm": "N/A", "usage": "N/A"},
    }



def vendors_max(d: dict[str, Any], which: str) -> int:
    return int(d[f"max_{which}_mhz"])


def _amd_smi(entry: dict[str, Any], t: float, node: str | None, args: list[str]) -> str:
    p = vendors.profile(entry)
    if args[:1] == ["version"]:
        return json.dumps([{"tool": "AMDSMI Tool", "version": "24.6.3", "amdsmi_library_version": "24.6.3",
                            "rocm_version": p.runtime, "amdgpu_version": p.driver}])
    out = []
    for i in range(vendors.devices(entry, node)):
        d = _state(entry, i, t, node)
        if not d["present"]:
            continue
        if args[:1] == ["static"]:
            out.append(_amd_static(entry, i, d))
        elif args[:1] == ["metric"]:
            out.append(_amd_metric(i, d))
        elif args[:1] == ["list"]:
            out.append({"gpu": i, "bdf": d["bus_id"], "uuid": f"{d['uuid_hex'][:8]}-0000-1000-80ff-ffffffffffff",
                        "kfd_id": 1000 + i, "node_id": 2 + i, "partition_id": 0})
        else:
            raise _Usage(f"amd-smi: unknown command {' '.join(args[:1])!r}")
    return json.dumps(out, indent=4)


def _state(entry: dict[str, Any], i: int, t: float, node: str | None) -> dict[str, Any]:
    d = vendors.device_state(entry, i, t, node)
    p = vendors.profile(entry)
    d["max_sclk_mhz"], d["max_mclk_mhz"] = p.max_sclk_mhz, p.max_mclk_mhz
    return d


# -- rocm-smi / hy-smi -----------------------------------------------------------------------------------


def _rocm_smi(entry: dict[str, Any], t: float, node: str | None, hygon: bool) -> str:
    p = vendors.profile(entry)
    doc: dict[str, Any] = {}
    for i in range(vendors.devices(entry, node)):
        d = _state(entry, i, t, node)
        if not d["present"]:
            continue
        if hygon:  # hy-smi --showid --showmeminfo vram --showpower --showserial --showuse --showtemp ... --json
            doc[f"card{i}"] = {
                "Device ID": p.device_id, "Card Series": p.name, "Card Vendor": "Chengdu Haiguang IC Design Co., Ltd.",
                "Serial Number": f"TRCW{d['serial']}", "Unique ID": d["uuid_hex"],
                "Average Graphics Package Power (W)": f"{d['power_w']:.1f}",
                "Temperature (Sensor edge) (C)": f"{d['temp_edge_c']:.1f}",
                "Temperature (Sensor junction) (C)": f"{d['temp_junction_c']:.1f}",
                "Temperature (Sensor mem) (C)": f"{d['temp_mem_c']:.1f}",
                "Temperature (Sensor core) (C)": f"{d['temp_junction_c']:.1f}",
                "HCU use (%)": f"{float(d['util_pct']):.1f}",
                "vram Total Memory (MiB)": str(d["mem_total_mib"]),
                "vram Total Used Memory (MiB)": str(d["mem_used_mib"]),
            }
            continue
        doc[f"card{i}"] = {  # rocm-smi --showallinfo --json, ROCm 6.0 (telegraf_mi100_rocm602.json)
            "Device ID": p.device_id, "Device Rev": "0x1", "Unique ID": "0x" + d["uuid_hex"],
            "VBIOS version": p.vbios,
            "Temperature (Sensor edge) (C)": f"{d['temp_edge_c']:.1f}",
            "Temperature (Sensor junction) (C)": f"{d['temp_junction_c']:.1f}",
            "Temperature (Sensor memory) (C)": f"{d['temp_mem_c']:.1f}",
            "mclk clock speed:": f"({d['mclk_mhz']}Mhz)", "sclk clock speed:": f"({d['sclk_mhz']}Mhz)",
            "pcie clock level": f"0 (16.0GT/s x{p.pcie_width})", "Performance Level": "auto",
            "Max Graphics Package Power (W)": f"{p.power_cap_w:.1f}",
            "Average Graphics Package Power (W)": f"{d['power_w']:.1f}",
            "GPU use (%)": str(d["util_pct"]), "GPU memory use (%)": str(d["util_pct"] // 2),
            "GPU memory vendor": "samsung", "PCIe Replay Count": "0", "Serial Number": d["serial"],
            "Voltage (mV)": "662", "PCI Bus": d["bus_id"].upper(),
            "VRAM Total Memory (B)": str(d["mem_total_mib"] * 1048576),
            "VRAM Total Used Memory (B)": str(d["mem_used_mib"] * 1048576),
            "Card series": f"Arcturus GL-XL [{p.board or p.name}]", "Card model": "0x0c34",
            "Card vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "D3431401",
        }
    doc["system"] = {"Driver version": p.driver}
    return json.dumps(doc)


# -- npu-smi ---------------------------------------------------------------------------------------------


def _npu_table(entry: dict[str, Any], t: float, node: str | None) -> str:
    p = vendors.profile(entry)
    rule = "+---------------------------+---------------+----------------------------------------------------+"
    two = "+===========================+===============+====================================================+"
    second = "Chip  Phy-ID" if p.chips > 1 else "Chip"
    lines = ["+" + "-" * 96 + "+",
             f"| npu-smi {p.driver:<24} Version: {p.driver:<46}|",
             rule,
             "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
             f"| {second:<26}| Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
             two]
    for i in range(vendors.devices(entry, node)):
        d = _state(entry, i, t, node)
        if not d["present"]:
            continue
        power = "-" if d["power_w"] is None else f"{d['power_w']:.1f}"
        chip = f"{d['chip']:<5} {d['chip']}" if p.chips > 1 else f"{d['chip']}"
        lines.append(f"| {d['card']:<5} {p.name:<20}| {d['health']:<14}| {power:<12}"
                     f"{int(d['temp_junction_c']):<18}0    / 0             |")
        lines.append(f"| {chip:<26}| {d['bus_id'].upper():<14}| {d['util_pct']:<12}0    / 0          "
                     f"{d['mem_used_mib']:<5}/ {d['mem_total_mib']:<13}|")
        lines.append(two if d["chip"] == p.chips - 1 else rule)
    return "\n".join(lines) + "\n"


def _npu_smi(entry: dict[str, Any], t: float, node: str | None, args: list[str]) -> str:
    if args[:1] != ["info"]:
        raise _Usage("npu-smi: only 'info' is simulated")
    rest = args[1:]
    if not rest:
        return _npu_table(entry, t, node)
    p = vendors.profile(entry)
    if rest == ["-m"]:
        lines = ["        NPU ID                         Chip ID                        Chip Logic ID"
                 "                  Chip Name"]
        chip_name = p.name if p.name.startswith("Ascend") else "Ascend " + p.name
        for i in range(vendors.devices(entry, node)):
            d = _state(entry, i, t, node)
            if d["present"]:
                lines.append(f"        {d['card']:<31}{d['chip']:<31}{i:<31}{chip_name}")
        return "\n".join(lines) + "\n"
    opts = dict(zip(rest[0::2], rest[1::2]))
    kind, npu = opts.get("-t"), int(opts.get("-i", "-1"))
    chip = int(opts["-c"]) if "-c" in opts else None
    index = npu * p.chips + (chip or 0)
    if not 0 <= npu < int(entry["count"]) or not _state(entry, index, t, node)["present"]:
        raise _Failure(3, f"Error: The NPU ID {npu} is invalid.")
    d = _state(entry, index, t, node)
    if kind == "board":
        return (f"        NPU ID                         : {npu}\n"
                f"        Software Version               : {p.driver}\n"
                f"        Firmware Version               : {p.vbios}\n"
                f"        Compatibility                  : OK\n"
                f"        Board ID                       : 0x64\n"
                f"        PCB ID                         : A\n"
                f"        BOM ID                         : 1\n"
                f"        PCIe Bus Info                  : {d['bus_id']}\n"
                f"        Slot ID                        : {npu}\n"
                f"        Serial Number                  : 033JMF{d['serial']}\n"
                f"        Chip Count                     : {p.chips}\n")
    if kind == "health":
        codes = " ".join(d["error_codes"]) if d["error_codes"] else "NA"
        return (f"        NPU ID                         : {npu}\n"
                f"        Chip ID                        : {chip or 0}\n"
                f"        Health Status                  : {d['health']}\n"
                f"        Error Code                     : {codes}\n"
                f"        Error Information              : {'NA' if not d['error_codes'] else 'HBM ECC error'}\n")
    raise _Usage(f"npu-smi: -t {kind} is not simulated")


# -- hl-smi ----------------------------------------------------------------------------------------------


def _hl_smi(entry: dict[str, Any], t: float, node: str | None, args: list[str]) -> str:
    opts = dict(zip(args[0::2], args[1::2]))
    fields = [f.strip() for f in opts.get("-Q", "").split(",") if f.strip()]
    if not fields:
        raise _Failure(1, "hl-smi: -Q needs a field list")
    p = vendors.profile(entry)
    rows = []
    for i in range(vendors.devices(entry, node)):
        d = _state(entry, i, t, node)
        if not d["present"]:
            continue
        known = {
            "index": str(i), "uuid": f"01P4-HL3090A0-18-U4V{d['serial'][:3]}-22-07-{i:02d}",
            "serial": f"AN{d['serial']}", "name": p.name, "bus_id": d["bus_id"], "module_id": str(i),
            "driver_version": p.driver, "memory.total": f"{d['mem_total_mib']} MiB",
            "memory.used": f"{d['mem_used_mib']} MiB",
            "memory.free": f"{d['mem_total_mib'] - d['mem_used_mib']} MiB", "power.draw": f"{int(d['power_w'])} W",
            "power.max": f"{int(p.power_cap_w)} W", "temperature.aip": f"{int(d['temp_junction_c'])} C",
            "utilization.aip": f"{d['util_pct']} %", "ecc.errors.corrected.volatile.total": str(d["ecc_corr"]),
            "ecc.errors.uncorrected.volatile.total": str(d["ecc_unc"]),
            "ecc.errors.corrected.aggregate.total": str(d["ecc_corr"]),
            "ecc.errors.uncorrected.aggregate.total": str(d["ecc_unc"]),
            "ecc.mode.current": "Enabled", "ecc.mode.pending": "Enabled",
            "clocks.current.soc": f"{d['sclk_mhz']} MHz", "clocks.max.soc": f"{p.max_sclk_mhz} MHz",
            "pcie.link.gen.current": f"Gen{p.pcie_gen}", "pcie.link.gen.max": f"Gen{p.pcie_gen}",
            "pcie.link.width.current": f"x{p.pcie_width}", "pcie.link.width.max": f"x{p.pcie_width}",
        }
        rows.append(", ".join(known.get(f, "N/A") for f in fields))
    if "noheader" not in opts.get("-f", ""):
        rows.insert(0, ", ".join(fields))
    return "\n".join(rows) + "\n"


# -- mthreads-gmi ----------------------------------------------------------------------------------------


def _mthreads(entry: dict[str, Any], t: float, node: str | None, args: list[str]) -> str:
    if args[:1] != ["-q"]:
        raise _Usage("mthreads-gmi: only -q is simulated")
    p = vendors.profile(entry)
    out = [f"Timestamp                       : {time.strftime('%a %b %d %H:%M:%S %Y', time.gmtime())}",
           f"Driver Version                  : {p.driver}", ""]
    present = [i for i in range(vendors.devices(entry, node)) if _state(entry, i, t, node)["present"]]
    out.append(f"Attached GPUs                   : {len(present)}")
    for i in present:
        d = _state(entry, i, t, node)
        out += [f"GPU {d['bus_id']}",
                f"    Index                       : {i}",
                f"    Product Name                : {p.name}",
                f"    GPU UUID                    : {d['uuid_hex'][:8]}-{d['uuid_hex'][8:12]}-{d['uuid_hex'][12:]}"
                f"-0000-000000000000",
                f"    Serial Number               : {d['serial']}",
                f"    MTBios Version              : 3.4.3",
                "    PCI",
                f"        Bus ID                  : {d['bus_id']}",
                "    FB Memory Usage",
                f"        Total                   : {d['mem_total_mib']}MiB",
                f"        Used                    : {d['mem_used_mib']}MiB",
                f"        Free                    : {d['mem_total_mib'] - d['mem_used_mib']}MiB",
                "    Utilization",
                f"        Gpu                     : {d['util_pct']}%",
                "    Temperature",
                f"        GPU Current Temp        : {int(d['temp_junction_c'])}C",
                "    Power Readings",
                f"        Power Draw              : {d['power_w']:.2f}W",
                "    Clocks",
                f"        Graphics                : {d['sclk_mhz']}MHz"]
    return "\n".join(out) + "\n"


class _Usage(Exception):
    """A command the twin does not simulate (exit 2, as the tools answer an unknown option)."""


class _Failure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TOOLS:
        print(f"usage: python -m fleetmon.sim.tools {{{','.join(TOOLS)}}} ARGS...", file=sys.stderr)
        return 2
    tool, args = argv[0], argv[1:]
    entry, t, node = _load()
    hang = vendors.active(entry, "hang", t)
    if hang is not None:
        time.sleep(float(hang.get("seconds", 3600)))
    fail = vendors.active(entry, "exit", t)
    if fail is not None:
        print(str(fail.get("message", f"{tool}: error: the device driver did not answer")), file=sys.stderr)
        return int(fail.get("code", 2))
    if vendors.active(entry, "garbage", t) is not None:
        sys.stdout.write("Segmentation fault? \x1b[31m###\x00 not output of any tool ]]]\n")
        return 0
    try:
        if tool == "amd-smi":
            text = _amd_smi(entry, t, node, args)
        elif tool in ("rocm-smi", "hy-smi"):
            text = _rocm_smi(entry, t, node, hygon=tool == "hy-smi")
        elif tool == "npu-smi":
            text = _npu_smi(entry, t, node, args)
        elif tool == "hl-smi":
            text = _hl_smi(entry, t, node, args)
        else:
            text = _mthreads(entry, t, node, args)
    except _Usage as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except _Failure as exc:
        print(str(exc), file=sys.stderr)
        return exc.code
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
