#!/usr/bin/env bash
# Installs into models/bundled/ the models a GPU run brought home, each only where it beats the bundled one.
#
#   tools/gpu-import.sh DIR [--into MODELS_DIR] [--windows N] [--audio PATH] [--text PATH] [--image PATH]
#
# DIR is the folder the run's $OUT came back to (it holds home/KIND/{model,record.json}; tools/gpu-train-home.sh
# wrote them). For each kind: the export's files must match the sha256 in its record; `stx info` must load it
# (config, tensor names, shapes, dtypes, finite weights); it must be the same kind and architecture as the bundled
# model; then both are scored here, on the CPU, on the same held-out split of the recipe's full corpus (`stx eval
# --split validation`, every window unless --windows N). Only a lower bits/byte installs it: the new folder is
# written beside the old one and renamed over it, with held_out.json (the new figure) and MODEL_CARD.md (the old
# card with a row added to its "GPU fine-tunes" table: date, device, start, steps, batch, wall time, held out
# before and after). Corpora default to the recipes' places under $STX_DATA (else ~/stx-data): classical/,
# kjv/kjv.txt, fashion-mnist/ (else /usr/share/datasets/fashion-mnist). Prints one line per kind and writes
# DIR/import.json; exit status 0 unless a returned model was broken or could not be scored.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stx=${STX:-$root/build/release/app/cli/stx}
into="$root/models/bundled"
data=${STX_DATA:-$HOME/stx-data}
windows=0
dir=""
declare -A corpus=([audio]="$data/classical" [text]="$data/kjv/kjv.txt" [image]="$data/fashion-mnist")
[ -f "${corpus[image]}/t10k-images-idx3-ubyte.gz" ] || corpus[image]=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
  case $1 in
    --into) into=$2; shift ;;
    --windows) windows=$2; shift ;;
    --audio|--text|--image) corpus[${1#--}]=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "gpu-import: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) dir=$1 ;;
  esac
  shift
done
[ -n "$dir" ] || { echo "gpu-import: name the folder a GPU run's \$OUT came back to (see --help)" >&2; exit 2; }
[ -d "$dir/home" ] || { echo "gpu-import: $dir has no home/ folder (a GPU run's \$OUT, from tools/gpu-check.sh)" >&2; exit 2; }
[ -x "$stx" ] || { echo "gpu-import: $stx is missing: build the release preset first" >&2; exit 2; }
status=0
results=()

# score MODEL KIND: "BITS_PER_BYTE BYTES" held out, on the CPU, or nothing with the reason on stderr.
score() {
  "$stx" eval --model "$1" --data "${corpus[$2]}" --split validation --windows "$windows" --json --device cpu 2>"$work/eval.err" |
    python3 -c 'import json,sys; r = json.load(sys.stdin); print(r["bits_per_byte"], r["bytes"])' 2>/dev/null ||
    { echo "$(tail -1 "$work/eval.err")" >&2; return 1; }
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for home in "$dir"/home/*/; do
  kind=$(basename "$home")
  model="$home/model" record="$home/record.json" bundled="$into/$kind"
  verdict=""
  if [ ! -f "$record" ] || [ ! -f "$model/model.safetensors" ]; then
    verdict="broken: no record.json or model/ (the run did not finish this kind)"
  elif [ ! -d "$bundled" ]; then
    verdict="broken: $kind is not a bundled model in $into"
  elif ! python3 - "$record" "$model" <<'PY' 2>"$work/check.err"; then
import hashlib, json, os, sys
record, model = json.load(open(sys.argv[1])), sys.argv[2]
for name, want in record["sha256"].items():
    got = hashlib.sha256(open(os.path.join(model, name), "rb").read()).hexdigest()
    if got != want:
        sys.exit(f"{os.path.join(model, name)}: sha256 {got[:16]} is not the record's {want[:16]}")
PY
    verdict="broken: $(tail -1 "$work/check.err")"
  elif ! "$stx" info --model "$model" --json >"$work/new.json" 2>"$work/info.err"; then
    verdict="broken: $(tail -1 "$work/info.err")"
  elif ! "$stx" info --model "$bundled" --json >"$work/old.json" 2>"$work/info.err"; then
    verdict="broken: the bundled model does not load: $(tail -1 "$work/info.err")"
  elif ! python3 - "$work/old.json" "$work/new.json" <<'PY' 2>"$work/check.err"; then
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
for field in ("data", "context", "attention", "layers", "d_model", "heads", "d_ff"):
    if old.get(field) != new.get(field):
        sys.exit(f"its {field} is {new.get(field)}, the bundled model's {old.get(field)}")
PY
    verdict="broken: not the bundled model's architecture: $(tail -1 "$work/check.err")"
  fi
  if [ -n "$verdict" ]; then
    echo "gpu-import: $kind: $verdict"
    results+=("{\"kind\": \"$kind\", \"verdict\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$verdict")}")
    status=1
    continue
  fi
  if ! before=$(score "$bundled" "$kind") || ! after=$(score "$model" "$kind"); then
    echo "gpu-import: $kind: could not be scored on ${corpus[$kind]}"
    status=1
    continue
  fi
  held_bytes=${after#* } before=${before% *} after=${after% *}
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) else 1)' "$before" "$after"; then
    staged="$into/.$kind.new" old="$into/.$kind.old"
    rm -rf "$staged" "$old" && mkdir -p "$staged"
    cp "$model"/config.json "$model"/model.safetensors "$staged/"
    [ -f "$model/train_state.json" ] && cp "$model/train_state.json" "$staged/"
    python3 - "$bundled" "$staged" "$record" "$before" "$after" "$held_bytes" "$windows" <<'PY' || { status=1; continue; }
import datetime, json, os, sys
bundled, staged, record_path, before, after, held_bytes, windows = sys.argv[1:]
record = json.load(open(record_path))
held = {"bits_per_byte": float(after), "held_out_bytes": int(held_bytes),
        "measured_by": "stx eval --split validation on the CPU (tools/gpu-import.sh)" +
                       ("" if windows == "0" else f", {windows} windows")}
card_path = os.path.join(bundled, "MODEL_CARD.md")
card = open(card_path).read() if os.path.exists(card_path) else f"# {record['kind']}\n"
heading = "## GPU fine-tunes"
row = (f"| {datetime.date.today().isoformat()} | {record['device']} | {record['started_from']} | {record['steps']} "
       f"| {record['batch']} | {record['wall_seconds']} s | {float(before):.4f} -> {float(after):.4f} |")
if heading not in card:
    card = card.rstrip("\n") + f"\n\n{heading}\n\nEach row a run of `tools/gpu-check.sh` installed by `tools/gpu-import.sh` " \
           "because it beat the model before it on the held-out split (bits/byte, `stx eval --split validation`).\n\n" \
           "| date | device | started from | steps | batch | wall time | held out |\n|---|---|---|---|---|---|---|\n"
card = card.rstrip("\n") + "\n" + row + "\n"
for name, text in (("MODEL_CARD.md", card), ("held_out.json", json.dumps(held, indent=2) + "\n")):
    path = os.path.join(staged, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
PY
    sync "$staged"/*
    mv "$bundled" "$old" && mv "$staged" "$bundled" && rm -rf "$old"
    verdict="installed: $before -> $after bits/byte held out"
  else
    verdict="kept the bundled model: $after bits/byte held out against its $before"
  fi
  echo "gpu-import: $kind: $verdict"
  results+=("{\"kind\": \"$kind\", \"verdict\": \"$verdict\", \"before\": $before, \"after\": $after}")
done
(IFS=,; echo "[${results[*]}]") | python3 -c 'import json,sys; json.dump(json.load(sys.stdin), open(sys.argv[1], "w"), indent=1)' "$dir/import.json"
exit $status
