#!/bin/sh
# Render the PNG sizes of the app icon from its SVG (ui/icons/io.github.fleetmon.Fleetmon.svg)
# into packaging/icons/hicolor/NxN/apps/, the layout of the freedesktop icon theme.
# Needs rsvg-convert (apt: librsvg2-bin); run again after changing the SVG and commit the PNGs.
set -eu
cd "$(dirname "$0")/.."
svg=ui/icons/io.github.fleetmon.Fleetmon.svg
for n in 16 24 32 48 64 128 256 512; do
  out="packaging/icons/hicolor/${n}x${n}/apps/io.github.fleetmon.Fleetmon.png"
  mkdir -p "$(dirname "$out")"
  rsvg-convert -w "$n" -h "$n" -o "$out" "$svg"
done
