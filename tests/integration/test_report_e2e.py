"""Done when: `fleetmon report --json` against a collector fed by agents on simulated faulty nodes names each fault.

Real `fleetmon agent --simulate fault-<kind> --backfill-minutes 20` subprocesses
(one node per fault kind a live simulated agent can show, a healthy node, a
node on another driver than its group, and a node nobody answers for), one
`fleetmon collect --once`, then `fleetmon report --json`. Every fault's kind
must be named on its node and GPU (the fault-<kind> scenarios put the fault on
GPU 1), the healthy node must pass. The recall table is printed.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleetmon.demo import start_agents, stop_agents

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BACKFILL_MINUTES = 20

# (simulated fault kind, finding kind it must produce, group)
FAULTS: list[tuple[str, str, str]] = [
    ("ecc_uncorrectable", "ecc-uncorrectable", "a100"),
    ("ecc_correctable_storm", "ecc-correctable-storm", "a100"),
    ("retired_pages", "retired-pages", "v100"),
    ("row_remap_pending", "row-remap", "a100"),
    ("row_remap_failure", "row-remap", "a100"),
    ("xid", "xid", "a100"),
    ("gpu_lost", "gpu-lost", "a100"),
    ("pcie_degraded", "pcie-link-degraded", "rtx4090"),
    ("pcie_replays", "pcie-replay", "rtx4090"),
    ("power_brake", "power-brake", "rtx4090"),
    ("power_read_fail", "power-unreadable", "a10"),
    ("power_capped", "power-capped", "a100"),
    ("thermal", "thermal-throttle", "a100"),
    ("fan_stuck", "fan-stopped", "rtx3090"),
    ("derate", "derating", "a100"),
]
HEALTHY = ("healthy-01", "a100*4", "a100")
MISMATCH = ("drv-01", "a100*4;driver=550.54.15", "a100")  # the a100 group runs 535.161.08
UNREACHABLE = "down-01"


def _node(fault: str) -> str:
    return "f-" + fault.replace("_", "-")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Run:
    """One collected run of the faulty fleet: the database and when the collector finished."""

    db: Path
    fleet: Path
    collected_at: float
    started: float


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Agents on simulated faulty nodes, one `collect --once`, then nothing more: the run ends there."""
    tmp_path = tmp_path_factory.mktemp("faulty")
    started = time.monotonic()
    nodes = [(_node(kind), f"fault-{kind}") for kind, _, _ in FAULTS]
    nodes += [(HEALTHY[0], HEALTHY[1]), (MISMATCH[0], MISMATCH[1])]
    groups = {_node(kind): group for kind, _, group in FAULTS}
    groups.update({HEALTHY[0]: HEALTHY[2], MISMATCH[0]: MISMATCH[2], UNREACHABLE: "a100"})
    agents = start_agents(tmp_path / "agents", nodes, interval_s=2.0, timeout_s=45.0,
                          extra_args=["--backfill-minutes", str(BACKFILL_MINUTES)])
    try:
        lines = ["[fleet]", 'name = "e2e"', "timeout_s = 5", ""]
        urls = {a.name: a.url for a in agents}
        urls[UNREACHABLE] = f"http://127.0.0.1:{_free_port()}"  # nobody listens
        for name, url in urls.items():
            lines += ["[[node]]", f'name = "{name}"', f'url = "{url}"', f'group = "{groups[name]}"', ""]
        fleet = tmp_path / "fleet.toml"
        fleet.write_text("\n".join(lines), encoding="utf-8")
        db = tmp_path / "fleet.db"
        collect = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                                  "--once"], capture_output=True, text=True, timeout=60, cwd=REPO)
        assert collect.returncode == 0, collect.stderr
        assert f"polled {len(urls)} nodes: {len(urls) - 1} ok, 1 unreachable" in collect.stdout
    finally:
        stop_agents(agents)
    return Run(db, fleet, time.time(), started)


