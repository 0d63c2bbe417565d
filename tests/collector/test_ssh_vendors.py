"""The agentless SSH source per vendor against a REAL OpenSSH server on 127.0.0.1.

One sshd (started once for the module) plays five nodes, one port each, whose login PATH holds only
that node's fake tools (tests/helpers/sshd.py ``nodes``, made by tests/helpers/vendor_ssh.py): an AMD node (amd-smi, rocm-smi), a Hygon
node (hy-smi, Hygon's rocm-smi), an Ascend node (npu-smi), a Gaudi node (hl-smi) and a bare node
(no tool); the server's own port keeps the fake nvidia-smi of the existing ssh tests. Each fake tool
prints a real capture from ../shared/fixtures/F_other_vendors for the arguments fleetmon's constant
command passes (anything else: "unexpected arguments", status 2) and logs its arguments. Three
answers no fixture holds are written here and say so: amd-smi ``metric --json`` (one GPU, the
layout tests/sources/test_amd.py documents), npu-smi ``-t board`` (a card serial) and ``-t health``
(one chip in Warning), both in the layout Huawei's npu-smi reference prints.

The nodes' ``mode`` files make a tool fail (status 3 with a message), hang, print garbage or print
a truncated document. Skipped without OpenSSH or without ../shared/fixtures.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.sshd import available
from helpers.vendor_ssh import A100, F, HL_BASIC, HL_FULL, HYGON_FLAGS, Nodes

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.poller import Collector
from fleetmon.errors import ConfigError
from fleetmon.fleet import load_fleet, parse_fleet
from fleetmon.records import NodePoll
from fleetmon.text import printable
from storage.db import open_database
from storage.queries import fleet_latest, gpus, nodes


@pytest.fixture(scope="module")
def fleet_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    why = available()
    if why:
        pytest.skip(why)
    if not F.is_dir() or not A100.exists():
        pytest.skip("../shared/fixtures is not present")
    made = Nodes(tmp_path_factory.mktemp("ssh-vendors"))
    yield made
    made.server.close()


@pytest.fixture
def ssh(fleet_nodes: Nodes) -> Iterator[Nodes]:
    """The module's nodes, every mode back to ok and the call logs empty before and after each test."""
    fleet_nodes.clear_calls()
    yield fleet_nodes
    for name in fleet_nodes.folders:
        fleet_nodes.mode(name, "ok")
    fleet_nodes.clear_calls()


def _polls(ssh: Nodes, targets: list[tuple[str, str, str]], timeout_s: float = 5.0) -> dict[str, NodePoll]:
    """Poll (name, node, tool) targets in one cycle; by name."""
    config = str(ssh.server.ssh_config)
    polls = asyncio.run(poll_all([Target(name=name, url=ssh.server.url_for(node), ssh_config=config, tool=tool)
                                  for name, node, tool in targets], timeout_s=timeout_s))
    return {p.node: p for p in polls}


def _one_line(poll: NodePoll) -> str:
    assert not poll.ok
    reason = poll.error or ""
    assert reason and "\n" not in reason and printable(reason) == reason and "Traceback" not in reason, reason
    return reason


