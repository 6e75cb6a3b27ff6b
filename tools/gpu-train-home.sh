#!/usr/bin/env bash
# Trains the bundled models on the carried corpora until a deadline, and writes what a user gains from it
# under OUT_DIR/home/KIND: model/ (the fp16 export), record.json (steps, batch, wall time, device, the
# held-out bits/byte measured on this machine, the command) and train.log. tools/gpu-check.sh runs it as its
# last stage; tools/gpu-import.sh installs what it brought home where it beats the bundled model.
#
#   tools/gpu-train-home.sh --stx STX --work DIR --out OUT_DIR --until EPOCH_SECONDS [--device cuda|cpu]
#                           [--steps N] [--kinds audio,text,image]
#
# In order of what users gain: audio, then text, then image, each kind with a share of the time left (audio
# 45%, text 35%, image 20%, but at least 180 s while there is that much; what one leaves unused goes to the next). Each starts from, in order: its run in
# WORK/home-runs/KIND (a second call on the same machine resumes it), third_party/return/KIND (the export a
# previous machine brought home, carried back by tools/gpu-carry.sh --return), else the bundled model. On a
# GPU: bf16 autocast at the largest batch that fits (probed from the top of the kind's list down), a constant
# learning rate after a short warm-up (the number of steps a time share buys is not known in advance), stopped
# by SIGINT at the share's end, which saves a checkpoint. --steps N (the dry run) trains N steps on the CPU at
# batch 2 instead. Prints one line per kind; exit status 0 when every carried kind came home.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stx="" work="" out="" until="" device=cuda steps=0 kinds=audio,text,image
while [ $# -gt 0 ]; do
  case $1 in
    --stx) stx=$2; shift ;;
    --work) work=$2; shift ;;
    --out) out=$2; shift ;;
    --until) until=$2; shift ;;
    --device) device=$2; shift ;;
    --steps) steps=$2; shift ;;
    --kinds) kinds=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu-train-home: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$stx" ] && [ -n "$work" ] && [ -n "$out" ] && [ -n "$until" ] ||
  { echo "gpu-train-home: needs --stx, --work, --out and --until (see --help)" >&2; exit 2; }
carry=${STX_CARRY_DIR:-$root/third_party}  # what tools/gpu-carry.sh laid out
mkdir -p "$work/home-runs" "$out/home"

# What each kind trains on, its share of the time, its batches to try (largest first), and its rate.
corpus_of() {
  case $1 in
    audio) [ -d "$carry/corpora/audio/train" ] && echo "$carry/corpora/audio" ;;
    text) [ -f "$carry/corpora/text/corpus.txt.xz" ] && {
        # Python's lzma, as for the prebuilt files: a GPU machine has Python, not always xz.
        [ -f "$work/corpus-text.txt" ] || python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
          "$carry/corpora/text/corpus.txt.xz" "$work/corpus-text.txt"
        echo "$work/corpus-text.txt"; } ;;
    image) [ -f "$carry/corpora/image/train-images-idx3-ubyte.gz" ] && echo "$carry/corpora/image" ;;
  esac
}
weight_of() { case $1 in audio) echo 45 ;; text) echo 35 ;; image) echo 20 ;; esac; }
# (The audio model's recipe trains on crops of 4,096: 512 of them is 2 M samples a step.)
batches_of() { case $1 in audio) echo "512 256 128 64 32 16 8 4 2 1" ;; text) echo "512 256 128 64 32 16 8" ;; image) echo "1024 512 256 128 64 32 16" ;; esac; }
# A fine-tune's rate, held, since these runs start from trained weights: the audio expert chain's (models/chain),
# and about a third of the text and image recipes' peaks.
lr_of() { case $1 in audio) echo 0.0002 ;; text) echo 0.0003 ;; image) echo 0.0003 ;; esac; }

