#!/usr/bin/env bash
# Installs the Debian 12 packages STX Studio needs to build, test and run. Idempotent: packages already
# installed are skipped, and `apt-get update` runs only when something is missing. Works as root, or as
# a user through sudo. Usage: bash installer/install-deps.sh
#
# CUDA is deliberately absent: the machines with a GPU bring nvcc in /usr/local/cuda, and the build
# detects it on its own (STX_CUDA=AUTO). Installing Debian's nvidia-cuda-toolkit beside it would only
# give CMake a second, older nvcc to find.
set -euo pipefail

# Every package the project needs, one per line with what needs it.
PACKAGES=(
  build-essential      # g++ 12, make, libc headers
  cmake                # 3.25: CMakePresets.json version 6
  ninja-build          # the presets' generator
  pkg-config           # finding libraries that ship .pc files
  git
  libtorch-dev         # LibTorch 1.13 (CPU) for models/ and engine/
  libopenblas0-openmp  # mandatory: without it LibTorch falls back to the reference BLAS, about 5x slower
  libgtest-dev         # GoogleTest for tests/
  googletest           # GoogleTest sources in /usr/src/googletest, carried to the GPU machines
  libcli11-dev         # the stx CLI's argument parser
  nlohmann-json3-dev   # JSON for configs and the CLI's --json output
  libstb-dev           # stb_image / stb_image_resize / stb_image_write: image datasets, PNG export
  libsndfile1-dev      # audio datasets (WAV/FLAC/OGG/AIFF) and WAV export
  libsamplerate0-dev   # resampling audio to 12 kHz (never hand-written)
  zlib1g-dev           # gzip-compressed IDX files (Fashion-MNIST)
  dataset-fashion-mnist  # the image corpus, under /usr/share/datasets/fashion-mnist
  libgloo-dev          # headers of Gloo, which LibTorch's c10d ProcessGroupGloo (data-parallel training) includes
  qt6-base-dev         # stx-studio: Qt 6 Widgets (and Qt Test for its tests)
  qt6-charts-dev       # stx-studio: the training wizard's loss curves
  libqt6opengl6-dev    # Qt6Charts' CMake package needs Qt6OpenGL and Qt6OpenGLWidgets, which Debian's
                       # qt6-charts-dev does not depend on: without it CMake cannot find Qt Charts
  portaudio19-dev      # stx-studio: audio playback
  help2man             # the manual pages, written from the programs' own --help (packaging/make-man-pages.sh)
  dpkg-dev             # dpkg-shlibdeps: the .deb's dependencies, computed by `cpack -G DEB`
  python3              # tools/gpu-*.sh (the GPU plan's summary, records and import) and its dry-run test
  xz-utils             # tools/gpu-carry.sh: the text corpus travels as .xz
)

is_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

missing=()
for package in "${PACKAGES[@]}"; do
  is_installed "$package" || missing+=("$package")
done

# Installing OpenBLAS is not enough if the BLAS alternative was pinned to the reference one by hand.
check_blas() {
  local multiarch blas
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
  blas=$(readlink -f "/usr/lib/$multiarch/libblas.so.3" 2>/dev/null || true)
  if [[ "$blas" != *openblas* ]]; then
    echo "install-deps: warning: libblas.so.3 is ${blas:-missing}, not OpenBLAS; LibTorch will be slow." \
      "Fix: update-alternatives --auto libblas.so.3-$multiarch" >&2
  fi
}

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages are already installed"
  check_blas
  exit 0
fi

# Root runs apt-get directly: a fresh container or CI has no sudo.
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing ${missing[*]}; run this script as root (sudo is not installed)" >&2
    exit 1
  fi
  as_root=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" </dev/null
check_blas
echo "install-deps: done"
