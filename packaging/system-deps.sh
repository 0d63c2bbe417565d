#!/bin/sh
# Install (as root) or name (otherwise) the Debian/Ubuntu packages fleetmon needs.
#   packaging/system-deps.sh test   libraries Qt needs to run offscreen, and what the test suite runs for
#                                   real: the desktop entry and AppStream validators, OpenSSH's client and
#                                   server (the ssh source's tests start sshd on 127.0.0.1) and Prometheus
#                                   (tests/integration/test_real_prometheus.py scrapes simulated agents) and
#                                   Slurm with MUNGE (tests/integration/test_real_slurm.py starts munged,
#                                   slurmctld and a slurmd per node on localhost, drains and resumes), and
#                                   LibreOffice's headless Writer and Calc with poppler-utils and fonts-noto-cjk
#                                   (tests/integration/test_libreoffice_zh.py renders the Chinese report page and
#                                   workbook to PDF and reads them back); these without their recommends
#                                   (LibreOffice's would bring Java and a desktop's worth of fonts)
#   packaging/system-deps.sh demo   Qt's runtime libraries plus its xcb platform plugin (a real window);
#                                   ui/display_check.py maps the same packages to the libraries they hold;
#                                   and fonts-noto-cjk: the Chinese interface (zh_CN) without missing glyphs
# Safe to run again: installs only what is missing. Does nothing on non-Debian systems.
set -eu
what="${1:-test}"
command -v dpkg-query >/dev/null 2>&1 || exit 0

pkgs="libegl1 libgl1 libfontconfig1 libxkbcommon0 libglib2.0-0 libdbus-1-3"
if [ "$what" = test ]; then
  pkgs="$pkgs desktop-file-utils appstream openssh-client openssh-server prometheus munge slurmctld slurmd slurm-client"
  lean="libreoffice-writer-nogui libreoffice-calc-nogui poppler-utils fonts-noto-cjk"
fi
if [ "$what" = demo ]; then
  pkgs="$pkgs libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 \
libxcb-util1 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-render0 libxcb1 libx11-xcb1 libx11-6"
fi
if [ "$what" = demo ]; then
  pkgs="$pkgs fonts-noto-cjk"  # not a library Qt loads (ui/display_check.py): the Chinese interface's glyphs
fi
py="${PYTHON:-python3}"
if ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  pkgs="$pkgs python${ver}-venv"
fi

lean="${lean:-}"
missing=""
lean_missing=""
for p in $pkgs $lean; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    case " $lean " in
      *" $p "*) lean_missing="$lean_missing $p" ;;
      *) missing="$missing $p" ;;
    esac
  fi
done
[ -z "$missing$lean_missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root="sudo"
else
  echo "fleetmon: missing system packages:$missing$lean_missing" >&2
  [ -z "$missing" ] || echo "fleetmon: install them with: sudo apt-get install$missing" >&2
  [ -z "$lean_missing" ] || echo "fleetmon: and, without their recommends: sudo apt-get install --no-install-recommends$lean_missing" >&2
  exit 1
fi
echo "fleetmon: installing system packages${as_root:+ with sudo}:$missing$lean_missing" >&2
$as_root apt-get update -qq >/dev/null
[ -z "$missing" ] || $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
[ -z "$lean_missing" ] || $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  $lean_missing >/dev/null
