"""The desktop entry, AppStream metadata and icons pass their real validators and agree with each other."""

from __future__ import annotations

import configparser
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fleetmon import __version__

REPO = Path(__file__).resolve().parents[2]
APP_ID = "io.github.fleetmon.Fleetmon"
DESKTOP = REPO / "packaging" / f"{APP_ID}.desktop"
METAINFO = REPO / "packaging" / f"{APP_ID}.metainfo.xml"
SVG = REPO / "ui" / "icons" / f"{APP_ID}.svg"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
APT = "sudo apt-get install desktop-file-utils appstream  (or: sh packaging/system-deps.sh test)"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: {APT}")
    return found


def test_desktop_file_validate() -> None:
    run = subprocess.run([_tool("desktop-file-validate"), str(DESKTOP)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and not run.stdout.strip(), run.stdout + run.stderr


def test_appstreamcli_validate() -> None:
    run = subprocess.run([_tool("appstreamcli"), "validate", "--no-net", str(METAINFO)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def _entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def test_desktop_entry_runs_the_gui_on_the_defaults() -> None:
    """No paths in Exec: `fleetmon gui` finds the default database and fleet file itself."""
    entry = _entry()
    assert entry["Exec"] == "fleetmon gui"
    assert entry["Icon"] == APP_ID


def test_metainfo_names_the_desktop_entry_and_this_version() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == APP_ID
    assert root.findtext("launchable") == DESKTOP.name
    assert root.findtext("provides/binary") == "fleetmon"
    assert __version__ in [r.get("version") for r in root.iter("release")]


def test_icon_svg_and_every_png_size() -> None:
    assert ET.parse(SVG).getroot().tag.endswith("svg")
    for n in PNG_SIZES:
        png = REPO / "packaging" / "icons" / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png"
        head = png.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", png
        assert struct.unpack(">II", head[16:24]) == (n, n), png
