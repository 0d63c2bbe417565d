"""Guards the Qt pin: a PlotWidget repainted thousands of times must exit cleanly.

PySide6 6.12.0 with pyqtgraph 0.14.0 aborted the process ("Fatal Python error",
a refcount error in a deallocator) within a few thousand repaints; 6.11.3 did
not. The check runs in a subprocess because the failure kills the interpreter.
The widget is small (200 × 150, with its axes and a 500-point curve): the count of
repaints is what the pin guards, and painting fewer pixels halves the test's time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gui

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    w = pg.PlotWidget()
    w.resize(200, 150)
    curve = w.plot(pen="y")
    w.show()
    x = np.arange(500, dtype=float)
    n = int(sys.argv[1])
    for i in range(n):
        curve.setData(x, np.sin(x / 20.0 + i / 10.0))
        w.grab()
        app.processEvents()
    w.close()
    print("repaints", n)
""")


def test_plot_widget_survives_thousands_of_repaints(tmp_path):
    script = tmp_path / "soak.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, str(script), "3000"], capture_output=True, text=True, env=env,
                          timeout=240)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "repaints 3000" in proc.stdout
