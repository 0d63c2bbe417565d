"""The ssh source against a REAL OpenSSH server on 127.0.0.1 (temporary host and user keys, a fake
``nvidia-smi`` on the server's PATH printing a fixture document); the client uses ``ssh -F`` with a
temporary config, so ~/.ssh is never read or written."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.sshd import SshServer, available

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.poller import Collector
from fleetmon.collector.sources import ssh_argv
from fleetmon.errors import ConfigError
from fleetmon.fleet import load_fleet, parse_fleet
from fleetmon.records import NodePoll, Status
from fleetmon.sources import SourceKind, node_source, source_of
from storage.db import open_database
from storage.queries import fleet_latest, gpus, nodes

A100 = "telegraf_a100-sxm4-v12.xml"


@pytest.fixture
def sshd(tmp_path: Path, shared_fixtures: Path) -> Iterator[SshServer]:
    why = available()
    if why:
        pytest.skip(why)
    (tmp_path / "ssh").mkdir()
    server = SshServer(tmp_path / "ssh", shared_fixtures / "A_nvidia_smi_xml" / A100)
    yield server
    server.close()


def _poll(url: str, config: Path | None, timeout_s: float = 5.0) -> NodePoll:
    [poll] = asyncio.run(poll_all([Target(name="n1", url=url, ssh_config=str(config) if config else None)],
                                  timeout_s=timeout_s))
    return poll


def test_a_good_host_gives_the_documents_records(sshd: SshServer) -> None:
    poll = _poll(sshd.url, sshd.ssh_config)
    assert poll.ok, poll.error
    [g] = poll.gpus
    assert (g.uuid, g.name, g.values["serial"]) == ("GPU-513536b6-7d19-9063-b049-1e69664bb298",
                                                    "NVIDIA A100-SXM4-80GB", "1650522003820")
    assert (poll.info.values["driver_version"], g.values["memory_total_mib"], g.values["power_enforced_w"]) == (
        "535.54.03", 81920, 500.0)
    [s] = poll.latest
    assert s.ts == poll.ts and len(poll.minutes) == 1
    # what nvidia-smi cannot tell is not available, never zero
    assert s.values["energy_mj"] is None and s.status["energy_mj"] == Status.UNSUPPORTED
    assert (poll.minutes_cursor, poll.buffer_id) == (None, None)


def test_the_collector_stores_an_ssh_node_with_the_fleets_ssh_config(sshd: SshServer, tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(f'[fleet]\nssh_config = "ssh/ssh_config"\ntimeout_s = 5\n\n'
                          f'[[node]]\nname = "inspected"\nurl = "{sshd.url}"\n')
    fleet = load_fleet(fleet_file)
    assert fleet.ssh_config == str(sshd.ssh_config)  # relative to the fleet file
    db = open_database(str(tmp_path / "f.db"))
    polls = Collector(fleet, db).collect_once()
    assert polls[0].ok, polls[0].error
    [node] = nodes(db)
    assert (node.status, node.url, node.driver_version) == ("ok", sshd.url, "535.54.03")
    src = node_source(node.url)
    assert src.kind is SourceKind.SSH and not src.backfill and "no backfill" in src.note
    assert [g.serial for g in gpus(db)] == ["1650522003820"]
    assert [r.model for r in fleet_latest(db)] == ["NVIDIA A100-SXM4-80GB"]
    db.close()


def test_an_unknown_host_key_is_an_error_and_never_accepted(sshd: SshServer) -> None:
    empty = sshd.root / "known_hosts_empty"
    empty.write_text("")
    config = sshd.client_config("ssh_config_unknown", empty)
    poll = _poll(sshd.url, config)
    assert not poll.ok
    assert (poll.error or "").startswith("ssh: ") and "host key" in (poll.error or "").lower(), poll.error
    assert empty.read_text() == ""  # nothing was written: the key was not accepted
    assert not (sshd.root / "known_hosts_empty.old").exists()


def test_a_wrong_host_key_is_an_error(sshd: SshServer) -> None:
    other = sshd.root / "known_hosts_other"
    other.write_text(f"[127.0.0.1]:{sshd.port} " + " ".join((sshd.root / "id_ed25519.pub").read_text().split()[:2])
                     + "\n")
    poll = _poll(sshd.url, sshd.client_config("ssh_config_other", other))
    assert not poll.ok and "host key" in (poll.error or "").lower(), poll.error


def test_a_hanging_nvidia_smi_is_killed_at_the_deadline(sshd: SshServer) -> None:
    sshd.mode.write_text("sleep")
    t0 = time.monotonic()
    poll = _poll(sshd.url, sshd.ssh_config, timeout_s=1.0)
    took = time.monotonic() - t0
    assert not poll.ok and "no answer within 3 s" in (poll.error or ""), poll.error
    assert took < 6, took


def test_an_oversize_output_is_cut_off(sshd: SshServer) -> None:
    sshd.mode.write_text("big")
    t0 = time.monotonic()
    poll = _poll(sshd.url, sshd.ssh_config, timeout_s=2.0)
    assert not poll.ok and "larger than" in (poll.error or ""), poll.error
    assert time.monotonic() - t0 < 6  # stopped at the cap, not at the deadline


def test_a_failing_nvidia_smi_gives_its_message(sshd: SshServer) -> None:
    sshd.mode.write_text("fail")
    poll = _poll(sshd.url, sshd.ssh_config)
    assert not poll.ok
    assert poll.error == ("nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't "
                          "communicate with the NVIDIA driver."), poll.error


def test_a_refused_connection(sshd: SshServer) -> None:
    sshd.close()
    poll = _poll(sshd.url, sshd.ssh_config)
    assert not poll.ok and (poll.error or "").startswith("ssh: "), poll.error
    assert "refused" in (poll.error or "").lower(), poll.error


HOSTILE = ["ssh://-oProxyCommand=touch%20{m}", "ssh://-oProxyCommand=touch {m}@host", "ssh://x;touch {m}",
           "ssh://$(touch {m})", "ssh://host/;touch {m}", "ssh://-F{m}@host", "ssh://`touch {m}`"]


@pytest.mark.parametrize("template", HOSTILE)
def test_a_hostile_fleet_value_is_refused_before_any_process_starts(tmp_path: Path, template: str) -> None:
    marker = tmp_path / "pwned"
    url = template.format(m=marker)
    # The fleet file refuses it with source_of's message …
    with pytest.raises(ConfigError):
        parse_fleet(f'[[node]]\nname = "n1"\nurl = "{url}"\n')
    # … and so does the client, were it handed one: the poll fails, ssh never runs.
    poll = _poll(url, None)
    assert not poll.ok and "ssh" in (poll.error or ""), poll.error
    assert not marker.exists()


def test_the_argument_list() -> None:
    argv = ssh_argv(source_of("ssh://ops@gpu7.example:2222"), 4.2, "/etc/fleetmon/ssh_config")
    assert argv == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=yes",
                    "-F", "/etc/fleetmon/ssh_config", "-p", "2222", "-l", "ops", "--", "gpu7.example",
                    "nvidia-smi", "-q", "-x"]
    assert ssh_argv(source_of("ssh://gpu7"), 5, None)[-5:] == ["StrictHostKeyChecking=yes", "--", "gpu7",
                                                              "nvidia-smi", "-q", "-x"][-5:]
