"""What the window's launch imports (issue 21: the launch figure of benchmarks/bench_gui.py).

Without timing: a fresh interpreter imports ``ui.main_window`` (and builds the window, offscreen) and
reports which heavy modules it loaded. pyqtgraph (with its Qt shims, about 0.4 s), the health engine
and its rules, the report and evidence code are loaded when the user first needs them: a GPU's plots,
the Derating view shown, an inspection, a review, an intake, an evidence export.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

DEFERRED = ("pyqtgraph", "fleetmon.health.engine", "fleetmon.health.render", "fleetmon.assess",
            "fleetmon.evidence", "fleetmon.intake", "ui.views.plots")

PROBE = """
import json, sys
import ui.main_window
after_import = sorted(m for m in {deferred!r} if m in sys.modules)
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from ui.main_window import MainWindow
app = QApplication([])
w = MainWindow(sys.argv[1], refresh_s=600, settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
w.show()
app.processEvents()
after_window = sorted(m for m in {deferred!r} if m in sys.modules)
w.close()
print(json.dumps([after_import, after_window]))
"""


def _probe(tmp_path: Path, db: Path) -> tuple[list[str], list[str]]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", PROBE.format(deferred=DEFERRED), str(db), str(tmp_path / "w.ini")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    after_import, after_window = json.loads(out.stdout.strip().splitlines()[-1])
    return after_import, after_window


@pytest.mark.gui
def test_the_window_opens_without_pyqtgraph_or_the_health_engine(tmp_path: Path, fleet_db: Path) -> None:
    after_import, after_window = _probe(tmp_path, fleet_db)
    assert after_import == []
    assert after_window == []  # the Fleet view first: no plot built, no report run


@pytest.mark.gui
def test_the_derating_plots_are_built_when_the_view_is_first_shown(qtbot, fleet_db: Path, tmp_path: Path) -> None:
    from PySide6.QtCore import QSettings

    from ui.main_window import MainWindow

    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                 QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert w.derating._plots is None  # the Fleet view shows: nothing built for Derating yet
    w.show_view("Derating")
    assert w.derating._plots is not None and w.derating.strip.isVisible() and w.derating.card.isVisible()
    w.close()

