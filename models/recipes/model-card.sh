#!/usr/bin/env bash
# Writes MODEL_CARD.md of a bundled model from its training record (`stx info --json`), its recipe and the
# quality table (`stx-bench quality --json`): data, recipe, steps, wall time, hardware, held-out bits/byte.
#
#   models/recipes/model-card.sh KIND MODEL_DIR QUALITY_JSON...    (KIND: image, audio or text)
# With CARD_HISTORY=FILE, the file's text is added as the card's "How this checkpoint was trained" section.
# CARD_SHARING says what else ran on the cores (default: the three bundled trainings at once, as
# train-bundled.sh is usually run).
set -euo pipefail
kind=$1 model=$2
shift 2
quality=("$@")   # one file from a full `stx-bench quality` run, or one with the model and one with the compressors
root=$(cd "$(dirname "$0")/../.." && pwd)
stx="${STX:-$root/build/release/app/cli/stx}"

info=$("$stx" info --model "$model" --json)
field() {  # a top-level value of `stx info --json` (indented 2): a string without its quotes, or a number
  printf '%s\n' "$info" | sed -n -e "s/^  \"$1\": \"\(.*\)\",\{0,1\}$/\1/p" -e "s/^  \"$1\": \([-0-9.e]*\),\{0,1\}$/\1/p" | head -1
}
quality_value() {  # a method's value of a field in the quality JSON, as written (jq-free: one row per method)
  cat "${quality[@]}" | tr -d '\n' | sed 's/}/}\n/g' | grep -F "\"method\": \"$1" | head -1 |
    sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"
}
quality_row() {  # the same, rounded for the card
  quality_value "$1" "$2" | { read -r x && printf '%.3f' "$x"; }
}
steps=$(field training_steps); seconds=$(field training_seconds); params=$(field parameters); expert=$(field expert)
case $kind in
  image) title="Fashion-MNIST image completion"; recipe=image-fashion-mnist
         data="Fashion-MNIST (Debian's dataset-fashion-mnist): 28 x 28 grayscale, 60,000 training images; held out: the 10,000 test images"
         baseline="JPEG XL lossless (cjxl -d 0 -e 9)"; baseline_key=bits_per_byte ;;
  audio) title="12 kHz classical audio"; recipe=audio-classical
         data="MuseScore 3 demo scores and pianobooster MIDI files rendered by FluidSynth (FluidR3 GM) at 12 kHz as piano, harpsichord, organ and strings, transposed 0, -2, +3, each rendering with its own touch (note velocities scaled by 0.75-1.25); held out: two whole pieces (Reunion, Frere Jacques), 8-bit mu-law"
         baseline="xz -9e (mu-law bytes)"; baseline_key=given_train_bits_per_byte ;;
  text)  title="King James Bible text continuation"; recipe=text-kjv
         data="the King James Bible as printed by \`bible -f Gen1:1-Rev22:21\` (Debian's bible-kjv), 4.4 MB; held out: the last 5% of bytes"
         baseline="xz -9e"; baseline_key=given_train_bits_per_byte ;;
  *) echo "usage: $0 image|audio|text MODEL_DIR QUALITY_JSON..." >&2; exit 2 ;;
esac
model_bits=$(quality_row "STX" bits_per_byte)
sliding_bits=$(quality_row "STX $kind model (stx eval --sliding)" bits_per_byte 2>/dev/null || true)
sliding=""
[ -z "$sliding_bits" ] || sliding=", $sliding_bits with sliding windows (\`stx eval --sliding\`)"
baseline_bits=$(quality_row "$baseline" "$baseline_key")
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)

tmp="$model/.MODEL_CARD.md.tmp"
cat > "$tmp" <<CARD
# $kind: $title

A Sparse Transformer (Child et al. 2019) that ships with STX Studio, trained by the project on this recipe.

| | this model |
|---|---|
| parameters | $params |
| architecture | $(field layers) layers, d_model $(field d_model), $(field heads) heads, d_ff $(field d_ff); $(field attention) attention; context $(field context) bytes${expert:+; times a linear-prediction expert ($expert)} |
| data | $data |
| recipe | \`models/recipes/$recipe.sh\` (corpus) and \`models/recipes/$recipe.json\` (model and training); rebuild with \`models/recipes/train-bundled.sh $kind\` |
| training | $steps optimiser steps, $(awk -v s="$seconds" 'BEGIN { printf "%.0f min", s / 60 }') wall time |
| hardware | $cpu, $(nproc) cores, CPU only, ${CARD_SHARING:-sharing the cores with the other two trainings} |
| held-out bits/byte | **$model_bits** (\`stx-bench quality\`, every held-out byte, windows on their own)$sliding; $baseline: $baseline_bits |
| weights | fp16 safetensors, hash $(field weights_hash) |

The full comparison with the classical compressors is in \`docs/model-quality.md\`.
CARD
if [ -n "${CARD_HISTORY:-}" ]; then
  { echo; echo "## How this checkpoint was trained"; echo; cat "$CARD_HISTORY"; } >> "$tmp"
fi
mv -f "$tmp" "$model/MODEL_CARD.md"
echo "wrote $model/MODEL_CARD.md"

# held_out.json: the figure `stx info` and the studio show for these weights instead of the few-window
# validation of training (stx/engine/model_session.h).
held_out_bytes=$(cat "${quality[@]}" | sed -n 's/^  "held_out_bytes": \([0-9]*\),$/\1/p' | head -1)
tmp=$(mktemp "$model/.held_out.json.XXXXXX")
printf '{\n  "bits_per_byte": %s,\n  "held_out_bytes": %s,\n  "measured_by": "stx-bench quality: every held-out byte, windows on their own"\n}\n' \
  "$(quality_value "STX" bits_per_byte)" "$held_out_bytes" > "$tmp"
sync "$tmp"
mv -f "$tmp" "$model/held_out.json"
echo "wrote $model/held_out.json"
