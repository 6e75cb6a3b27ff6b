#!/bin/sh
# Renders the STX Studio icon into the hicolor PNG sizes beside this script:
#   hicolor/<N>x<N>/apps/stx-studio.png for N = 16 24 32 48 64 128 256 512.
# 16 and 24 px come from their own pixel-aligned drawings (stx-studio-16.svg, stx-studio-24.svg), the other
# sizes from stx-studio.svg. The PNGs are committed, so a build needs neither this script nor its tools; run
# it again after changing an SVG. Needs rsvg-convert (Debian: librsvg2-bin); optipng, where installed,
# makes the PNGs smaller without changing a pixel.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
command -v rsvg-convert >/dev/null 2>&1 || {
  echo "render-icons.sh: rsvg-convert not found (Debian: apt-get install librsvg2-bin)" >&2
  exit 1
}

for size in 16 24 32 48 64 128 256 512; do
  case $size in
    16 | 24) source=$here/stx-studio-$size.svg ;;
    *) source=$here/stx-studio.svg ;;
  esac
  folder=$here/hicolor/${size}x${size}/apps
  mkdir -p "$folder"
  rsvg-convert --width "$size" --height "$size" --format png --output "$folder/stx-studio.png" "$source"
  if command -v optipng >/dev/null 2>&1; then
    optipng -quiet -o7 -strip all "$folder/stx-studio.png"
  fi
done
