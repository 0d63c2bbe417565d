"""`fleetmon report` and `fleetmon preflight` as cron runs them: subprocesses, outputs, exit statuses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storage.db import open_database
from helpers import HOT, Feeder, between
from helpers import T0

REPO = Path(__file__).resolve().parents[2]
NOW = T0 + 7200


def fleetmon(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    """A healthy fleet, and one with a warning (n2) and a critical finding (n3)."""
    folder = tmp_path_factory.mktemp("reports")
    out = {}
    for name, faults in (("healthy", {}), ("faulty", {
            ("n2", 1): between(T0 + 3600, NOW, HOT),
            ("n3", 0): lambda ts: {"ecc_unc_vol": 2, "ecc_unc_agg": 2} if ts >= T0 + 6000 else {}})):
        path = folder / f"{name}.db"
        db = open_database(path)
        Feeder(db, drivers={"n1": "550.54.15", "n2": "550.54.15", "n3": "550.54.15"}).feed(T0, NOW, faults)
        db.close()
        out[name] = path
        # Reports save themselves in the database; a test that needs one with no report yet copies this.
        shutil.copyfile(path, folder / f"{name}-unreported.db")
        out[f"{name}-unreported"] = folder / f"{name}-unreported.db"
    fleet = folder / "fleet.toml"
    fleet.write_text('[[group]]\nname = "a"\nexpected_driver = "535.161.08"\n'
                     + "".join(f'[[node]]\nname = "{n}"\nurl = "http://127.0.0.1:{9400 + i}"\ngroup = "a"\n'
                               for i, n in enumerate(("n1", "n2", "n3"))))
    out["fleet"] = fleet
    return out


def test_report_text_on_a_healthy_fleet_exits_0(dbs):
    proc = fleetmon("report", "--db", str(dbs["healthy"]), "--now", str(NOW))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("fleetmon report\nWindow: ")
    assert "Status: PASS — 0 fail, 0 warn, 3 pass (3 nodes, 6 GPUs)" in proc.stdout
    assert "GPUs by model: 6x NVIDIA A100-SXM4-80GB" in proc.stdout
    assert "Changes: no previous report to compare with" in proc.stdout
    assert proc.stdout.rstrip().endswith("Exit status: 0")
    assert proc.stderr == ""


def test_report_json_with_a_critical_finding_exits_2_and_compares_next_time(dbs, tmp_path):
    # A copy of its own with no report yet: the module's other tests save their reports of the faulty
    # database in it, and in a random order one of them may come first (this first report then compares).
    faulty = tmp_path / "faulty.db"
    shutil.copyfile(dbs["faulty-unreported"], faulty)
    proc = fleetmon("report", "--db", str(faulty), "--now", str(NOW), "--json")
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1 and doc["kind"] == "report" and doc["exit_status"] == 2
    assert doc["status"] == "fail" and doc["summary"]["verdicts"] == {
        "pass": 1, "warn": 1, "fail": 1, "unreachable": 0, "stale": 0, "unknown": 0}
    assert {n["name"]: n["verdict"] for n in doc["nodes"]} == {"n1": "pass", "n2": "warn", "n3": "fail"}
    assert doc["since"] == NOW - 86400 and doc["generated_at"] == NOW
    kinds = {(f["node"], f["kind"]) for f in doc["findings"] if f["state"] == "open" and f["severity"] != "info"}
    assert kinds == {("n2", "thermal-throttle"), ("n3", "ecc-uncorrectable")}
    assert doc["changes"]["compared"] is False
    again = json.loads(fleetmon("report", "--db", str(faulty), "--now", str(NOW + 60), "--json").stdout)
    assert again["changes"]["compared"] is True
    assert [f for f in again["changes"]["new"] if f["severity"] != "info"] == []


def test_report_writes_printable_html(dbs, tmp_path):
    page = tmp_path / "report.html"
    proc = fleetmon("report", "--db", str(dbs["faulty"]), "--now", str(NOW), "--html", str(page))
    assert proc.returncode == 2
    assert "Exit status: 2 (critical findings)" in proc.stdout  # text on stdout as well
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "@media print" in text and "ecc-uncorrectable" in text


def test_report_with_fleet_file_and_group(dbs):
    proc = fleetmon("report", "--db", str(dbs["healthy"]), "--now", str(NOW), "--fleet", str(dbs["fleet"]),
                    "--group", "a", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["group"] == "a"
    mismatch = {f["node"] for f in doc["findings"] if f["kind"] == "driver-mismatch"}
    assert mismatch == {"n1", "n2", "n3"}  # 550 where the group expects 535
    assert doc["status"] == "warn"


def test_preflight_json_lists_the_no_go_nodes_as_a_hostlist(dbs):
    proc = fleetmon("preflight", "--db", str(dbs["faulty"]), "--nodes", "n[1-4]", "--days", "7",
                    "--now", str(NOW), "--json")
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "preflight" and doc["days"] == 7
    assert doc["go"] == ["n1"] and doc["no_go"] == ["n2", "n3", "n4"] and doc["exclude"] == "n[2-4]"
    n3 = next(n for n in doc["nodes"] if n["name"] == "n3")
    assert n3["ecc"]["uncorrected"] >= 2 and any("ecc-uncorrectable" in r for r in n3["reasons"])


def test_preflight_text_and_html(dbs, tmp_path):
    page = tmp_path / "preflight.html"
    proc = fleetmon("preflight", "--db", str(dbs["healthy"]), "--nodes", "n1,n2", "--now", str(NOW),
                    "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "GO 2   NO-GO 0" in proc.stdout and "Exclude: (none)" in proc.stdout
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("args,message", [
    (["report", "--since", "yesterday"], "--since 'yesterday': expected a duration"),
    (["report", "--group", "nope"], "unknown group 'nope'"),
    (["report", "--now", "noon"], "--now 'noon'"),
    (["preflight", "--nodes", "n[3-1]"], "--nodes"),
    (["preflight", "--nodes", "n1", "--days", "-2"], "--days"),
    (["report", "--fleet", "/nonexistent/fleet.toml"], "fleet.toml"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_1(dbs, args, message):
    proc = fleetmon(*args[:1], "--db", str(dbs["healthy"]), *args[1:])
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_missing_or_unreadable_database_exits_1(tmp_path):
    proc = fleetmon("report", "--db", str(tmp_path / "nope.db"))
    assert proc.returncode == 1 and "no such file" in proc.stderr
    assert not (tmp_path / "nope.db").exists()  # never created by a report
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 200)
    for command in (["report"], ["preflight", "--nodes", "n1"]):
        proc = fleetmon(*command, "--db", str(junk))
        assert proc.returncode == 1, proc.stderr
        assert "corrupt or not a fleetmon database" in proc.stderr and "Traceback" not in proc.stderr


def test_usage_errors_exit_1_not_2():
    assert fleetmon("report").returncode == 1  # --db missing: 2 would read as "critical"
    assert fleetmon("preflight", "--db", "x.db").returncode == 1  # --nodes missing
    assert fleetmon("report", "--db", "x.db", "--bogus").returncode == 1


def test_report_on_a_read_only_database_is_printed_but_not_saved(dbs, tmp_path):
    import shutil

    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "fleet.db"
    shutil.copy(dbs["healthy"], path)
    folder.chmod(0o555)
    path.chmod(0o444)
    try:
        import os

        if os.access(path, os.W_OK):
            pytest.skip("root writes read-only files anyway")
        proc = fleetmon("report", "--db", str(path), "--now", str(NOW))
        assert proc.returncode == 0, proc.stderr
        assert "Status: PASS" in proc.stdout
        assert "reporting without saving this report" in proc.stderr
    finally:
        folder.chmod(0o755)
        path.chmod(0o644)


def test_a_report_that_cannot_be_saved_still_prints(dbs, tmp_path, monkeypatch):
    from fleetmon import assess
    from fleetmon.errors import StorageError
    from storage import findings as stored

    def full(*args, **kwargs):
        raise StorageError("database x: the disk is full")

    monkeypatch.setattr(stored, "save_report", full)
    db = open_database(dbs["healthy"])
    try:
        run = assess.run_report(db, NOW, 86400, None)
    finally:
        db.close()
    assert not run.saved and "disk is full" in (run.save_error or "")
    assert run.result.status == "pass"


def test_a_database_that_cannot_be_written_is_opened_read_only(dbs, monkeypatch, capsys):
    import storage.db
    from fleetmon.cli import reporting
    from fleetmon.errors import StorageError

    real = storage.db.open_database
    opened = []

    def open_database(path, *, readonly=False, existing=False):
        opened.append(readonly)
        if not readonly:
            raise StorageError(f"database {path}: the database is read-only (file or folder permissions)")
        return real(path, readonly=True)

    monkeypatch.setattr(storage.db, "open_database", open_database)
    db, writable = reporting.open_for_report(str(dbs["healthy"]), write=True)
    db.close()
    assert (writable, opened) == (False, [False, True])
    assert "reporting without saving this report" in capsys.readouterr().err
