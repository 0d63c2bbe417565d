"""Fixtures for the UI tests: a real SQLite file with groups, drivers, hot cards and findings."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import inventory, poll
from storage.db import open_database
from storage.findings import save_findings
from storage.ingest import ingest_polls
from storage.rows import NewFinding
from ui.fleet_reader import FleetSnapshot, read_snapshot


def build_db(path: Path, now: float | None = None) -> Path:
    """Groups "a" (n1, n2: driver 550, n3: driver 535, one hot card on n2) and "b" (m1; unreachable m2)."""
    now = time.time() if now is None else now
    db = open_database(path)
    polls = []
    for node, group, driver in (("n1", "a", "550.54.15"), ("n2", "a", "550.54.15"), ("n3", "a", "535.161.08"),
                                ("m1", "b", "550.54.15")):
        p = poll(node, now - 5, gpus=2, driver=driver,
                 inv=[inventory(node, i, temp_slowdown_c=90, temp_shutdown_c=100,
                                vbios="94.00.01" if (node, i) == ("n3", 1) else "92.00.45.00.01")
                      for i in range(2)])
        polls.append(dataclasses.replace(p, group=group))
    polls.append(dataclasses.replace(poll("m2", now - 5, ok=False), group="b"))
    ingest_polls(db, polls)
    # n2 GPU 1 runs hot: 88 °C against the card's slowdown of 90 °C (limit 85 °C).
    hot = dataclasses.replace(polls[1], latest=[
        dataclasses.replace(s, values={"temp_c": 88, "power_w": 300.0}) if s.index == 1 else s
        for s in polls[1].latest], ts=now - 2)
    ingest_polls(db, [hot])
    save_findings(db, [
        NewFinding(key="temperature-high|gpu:GPU-n2-01|", kind="temperature-high", severity="warning", node="n2",
                   gpu_uuid="GPU-n2-01", first_seen=now - 600, last_seen=now - 10,
                   evidence={"max_temp_c": 88, "limit_c": 85, "critical_c": 95, "minutes": 4,
                             "summary": "n2 gpu1: 88 °C (limit 85 °C)"}, action="Improve cooling"),
        NewFinding(key="node-unreachable|node:m2|", kind="node-unreachable", severity="critical", node="m2",
                   first_seen=now - 900, last_seen=now - 5,
                   evidence={"minutes": 15, "failed_polls": 30, "error": "connect: refused"},
                   action="Check the node"),
        NewFinding(key="driver-mismatch|node:n3|driver", kind="driver-mismatch", severity="warning", node="n3",
                   first_seen=now - 900, last_seen=now - 5,
                   evidence={"field": "driver", "version": "535.161.08", "expected": "550.54.15",
                             "basis": "majority", "group": "a"}, action="Install the group's driver"),
    ], now)
    db.close()
    return path


def snapshot(path: Path) -> FleetSnapshot:
    db = open_database(path, readonly=True)
    try:
        return read_snapshot(db)
    finally:
        db.close()




@pytest.fixture
def fleet_db(tmp_path: Path) -> Path:
    """A real database file: see :func:`build_db`."""
    return build_db(tmp_path / "fleet.db")


@pytest.fixture
def window(qtbot, fleet_db, tmp_path):
    """The main window on :func:`fleet_db`, its first snapshot shown (timer refresh once a minute)."""
    from PySide6.QtCore import QSettings

    from ui.main_window import MainWindow

    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                 QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.request_load()
    yield w
    w.close()


@pytest.fixture
def snap(fleet_db: Path) -> FleetSnapshot:
    return snapshot(fleet_db)


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path) -> None:
    """QSettings of the windows under test go to a temporary folder, never the user's."""
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))


@pytest.fixture
def chinese(qapp) -> Iterator[None]:
    """The application in zh_CN for one test, English again after it (whatever happens)."""
    from ui import i18n as ui_i18n

    assert ui_i18n.install("zh_CN") == "zh_CN"
    try:
        yield
    finally:
        ui_i18n.install("en")
