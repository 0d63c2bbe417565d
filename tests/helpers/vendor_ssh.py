"""Agentless SSH nodes of the other vendors on the one real sshd (:mod:`helpers.sshd` ``nodes``), shared by
tests/collector/test_ssh_vendors.py and tests/integration/test_four_vendors.py.

:class:`Nodes` makes five nodes, one port each, whose login PATH holds only that node's fake tools: an AMD node
(amd-smi, rocm-smi), a Hygon node (hy-smi, Hygon's rocm-smi), an Ascend node (npu-smi), a Gaudi node (hl-smi) and
a bare node (no tool); the server's own port keeps the fake nvidia-smi of the existing ssh tests. Each fake tool
prints a real capture from ../shared/fixtures/F_other_vendors for the arguments fleetmon's constant command passes
(anything else: "unexpected arguments", status 2) and logs its arguments. Three answers no fixture holds are
written here and say so: amd-smi ``metric --json`` (one GPU, the layout tests/sources/test_amd.py documents),
npu-smi ``-t board`` (a card serial) and ``-t health`` (chip 2 in Warning with code 80E01809), both in the layout
Huawei's npu-smi reference prints. A node's ``mode`` file makes its tools fail, hang, print garbage or print a
truncated document.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.sshd import SshServer

from fleetmon.sources.hl_smi import BASIC_FIELDS, QUERY_FIELDS

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"  # tests/helpers/ -> ../shared
F = SHARED / "F_other_vendors"
A100 = SHARED / "A_nvidia_smi_xml" / "telegraf_a100-sxm4-v12.xml"
AMD_STATIC = F / "amd" / "dell-ai_amd_smi_static_json_root.json"
AMD_ROCM_SMI = F / "amd" / "telegraf_mi100_rocm602.json"
HY_SMI = F / "hygon" / "issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json"
HYGON_ROCM_SMI = F / "hygon" / "issue_gpustack-3257_rocm-smi-json_k100-ai_first-card_DERIVED.json"
ATLAS_300 = "gpustack_ai-server_atlas-800-inference-server_model-3000_version-1.0.0-1.0.10"
NPU = F / "huawei_ascend" / f"{ATLAS_300}.txt"
NPU_MAP = F / "huawei_ascend" / f"{ATLAS_300}_mapping.txt"
HL_SMI = F / "intel" / "all-smi_hl-smi_2xHL-325L_excerpt.csv"

# Written here (no capture of them is in the fixtures), in the layouts the parsers document.
AMD_METRIC = {"gpu_data": [{"gpu": 0, "temperature": {"edge": "N/A", "hotspot": {"value": 83, "unit": "C"},
                                                      "mem": {"value": 71, "unit": "C"}},
                            "power": {"socket_power": {"value": 612, "unit": "W"}}}]}
NPU_BOARD = ("        NPU ID                         : 215\n        Software Version               : 20.2.0\n"
             "        Firmware Version               : 1.76.22.3.220\n"
             "        Serial Number                  : 033GPW10K3000123\n")
NPU_HEALTH_OK = "        Health Status                  : OK\n        Error Code                     : NA\n"
NPU_HEALTH_WARN = ("        Health Status                  : Warning\n"
                   "        Error Code                     : 80E01809\n")
HYGON_FLAGS = ("--showid --showmeminfo vram --showpower --showserial --showuse --showtemp --showproductname "
               "--showuniqueid --json")
HL_FULL = f"-Q {','.join(QUERY_FIELDS)} -f csv"
HL_BASIC = f"-Q {','.join(BASIC_FIELDS)} -f csv"
MODES = ("ok", "fail", "sleep", "garbage", "truncated")


def _fake_tool(folder: Path, name: str, answers: dict[str, Path]) -> None:
    """``folder/name``: prints ``answers["$*"]`` (its arguments joined by blanks), logs them to ``calls``;
    the folder's ``mode`` file makes it fail, hang, print garbage or cut its answer to a third (mid-row)."""
    cases = "".join(f'  "{args}") [ "$mode" = truncated ] && exec head -c $(($(wc -c < "{path}") / 3)) "{path}"; '
                    f'exec cat "{path}" ;;\n' for args, path in answers.items())
    script = folder / name
    script.write_text(
        "#!/bin/sh\n"
        f'echo "{name} $*" >> "{folder / "calls"}"\n'
        f'mode=$(cat "{folder / "mode"}")\n'
        'case "$mode" in\n'
        f'  fail) echo "{name}: the device driver is not loaded" >&2; exit 3 ;;\n'
        "  sleep) exec sleep 8 ;;\n"
        "  garbage) echo 'Segmentation fault <<< ]]] {{{ ::: not a document'; exit 0 ;;\n"
        "esac\n"
        'case "$*" in\n'
        f"{cases}"
        "esac\n"
        f'echo "{name}: unexpected arguments: $*" >&2\n'
        "exit 2\n")
    script.chmod(0o755)


class Nodes:
    """The module's server and its nodes' folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folders: dict[str, Path] = {}
        for name in ("amd", "hygon", "ascend", "gaudi", "bare"):
            folder = root / "nodes" / name
            folder.mkdir(parents=True)
            (folder / "mode").write_text("ok")
            self.folders[name] = folder
        gen = root / "generated"
        gen.mkdir()
        (gen / "metric.json").write_text(json.dumps(AMD_METRIC))
        (gen / "board.txt").write_text(NPU_BOARD)
        (gen / "ok.txt").write_text(NPU_HEALTH_OK)
        (gen / "warn.txt").write_text(NPU_HEALTH_WARN)
        amd, hygon, ascend, gaudi = (self.folders[n] for n in ("amd", "hygon", "ascend", "gaudi"))
        _fake_tool(amd, "amd-smi", {"static --json": AMD_STATIC, "metric --json": gen / "metric.json"})
        _fake_tool(amd, "rocm-smi", {"--showallinfo --json": AMD_ROCM_SMI})
        _fake_tool(hygon, "hy-smi", {HYGON_FLAGS: HY_SMI})
        _fake_tool(hygon, "rocm-smi", {"--showallinfo --json": HYGON_ROCM_SMI})
        _fake_tool(ascend, "npu-smi", {"info": NPU, "info -m": NPU_MAP, "info -t board -i 215": gen / "board.txt",
                                       **{f"info -t health -i 215 -c {c}": gen / ("warn.txt" if c == 2 else "ok.txt")
                                          for c in range(4)}})
        _fake_tool(gaudi, "hl-smi", {HL_BASIC: HL_SMI})  # the full query is refused: the fallback answers
        (root / "ssh").mkdir()
        self.server = SshServer(root / "ssh", A100, nodes=self.folders)

    def mode(self, node: str, mode: str) -> None:
        assert mode in MODES
        (self.folders[node] / "mode").write_text(mode)

    def calls(self, node: str) -> list[str]:
        path = self.folders[node] / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def clear_calls(self) -> None:
        for folder in self.folders.values():
            (folder / "calls").unlink(missing_ok=True)
