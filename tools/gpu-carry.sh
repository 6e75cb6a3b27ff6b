#!/usr/bin/env bash
# Prepares what tools/gpu-check.sh needs on a GPU machine that the working tree does not hold, in third_party/
# (ignored by git; name it in the device tool's carry):
#   third_party/googletest  GoogleTest's sources, copied from Debian's /usr/src/googletest (about 4 MB);
#   third_party/debs        the Debian packages of the libraries the engine and CLI build on (libsndfile and
#                           its codecs, libsamplerate, zlib, nlohmann-json, CLI11, stb, gloo headers: about
#                           5 MB). A GPU machine has nvcc, CMake, ninja and LibTorch but none of these, and no
#                           network; gpu-check.sh unpacks them into third_party/sysroot only where missing.
#   third_party/audio-subset  with --audio DIR (the audio recipe's corpus, models/recipes/audio-classical.sh):
#                           30 MB of its train/ pieces as mono FLAC, piano first, and the held-out piano
#                           pieces, for the optional audio training stage.
# Run here, on Debian 12, after installer/install-deps.sh:  tools/gpu-carry.sh [--audio DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
audio=""
[ "${1:-}" = "--audio" ] && audio=${2:?--audio needs the corpus folder}
mkdir -p "$root/third_party"

rm -rf "$root/third_party/googletest"
cp -r /usr/src/googletest "$root/third_party/googletest"

packages=(nlohmann-json3-dev libcli11-dev libstb-dev libstb0 libsndfile1-dev libsndfile1 libflac12 libogg0
  libvorbis0a libvorbisenc2 libopus0 libmpg123-0 libmp3lame0 libsamplerate0-dev libsamplerate0 zlib1g-dev zlib1g
  libgloo-dev)
rm -rf "$root/third_party/debs" && mkdir -p "$root/third_party/debs"
(cd "$root/third_party/debs" && apt-get download "${packages[@]}")

if [ -n "$audio" ]; then
  # 16-bit FLAC at the corpus's 12 kHz, mixed to mono as training reads it (libsndfile reads FLAC), piano
  # first, then the other instruments, until 30 MB (the device tool carries 64 MiB in all); the held-out
  # pieces' piano renderings for validation.
  subset="$root/third_party/audio-subset"
  rm -rf "$subset" && mkdir -p "$subset/train" "$subset/validation"
  budget=$((30 * 1000 * 1000))
  used=0
  for wav in $(ls "$audio"/train/*-piano-*.wav; ls "$audio"/train/*.wav | grep -v -- '-piano-'); do
    flac="$subset/train/$(basename "${wav%.wav}").flac"
    sox "$wav" -c 1 -b 16 "$flac"
    used=$((used + $(stat -c %s "$flac")))
    if [ $used -gt $budget ]; then
      rm "$flac"
      break
    fi
  done
  for wav in "$audio"/validation/*-piano-*.wav; do sox "$wav" -c 1 -b 16 "$subset/validation/$(basename "${wav%.wav}").flac"; done
fi
du -sh "$root"/third_party/*
