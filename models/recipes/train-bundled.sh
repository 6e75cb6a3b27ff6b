#!/usr/bin/env bash
# Rebuilds one bundled model from nothing but Debian packages and this repository: the corpus (its recipe),
# the training (`stx train` on the committed config, then for audio two fine-tunes), the fp16 export into
# models/bundled/KIND, the quality table (`stx-bench quality`) and the model card.
#
#   models/recipes/train-bundled.sh image|audio|text [RUN_DIR]
#
# Needs a release build (cmake --preset release && cmake --build --preset release) and the recipe packages
# (bash installer/install-recipe-deps.sh). Corpora go to $STX_DATA (default ~/stx-data); the run folder
# defaults to build/runs/KIND. Running it again on the same run folder continues where it stopped (each
# stage resumes from its last checkpoint, and a finished stage is not run again).
# STX_THREADS: threads per training (default 1, so that the three can share two cores; give 2 when one
# trains alone). STX_REBUILD_INTO=DIR: export the model to DIR/KIND and its quality table to DIR/quality
# instead of models/bundled/KIND and docs/quality, so a rebuild can be compared with the shipped model.
# Time on 2 cores: image and text about an hour each beside each other; audio 820 steps of 65,536 samples,
# about 2.5 hours alone at two threads, then 93 steps of 16 crops of 4,096 with the expert, about 1.4 hours.
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
model_out="$root/models/bundled/$kind"
quality_out="$root/docs/quality"
if [ -n "${STX_REBUILD_INTO:-}" ]; then
  model_out="$STX_REBUILD_INTO/$kind"
  quality_out="$STX_REBUILD_INTO/quality"
fi
for tool in "$stx" "$bench"; do
  [ -x "$tool" ] || { echo "error: $tool is missing: build the release preset first" >&2; exit 1; }
done
if [ -e "$run" ] && [ ! -e "$run/stages.log" ]; then
  echo "error: $run exists and was not started by this script: remove it or name another run folder" >&2
  exit 1
fi
mkdir -p "$run"
touch "$run/stages.log"

"$recipes/$recipe.sh" "$corpus"

# train_stage NAME STEPS STX_TRAIN_ARGS...: trains $run/NAME for STEPS steps. A stage whose last checkpoint
# exists is done; one with a checkpoint before that resumes from it (its schedule and data order go on as if
# never stopped); else it starts. Its command goes to stages.log for the model card.
train_stage() {
  local name=$1 steps=$2
  shift 2
  local dir="$run/$name" threads="${STX_THREADS:-1}" line="stx train $* --data CORPUS --out RUN/$name"
  line=${line//$run/RUN}
  line=${line//$root\//}
  # One thread each by default, so that the three trainings share two cores; then sleeping at once beats
  # spinning in OpenMP's barriers against the other trainings.
  local environment=("STX_THREADS=$threads")
  [ "$threads" != 1 ] || environment+=("OMP_WAIT_POLICY=PASSIVE")
  if [ -e "$dir/checkpoints/$(printf 'step-%08d' "$steps")" ]; then
    echo "train-bundled: $name has its $steps steps already"
  elif [ -e "$dir/latest.json" ]; then
    echo "train-bundled: $name resumes"
    env "${environment[@]}" "$stx" train --resume "$dir"
  else
    grep -qxF -- "$line" "$run/stages.log" || echo "$line" >> "$run/stages.log"
    env "${environment[@]}" "$stx" train "$@" --data "$data" --out "$dir"
  fi
}

export_args=()
if [ "$kind" = audio ]; then
  # The shipped audio model was trained in four stages (its model card, "How this checkpoint was trained"):
  # the recipe's 300 steps, then two fine-tunes at lower peak rates, each from the last one's final weights,
  # then the linear-prediction expert multiplied into the output with noisy histories on half the crops.
  train_stage stage1 300 --config "$recipes/$recipe.json"
  # Stage 2 began from stage 1's fp16 export, as the shipped model's did.
  [ -e "$run/stage1-fp16/config.json" ] || "$stx" export --model "$run/stage1" --out "$run/stage1-fp16" --fp16
  train_stage stage2 300 --init-from "$run/stage1-fp16" --steps 300 --batch 1 --lr 0.0006 --warmup-steps 100 \
    --min-lr-ratio 0.1 --eval-every 50 --eval-windows 8 --checkpoint-every 25 --keep 2 --seed 2
  train_stage stage3 220 --init-from "$run/stage2" --steps 220 --lr 0.0004 --eval-every 40 \
    --checkpoint-every 20 --seed 3
  # Stage 4 from stage 3's fp16 export, as the shipped model's was; its step 93 samples best (later steps'
  # samples die into a held level more often: docs/model-quality.md, "What issue 41's bars would take").
  [ -e "$run/stage3-fp16/config.json" ] || "$stx" export --model "$run/stage3" --out "$run/stage3-fp16" --fp16
  train_stage stage4 93 --init-from "$run/stage3-fp16" --expert-order 512 --noise-share 0.5 --noise-steps 2 \
    --window 4096 --batch 16 --lr 0.0002 --warmup-steps 3 --min-lr-ratio 1 --steps 93 --eval-every 50 \
    --eval-windows 8 --checkpoint-every 25 --keep 3 --seed 11
  final="$run/stage4"
  # Below about 1.03 the expert's scale shrinks sample by sample and samples die into silence or a held level;
  # above about 1.04 they get noisier (docs/model-quality.md, "The default temperature").
  export_args=(--temperature 1.035)
else
  train_stage train "$(sed -n 's/^ *"steps": \([0-9]*\),\{0,1\}$/\1/p' "$recipes/$recipe.json" | head -1)" \
    --config "$recipes/$recipe.json"
  final="$run/train"
fi

"$stx" export --model "$final" --out "$model_out" --fp16 --force "${export_args[@]}"
mkdir -p "$quality_out"
"$bench" quality --model "$model_out" --data "$data" --json "$quality_out/$kind.json" \
  --markdown "$quality_out/$kind.md"
history=""
if [ "$kind" = audio ]; then
  history="$run/history.md"
  { echo "Rebuilt by \`models/recipes/train-bundled.sh audio\`, in four stages, each from the one before:"
    echo
    sed 's/^/    /' "$run/stages.log"
    echo
    echo "The step count and wall time above are the last stage's."; } > "$history"
fi
CARD_HISTORY="$history" STX="$stx" "$recipes/model-card.sh" "$kind" "$model_out" "$quality_out/$kind.json"
