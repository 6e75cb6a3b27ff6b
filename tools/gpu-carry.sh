#!/usr/bin/env bash
# Lays into third_party/ (ignored by git; name it in the device tool's carry) what a GPU run of
# tools/gpu-check.sh needs beyond the working tree, within the device tool's 64 MiB for tree and carry:
#   googletest.tar.xz  GoogleTest's sources, from Debian's /usr/src/googletest (the LibTorch-side tests build on it);
#   debs/        the Debian packages of the libraries the engine and CLI build on (libsndfile and its codecs,
#                libsamplerate, zlib, nlohmann-json, CLI11, stb, gloo headers; a GPU machine has nvcc, CMake,
#                ninja and LibTorch but none of these, and no network);
#   prebuilt/    (xz) the torch-free CUDA kernel tests (stx_cuda_tests), built here by this nvcc for sm_80 and
#                sm_90 with libstdc++ and libgcc linked in, and the libgomp they load: the GPU run starts them
#                in its first seconds, while its LibTorch part builds; and the kernels library itself
#                (libstx_kernels.a, with the hash of the sources it was built from), which that build links
#                instead of compiling the CUDA kernels again (about 100 s of the first call on 16 cores);
#   corpora/     what the GPU run trains the bundled models on: audio (the recipe's corpus as mono FLAC, piano
#                first, up to what the budget leaves, and the held-out piano pieces), text (the KJV recipe's
#                file, whole, xz), image (Fashion-MNIST: the first 20,000 training images and 2,000 test
#                images, as IDX files);
#   return/      with --return DIR: the fp16 exports a previous GPU run brought home (DIR is the folder its
#                $OUT came back to), so that a fresh machine continues from them instead of the bundled models.
#
#   tools/gpu-carry.sh [--data DIR] [--return DIR] [--dry-run]
#
# --data: where the recipes put their corpora (default $STX_DATA, else ~/stx-data): classical/, kjv/kjv.txt,
# fashion-mnist/ (else Debian's /usr/share/datasets/fashion-mnist). A corpus that is missing is left out
# and the GPU run says so. --dry-run downloads nothing and builds nothing: it copies the CUDA tests of
# build/release when they exist, keeps debs/ as it is, and carries small corpora made from the repository
# (its documents as text, tones as audio, 600 images), so that the whole plan runs here in a minute.
# Run here, on Debian 12, after installer/install-deps.sh. The last lines give each part's size and the total.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${STX_DATA:-$HOME/stx-data}
return_from=""
dry_run=0
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=${2:?--data needs a folder}; shift ;;
    --return) return_from=${2:?--return needs the folder a GPU run came back to}; shift ;;
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "gpu-carry: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
carry=${STX_CARRY_DIR:-$root/third_party}  # the test suite's dry run lays out its own
source "$root/tools/lib/kernels-hash.sh"
mkdir -p "$carry"
say() { echo "gpu-carry: $*"; }
bytes() { du -sb "$1" 2>/dev/null | cut -f1; }

# The device tool carries the working tree and the named paths, 64 MiB in all; 1 MiB is kept spare.
tree_files() {  # what the device tool carries as the tree: git's tracked and unignored files, else all but builds
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard)
  else
    (cd "$root" && find . -type f -not -path './build*' -not -path './third_party/*' -not -path './.git/*' -print0)
  fi
}
tree_bytes=$(tree_files | (cd "$root" && xargs -0 -r stat -c %s -- 2>/dev/null) | awk '{ s += $1 } END { print s + 0 }')
budget=$((64 * 1024 * 1024 - 1024 * 1024 - tree_bytes))
say "working tree $((tree_bytes / 1000000)) MB; the carry may take $((budget / 1000000)) MB"

# ---- GoogleTest's sources --------------------------------------------------------------------------------
rm -rf "$carry/googletest" "$carry/googletest.tar.xz"
if [ -d /usr/src/googletest ]; then
  tar -C /usr/src -cJf "$carry/googletest.tar.xz" googletest
else
  say "no /usr/src/googletest (Debian's googletest package): the GPU machine must bring GoogleTest"
fi

# ---- the libraries' Debian packages ------------------------------------------------------------------------
packages=(nlohmann-json3-dev libcli11-dev libstb-dev libstb0 libsndfile1-dev libsndfile1 libflac12 libogg0
  libvorbis0a libvorbisenc2 libopus0 libmpg123-0 libmp3lame0 libsamplerate0-dev libsamplerate0 zlib1g-dev zlib1g
  libgloo-dev)
