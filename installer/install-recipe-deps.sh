#!/usr/bin/env bash
# Installs the Debian 12 packages that rebuild the bundled models' corpora (models/recipes/) and run
# `stx-bench quality`. Not needed to build, test or run STX Studio: the bundled models are in the repository.
# Idempotent; works as root, or as a user through sudo. Usage: bash installer/install-recipe-deps.sh
set -euo pipefail

PACKAGES=(
  dataset-fashion-mnist  # images: Fashion-MNIST
  bible-kjv              # text: the King James Bible (`bible`; its text is bible-kjv-text)
  musescore3             # audio: mscore3 converts MuseScore's demo scores (musescore3-common) to MIDI
  pianobooster           # audio: the MIDI files of its courses
  midicsv                # audio: rewriting instrument and transposition in the MIDI files
  fluidsynth             # audio: rendering MIDI at 12 kHz
  fluid-soundfont-gm     # audio: the FluidR3 General MIDI sound font
  sox                    # audio: durations of the rendered corpus
  xz-utils bzip2 zstd p7zip-full  # quality: the classical stream compressors (7-Zip for PPMd)
  optipng webp libjxl-tools       # quality: lossless PNG, WebP and JPEG XL for images
  flac                            # quality: FLAC for audio
  netpbm                          # samples: the contact sheet of image completions
)

missing=()
for package in "${PACKAGES[@]}"; do
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)" == "installed" ]] || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  echo "install-recipe-deps: every package is installed"
  exit 0
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "install-recipe-deps: installing ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
