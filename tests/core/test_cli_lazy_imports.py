"""`fleetmon agent` needs only the standard library and nvidia-ml-py: building the parser loads nothing heavier."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("PySide6", "pyqtgraph", "sqlite_utils", "apscheduler", "aiohttp", "numpy", "ui", "storage")


def test_building_the_parser_imports_no_app_dependency():
    code = ("import json, sys; from fleetmon.cli import build_parser; build_parser(); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    loaded = set(json.loads(out))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