def test_a_mixed_fleet_over_ssh_is_stored_per_vendor(ssh: Nodes, tmp_path: Path) -> None:
    server = ssh.server
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(
        f'[fleet]\nssh_config = "{server.ssh_config}"\ntimeout_s = 5\n\n'
        f'[[node]]\nname = "nv"\nurl = "{server.url}"\n\n'
        f'[[node]]\nname = "mi300"\nurl = "{server.url_for("amd")}"\n\n'
        f'[[node]]\nname = "dcu"\nurl = "{server.url_for("hygon")}"\ntool = "auto"\n\n'
        f'[[node]]\nname = "atlas"\nurl = "{server.url_for("ascend")}"\n\n'
        f'[[node]]\nname = "gaudi"\nurl = "{server.url_for("gaudi")}"\ntool = "hl-smi"\n')
    db = open_database(str(tmp_path / "f.db"))
    polls = {p.node: p for p in Collector(load_fleet(fleet_file), db).collect_once()}
    assert all(p.ok for p in polls.values()), {n: p.error for n, p in polls.items()}

    by_node = {n.name: n for n in nodes(db)}
    assert {n: (r.vendor, r.driver_version) for n, r in by_node.items()} == {
        "nv": ("nvidia", "535.54.03"), "mi300": ("amd", "6.16.13"), "dcu": ("hygon", None),
        "atlas": ("huawei", "20.2.0"), "gaudi": ("intel", "1.22.1-97ec1a4")}
    stored = {(g.node, g.index): g for g in gpus(db)}
    latest = {(r.node, r.index): r for r in fleet_latest(db)}

    # NVIDIA: as before tools were named (auto finds nvidia-smi first; same document, same rows)
    assert (stored["nv", 0].uuid, stored["nv", 0].vendor) == ("GPU-513536b6-7d19-9063-b049-1e69664bb298", "nvidia")
    # AMD: amd-smi static (the real capture: 8 × MI300X) merged with metric (GPU 0's temperatures and power)
    amd = [stored["mi300", i] for i in range(8)]
    assert [g.vendor for g in amd] == ["amd"] * 8 and {g.model for g in amd} == {"AMD Instinct MI300X"}
    assert (amd[0].uuid, amd[0].serial, amd[0].memory_total_mib, amd[0].pci_bus_id) == (
        "GPU-28246ce5673b4aa0", "692409006566", 196592, "0000:1b:00.0")
    assert (latest["mi300", 0].values["temp_c"], latest["mi300", 0].values["mem_temp_c"],
            latest["mi300", 0].values["power_w"]) == (83.0, 71.0, 612.0)
    assert latest["mi300", 1].values.get("temp_c") is None  # metric listed GPU 0 only: not available, never 0
    assert ssh.calls("amd") == ["amd-smi static --json", "amd-smi metric --json"]  # amd-smi before rocm-smi
    # Hygon: hy-smi's JSON (K100_AI, MiB), found before Hygon's rocm-smi
    assert [(stored["dcu", i].uuid, stored["dcu", i].model, stored["dcu", i].memory_total_mib,
             stored["dcu", i].serial, stored["dcu", i].vendor) for i in range(2)] == [
        ("GPU-7137d9b2a08a4841", "K100_AI", 65520, "TRCW280005090201", "hygon"),
        ("GPU-7137d9debec858c1", "K100_AI", 65520, "TRCW340004110601", "hygon")]
    assert [latest["dcu", i].values["temp_c"] for i in range(2)] == [35.0, 36.0]
    assert ssh.calls("hygon") == [f"hy-smi {HYGON_FLAGS}"]
    # Ascend: one Atlas 300 card (NPU 215) with four Ascend 310 chips, each chip a device; the card's serial
    # from -t board makes every chip's identity, -t health is asked per chip with the ids of -m
    npus = [stored["atlas", i] for i in range(4)]
    assert [g.uuid for g in npus] == [f"NPU-033GPW10K3000123-{c}" for c in range(4)]
    assert {(g.model, g.memory_total_mib, g.vendor, g.serial) for g in npus} == {
        ("Ascend 310", 8192, "huawei", "033GPW10K3000123")}
    assert [g.pci_bus_id for g in npus] == ["0000:da:00.0", "0000:dc:00.0", "0000:dd:00.0", "0000:db:00.0"]
    assert {g.inventory.get("card_id") for g in npus} == {"033GPW10K3000123:215"}  # grouped under their card
    assert [latest["atlas", i].values["temp_c"] for i in range(4)] == [56, 57, 57, 55]
    assert ssh.calls("ascend") == ["npu-smi info", "npu-smi info -m", "npu-smi info -t board -i 215",
                                   *(f"npu-smi info -t health -i 215 -c {c}" for c in range(4))]
    # Gaudi: fleetmon's full field list refused, the basic one answered (the real Gaudi 3 capture)
    assert [(stored["gaudi", i].uuid, stored["gaudi", i].model, stored["gaudi", i].memory_total_mib,
             stored["gaudi", i].vendor) for i in range(2)] == [
        ("01P4-HL3090A0-18-U4V193-22-07-00", "HL-325L", 131072, "intel"),
        ("01P4-HL3090A0-18-U4V298-03-04-04", "HL-325L", 131072, "intel")]
    assert [latest["gaudi", i].values["temp_c"] for i in range(2)] == [36, 39]
    assert ssh.calls("gaudi") == [f"hl-smi {HL_FULL}", f"hl-smi {HL_BASIC}"]
    db.close()


def test_a_named_tool_runs_instead_of_detection(ssh: Nodes) -> None:
    polls = _polls(ssh, [("mi100", "amd", "rocm-smi"), ("dcu", "hygon", "rocm-smi"), ("hy", "hygon", "hy-smi"),
                         ("npu", "ascend", "npu-smi"), ("amd", "amd", "amd-smi")])
    assert all(p.ok for p in polls.values()), {n: p.error for n, p in polls.items()}
    mi100 = polls["mi100"].gpus  # rocm-smi --showallinfo --json of ROCm 6.0.2 (4 × MI100)
    assert [(g.uuid, g.values["vendor"], g.values["memory_total_mib"]) for g in mi100[:2]] == [
        ("GPU-79ccd55167a2124a", "amd", 32752), ("GPU-04edfb117a17a07d", "amd", 32752)]
    assert len(mi100) == 4 and mi100[0].name == "Arcturus GL-XL [Instinct MI100]"
    assert polls["mi100"].info.values["vendor"] == "amd"
    [dcu] = polls["dcu"].gpus  # Hygon's rocm-smi: known as Hygon by its keys
    assert (dcu.uuid, dcu.values["vendor"], dcu.values["memory_total_mib"]) == ("GPU-7137d9debef24861", "hygon", 65520)
    assert [g.uuid for g in polls["hy"].gpus] == ["GPU-7137d9b2a08a4841", "GPU-7137d9debec858c1"]
    assert len(polls["npu"].gpus) == 4 and len(polls["amd"].gpus) == 8
    assert sorted(ssh.calls("amd")) == sorted(["rocm-smi --showallinfo --json", "amd-smi static --json",
                                               "amd-smi metric --json"])


