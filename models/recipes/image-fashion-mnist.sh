#!/usr/bin/env bash
# The image corpus: Fashion-MNIST from Debian's dataset-fashion-mnist, 28 x 28 grayscale, the standard split
# (60,000 training images, 10,000 test images held out). `stx train` reads the IDX files where Debian installs
# them; this recipe links them into the corpus folder so that every corpus lives under $STX_DATA.
#
#   models/recipes/image-fashion-mnist.sh [OUT_DIR]   (default: $STX_DATA/fashion-mnist; STX_DATA defaults to ~/stx-data)
source "$(dirname "$0")/common.sh"
out="${1:-$(stx_data_root)/fashion-mnist}"
source_dir=/usr/share/datasets/fashion-mnist
mkdir -p "$out"
for f in train-images-idx3-ubyte.gz t10k-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  require_package dataset-fashion-mnist "$source_dir/$f"
  ln -sfn "$source_dir/$f" "$out/$f"
done

# The image count sits in bytes 4..7 of an IDX file, big-endian.
count() { od -An -tu1 -j4 -N4 <(gzip -dc "$1" 2>/dev/null) | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }'; }
train=$(count "$out/train-images-idx3-ubyte.gz"); test=$(count "$out/t10k-images-idx3-ubyte.gz")
echo "corpus: $out (links to $source_dir), 28 x 28 x 1, $((train + test)) images, $(( (train + test) * 784 )) bytes"
echo "split:  train $train images ($((train * 784)) bytes), held out (the test set) $test images ($((test * 784)) bytes)"
