"""The real `fleetmon` command, as the CLI tests run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fleetmon(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m fleetmon ARGS`` in the repository (wide COLUMNS: argparse's help unwrapped), its output as text."""
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "COLUMNS": "200", **(env or {})})