def test_report_json_names_every_simulated_fault(faulty_run, capsys, pytestconfig):
    db, started = faulty_run.db, faulty_run.started
    report = subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(db), "--json"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert report.returncode == 2, report.stderr  # critical findings (ECC, lost GPU, remap failure)
    doc = json.loads(report.stdout)
    open_findings = [f for f in doc["findings"] if f["state"] == "open"]

    rows = []
    missed = []
    for kind, expected, _ in FAULTS:
        node = _node(kind)
        hits = [f for f in open_findings if f["node"] == node and f["kind"] == expected]
        on_gpu = [f for f in hits if f["gpu_index"] == 1]
        others = sorted({f["kind"] for f in open_findings if f["node"] == node and f["severity"] != "info"}
                        - {expected})
        rows.append((kind, expected, node, "yes" if on_gpu else ("wrong GPU" if hits else "NO"),
                     ", ".join(f"{f['severity']}" for f in on_gpu), ", ".join(others)))
        if not on_gpu:
            missed.append(kind)
    mismatch = [f for f in open_findings if f["node"] == MISMATCH[0] and f["kind"] == "driver-mismatch"]
    rows.append(("driver 550 in a 535 group", "driver-mismatch", MISMATCH[0], "yes" if mismatch else "NO",
                 ", ".join(f["severity"] for f in mismatch), ""))
    verdicts = {n["name"]: n["verdict"] for n in doc["nodes"]}
    healthy_kinds = sorted({f["kind"] for f in open_findings if f["node"] == HEALTHY[0] and f["severity"] != "info"})
    rows.append(("healthy", "(none: pass)", HEALTHY[0], "pass" if verdicts.get(HEALTHY[0]) == "pass" else "NO",
                 verdicts.get(HEALTHY[0], "?"), ", ".join(healthy_kinds)))
    unreachable = UNREACHABLE in doc["summary"]["unreachable"]
    rows.append(("no agent answers", "summary.unreachable", UNREACHABLE, "yes" if unreachable else "NO", "", ""))
    width = [max(len(str(r[i])) for r in rows + [("fault", "finding kind", "node", "found", "severity",
                                                   "other warnings/criticals")]) for i in range(6)]
    header = ("fault", "finding kind", "node", "found", "severity", "other warnings/criticals")
    table = [" | ".join(str(c).ljust(w) for c, w in zip(header, width))]
    table += [" | ".join(str(c).ljust(w) for c, w in zip(r, width)) for r in rows]
    found = sum(1 for r in rows if r[3] in ("yes", "pass"))
    if pytestconfig.getoption("--quality-report") == "-":  # the table only on request (tests/conftest.py)
        with capsys.disabled():
            print(f"\nrecall: {found}/{len(rows)} in {time.monotonic() - started:.1f} s "
                  f"(agents backfilled {BACKFILL_MINUTES} min, one collect --once, report --json)")
            print("\n".join(table))

    assert not missed, f"faults not named on their GPU: {missed}"
    assert mismatch and mismatch[0]["severity"] == "warning"
    assert verdicts[HEALTHY[0]] == "pass", healthy_kinds
    assert unreachable
    assert doc["summary"]["driver_versions"]["550.54.15"] >= 4  # the drv node and the RTX 4090 group


