#!/usr/bin/env bash
# Makes the samples kept in docs/samples/ from the bundled models, on held-out data only:
#   - completions of held-out Fashion-MNIST test images (the top 14 rows kept, 4 completions each), as one sheet;
#   - a 5 s clip: the first second of a held-out piece, continued for 4 s;
#   - a continuation of the held-out tail of the King James Bible.
# Fixed seeds, so the same models give the same files. Needs the corpora ($STX_DATA, see the recipes),
# a release build, optipng (IDX test images to PNG prompts) and netpbm (the contact sheet of completions).
#
#   models/recipes/samples.sh [OUT_DIR]     (default: docs/samples)
source "$(dirname "$0")/common.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
out="${1:-$root/docs/samples}"
stx="${STX:-$root/build/release/app/cli/stx}"
data="$(stx_data_root)"
require_package optipng /usr/bin/optipng
require_package netpbm /usr/bin/pnmcat
require_package sox /usr/bin/sox
[ -x "$stx" ] || { echo "error: $stx is missing: build the release preset first" >&2; exit 1; }
for corpus in "$data/fashion-mnist/t10k-images-idx3-ubyte.gz" "$data/classical/validation" "$data/kjv/kjv.txt"; do
  [ -e "$corpus" ] || { echo "error: $corpus is missing: run the corpus recipes in models/recipes first" >&2; exit 1; }
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Images: held-out test images 0..5 (28 x 28 bytes each after the 16-byte IDX header) as prompts, the top 14
# rows kept; one row of the sheet per image: the original, then 4 completions. Scaled 4x to be seen.
rows=()
for k in 0 1 2 3 4 5; do
  { printf 'P5\n28 28\n255\n'
    head -c 784 < <(gzip -dc "$data/fashion-mnist/t10k-images-idx3-ubyte.gz" | tail -c +$((17 + k * 784))); } > "$tmp/test-$k.pgm"
  optipng -quiet -o1 -out "$tmp/test-$k.png" "$tmp/test-$k.pgm"
  "$stx" sample image --model image --prompt "$tmp/test-$k.png" --keep-rows 14 --n 4 --seed $((100 + k)) \
    --quiet --force --out "$tmp/completion-$k.png"
  pnmcat -lr "$tmp/test-$k.pgm" <(pngtopnm "$tmp/completion-$k-1.png") <(pngtopnm "$tmp/completion-$k-2.png") \
    <(pngtopnm "$tmp/completion-$k-3.png") <(pngtopnm "$tmp/completion-$k-4.png") > "$tmp/row-$k.pnm"
  rows+=("$tmp/row-$k.pnm")
done
pnmcat -tb "${rows[@]}" | pnmscale 4 | pnmtopng > "$out/image-completions.png"

# Audio: the opening second of a held-out piece, continued to 5 s.
sox "$data/classical/validation/Reunion-piano-t0.wav" "$tmp/opening.wav" trim 0 1
cp "$tmp/opening.wav" "$out/audio-reunion-opening-1s.wav"
"$stx" sample audio --model audio --prompt "$tmp/opening.wav" --seconds 4 --seed 7 --quiet --force \
  --out "$out/audio-reunion-continued-5s.wav"

# Text: the first whole verse of the held-out tail (the last 5% of the corpus) and the next verse's label.
total=$(stat -c %s "$data/kjv/kjv.txt")
start=$((total - (total * 5 + 50) / 100))
verses=$(tail -c +$((start + 1)) "$data/kjv/kjv.txt" | sed -n '2,3p')
prompt="$(printf '%s\n' "$verses" | sed -n 1p)"$'\n'"$(printf '%s\n' "$verses" | sed -n 2p | cut -d' ' -f1) "
"$stx" sample text --model text --prompt "$prompt" --max-bytes 800 --seed 11 --quiet --force --out "$out/text-kjv-continuation.txt"
ls -la "$out"
