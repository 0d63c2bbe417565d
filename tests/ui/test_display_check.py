"""A machine that cannot show a window: `fleetmon gui` and `fleetmon demo` say so in one line, before Qt starts
(no Qt abort, exit 134, with its advice to reinstall), and leave nothing behind (ui.display_check)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ui import display_check
from ui.display_check import LIBRARY_PACKAGES, ldd_missing, qpa_platforms, window_problem

REPO = Path(__file__).resolve().parents[2]
_HOMES = ("TMPDIR", "HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def _headless_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a machine without a display; every folder a command could write to in tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    for name in _HOMES:
        env[name] = str(tmp_path / name.lower())
        (tmp_path / name.lower()).mkdir()
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _run(tmp_path: Path, words: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *words], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


def _left_behind(tmp_path: Path) -> list[Path]:
    """Anything in tmp_path but the empty folders :func:`_headless_env` made."""
    return sorted(p for p in tmp_path.rglob("*") if p not in {tmp_path / n.lower() for n in _HOMES})


COMMANDS = [["gui"], ["gui", "--db", "typo.db"], ["demo", "--nodes", "2", "--history-days", "0"]]


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_without_a_display_one_line_names_xvfb_and_the_reports(tmp_path, words):
    done = _run(tmp_path, words, _headless_env(tmp_path))
    command = words[0]
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.strip()
    assert line.startswith(f"fleetmon {command}: no display to open a window on"), line
    assert f"xvfb-run fleetmon {command}" in line and "fleetmon report" in line and "fleetmon preflight" in line
    assert ("fleetmon demo --no-gui" in line) == (command == "demo")
    assert "Traceback" not in done.stderr and "Reinstalling" not in done.stderr
    assert _left_behind(tmp_path) == []  # no demo folder in TMPDIR, no default database, no settings


def _free_display() -> str:
    """A display number no X server listens on (neither its socket file nor an abstract socket)."""
    try:
        listening = Path("/proc/net/unix").read_text()
    except OSError:
        listening = ""
    for n in range(731, 800):
        name = f"/tmp/.X11-unix/X{n}"
        if not Path(name).exists() and f"@{name}" not in listening:
            return f":{n}"
    pytest.skip("no free display number")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb check runs on Linux")
def test_a_display_nobody_answers_on_is_one_line_not_a_qt_abort(tmp_path):
    display = _free_display()
    done = _run(tmp_path, ["demo", "--nodes", "2", "--history-days", "0"],
                _headless_env(tmp_path, DISPLAY=display))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"no X server answers on DISPLAY={display}" in done.stderr and "xvfb-run fleetmon demo" in done.stderr
    assert _left_behind(tmp_path) == []


def _never() -> list[str]:
    raise AssertionError("the libraries were checked")


def _refuse(display: str) -> int:
    raise AssertionError("the X server was asked")


@pytest.mark.parametrize("platform", ["offscreen", "minimal", "vnc:size=800x600", "eglfs", "wayland;offscreen"])
def test_platforms_that_need_no_display_are_not_checked(platform):
    assert window_problem("gui", {"QT_QPA_PLATFORM": platform}, missing_libraries=_never, connect=_refuse) is None


def test_a_wayland_session_is_not_asked_for_x11_libraries():
    env = {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}
    assert window_problem("gui", env, missing_libraries=_never, connect=_refuse) is None
    assert window_problem("gui", {**env, "QT_QPA_PLATFORM": "wayland;xcb"}, missing_libraries=_never) is None
    forced_x11 = window_problem("gui", {"WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"},
                                missing_libraries=_never, connect=_refuse)
    assert forced_x11 is not None and forced_x11.startswith("no display to open a window on (DISPLAY is not set)")


def test_an_x11_display_with_everything_installed_is_fine():
    asked: list[str] = []
    assert window_problem("gui", {"DISPLAY": ":5"}, missing_libraries=list,
                          connect=lambda d: asked.append(d) or 0) is None
    assert asked == [":5"]
    assert window_problem("gui", {"DISPLAY": ":5", "QT_QPA_PLATFORM": ""}, missing_libraries=list,
                          connect=lambda d: 0) is None


def test_missing_xcb_libraries_give_the_exact_apt_get_line(monkeypatch):
    """The issue's machine: libxcb-cursor0 installed, libxcb-icccm4, libxcb-keysyms1, libxcb-xinerama0 not."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    missing = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-xinerama.so.0"]
    line = window_problem("demo", {"DISPLAY": ":0"}, missing_libraries=lambda: missing, connect=_refuse)
    assert line == ("cannot open a window: Qt's X11 platform plugin (xcb) needs libxcb-icccm.so.4, "
                    "libxcb-keysyms.so.1, libxcb-xinerama.so.0, which are not installed; install them with: "
                    "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-xinerama0")
    assert "cursor" not in line
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    line = window_problem("gui", {"DISPLAY": ":0"}, missing_libraries=lambda: ["libxcb-cursor.so.0"])
    assert line is not None and line.endswith("which is not installed; install it with: apt-get install libxcb-cursor0")
    # two sonames of one package name it once; a soname of no known package is named with how to find it
    line = window_problem("gui", {"DISPLAY": ":0"},
                          missing_libraries=lambda: ["libglib-2.0.so.0", "libgthread-2.0.so.0", "libfoo.so.3"])
    assert line is not None and "apt-get install libglib2.0-0;" in line
    assert line.endswith("find the package of libfoo.so.3 with `apt-file search`")


