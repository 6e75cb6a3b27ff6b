# Shared by the corpus recipes: where corpora go, and a clear failure when a Debian package is missing.
# A corpus is built outside the repository: $STX_DATA (default ~/stx-data), one folder per corpus.
set -euo pipefail

stx_data_root() { echo "${STX_DATA:-$HOME/stx-data}"; }

# require_package PACKAGE FILE: fail with one line naming the package when FILE (something it installs) is absent.
require_package() {
  if [ ! -e "$2" ]; then
    echo "error: $2 is missing: install the Debian package '$1' (apt-get install $1)" >&2
    exit 1
  fi
}

human_bytes() { numfmt --to=iec-i --suffix=B "$1"; }
