"""Done when (issue 12): a fleet mixing the four source kinds shows in the app, the reports and the export.

One database fed by a simulated fleetmon agent, a dcgm-exporter (a real HTTP server serving a fixture
scrape), an agentless node over a REAL sshd on 127.0.0.1 (a fake nvidia-smi printing a fixture
document) and a capture added with `fleetmon import-smi`. `fleetmon report --json`, `fleetmon export`
and the GUI's fleet snapshot (ui.fleet_reader.read_snapshot) show all four, and each node's source
says which have no backfill.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.sshd import SshServer, available

from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from fleetmon.sim.fleet import make_node
from fleetmon.sources import SourceKind, node_source
from storage.db import open_database

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRAPE = "C_dcgm_exporter/datadog_dcgm_fixtures_metrics.txt"
SSH_DOC = "A_nvidia_smi_xml/telegraf_a100-sxm4-v12.xml"
CAPTURE = "A_nvidia_smi_xml/netdata_rtx-4090-driver-535.xml"
KINDS = {"agent-01": SourceKind.AGENT, "dcgm-01": SourceKind.DCGM, "ssh-01": SourceKind.SSH,
         "inspected-01": SourceKind.CAPTURE}


def _exporter(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)


@pytest.fixture
def mixed_db(tmp_path: Path, shared_fixtures: Path) -> Iterator[Path]:
    why = available()
    if why:
        pytest.skip(why)
    agent = make_node("agent-01", gpus=2)
    agent.serve(0.1)
    exporter = _exporter((shared_fixtures / SCRAPE).read_bytes())
    (tmp_path / "ssh").mkdir()
    sshd = SshServer(tmp_path / "ssh", shared_fixtures / SSH_DOC)
    try:
        fleet_file = tmp_path / "fleet.toml"
        fleet_file.write_text(
            f'[fleet]\nssh_config = "{sshd.ssh_config}"\ntimeout_s = 5\n\n'
            f'[[node]]\nname = "agent-01"\nurl = "{agent.url}"\ngroup = "lab"\n\n'
            f'[[node]]\nname = "dcgm-01"\nurl = "dcgm+http://127.0.0.1:{exporter.server_address[1]}"\n'
            'group = "lab"\n\n'
            f'[[node]]\nname = "ssh-01"\nurl = "{sshd.url}"\ngroup = "lab"\n')
        db_path = tmp_path / "fleet.db"
        db = open_database(str(db_path))
        polls = Collector(load_fleet(fleet_file), db).collect_once()
        db.close()
        assert {p.node: (p.ok, p.error) for p in polls} == {n: (True, None) for n in ("agent-01", "dcgm-01", "ssh-01")}
        capture = tmp_path / "inspected-01.xml"
        capture.write_bytes((shared_fixtures / CAPTURE).read_bytes())
        done = _cli("import-smi", str(capture), "--db", str(db_path))
        assert done.returncode == 0, done.stderr
        yield db_path
    finally:
        sshd.close()
        exporter.shutdown()
        exporter.server_close()
        agent.server.shutdown()
        agent.server.server_close()


def test_the_four_sources_show_in_the_snapshot_the_report_and_the_export(mixed_db: Path) -> None:
    from ui.fleet_reader import read_snapshot

    db = open_database(str(mixed_db), readonly=True)
    try:
        snap = read_snapshot(db)
    finally:
        db.close()
    # the app: every node, its GPUs, and what its source can do
    assert set(snap.nodes) == set(KINDS)
    by_node: dict[str, set[str]] = {}
    for r in snap.rows:
        by_node.setdefault(r.node, set()).add(r.model or "")
    assert by_node["dcgm-01"] == {"Tesla T4", "NVIDIA A10G"} and by_node["ssh-01"] == {"NVIDIA A100-SXM4-80GB"}
    assert by_node["inspected-01"] == {"NVIDIA GeForce RTX 4090"} and len(by_node["agent-01"]) == 1
    for name, kind in KINDS.items():
        src = node_source(snap.nodes[name].url)
        assert src.kind is kind, name
        assert src.backfill is (kind is SourceKind.AGENT), name
        assert ("no backfill" in src.note or "no history" in src.note) is (kind is not SourceKind.AGENT), src.note
    t4 = next(r for r in snap.rows if r.node == "dcgm-01")
    assert t4.values["pcie_gen"] is None and t4.status["pcie_gen"] == "unsupported"  # not available, never 0

    # the report: every node judged
    report = _cli("report", "--db", str(mixed_db), "--json", "--since", "3650d")
    assert report.returncode in (0, 1, 2), report.stderr
    text = report.stdout
    for name in KINDS:
        assert name in text, name

    # the export: every node's cards, with the source's inventory
    export = _cli("export", "--db", str(mixed_db), "--format", "json")
    assert export.returncode == 0, export.stderr
    rows = json.loads(export.stdout)["gpus"]
    cards = {(r["node"], r["model"], r["serial"]) for r in rows}
    assert {n for n, _, _ in cards} == set(KINDS)
    assert ("ssh-01", "NVIDIA A100-SXM4-80GB", "1650522003820") in cards
    assert sum(1 for n, _, _ in cards if n == "dcgm-01") == 3  # two scrapes concatenated: 2 T4s and an A10G