def test_no_tool_and_a_missing_named_tool_are_one_line_reasons(ssh: Nodes) -> None:
    polls = _polls(ssh, [("bare", "bare", "auto"), ("wrong", "amd", "npu-smi"), ("plain", "gaudi", "nvidia-smi")])
    assert _one_line(polls["bare"]) == ("no vendor tool on the node: none of nvidia-smi, hy-smi, amd-smi, rocm-smi, "
                                        "npu-smi, hl-smi, mthreads-gmi is on the login PATH")
    assert _one_line(polls["wrong"]).startswith("npu-smi is not on the node's login PATH (status 127): "), polls[
        "wrong"].error
    assert "not found" in (polls["wrong"].error or "")
    assert _one_line(polls["plain"]).startswith("nvidia-smi is not on the node's login PATH (status 127): ")


VENDOR_NODES = {"amd": "amd-smi", "hygon": "hy-smi", "ascend": "npu-smi", "gaudi": "hl-smi"}


def test_a_failing_tool_garbage_and_a_cut_document(ssh: Nodes) -> None:
    """Per mode, the four vendor nodes in one cycle (auto detection): each a one-line reason, nothing stored."""
    reasons: dict[str, dict[str, str]] = {}
    for mode in ("fail", "garbage", "truncated"):
        for node in VENDOR_NODES:
            ssh.mode(node, mode)
        polls = _polls(ssh, [(node, node, "auto") for node in VENDOR_NODES])
        reasons[mode] = {node: _one_line(polls[node]) for node in VENDOR_NODES}
        assert not any(polls[node].gpus or polls[node].latest for node in VENDOR_NODES)
    print(reasons)
    # hl-smi's script asks the basic field list after the full one failed: the second's failure is the reason
    assert reasons["fail"] == {node: f"{tool} exited with status 3: {tool}: the device driver is not loaded"
                               for node, tool in VENDOR_NODES.items()}
    assert reasons["garbage"]["amd"] == "amd-smi JSON: no JSON object or list in the text"
    assert reasons["garbage"]["ascend"] == ("npu-smi: no npu-smi table, chip mapping or -t output found: "
                                            "not npu-smi output")
    assert reasons["truncated"]["amd"].startswith("amd-smi JSON: not valid JSON (")
    assert reasons["truncated"]["hygon"].startswith("rocm-smi JSON: not valid JSON (")
    assert reasons["truncated"]["ascend"].startswith("npu-smi: line ")
    assert reasons["truncated"]["gaudi"].startswith("hl-smi CSV: no header row and 6 columns")


def test_a_hanging_tool_is_killed_at_the_deadline(ssh: Nodes) -> None:
    ssh.mode("ascend", "sleep")
    t0 = time.monotonic()
    poll = _polls(ssh, [("n", "ascend", "npu-smi")], timeout_s=1.0)["n"]
    assert _one_line(poll) == "ssh: no answer within 3 s (the ssh command was killed)"
    assert time.monotonic() - t0 < 6


def test_a_wrong_tool_in_the_fleet_file_is_a_line_numbered_error(tmp_path: Path) -> None:
    text = '[fleet]\ntimeout_s = 5\n\n[[node]]\nname = "a"\nurl = "ssh://gpu01"\ntool = "amdsmi"\n'
    with pytest.raises(ConfigError) as err:
        parse_fleet(text, path="fleet.toml")
    assert str(err.value) == ("fleet.toml:7: node[0].tool: must be one of auto, nvidia-smi, amd-smi, rocm-smi, "
                              "hy-smi, npu-smi, hl-smi, mthreads-gmi (got 'amdsmi'; did you mean 'amd-smi'?)")
    for bad, message in (('tool = "$(touch x)"', "must be one of"), ("tool = 3", "must be a string"),
                         ('tool = ""', "must not be empty")):
        with pytest.raises(ConfigError, match=message):
            parse_fleet(text.replace('tool = "amdsmi"', bad), path="fleet.toml")
    with pytest.raises(ConfigError, match=r"fleet.toml:7: node\[0\].tool: applies to ssh:// nodes only"):
        parse_fleet(text.replace("ssh://gpu01", "http://gpu01:9414").replace("amdsmi", "amd-smi"), path="fleet.toml")
    fleet = parse_fleet(text.replace("amdsmi", "npu-smi"), path="fleet.toml")
    assert fleet.nodes[0].tool == "npu-smi"
    assert parse_fleet(text.replace('tool = "amdsmi"\n', ""), path="fleet.toml").nodes[0].tool == "auto"
