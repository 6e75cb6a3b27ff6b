#!/usr/bin/env bash
# The text corpus: the King James Bible as printed by `bible -f Gen1:1-Rev22:21` (Debian's bible-kjv),
# one file, about 4.4 MB. The held-out split is its last 5% of bytes, which is how `stx train` and `stx eval`
# split a single text file (engine/include/stx/engine/data/dataset.h).
#
#   models/recipes/text-kjv.sh [OUT_DIR]     (default: $STX_DATA/kjv, with STX_DATA defaulting to ~/stx-data)
source "$(dirname "$0")/common.sh"
out="${1:-$(stx_data_root)/kjv}"
require_package bible-kjv /usr/bin/bible
require_package bible-kjv-text /usr/lib/bible.data   # the text itself

mkdir -p "$out"
tmp="$out/.kjv.txt.tmp"
bible -f Gen1:1-Rev22:21 > "$tmp"
mv -f "$tmp" "$out/kjv.txt"

total=$(stat -c %s "$out/kjv.txt")
held_out=$(( (total * 5 + 50) / 100 ))   # the reader's split: llround(5% of the bytes), at the end
echo "corpus: $out/kjv.txt, $total bytes ($(human_bytes "$total")), sha256 $(sha256sum "$out/kjv.txt" | cut -c1-16)"
echo "split:  train $((total - held_out)) bytes, held out (last 5%) $held_out bytes"
