#!/usr/bin/env bash
# Rebuilds one bundled model from nothing but Debian packages and this repository: the corpus (its recipe),
# the training run (`stx train` on the committed config), the fp16 export into models/bundled/KIND, the
# quality table (`stx-bench quality`) and the model card.
#
#   models/recipes/train-bundled.sh image|audio|text [RUN_DIR]
#
# Needs a release build (cmake --preset release && cmake --build --preset release) and the recipe packages
# (bash installer/install-recipe-deps.sh). Corpora go to $STX_DATA (default ~/stx-data); the run folder
# defaults to build/runs/KIND. On 2 cores: about 30 min (text alone) to an hour (each, three at once).
set -euo pipefail
kind=${1:?usage: $0 image|audio|text [RUN_DIR]}
root=$(cd "$(dirname "$0")/../.." && pwd)
recipes="$root/models/recipes"
data_root="${STX_DATA:-$HOME/stx-data}"
stx="$root/build/release/app/cli/stx"
bench="$root/build/release/bench/stx-bench"
case $kind in
  image) recipe=image-fashion-mnist; corpus="$data_root/fashion-mnist"; data="$corpus" ;;
  audio) recipe=audio-classical; corpus="$data_root/classical"; data="$corpus" ;;
  text) recipe=text-kjv; corpus="$data_root/kjv"; data="$corpus/kjv.txt" ;;
  *) echo "error: unknown kind '$kind' (expected image, audio or text)" >&2; exit 2 ;;
esac
run="${2:-$root/build/runs/$kind}"
for tool in "$stx" "$bench"; do
  [ -x "$tool" ] || { echo "error: $tool is missing: build the release preset first" >&2; exit 1; }
done
[ ! -e "$run" ] || { echo "error: $run already exists: remove it or name another run folder" >&2; exit 1; }

"$recipes/$recipe.sh" "$corpus"
# One thread each, so that the three trainings can share two cores without spinning against each other.
OMP_WAIT_POLICY=PASSIVE STX_THREADS="${STX_THREADS:-1}" \
  "$stx" train --config "$recipes/$recipe.json" --data "$data" --out "$run"
"$stx" export --model "$run" --out "$root/models/bundled/$kind" --fp16 --force
mkdir -p "$root/docs/quality"
"$bench" quality --model "$root/models/bundled/$kind" --data "$data" --json "$root/docs/quality/$kind.json" \
  --markdown "$root/docs/quality/$kind.md"
STX="$stx" "$recipes/model-card.sh" "$kind" "$root/models/bundled/$kind" "$root/docs/quality/$kind.json"