json_escape() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# train_kind KIND SECONDS: one kind's training, evaluation and export within SECONDS.
train_kind() {
  local kind=$1 seconds=$2 corpus run start_from args=() batch="" t0 rc
  corpus=$(corpus_of "$kind")
  run="$work/home-runs/$kind"
  local home="$out/home/$kind"
  rm -rf "$home" && mkdir -p "$home"
  t0=$(date +%s)
  if [ -f "$run/latest.json" ]; then
    start_from="resumed $run"
    args=(--resume "$run")
  else
    rm -rf "$run"
    local source="$kind"
    [ -f "$carry/return/$kind/model.safetensors" ] && source="$carry/return/$kind"
    start_from="fine-tuned from ${source/#$root\//}"
    args=(--init-from "$source" --data "$corpus" --out "$run" --lr "$(lr_of "$kind")" --warmup-steps 10
      --min-lr-ratio 1 --eval-every 0 --checkpoint-every 1000000 --keep 1)
  fi
  if [ "$steps" -gt 0 ]; then
    batch=2
    args+=(--device cpu --steps "$steps" --batch "$batch")
    [ "$kind" = audio ] && args+=(--window 1024)  # a 65,536-sample step takes some 10 s on a CPU
  else
    args+=(--device "$device" --steps 1000000)
    [ -f "$run/latest.json" ] || args+=(--precision bf16)
    # The largest batch that fits: a step of each, from the top down, until one runs (a resumed run keeps its own).
    if [ ! -f "$run/latest.json" ]; then
      local b
      for b in $(batches_of "$kind"); do
        rm -rf "$work/probe-$kind"
        if timeout 90 "$stx" train "${args[@]/#$run/$work/probe-$kind}" --batch "$b" --steps 1 --quiet \
          >"$home/probe.log" 2>&1; then
          batch=$b
          break
        fi
        tail -1 "$home/probe.log"
      done
      rm -rf "$work/probe-$kind"
      [ -n "$batch" ] || { echo "$kind: no batch fits (probe.log)"; return 1; }
      args+=(--batch "$batch")
    fi
  fi
  local left=$((seconds - ($(date +%s) - t0) - 40))  # 40 s kept for evaluation and export
  [ "$left" -ge 20 ] || { echo "$kind: no time left to train after the probe"; return 1; }
  # SIGINT ends the run after its current step with a checkpoint (exit 130); a finished --steps run exits 0.
  if [ "$steps" -gt 0 ]; then
    "$stx" train "${args[@]}" >"$home/train.log" 2>&1
  else
    timeout --signal=INT --kill-after=30 "$left" "$stx" train "${args[@]}" >"$home/train.log" 2>&1
  fi
  rc=$?
  if [ $rc != 0 ] && [ $rc != 130 ] && [ $rc != 124 ] || [ ! -f "$run/latest.json" ]; then
    echo "$kind: training failed (exit $rc): $(tail -1 "$home/train.log")"
    return 1
  fi
  local trained=$(($(date +%s) - t0))
  # The held-out split of what was carried, scored here (on the GPU when there is one).
  local eval_device=$device windows=0
  # The audio expert is fitted on the CPU as the bytes are read (some 40 us a sample on a core): 8 windows of
  # the carried pieces keep the figure within the time kept for it; the import scores every held-out byte.
  [ "$kind" = audio ] && windows=8
  [ "$steps" -gt 0 ] && eval_device=cpu && windows=2
  "$stx" eval --model "$run" --data "$corpus" --split validation --windows $windows --json --device "$eval_device" \
    >"$home/eval.json" 2>"$home/eval.log" || { echo "$kind: evaluation failed: $(tail -1 "$home/eval.log")"; return 1; }
  "$stx" export --model "$run" --out "$home/model" --fp16 --force >>"$home/train.log" 2>&1 ||
    { echo "$kind: export failed: $(tail -1 "$home/train.log")"; return 1; }
  "$stx" info --model "$run" --json >"$home/info.json" 2>>"$home/train.log"
  python3 - "$home" "$kind" "$start_from" "${batch:-resumed}" "$trained" "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" \
    "$(json_escape "stx train ${args[*]//$root\//}")" <<'PY' || return 1
import hashlib, json, os, sys
home, kind, start, batch, seconds, gpu, command = sys.argv[1:]
info = json.load(open(os.path.join(home, "info.json")))
held = json.load(open(os.path.join(home, "eval.json")))
model = os.path.join(home, "model")
digest = lambda f: hashlib.sha256(open(os.path.join(model, f), "rb").read()).hexdigest()
record = {
    "kind": kind, "started_from": start, "batch": batch, "wall_seconds": int(seconds),
    "device": gpu or "CPU", "steps": info.get("training_steps"), "weights_hash": info.get("weights_hash"),
    "held_out_here": {"bits_per_byte": held["bits_per_byte"], "bytes": held["bytes"], "device": held.get("device")},
    "command": json.loads(command),
    "sha256": {f: digest(f) for f in ("config.json", "model.safetensors")},
}
json.dump(record, open(os.path.join(home, "record.json.tmp"), "w"), indent=1)
os.replace(os.path.join(home, "record.json.tmp"), os.path.join(home, "record.json"))
print(f"{kind}: {start}, batch {batch}, {record['steps']} steps in {seconds} s on {record['device']}; "
      f"held out (carried split) {held['bits_per_byte']:.4f} bits/byte")
PY
}

order=()
for kind in audio text image; do
  case ",$kinds," in *",$kind,"*) ;; *) continue ;; esac
  if [ -n "$(corpus_of "$kind")" ]; then
    order+=("$kind")
  else
    echo "$kind: no corpus carried (tools/gpu-carry.sh): not trained"
  fi
done
status=0
minimum_share=180
for i in "${!order[@]}"; do
  kind=${order[$i]}
  weights=0
  for k in "${order[@]:$i}"; do weights=$((weights + $(weight_of "$k"))); done
  left=$((until - $(date +%s)))
  share=$((left * $(weight_of "$kind") / weights))
  # A share too short to train after the probe and the export goes to the kinds in order instead: a first
  # call with little time left trains audio alone rather than three kinds for seconds each.
  [ $share -lt $minimum_share ] && share=$((left < minimum_share ? left : minimum_share))
  if [ "$steps" = 0 ] && [ $share -lt 90 ]; then
    echo "$kind: ${share} s is too short to train: not trained"
    status=1
    continue
  fi
  train_kind "$kind" "$share" || status=1
done
exit $status
