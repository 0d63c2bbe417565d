"""Issue 20, item 1: one node's answer, whatever it holds, fails that node alone.

A real simulated agent (``fleetmon.sim.fleet``) and a hostile dcgm-exporter (``helpers.fake_dcgm``)
on 127.0.0.1 are polled by the real collector into a real SQLite file. Before the fix, ``+Inf`` or
``-Inf`` in an integer metric (``int(inf)``) and a 400-digit integer (``float()`` overflow) raised
OverflowError out of the node's poll and the gather: ``collect --once`` exited 1 with a traceback and
an empty nodes table, and the daemon stored nothing on every cycle.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from fleetmon.collector import client
from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from fleetmon.sim.fleet import SimNode
from helpers.fake_dcgm import FakeExporter
from storage.db import open_database, query

REPO = Path(__file__).resolve().parents[2]
LABELS = 'gpu="0",UUID="GPU-6f1e2d3c-0000-4000-8000-00000000abcd",modelName="NVIDIA A100-SXM4-80GB",Hostname="evil"'


def scrape(value: str, metric: str = "DCGM_FI_DEV_GPU_TEMP") -> bytes:
    return (f"# HELP {metric} x\n# TYPE {metric} gauge\n{metric}{{{LABELS}}} {value}\n"
            f'DCGM_FI_DEV_POWER_USAGE{{{LABELS}}} 61.5\n').encode()


def fleet_file(tmp_path: Path, nodes: list[tuple[str, str]]) -> Path:
    text = "[fleet]\ntimeout_s = 2\npoll_interval_s = 30\n"
    for name, url in nodes:
        text += f'[[node]]\nname = "{name}"\nurl = "{url}"\n'
    path = tmp_path / "fleet.toml"
    path.write_text(text, encoding="utf-8")
    return path


def healthy_rows(db: object) -> int:
    return int(query(db, "SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id "  # type: ignore[arg-type]
                         "WHERE g.node = 'healthy'")[0]["n"])


HOSTILE = {
    "+Inf": (scrape("+Inf"), "DCGM_FI_DEV_GPU_TEMP"),
    "-Inf": (scrape("-Inf"), "DCGM_FI_DEV_GPU_TEMP"),
    "NaN": (scrape("NaN"), "DCGM_FI_DEV_GPU_TEMP"),
    "400 digits": (scrape("9" * 400), "DCGM_FI_DEV_GPU_TEMP"),
    "400 digits, float field": (scrape("9" * 400, "DCGM_FI_DEV_POWER_MGMT_LIMIT"), "DCGM_FI_DEV_POWER_MGMT_LIMIT"),
    "inf energy": (scrape("+Inf", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_scrape_fails_its_node_and_the_healthy_node_is_stored(tmp_path: Path, healthy: SimNode,
                                                                        case: str) -> None:
    body, metric = HOSTILE[case]
    with FakeExporter(body) as evil:
        db = open_database(tmp_path / "fleet.db")
        collector = Collector(load_fleet(fleet_file(tmp_path, [("evil", evil.url), ("healthy", healthy.url)])), db)
        polls = {p.node: p for p in collector.run_cycle()}  # before the fix: OverflowError out of the cycle
        assert polls["healthy"].ok, polls["healthy"].error
        error = polls["evil"].error or ""
        assert not polls["evil"].ok and "\n" not in error and metric in error, error  # names the metric
        assert healthy_rows(db) == 2
        rows = query(db, "SELECT status, last_error FROM nodes WHERE name = 'evil'")
        assert rows == [{"status": "unreachable", "last_error": error}]  # recorded like any node failure
        # the daemon's next cycle stores again
        healthy.add_minute()
        polls = {p.node: p for p in collector.run_cycle()}
        assert polls["healthy"].ok and not polls["evil"].ok
        assert healthy_rows(db) == 4
        db.close()


def test_any_unexpected_exception_is_the_nodes_one_line_failure(healthy: SimNode, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A reader bug no check foresaw (here: a parser raising ZeroDivisionError) stays that node's failure."""
    real = client.parse_body

    def buggy(kind: object, body: bytes, *rest: object) -> object:
        if b"evil" in body:
            raise ZeroDivisionError("division by zero\nsecond line")
        return real(kind, body, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "parse_body", buggy)
    with FakeExporter(scrape("40")) as evil:
        polls = asyncio.run(poll_all([Target("evil", evil.url), Target("healthy", healthy.url)], timeout_s=2.0))
    assert [p.node for p in polls] == ["evil", "healthy"]
    assert polls[1].ok, polls[1].error
    assert not polls[0].ok
    assert polls[0].error == "/metrics: the answer could not be read (ZeroDivisionError: division by zero)"


def test_collect_once_exits_0_with_the_healthy_node_stored(tmp_path: Path, healthy: SimNode) -> None:
    with FakeExporter(scrape("+Inf")) as evil:
        fleet = fleet_file(tmp_path, [("evil", evil.url), ("healthy", healthy.url)])
        db_path = tmp_path / "fleet.db"
        proc = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db",
                               str(db_path), "--once"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    db = open_database(db_path)
    try:
        names = {r["name"]: r["status"] for r in query(db, "SELECT name, status FROM nodes")}
        assert names["healthy"] == "ok" and names["evil"] == "unreachable", names
        assert healthy_rows(db) == 2
    finally:
        db.close()
