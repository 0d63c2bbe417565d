#!/bin/sh
# Install the desktop entry, the AppStream metadata and the icons for the current user
# (under ${XDG_DATA_HOME:-~/.local/share}); the entry runs `fleetmon gui`, which must be on PATH
# (pipx puts it in ~/.local/bin). Safe to run again.
set -eu
cd "$(dirname "$0")/.."
share="${XDG_DATA_HOME:-$HOME/.local/share}"
id=io.github.fleetmon.Fleetmon
install -D -m 0644 "packaging/$id.desktop" "$share/applications/$id.desktop"
install -D -m 0644 "packaging/$id.metainfo.xml" "$share/metainfo/$id.metainfo.xml"
install -D -m 0644 "ui/icons/$id.svg" "$share/icons/hicolor/scalable/apps/$id.svg"
for png in packaging/icons/hicolor/*/apps/"$id".png; do
  size=$(basename "$(dirname "$(dirname "$png")")")
  install -D -m 0644 "$png" "$share/icons/hicolor/$size/apps/$id.png"
done
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$share/applications" || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$share/icons/hicolor" || true
echo "installed $id into $share"