if [ "$dry_run" = 1 ]; then
  say "dry run: debs/ left as it is ($(ls "$carry"/debs/*.deb 2>/dev/null | wc -l) packages)"
else
  rm -rf "$carry/debs" && mkdir -p "$carry/debs"
  (cd "$carry/debs" && apt-get download "${packages[@]}")
fi

# ---- the prebuilt CUDA kernel tests ---------------------------------------------------------------------------
prebuilt="$carry/prebuilt"
rm -rf "$prebuilt" && mkdir -p "$prebuilt/lib"
tests_binary="" kernels_library=""
if [ "$dry_run" = 1 ]; then
  tests_binary="$root/build/release/tests/stx_cuda_tests"
  [ -x "$tests_binary" ] || tests_binary=""
else
  # Torch-free, every architecture a lent GPU may have; libstdc++ and libgcc linked in, so that only glibc
  # (and the libgomp beside it) is needed there.
  build="$root/build/gpu-carry"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTX_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=80;90" \
    -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON -DSTX_BUILD_APP=OFF -DSTX_BUILD_BENCH=OFF -DSTX_BUILD_STUDIO=OFF \
    "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" >/dev/null
  ninja -C "$build" stx_kernels stx_cuda_tests
  tests_binary="$build/tests/stx_cuda_tests"
  kernels_library="$build/kernels/libstx_kernels.a"
fi
if [ -n "$kernels_library" ]; then
  strip --strip-debug -o "$prebuilt/libstx_kernels.a" "$kernels_library"
  xz -6 -T0 "$prebuilt/libstx_kernels.a"
  kernels_source_hash "$root" >"$prebuilt/kernels-source.sha256"
fi
if [ -n "$tests_binary" ]; then
  strip -o "$prebuilt/stx_cuda_tests" "$tests_binary"
  xz -6 -T0 "$prebuilt/stx_cuda_tests"
  gomp=$(ldd "$tests_binary" | sed -n 's/^\s*libgomp\.so\.1 => \(\S*\).*/\1/p')
  [ -n "$gomp" ] && cp -L "$gomp" "$prebuilt/lib/"
  {
    echo "commit $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
    arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$(dirname "$tests_binary")/../CMakeCache.txt")
    echo "architectures ${arch:-as that build chose (not in its cache)}"
    echo "glibc at least $(objdump -T "$tests_binary" | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2 -n | tail -1)"
  } >"$prebuilt/MANIFEST"
  say "prebuilt: $(tr '\n' ';' <"$prebuilt/MANIFEST")"
else
  say "no CUDA kernel tests to carry (build/release has none: a build without nvcc)"
fi

# ---- corpora ----------------------------------------------------------------------------------------------------
corpora="$carry/corpora"
rm -rf "$corpora" && mkdir -p "$corpora"

# Image: IDX files cut to their first N images (the count sits in bytes 4..7 of the header, big-endian).
cut_idx() {  # cut_idx SOURCE.gz DEST.gz COUNT
  python3 - "$@" <<'PY'
import gzip, struct, sys
source, dest, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(source, "rb") as f:
    header = f.read(16)
    magic, total, rows, cols = struct.unpack(">IIII", header)
    count = min(count, total)
    body = f.read(count * rows * cols)
with gzip.open(dest + ".tmp", "wb", compresslevel=9) as f:
    f.write(struct.pack(">IIII", magic, count, rows, cols) + body)
import os
os.replace(dest + ".tmp", dest)
PY
}
fashion="$data/fashion-mnist"
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || fashion=/usr/share/datasets/fashion-mnist
if [ -f "$fashion/train-images-idx3-ubyte.gz" ] && [ -f "$fashion/t10k-images-idx3-ubyte.gz" ]; then
  train_images=20000 test_images=2000
  [ "$dry_run" = 1 ] && train_images=500 test_images=20
  mkdir -p "$corpora/image"
  cut_idx "$fashion/train-images-idx3-ubyte.gz" "$corpora/image/train-images-idx3-ubyte.gz" $train_images
  cut_idx "$fashion/t10k-images-idx3-ubyte.gz" "$corpora/image/t10k-images-idx3-ubyte.gz" $test_images
else
  say "no Fashion-MNIST in $data/fashion-mnist or /usr/share/datasets: the image model is not carried"
fi