def test_ldd_output_gives_the_missing_sonames():
    out = ("\tlinux-vdso.so.1 (0x00007ffd)\n"
           "\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f1)\n"
           "\tlibxcb-icccm.so.4 => not found\n"
           "\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f2)\n"
           "\tlibxcb-keysyms.so.1 => not found\n"
           "\tlibxcb-icccm.so.4 => not found\n"
           "\tlibQt6Gui.so.6 => not found\n")  # PySide6's own, laid out elsewhere in a bundle: not the system's
    assert ldd_missing(out) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert ldd_missing("") == []


def test_other_systems_are_left_to_qt(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert window_problem("gui", {}, missing_libraries=_never, connect=_refuse) is None


def test_qpa_platform_values():
    assert qpa_platforms("") == [] and qpa_platforms(" ") == []
    assert qpa_platforms("wayland;xcb") == ["wayland", "xcb"]
    assert qpa_platforms("vnc:size=800x600;offscreen") == ["vnc", "offscreen"]


def _system_deps() -> tuple[set[str], set[str]]:
    """packaging/system-deps.sh's base packages and its `demo` ones."""
    text = (REPO / "packaging" / "system-deps.sh").read_text().replace("\\\n", "")
    base = re.search(r'^pkgs="([^"$]*)"', text, re.MULTILINE)
    demo = re.search(r'if \[ "\$what" = demo \]; then\s*pkgs="\$pkgs ([^"]*)"', text)
    assert base and demo
    return set(base.group(1).split()), set(demo.group(1).split())


def test_the_library_map_and_system_deps_name_the_same_packages():
    base, demo = _system_deps()
    assert set(LIBRARY_PACKAGES.values()) == base | demo


@pytest.mark.skipif(display_check.xcb_plugin() is None or not display_check.shutil.which("ldd"),
                    reason="no PySide6 xcb plugin or no ldd here")
def test_every_x11_library_the_installed_plugin_needs_has_a_package():
    """What this PySide6's xcb plugin loads from the system (X11, xcb, xkbcommon, EGL, GL, fontconfig, GLib,
    D-Bus) is in the map, so a missing one is named with its package; and the real check finds nothing missing."""
    out = subprocess.run(["ldd", str(display_check.xcb_plugin())], capture_output=True, text=True).stdout
    needed = {m.group(1) for m in re.finditer(r"^\s*(\S+) =>", out, re.MULTILINE)}
    relevant = {s for s in needed if re.match(r"lib(xcb|X11|xkbcommon|EGL|GL\.|fontconfig|glib|gthread|dbus)", s)}
    assert relevant and relevant <= set(LIBRARY_PACKAGES), sorted(relevant - set(LIBRARY_PACKAGES))
    assert display_check.missing_xcb_libraries() == []