def test_backfilled_agent_serves_the_simulated_past(tmp_path):
    import urllib.request

    (agent,) = start_agents(tmp_path, [("bf-01", "fault-xid")], interval_s=2.0,
                            extra_args=["--backfill-minutes", "10", "--backfill-step", "10"])
    try:
        def get(path: str) -> dict:
            with urllib.request.urlopen(agent.url + path, timeout=10) as r:
                return json.loads(r.read())

        minutes = get("/v1/minutes?after=0&limit=1000")["records"]
        events = get("/v1/events?after=0&limit=1000")["records"]
    finally:
        stop_agents([agent])
    now = time.time()
    per_gpu: dict[int, list[dict]] = {}
    for m in minutes:
        per_gpu.setdefault(m["index"], []).append(m)
    assert sorted(per_gpu) == [0, 1, 2, 3]
    for rows in per_gpu.values():
        assert len(rows) >= 10 and rows[0]["ts"] <= now - 9 * 60
        assert all(b["ts"] - a["ts"] == 60 for a, b in zip(rows, rows[1:]))
        assert all(r["n"] == 6 for r in rows[1:-1])  # a sample every 10 simulated seconds
    xids = [e for e in events if e["kind"] == "xid"]
    assert len(xids) >= 10 and all(e["code"] == 13 for e in xids)  # Xid 13 every 60 s since the start
    assert xids[0]["ts"] <= now - 9 * 60
    assert events[0]["kind"] == "agent_start" and events[0]["ts"] <= now - 9 * 60


CRITICAL_FAULTS = {"ecc_uncorrectable": "ecc-uncorrectable", "gpu_lost": "gpu-lost", "row_remap_failure": "row-remap"}
"""The simulated faults that make a critical finding (fault-xid's Xid 13 is an application error: a warning)."""


def _judge(cmd: str, run: Run, now: float, *extra: str) -> tuple[int, dict]:
    got = subprocess.run([sys.executable, "-m", "fleetmon", cmd, "--db", str(run.db), "--json", "--now", str(now),
                          *extra], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert got.returncode in (0, 2), got.stderr
    return got.returncode, json.loads(got.stdout)


@pytest.mark.parametrize("hours", [6, 36])
def test_a_silent_fleet_judged_later_keeps_its_failures_and_passes_no_node(faulty_run, hours):
    """`report --now` and `preflight --now` hours after the run ended: nothing got better without evidence."""
    now = faulty_run.collected_at + hours * 3600
    code, doc = _judge("report", faulty_run, now)
    verdicts = {n["name"]: n["verdict"] for n in doc["nodes"]}
    assert code == 2 and doc["status"] == "fail"
    assert "pass" not in verdicts.values(), verdicts  # nobody heard from any node for hours
    assert doc["summary"]["verdicts"]["pass"] == 0
    # The nodes with a critical fault are still failed, their critical findings open.
    open_ = [f for f in doc["findings"] if f["state"] == "open"]
    for fault, kind in CRITICAL_FAULTS.items():
        node = _node(fault)
        assert verdicts[node] == "fail", (node, verdicts[node])
        assert any(f["node"] == node and f["kind"] == kind and f["severity"] == "critical" for f in open_), (node, kind)
    # Every fault is still named, open, on its node (the Xid is an event: it waits for an operator).
    for kind, expected, _ in FAULTS:
        assert any(f["node"] == _node(kind) and f["kind"] == expected for f in open_), (kind, expected)
    # The rest read stale with the age of their data (the healthy node too: no news is not good news).
    assert verdicts[HEALTHY[0]] == "stale"
    age = doc["summary"]["stale"][HEALTHY[0]]
    assert hours * 3600 - 120 <= age <= hours * 3600 + 600
    assert verdicts[UNREACHABLE] == "unknown"  # never answered
    # The silent nodes' cards are still the fleet's (the nodes went silent, the cards did not leave).
    assert doc["summary"]["gpus"] == 4 * (len(FAULTS) + 2)
    assert all(f["gpu_index"] is not None for f in open_ if f["gpu_uuid"])
    # The preflight agrees: none of them is go.
    names = ",".join(verdicts)
    code, pre = _judge("preflight", faulty_run, now, "--nodes", names, "--days", "3")
    assert code == 2 and pre["go"] == []
    # The collector's stored ledger keeps them open too (the GUI's and the export's source).
    from storage.db import open_database
    from storage.findings import open_findings

    db = open_database(faulty_run.db, readonly=True)
    try:
        stored = {(f.node, f.kind) for f in open_findings(db) if f.severity == "critical"}
    finally:
        db.close()
    for fault, kind in CRITICAL_FAULTS.items():
        assert (_node(fault), kind) in stored