# Text: the whole KJV file (its held-out split is its last 5%, as here), or in a dry run the repository's docs.
mkdir -p "$corpora/text"
if [ "$dry_run" = 1 ]; then
  cat "$root/README.md" "$root"/docs/*.md | xz -6 >"$corpora/text/corpus.txt.xz"
elif [ -f "$data/kjv/kjv.txt" ]; then
  xz -9 <"$data/kjv/kjv.txt" >"$corpora/text/corpus.txt.xz"
else
  rmdir "$corpora/text"
  say "no $data/kjv/kjv.txt (models/recipes/text-kjv.sh): the text model is not carried"
fi

# Audio: what the budget leaves, as 16-bit mono FLAC at the corpus's 12 kHz (libsndfile reads it as
# training reads WAV), piano first; the held-out pieces' piano renderings for validation.
fixed=0
for part in googletest.tar.xz debs prebuilt corpora; do fixed=$((fixed + $(bytes "$carry/$part" || echo 0))); done
rm -rf "$carry/return"
if [ -n "$return_from" ]; then
  for kind in audio text image; do
    model="$return_from/home/$kind/model"
    if [ -f "$model/model.safetensors" ]; then
      mkdir -p "$carry/return/$kind" && cp "$model"/* "$carry/return/$kind/"
    fi
  done
  if [ ! -d "$carry/return" ]; then
    say "--return $return_from holds no home/KIND/model/model.safetensors (a GPU run's \$OUT, from tools/gpu-check.sh)" >&2
    exit 2
  fi
  fixed=$((fixed + $(bytes "$carry/return")))
  say "return: $(ls "$carry/return" | tr '\n' ' ')from $return_from"
fi
audio_budget=$((budget - fixed))
if [ "$dry_run" = 1 ]; then
  mkdir -p "$corpora/audio/train" "$corpora/audio/validation"
  python3 - "$corpora/audio" <<'PY'
import math, struct, sys, wave
# A few seconds of decaying harmonic notes: enough for a few training crops and a held-out window.
def write(path, seconds, base):
    rate = 12000
    frames = bytearray()
    for i in range(int(seconds * rate)):
        t = (i % 6000) / rate
        f = base * (1.5 ** ((i // 6000) % 3))
        v = sum(math.sin(2 * math.pi * f * k * t) / k for k in (1, 2, 3)) * 0.3 * math.exp(-3 * t)
        frames += struct.pack("<h", int(v * 32767))
    with wave.open(path, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate); w.writeframes(bytes(frames))
write(sys.argv[1] + "/train/tones.wav", 12, 220.0)
write(sys.argv[1] + "/validation/tones.wav", 2, 330.0)
PY
elif [ -d "$data/classical/train" ] && [ $audio_budget -gt 1000000 ]; then
  subset="$corpora/audio"
  mkdir -p "$subset/train" "$subset/validation"
  for wav in "$data"/classical/validation/*-piano-*.wav; do
    sox "$wav" -c 1 -b 16 "$subset/validation/$(basename "${wav%.wav}").flac"
  done
  used=$(bytes "$subset")
  for wav in $(ls "$data"/classical/train/*-piano-*.wav; ls "$data"/classical/train/*.wav | grep -v -- '-piano-'); do
    flac="$subset/train/$(basename "${wav%.wav}").flac"
    sox "$wav" -c 1 -b 16 "$flac"
    used=$((used + $(stat -c %s "$flac")))
    if [ $used -gt $audio_budget ]; then
      rm "$flac"
      break
    fi
  done
else
  say "no $data/classical (models/recipes/audio-classical.sh), or no room left: the audio model is not carried"
fi

for part in googletest.tar.xz debs prebuilt corpora/audio corpora/text corpora/image return; do
  [ -e "$carry/$part" ] && printf 'gpu-carry: %-14s %6.1f MB\n' "$part" "$(bytes "$carry/$part" | awk '{ print $1 / 1e6 }')"
done
total=$(( $(for part in googletest.tar.xz debs prebuilt corpora return; do bytes "$carry/$part" || echo 0; done | awk '{ s += $1 } END { print s }') ))
say "carry $((total / 1000000)) MB + working tree $((tree_bytes / 1000000)) MB = $(((total + tree_bytes) / 1000000)) MB of the device tool's $((64 * 1048576 / 1000000)) MB"
if [ $total -gt $budget ]; then
  say "too big: leave something out (the audio corpus takes what the rest leaves)" >&2
  exit 1
fi
echo "gpu-carry: carry: [\"third_party\"]"
