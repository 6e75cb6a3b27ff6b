#!/usr/bin/env bash
# The audio corpus: 12 kHz classical music rendered from the scores and MIDI files that Debian packages carry.
#   - MuseScore 3's demo scores (musescore3-common), converted to MIDI by mscore3 (offscreen);
#   - the MIDI files of pianobooster's courses.
# Every piece is rendered by FluidSynth with the FluidR3 General MIDI sound font at 12 kHz, once per
# instrument (piano, harpsichord, church organ, string ensemble) and transposition (0, -2, +3 semitones):
# the MIDI is rewritten with midicsv/csvmidi, every channel but the drums set to the instrument and shifted.
# Each rendering is played with its own touch: every note's velocity is scaled by a factor drawn in
# [0.75, 1.25] (a pseudo-random stream seeded by the piece, instrument and transposition, so the corpus stays
# deterministic). A synthesizer renders a repeated note of the same instrument and velocity sample for sample,
# which no performance does; without this, a stream compressor copies whole phrases and a model is scored
# against the synthesizer's determinism rather than the music (docs/model-quality.md).
# Whole pieces are held out: the renderings of a held-out piece go to validation/, the rest to train/
# (`stx train` and `stx eval` use a folder's train/ and validation/ subfolders as its split).
#
#   models/recipes/audio-classical.sh [OUT_DIR]    (default: $STX_DATA/classical; STX_DATA defaults to ~/stx-data)
# Deterministic: the same packages give the same files. Takes a few minutes on two cores.
source "$(dirname "$0")/common.sh"
out="${1:-$(stx_data_root)/classical}"
sound_font=/usr/share/sounds/sf2/FluidR3_GM.sf2
demos=/usr/share/mscore3-3.2/demos
courses=/usr/share/doc/pianobooster/courses
require_package musescore3 /usr/bin/mscore3
require_package musescore3-common "$demos"
require_package pianobooster "$courses"
require_package fluidsynth /usr/bin/fluidsynth
require_package fluid-soundfont-gm "$sound_font"
require_package midicsv /usr/bin/midicsv

# Held-out pieces (file stems): one MuseScore demo and one pianobooster piece, rendered untransposed only so
# that validation stays a few minutes long.
held_out=" Reunion 04-FrereJacques "
instruments="piano:0 harpsichord:6 organ:19 strings:48"
transpositions="0 -2 3"

work="$out/.work"
rm -rf "$work" && mkdir -p "$work/midi" "$out/train" "$out/validation"

# 1. MIDI sources, one file per piece, named by stem.
for score in "$demos"/*.mscx "$demos"/*.mscz; do
  [ -e "$score" ] || continue
  stem=$(basename "${score%.*}")
  QT_QPA_PLATFORM=offscreen mscore3 -o "$work/midi/$stem.mid" "$score" > "$work/mscore-$stem.log" 2>&1 ||
    { echo "error: mscore3 could not convert $score (see $work/mscore-$stem.log)" >&2; exit 1; }
done
find "$courses" -name '*.mid' -o -name '*.mid.gz' | sort | while read -r f; do
  stem=$(basename "$f"); stem=${stem%.gz}; stem=${stem%.mid}
  case "$f" in *.gz) gzip -dc "$f" > "$work/midi/$stem.mid" ;; *) cp "$f" "$work/midi/$stem.mid" ;; esac
done

# 2. One rendering per piece, instrument and transposition.
render() {  # render MIDI STEM NAME PROGRAM SEMITONES
  local midi=$1 stem=$2 name=$3 program=$4 shift=$5 split=train
  case "$held_out" in *" $stem "*) split=validation ;; esac
  local csv="$work/$stem-$name-$shift.csv" mid="$work/$stem-$name-$shift.mid"
  local wav="$out/$split/$stem-$name-t$shift.wav"
  local touch_seed
  touch_seed=$(printf '%s' "$stem-$name-$shift" | cksum | cut -d' ' -f1)
  midicsv "$midi" | awk -F', ' -v OFS=', ' -v program="$program" -v shift="$shift" -v seed="$touch_seed" '
    BEGIN { srand(seed % 2147483647) }
    $3 == "Program_c" && $4 != 9 { $5 = program }
    ($3 == "Note_on_c" || $3 == "Note_off_c") && $4 != 9 {
      n = $5 + shift; if (n < 0) n = 0; if (n > 127) n = 127; $5 = n }
    $3 == "Note_on_c" && $4 != 9 && $6 > 0 {
      v = int($6 * (0.75 + 0.5 * rand()) + 0.5); if (v < 1) v = 1; if (v > 127) v = 127; $6 = v }
    { print }
    $3 == "Start_track" && !done { for (c = 0; c < 16; c++) if (c != 9) print $1, 0, "Program_c", c, program; done = 1 }
  ' > "$csv"
  csvmidi "$csv" "$mid"
  fluidsynth -ni -q -C 0 -g 0.6 -r 12000 -T wav -O s16 -F "$wav.tmp" "$sound_font" "$mid" > /dev/null 2>&1 ||
    { echo "error: fluidsynth could not render $mid" >&2; exit 1; }
  mv -f "$wav.tmp" "$wav"
}
for midi in "$work"/midi/*.mid; do
  stem=$(basename "${midi%.mid}")
  for instrument in $instruments; do
    for shift in $transpositions; do
      case "$held_out" in *" $stem "*) [ "$shift" = 0 ] || continue ;; esac
      render "$midi" "$stem" "${instrument%%:*}" "${instrument##*:}" "$shift" &
      while [ "$(jobs -r | wc -l)" -ge 2 ]; do wait -n; done
    done
  done
done
wait
# A failed rendering printed its error; it left no .wav behind, which this count catches.
if ls "$out"/*/*.tmp > /dev/null 2>&1 || [ "$(ls "$work"/*.csv | wc -l)" -ne "$(ls "$out"/train/*.wav "$out"/validation/*.wav | wc -l)" ]; then
  echo "error: some renderings failed (see above); the corpus in $out is incomplete" >&2; exit 1
fi
rm -rf "$work"

# 3. What was built.
seconds() { soxi -D "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
train_s=$(seconds "$out"/train/*.wav); valid_s=$(seconds "$out"/validation/*.wav)
echo "corpus: $out, $(ls "$out"/train | wc -l) train and $(ls "$out"/validation | wc -l) validation files, 12 kHz"
echo "split:  train $((train_s / 60)) min $((train_s % 60)) s, validation (held-out pieces:$held_out) $((valid_s / 60)) min $((valid_s % 60)) s"
