"""Slurm in the app (issue 24 items 2 and 3), against the real Slurm of tests/helpers/slurm.py: *Drain…* on a
node of the fleet tree and on a finding, with the confirmation (node, Slurm name, reason); each node's Slurm
state beside its verdict; the pre-run review's *Drain the no-go nodes*, disabled on a stale review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from fleetmon.fleet import load_fleet
from fleetmon.slurm import SlurmClient
from storage.db import open_database
from storage.slurm_actions import slurm_actions

pytestmark = pytest.mark.gui

SLURM_NAMES = {"n1": "gpu-a", "n2": "gpu-b", "n3": "gpu-c", "m2": "gpu-d"}


@pytest.fixture
def cluster(slurm_cluster: Any) -> Iterator[Any]:
    yield slurm_cluster
    for name, state in SlurmClient(conf=str(slurm_cluster.conf)).nodes().items():
        if state.drained:
            slurm_cluster.scontrol("update", f"NodeName={name}", "State=RESUME")


@pytest.fixture
def slurm_window(qtbot: Any, fleet_db: Path, tmp_path: Path, cluster: Any) -> Iterator[Any]:
    from ui.main_window import MainWindow

    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[slurm]\nconf = "{cluster.conf}"\ntimeout_s = 10\n\n' + "".join(
        f'[[node]]\nname = "{n}"\nurl = "http://127.0.0.1:{9000 + i}"\n'
        + (f'slurm_name = "{SLURM_NAMES[n]}"\n' if n in SLURM_NAMES else "") + "\n"
        for i, n in enumerate(("n1", "n2", "n3", "m1", "m2"))))
    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat),
                   fleet_file=load_fleet(fleet))
    qtbot.addWidget(w)
    assert w.slurm is not None
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.request_load()
    if w.slurm.states.view is None:
        with qtbot.waitSignal(w.slurm.states.changed, timeout=20000):
            pass
    yield w
    w.slurm.wait()
    w.close()


def _answer_dialog(button: QMessageBox.StandardButton, seen: list[str]) -> None:
    """Answer the confirmation once it is up (it runs its own event loop)."""
    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(50, answer)
            return
        seen.append(box.text())
        box.button(button).click()

    QTimer.singleShot(50, answer)


def _health_text(w: Any, node: str) -> str:
    from ui.models.fleet_tree import COL_HEALTH

    m = w.fleet_view.model
    return str(m.data(m.index_of_node(node).siblingAtColumn(COL_HEALTH)))


def test_drain_from_the_fleet_tree_confirms_drains_records_and_shows_the_state(qtbot, slurm_window, cluster,
                                                                                 fleet_db):
    w = slurm_window
    assert _health_text(w, "n2").endswith("· Slurm idle")
    assert _health_text(w, "m1").endswith("· Slurm unknown to Slurm")  # no slurm_name, no such Slurm node
    menu = w.fleet_view.context_menu(w.fleet_view.model.index_of_node("n2"))
    assert menu is not None
    [drain] = [a for a in menu.actions() if a.text() == "Drain n2 in Slurm…"]
    assert [a for a in menu.actions() if a.text() == "Resume n2 in Slurm…"]
    gpu_menu = w.fleet_view.context_menu(w.fleet_view.model.index_of_gpu("GPU-n2-01"))  # a GPU: its node
    assert gpu_menu is not None and [a.text() for a in gpu_menu.actions() if "Slurm" in a.text()] == [
        "Drain n2 in Slurm…", "Resume n2 in Slurm…"]

    seen: list[str] = []
    _answer_dialog(QMessageBox.StandardButton.Yes, seen)
    with qtbot.waitSignal(w.slurm.finished, timeout=30000) as got:
        drain.trigger()
    assert "Node: n2    Slurm name: gpu-b" in seen[0]
    assert "Reason: fleetmon: n2 gpu1: 88 °C (limit 85 °C)" in seen[0]  # the node's worst open finding
    action, [outcome] = got.args
    assert action == "drain" and outcome.ok, outcome.error
    show = cluster.show_node("gpu-b")
    assert "DRAIN" in show and "Reason=fleetmon: n2 gpu1: 88 °C (limit 85 °C) [" in show
    (row,) = slurm_actions(open_database(fleet_db, readonly=True))
    assert (row.node, row.slurm_name, row.origin, row.result) == ("n2", "gpu-b", "app", "ok")
    assert row.finding_key == "temperature-high|gpu:GPU-n2-01|"
    qtbot.waitUntil(lambda: "Slurm drain (fleetmon: n2 gpu1" in _health_text(w, "n2"), timeout=20000)


def test_cancel_drains_nothing_and_records_nothing(qtbot, slurm_window, cluster, fleet_db):
    w = slurm_window
    menu = w.fleet_view.context_menu(w.fleet_view.model.index_of_node("n1"))
    [drain] = [a for a in menu.actions() if a.text() == "Drain n1 in Slurm…"]
    seen: list[str] = []
    _answer_dialog(QMessageBox.StandardButton.Cancel, seen)
    drain.trigger()
    assert seen and "Slurm name: gpu-a" in seen[0]
    assert not w.slurm.busy and "DRAIN" not in cluster.show_node("gpu-a")
    assert slurm_actions(open_database(fleet_db, readonly=True)) == []


def test_drain_a_findings_node_from_the_findings_table(qtbot, slurm_window, cluster):
    w = slurm_window
    w.show_view("Findings")
    model = w.findings_model
    row = next(i for i in range(model.rowCount()) if model.row(i).key == "driver-mismatch|node:n3|driver")
    w.findings.customContextMenuRequested.emit(w.findings.visualRect(model.index(row, 0)).center())
    menu = w.evidence.menu
    [drain] = [a for a in menu.actions() if a.text() == "Drain n3 in Slurm…"]
    texts: list[str] = []
    w.slurm.confirm = lambda parent, title, text: texts.append(text) or True
    with qtbot.waitSignal(w.slurm.finished, timeout=30000) as got:
        drain.trigger()
    assert got.args[1][0].ok and "Slurm name: gpu-c" in texts[0]
    assert "DRAIN" in cluster.show_node("gpu-c")
    menu.close()


def test_prerun_drain_the_no_go_nodes_same_confirmation_and_record(qtbot, slurm_window, cluster, fleet_db):
    w = slurm_window
    view = w.prerun_view
    assert view.drain_button.isVisible() or not w.isVisible()
    assert not view.drain_button.isEnabled()
    view.nodes.setText("n[1-2],m2")
    with qtbot.waitSignal(view.review_shown, timeout=30000):
        view.run_review()
    assert view.review is not None and list(view.review.result.no_go) == ["m2"]
    assert view.drain_button.isEnabled()
    slurm_col = {view.go_model.row(i).name: view.go_model.index(i, 4).data() for i in range(view.go_model.rowCount())}
    assert slurm_col["n1"] == "idle"

    texts: list[str] = []
    w.slurm.confirm = lambda parent, title, text: texts.append(f"{title}\n{text}") or True
    with qtbot.waitSignal(w.slurm.finished, timeout=30000) as got:
        view.drain_button.click()
    assert texts[0].startswith("Drain in Slurm\nDrain this node in Slurm?")
    assert "Node: m2    Slurm name: gpu-d" in texts[0] and "Reason: fleetmon: pre-run no-go: " in texts[0]
    assert [o.ok for o in got.args[1]] == [True]
    assert "DRAIN" in cluster.show_node("gpu-d") and "DRAIN" not in cluster.show_node("gpu-a")
    (row,) = slurm_actions(open_database(fleet_db, readonly=True))
    assert (row.node, row.origin, row.result) == ("m2", "app", "ok")

    view.days.setValue(view.days.value() + 1)  # the review is now out of date: nothing to drain from it
    assert not view.drain_button.isEnabled() and view.no_go_targets() == []


def test_slurm_unavailable_reads_as_such_never_as_a_state(qtbot, fleet_db, tmp_path):
    from ui.slurm_action import SlurmStates

    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[slurm]\nconf = "/nonexistent/slurm.conf"\ntimeout_s = 5\n\n'
                     '[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9000"\n')
    states = SlurmStates(load_fleet(fleet), client=SlurmClient(bin_dir=str(tmp_path)))  # no sinfo there
    assert states.text("n1") is None  # not read yet
    with qtbot.waitSignal(states.changed, timeout=10000):
        states.refresh()
    assert states.text("n1") == "Slurm unavailable" and "not installed" in states.tooltip()
