"""Can this machine show a window? Asked before the QApplication exists (`fleetmon gui`, `fleetmon demo`).

Left to Qt, a machine without a display, or without one of the libraries Qt's
X11 platform plugin (xcb) links to, prints "could not connect to display",
names at best ``libxcb-cursor0`` (the one library Qt 6.5+ checks by name),
advises "Reinstalling the application may fix this problem" and aborts the
process (exit 134), leaving behind whatever the command had started (the
demo's agents' temporary folder). This module imports no Qt: it reads the
environment, asks the dynamic loader which libraries the installed PySide6's
xcb plugin lacks (``ldd``) and tries the X connection with libxcb itself, so
that the command can say in one line what is missing and what to do instead.

The libraries are mapped to the Debian/Ubuntu packages that
``packaging/system-deps.sh demo`` installs (``tests/ui/test_display_check.py``
keeps the two lists and the installed plugin's needs in step).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from fleetmon.i18n import N_, Text

# The shared libraries Qt's xcb plugin (and Qt's GUI library under it) loads from the system, with the
# Debian/Ubuntu package of each. The first block is what Qt needs for any window, offscreen too
# (system-deps.sh's base list); the second is the xcb plugin's own (its `demo` list).
LIBRARY_PACKAGES: dict[str, str] = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3",

    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
}

# Platforms that need no display server of their own: offscreen, minimal, vnc, eglfs, linuxfb, … (any name
# that is not xcb or wayland*). With one of them in QT_QPA_PLATFORM this check says nothing.
_DISPLAY_PLATFORMS = ("xcb", "wayland")

Missing = Callable[[], list[str]]
Connect = Callable[[str], int]


def window_problem(command: str, environ: Mapping[str, str] | None = None, *,
                   missing_libraries: Missing | None = None, connect: Connect | None = None) -> str | None:
    """Why ``fleetmon COMMAND`` cannot open a window here, in one line; None when it can (or when not ours
    to judge: not Linux, or a platform such as offscreen that needs no display).

    ``missing_libraries`` (default :func:`missing_xcb_libraries`) lists the sonames the xcb plugin cannot
    load; ``connect(display)`` (default :func:`x_connection_error`) returns libxcb's connection error, 0 when
    the X server answers. Tests pass both.
    """
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return None
    platforms = qpa_platforms(env.get("QT_QPA_PLATFORM", ""))
    if any(not p.startswith(_DISPLAY_PLATFORMS) for p in platforms):
        return None
    # Without QT_QPA_PLATFORM Qt picks Wayland when the session offers it, X11 (xcb) otherwise.
    wayland = not platforms or any(p.startswith("wayland") for p in platforms)
    xcb = not platforms or "xcb" in platforms
    if wayland and env.get("WAYLAND_DISPLAY"):
        return None  # a Wayland session: its libraries come with the compositor (not checked here)
    display = env.get("DISPLAY", "")
    if not (xcb and display):
        return no_display_message(command, env)
    missing = (missing_libraries or missing_xcb_libraries)()
    if missing:
        return missing_libraries_message(missing)
    error = (connect or x_connection_error)(display)
    if error:
        return Text(N_("cannot open a window: no X server answers on DISPLAY={display} (or this user may not use it: "
                       "xauth); {advice}"), display=display, advice=_elsewhere(command))
    return None


def qpa_platforms(value: str) -> list[str]:
    """The platform names in a QT_QPA_PLATFORM value: ``"wayland;xcb"`` → both, ``"vnc:size=800x600"`` → vnc."""
    return [entry.split(":", 1)[0].strip().lower() for entry in value.split(";") if entry.strip()]


# The messages are fleetmon.i18n Text (said in the reader's language where the CLI prints them; English as is).
def no_display_message(command: str, environ: Mapping[str, str]) -> str:
    qpa = environ.get("QT_QPA_PLATFORM", "")
    if qpa.strip().lower() == "xcb":
        return Text(N_("no display to open a window on (DISPLAY is not set); {advice}"), advice=_elsewhere(command))
    return Text(N_("no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is set); {advice}"),
                advice=_elsewhere(command))


def _elsewhere(command: str) -> Text:
    if command == "demo":
        return Text(N_("run it under a virtual X server (`xvfb-run fleetmon {command} …`), or without a window: "
                       "`fleetmon demo --no-gui`, or use the command-line reports (`fleetmon report`, "
                       "`fleetmon preflight`)"), command=command)
    return Text(N_("run it under a virtual X server (`xvfb-run fleetmon {command} …`), or use the command-line "
                   "reports (`fleetmon report`, `fleetmon preflight`)"), command=command)


def missing_libraries_message(missing: Iterable[str]) -> str:
    """``missing`` (sonames) as the one line that says which packages to install."""
    sonames = list(dict.fromkeys(missing))
    packages = list(dict.fromkeys(LIBRARY_PACKAGES[s] for s in sonames if s in LIBRARY_PACKAGES))
    unknown = [s for s in sonames if s not in LIBRARY_PACKAGES]
    many = len(sonames) > 1
    text = Text(N_("cannot open a window: Qt's X11 platform plugin (xcb) needs {libraries}, which are not installed")
                if many else
                N_("cannot open a window: Qt's X11 platform plugin (xcb) needs {libraries}, which is not installed"),
                libraries=", ".join(sonames))
    sudo = "" if hasattr(os, "geteuid") and os.geteuid() == 0 else "sudo "
    if packages:
        text = Text(N_("{text}; install them with: {command}") if many else N_("{text}; install it with: {command}"),
                    text=text, command=f"{sudo}apt-get install {' '.join(packages)}")
    if unknown:
        text = Text(N_("{text}; find the package of {libraries} with `apt-file search`"), text=text,
                    libraries=", ".join(unknown))
    return text


def xcb_plugin() -> Path | None:
    """The installed PySide6's ``libqxcb.so`` (QT_QPA_PLATFORM_PLUGIN_PATH first, as Qt looks), without
    importing Qt; None when there is none to be found."""
    folders: list[Path] = []
    if os.environ.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        folders.append(Path(os.environ["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    spec = importlib.util.find_spec("PySide6")
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        folders.append(Path(base) / "Qt" / "plugins" / "platforms")
    for folder in folders:
        if (folder / "libqxcb.so").is_file():
            return folder / "libqxcb.so"
    return None


_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)


def missing_xcb_libraries() -> list[str]:
    """The sonames the xcb plugin (and what it links to) cannot load here.

    ``ldd`` on the installed plugin is exact (it follows the plugin's own
    needs, whatever this PySide6 version links to); without ldd or the plugin
    file (a bundled app), each library of :data:`LIBRARY_PACKAGES` is loaded
    instead.
    """
    plugin = xcb_plugin()
    ldd = shutil.which("ldd")
    if plugin is not None and ldd is not None:
        try:
            out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            pass
        else:
            return ldd_missing(out)
    return [soname for soname in LIBRARY_PACKAGES if not _loads(soname)]


_QT_OWN = re.compile(r"^lib(Qt6|icu|pyside6|shiboken6)")
"""Libraries that come with PySide6 itself (found through the plugin's own run path): not the system's to
install, and a bundle that lays them out differently must not be refused for them."""


def ldd_missing(ldd_output: str) -> list[str]:
    """The system libraries ``ldd`` reports as ``not found`` (sonames)."""
    return [s for s in dict.fromkeys(_NOT_FOUND.findall(ldd_output)) if not _QT_OWN.match(s)]


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def x_connection_error(display: str) -> int:
    """libxcb's error for a connection to ``display`` (0: the X server answered), as Qt would connect.

    libxcb itself, not a socket of our own: it reads DISPLAY's every form (``:0``, ``host:10.0``, a
    socket path) and the user's X authority the way Qt's plugin does.
    """
    lib = ctypes.CDLL("libxcb.so.1")
    lib.xcb_connect.restype = ctypes.c_void_p
    lib.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    lib.xcb_connection_has_error.restype = ctypes.c_int
    lib.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    lib.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = lib.xcb_connect(display.encode(), None)  # never NULL: an error connection instead
    try:
        return int(lib.xcb_connection_has_error(connection))
    finally:
        lib.xcb_disconnect(connection)
