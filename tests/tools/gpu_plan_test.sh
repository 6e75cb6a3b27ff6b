#!/usr/bin/env bash
# gpu_plan_test.sh BUILD_DIR SOURCE_DIR: the GPU plan end to end on the CPU, as `--dry-run` promises (README,
# "GPU path"): tools/gpu-carry.sh --dry-run lays out a carry, tools/gpu-check.sh --dry-run --no-build runs
# every stage this machine can (the kernel tests skipping, the home training as one CPU step of each model),
# and tools/gpu-import.sh checks what came home and installs it into a copy of the bundled models only where
# it scores better; a returned model whose bytes do not match its record is refused and installs nothing.
# Run by ctest (tools.gpu_plan); nothing outside its temporary folder is written.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "gpu_plan_test: $*" >&2; exit 1; }
export STX_CARRY_DIR="$work/carry" STX="$build/app/cli/stx" STX_THREADS=1

"$source/tools/gpu-carry.sh" --dry-run >"$work/carry.log" 2>&1 || { cat "$work/carry.log"; fail "gpu-carry.sh --dry-run failed"; }
grep -q 'MB of the device tool' "$work/carry.log" || fail "gpu-carry.sh did not say how big the carry is"
for part in corpora/text/corpus.txt.xz corpora/audio/train/tones.wav corpora/audio/validation/tones.wav; do
  [ -e "$STX_CARRY_DIR/$part" ] || fail "the carry has no $part"
done
if [ -x "$build/tests/stx_cuda_tests" ]; then
  [ -f "$STX_CARRY_DIR/prebuilt/stx_cuda_tests.xz" ] || fail "the carry has no prebuilt kernel tests"
fi

out="$work/out"
rc=0
"$source/tools/gpu-check.sh" --dry-run --no-build --build-dir "$build" --deadline 400 "$out" >"$work/check.log" 2>&1 || rc=$?
python3 - "$out/summary.json" <<'PY' || { cat "$work/check.log"; fail "the dry run's summary"; }
import json, sys
s = json.load(open(sys.argv[1]))
stages = {e["stage"]: e for e in s["stages"]}
assert s["dry_run"] and s["ok"], f"failed stages: {s['failed']}"
for name in ("versions", "kernel-tests", "model-tests", "train-parity", "sample", "bench-sample", "home-training"):
    assert name in stages, f"no stage {name}"
assert stages["home-training"]["status"] == "pass", stages["home-training"]
PY
[ $rc = 0 ] || fail "gpu-check.sh --dry-run exited $rc"
for kind in audio text; do
  [ -f "$out/home/$kind/model/model.safetensors" ] && [ -f "$out/home/$kind/record.json" ] ||
    fail "home training brought no $kind model and record"
done

# The import, into a copy of the bundled models, scored on the carried held-out splits.
cp -r "$source/models/bundled" "$work/models"
xz -dc "$STX_CARRY_DIR/corpora/text/corpus.txt.xz" >"$work/text.txt"
import_args=(--into "$work/models" --windows 2 --audio "$STX_CARRY_DIR/corpora/audio" --text "$work/text.txt")
[ -d "$STX_CARRY_DIR/corpora/image" ] && import_args+=(--image "$STX_CARRY_DIR/corpora/image")
"$source/tools/gpu-import.sh" "$out" "${import_args[@]}" >"$work/import.log" 2>&1 || { cat "$work/import.log"; fail "gpu-import.sh failed"; }
python3 - "$out/import.json" "$work/models" "$source/models/bundled" <<'PY' || { cat "$work/import.log"; fail "the import's verdicts"; }
import filecmp, json, os, sys
verdicts, models, bundled = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert {v["kind"] for v in verdicts} >= {"audio", "text"}, verdicts
for v in verdicts:
    folder = os.path.join(models, v["kind"])
    same = filecmp.cmp(os.path.join(folder, "model.safetensors"), os.path.join(bundled, v["kind"], "model.safetensors"), shallow=False)
    if v["verdict"].startswith("installed"):
        assert v["after"] < v["before"], v
        assert not same, f"{v['kind']}: installed, but the weights are the old ones"
        card = open(os.path.join(folder, "MODEL_CARD.md")).read()
        assert "## GPU fine-tunes" in card and "CPU" in card, card[-600:]
        assert abs(json.load(open(os.path.join(folder, "held_out.json")))["bits_per_byte"] - v["after"]) < 1e-9
    else:
        assert v["verdict"].startswith("kept") and v["after"] >= v["before"], v
        assert same, f"{v['kind']}: kept, but the weights changed"
PY

# A returned model whose weights are not the ones its record names is refused, and nothing is installed.
rm -rf "$work/models" && cp -r "$source/models/bundled" "$work/models"
printf 'x' | dd of="$out/home/text/model/model.safetensors" bs=1 seek=200 conv=notrunc 2>/dev/null
rc=0
"$source/tools/gpu-import.sh" "$out" "${import_args[@]}" >"$work/import2.log" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$work/import2.log"; fail "a tampered model: exit $rc, not 1"; }
grep -q "text: broken: .*model.safetensors: sha256" "$work/import2.log" || { cat "$work/import2.log"; fail "the tampered file is not named"; }
cmp -s "$work/models/text/model.safetensors" "$source/models/bundled/text/model.safetensors" || fail "a refused model was installed"
echo "gpu_plan_test: carry, dry run and import passed"
