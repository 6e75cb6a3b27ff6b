#!/usr/bin/env bash
# The one prepared run on a GPU machine: builds the project against the machine's CUDA LibTorch,
# runs the CUDA tests, a memcheck of a few of them, the attention benchmark against LibTorch's dense
# attention, a short CUDA training run checked against the CPU, CUDA sampling of text and audio, and, with
# the time left, trains the audio recipe on a carried corpus subset.
#
#   tools/gpu-check.sh [--dry-run] [--deadline SECONDS] [--build-dir DIR] [OUT_DIR]
#
# OUT_DIR (default $OUT, else build/gpu-check-out) receives summary.json (one entry per stage: status pass,
# fail or skipped, seconds, and the figures), gpu-check.log (everything the stages printed), build.log, and
# bench-attention.json. A failing stage does not stop the others; a stage that needs what a failed one
# should have made is reported as skipped, with the reason.
#
# --dry-run runs every stage this machine can: the build with CUDA compiled (STX_CUDA=ON) and the CPU side
# of each check; the stages that need a device say "skipped: no CUDA device". --deadline (default 450 s)
# bounds the whole run: each stage gets at most what is left, and the optional audio training fills the
# rest. --build-dir reuses a configured tree (the dry run here uses build/release).
#
# What travels to the GPU machine (README, "GPU path"): the working tree (about 17 MB) and third_party/ (named in
# the device tool's carry), which tools/gpu-carry.sh fills: GoogleTest's sources (4 MB), the Debian packages
# of the libraries the engine builds on (5 MB), and for the optional audio stage a corpus subset (30 MB).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dry_run=0
deadline=450
build_dir=""
out_dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --deadline) deadline=${2:?--deadline needs seconds}; shift ;;
    --build-dir) build_dir=${2:?--build-dir needs a folder}; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out_dir=$1 ;;
  esac
  shift
done
out_dir=${out_dir:-${OUT:-$root/build/gpu-check-out}}
build_dir=${build_dir:-$root/build/gpu-check}
mkdir -p "$out_dir" || exit 2
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd) || exit 2
out_dir=$(cd "$out_dir" && pwd)
log="$out_dir/gpu-check.log"
summary="$out_dir/summary.json"
mkdir -p "$build_dir" || exit 2
records="$build_dir/gpu-check-stages.tsv"
: >"$log"
: >"$records"
started=$(date +%s)
cores=$(nproc)

say() { echo "gpu-check: $*" | tee -a "$log"; }
left() { echo $((deadline - ($(date +%s) - started))); }

# The summary is rewritten after every stage, so a run killed at its limit still reports what finished.
write_summary() {
  python3 - "$records" "$summary" "$dry_run" <<'PY'
import json, sys
records, path, dry = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
stages = []
for line in open(records, encoding="utf-8"):
    name, status, seconds, note, figures = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
    entry = {"stage": name, "status": status, "seconds": float(seconds or 0), "note": note}
    if figures:
        entry["figures"] = json.loads(figures)
    stages.append(entry)
failed = [s["stage"] for s in stages if s["status"] == "fail"]
json.dump({"dry_run": dry, "ok": not failed, "failed": failed, "stages": stages}, open(path + ".tmp", "w"), indent=1)
import os
os.replace(path + ".tmp", path)
PY
}

# record NAME STATUS SECONDS NOTE [FIGURES_JSON]
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" "${5:-}" >>"$records"
  say "stage $1: $2 (${3} s)${4:+: $4}"
  write_summary
}

# run_stage NAME CAP FUNCTION: runs FUNCTION with at most min(CAP, time left) seconds. The function sets
# note and figures, and returns 0 (pass), 1 (fail) or 3 (skipped, note says why).
note=""
figures=""
run_stage() {
  local name=$1 cap=$2 fn=$3 budget t0 rc status
  budget=$(left)
  [ "$budget" -lt "$cap" ] && cap=$budget
  if [ "$cap" -le 5 ]; then
    record "$name" skipped 0 "no time left before the deadline"
    return
  fi
  say "=== stage $name (at most ${cap} s) ==="
  note=""
  figures=""
  stage_cap=$cap
  t0=$(date +%s)
  "$fn"
  rc=$?
  case $rc in
    0) status=pass ;;
    3) status=skipped ;;
    *) status=fail ;;
  esac
  record "$name" "$status" $(($(date +%s) - t0)) "$note" "$figures"
}

# within SECONDS COMMAND...: the command, killed after SECONDS (exit 124), its output into the log.
within() {
  local seconds=$1
  shift
  timeout --kill-after=5 "$seconds" "$@" >>"$log" 2>&1
}

have_device=0
if [ "$dry_run" = 0 ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  have_device=1
fi
no_device() {
  note="skipped: no CUDA device${1:+ ($1)}"
  return 3
}

# ---- 1. the machine ---------------------------------------------------------------------------------------
stage_versions() {
  local gpu torch nvcc_version cmake_version
  { nvidia-smi || echo "nvidia-smi: not available"; } >>"$log" 2>&1
  gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
  torch=$(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null ||
    echo "no Python torch (Debian LibTorch)")
  nvcc_version=$(nvcc --version 2>/dev/null | tail -2 | head -1)
  cmake_version=$(cmake --version | head -1)
  figures=$(python3 -c 'import json,sys; print(json.dumps(dict(zip(["gpu","torch","nvcc","cmake","cores"], sys.argv[1:]))))' \
    "${gpu:-none}" "$torch" "${nvcc_version:-none}" "$cmake_version" "$cores")
  note="${gpu:-no GPU}; torch $torch; $cmake_version"
  return 0
}

# ---- 2. what the build needs beyond nvcc, CMake and LibTorch ------------------------------------------------
# Found on the machine, or unpacked from the Debian packages that tools/gpu-carry.sh put in third_party/debs
# into third_party/sysroot (never into /), which the configure step then searches.
sysroot=""
stage_deps() {
  local missing=() header
  for header in sndfile.h samplerate.h zlib.h nlohmann/json.hpp CLI/CLI.hpp stb/stb_image.h; do
    [ -f "/usr/include/$header" ] || [ -f "/usr/local/include/$header" ] || missing+=("$header")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    note="every library the build needs is on the machine"
    return 0
  fi
  local debs="$root/third_party/debs"
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    note="missing ${missing[*]}, and no packages carried in third_party/debs (tools/gpu-carry.sh)"
    return 1
  fi
  sysroot="$root/third_party/sysroot"
  rm -rf "$sysroot" && mkdir -p "$sysroot"
  local deb
  for deb in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$sysroot" || return 1
    else  # a .deb is an ar archive holding data.tar.*
      (cd "$sysroot" && ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x -J -f - 2>/dev/null ||
        ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x -f -) || return 1
    fi
  done
  # Absolute links (zlib1g-dev's libz.so -> /lib/...) would point at the machine's own files: into the sysroot.
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    case $target in /*) [ -e "$sysroot$target" ] && ln -sfn "$sysroot$target" "$link" ;; esac
  done < <(find "$sysroot" -type l)
  # The unpacked libraries' own dependencies (libsndfile's codecs) are found at run time through this.
  export LD_LIBRARY_PATH="$sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note="missing on the machine: ${missing[*]}; unpacked $(ls "$debs"/*.deb | wc -l) carried packages into third_party/sysroot"
  return 0
}

# ---- 3. the build: torch-free kernels and their tests first, then everything on LibTorch -------------------
built_kernels=0
built_torch=0
stage_configure() {
  local args=(-S "$root" -B "$build_dir" -G Ninja)
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    args+=(-DCMAKE_BUILD_TYPE=Release -DSTX_CUDA=ON -DSTX_BUILD_STUDIO=OFF)
    local prefix arch
    prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
    [ -n "$sysroot" ] && prefix="${prefix:+$prefix;}$sysroot/usr"
    [ -n "$prefix" ] && args+=("-DCMAKE_PREFIX_PATH=$prefix")
    # Only the machine's own architecture: the build is half as long as for sm_80 and sm_90.
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
    [ -n "$arch" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
    [ -f "$root/third_party/googletest/CMakeLists.txt" ] && args+=("-DSTX_GTEST_SOURCE_DIR=$root/third_party/googletest")
  fi
  echo "cmake ${args[*]}" >>"$out_dir/build.log"
  timeout "$stage_cap" cmake "${args[@]}" >>"$out_dir/build.log" 2>&1
  local rc=$?
  grep -E '^-- stx:' "$out_dir/build.log" | tail -5 >>"$log"
  if [ $rc -ne 0 ]; then
    note="cmake failed (exit $rc): see build.log"
    tail -30 "$out_dir/build.log" >>"$log"
    return 1
  fi
  grep -q 'stx: CUDA kernels ON' "$out_dir/build.log" || { note="configured without CUDA kernels"; return 1; }
  note=$(grep -E '^-- stx: LibTorch' "$out_dir/build.log" | tail -1 | sed 's/^-- //')
  return 0
}

build_targets() {
  local targets=("$@") present=() t
  for t in "${targets[@]}"; do
    ninja -C "$build_dir" -t query "$t" >/dev/null 2>&1 && present+=("$t")
  done
  [ ${#present[@]} -gt 0 ] || return 1
  echo "ninja ${present[*]}" >>"$out_dir/build.log"
  timeout "$stage_cap" ninja -C "$build_dir" -k 0 -j "$cores" "${present[@]}" >>"$out_dir/build.log" 2>&1
}

stage_build_kernels() {
  [ -f "$build_dir/build.ninja" ] || { note="not configured"; return 3; }
  build_targets stx_kernels stx_kernel_tests stx_cuda_tests
  case $? in
    0) built_kernels=1; return 0 ;;
    124) note="the build ran out of its time: see build.log" ;;
    *) note="the kernels or their tests failed to build: see build.log" ;;
  esac
  grep -E 'error' "$out_dir/build.log" | head -20 >>"$log"
  return 1
}

stage_build_torch() {
  [ -f "$build_dir/build.ninja" ] || { note="not configured"; return 3; }
  build_targets stx_models stx_model_tests stx stx-bench
  case $? in
    0) built_torch=1; return 0 ;;
    124) note="the build ran out of its time: see build.log" ;;
    *) note="models, CLI or bench failed to build: see build.log" ;;
  esac
  grep -E 'error' "$out_dir/build.log" | head -40 >>"$log"
  return 1
}

# ---- 4. CUDA tests, and memcheck on a few ------------------------------------------------------------------
# run_gtest BINARY FILTER SECONDS LOG: runs a GoogleTest binary; after a crash (a signal, or the time running
# out inside a test) it runs again without the test that was running, up to five times, so that one crash
# hides no other result. Prints the counts as JSON: passed, failed, skipped, crashed, and the names.
run_gtest() {
  local binary=$1 filter=$2 seconds=$3 out=$4 excluded="" attempt rc last
  : >"$out"
  for attempt in 1 2 3 4 5 6; do
    timeout --kill-after=5 "$seconds" "$binary" "--gtest_filter=$filter${excluded:+-$excluded}" >"$out.part" 2>&1
    rc=$?
    cat "$out.part" >>"$out"
    last=$(sed -n 's/^\[ RUN      \] //p' "$out.part" | tail -1)
    [ $rc -ge 124 ] && [ -n "$last" ] || break
    grep -qE "^\[ +(OK|FAILED|SKIPPED) +\] $last([ ,]|$)" "$out.part" && break
    echo "CRASHED: $last (exit $rc)" >>"$out"
    excluded="${excluded:+$excluded:}$last"
  done
  python3 - "$out" <<'PY'
import json, re, sys
text = open(sys.argv[1], errors="replace").read()
# A test run again after another's crash counts once, with its last result.
status = {}
for word, name in re.findall(r"^\[ +(OK|FAILED|SKIPPED) +\] ([^\s,]+)(?:, .*)? \(\d+ ms\)$", text, re.M):
    status[name] = word
crashed = re.findall(r"^CRASHED: (\S+)", text, re.M)
count = lambda word: sum(1 for s in status.values() if s == word)
print(json.dumps({"passed": count("OK"), "failed": count("FAILED"), "skipped": count("SKIPPED"),
                  "crashed": len(crashed), "failed_tests": [n for n, s in status.items() if s == "FAILED"][:20],
                  "crashed_tests": crashed}))
PY
}

stage_cuda_tests() {
  [ "$built_kernels" = 1 ] || { note="the kernel tests were not built"; return 3; }
  local rc=0 k m
  k=$(run_gtest "$build_dir/tests/stx_cuda_tests" '*' $((stage_cap / 2)) "$build_dir/gpu-check-kernel-tests.log")
  cat "$build_dir/gpu-check-kernel-tests.log" >>"$log"
  if [ "$built_torch" = 1 ]; then
    m=$(run_gtest "$build_dir/tests/stx_model_tests" '*Cuda*' $((stage_cap / 3)) "$build_dir/gpu-check-model-tests.log")
    cat "$build_dir/gpu-check-model-tests.log" >>"$log"
  else
    m='{"error": "not built"}'
    rc=1
  fi
  figures="{\"kernels\": $k, \"models\": $m}"
  note="kernels $k; models $m"
  python3 -c 'import json,sys; sys.exit(0 if all(json.loads(a).get("failed", 1) == 0 and json.loads(a).get("crashed", 1) == 0 and json.loads(a).get("passed", 0) > 0 for a in sys.argv[1:]) else 1)' "$k" "$m" || rc=1
  if [ "$have_device" = 0 ]; then
    note="skipped: no CUDA device (the suites ran and skipped: $note)"
    python3 -c 'import json,sys; sys.exit(0 if all(json.loads(a).get("failed", 1) == 0 and json.loads(a).get("crashed", 1) == 0 for a in sys.argv[1:]) else 1)' "$k" "$m" && return 3
    return 1
  fi
  return $rc
}

stage_memcheck() {
  [ "$have_device" = 1 ] || { no_device; return; }
  [ "$built_kernels" = 1 ] || { note="the kernel tests were not built"; return 3; }
  command -v compute-sanitizer >/dev/null || { note="compute-sanitizer is not installed"; return 3; }
  # One small case of each kernel and dtype: the forward, backward and decode of an awkward size, and GELU.
  within "$stage_cap" compute-sanitizer --tool memcheck --error-exitcode 7 \
    "$build_dir/tests/stx_cuda_tests" --gtest_filter='Cases/*_n113_*:Cases/*_n7_*:CudaGelu.*'
  local rc=$?
  note="compute-sanitizer memcheck exit $rc"
  [ $rc = 0 ]
}

# ---- 5. the attention benchmark against LibTorch's dense attention -----------------------------------------
stage_bench() {
  [ "$built_torch" = 1 ] || { note="stx-bench was not built"; return 3; }
  [ "$have_device" = 1 ] || { no_device; return; }
  within "$stage_cap" "$build_dir/bench/stx-bench" attention --device cuda --n 4096,16384 \
    --json "$out_dir/bench-attention.json"
  local rc=$?
  note="stx-bench attention --device cuda exit $rc"
  [ -f "$out_dir/bench-attention.json" ] && figures=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$out_dir/bench-attention.json" 2>/dev/null)
  [ $rc = 0 ]
}

# ---- 6. training on CUDA: the first step's loss equals the CPU's, and the loss falls -----------------------
text_data="$build_dir/gpu-check-text.txt"
# loss_at FILE STEP: the loss printed for step STEP ("step 1/200 (0%) loss 7.981 bpb ...").
loss_at() { sed -n "s/^step $2\/[0-9]* .* loss \([0-9.]*\) bpb.*/\1/p" "$1" | tail -1; }
last_loss() { sed -n 's/^step [0-9]*\/[0-9]* .* loss \([0-9.]*\) bpb.*/\1/p' "$1" | tail -1; }

train_run() {  # train_run NAME SECONDS ARGS...: one stx train into $build_dir/gpu-train/NAME
  local name=$1 seconds=$2
  shift 2
  rm -rf "$build_dir/gpu-train/$name"
  timeout --kill-after=5 "$seconds" "$build_dir/app/cli/stx" train --preset text-small --data "$text_data" \
    --out "$build_dir/gpu-train/$name" --seed 1 --deterministic "$@" >"$build_dir/gpu-train/$name.log" 2>&1
  local rc=$?
  cat "$build_dir/gpu-train/$name.log" >>"$log"
  return $rc
}

stage_train() {
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  mkdir -p "$build_dir/gpu-train"
  # A small text the script brings: the project's own documents, about 200 KB.
  cat "$root/README.md" "$root"/docs/*.md >"$text_data"
  train_run cpu1 $((stage_cap / 4)) --device cpu --steps 1 --batch 4 || { note="CPU training failed"; return 1; }
  local cpu_first
  cpu_first=$(loss_at "$build_dir/gpu-train/cpu1.log" 1)
  [ "$have_device" = 1 ] || { note="skipped: no CUDA device (CPU first-step loss $cpu_first bpb)"; return 3; }

  local steps=300 rc=0 fp32_first fp32_last detail=""
  train_run fp32 $((stage_cap / 3)) --device cuda --steps $steps --batch 4 --eval-every 100 || rc=1
  fp32_first=$(loss_at "$build_dir/gpu-train/fp32.log" 1)
  fp32_last=$(last_loss "$build_dir/gpu-train/fp32.log")
  detail="fp32: first $fp32_first (CPU $cpu_first), last $fp32_last"
  # bf16 and fp16 autocast, with recompute, a short run each.
  local p first last
  for p in bf16 fp16; do
    train_run "$p" $((stage_cap / 6)) --device cuda --steps 50 --batch 4 --precision $p || rc=1
    first=$(loss_at "$build_dir/gpu-train/$p.log" 1)
    last=$(last_loss "$build_dir/gpu-train/$p.log")
    detail+="; $p: first $first, last $last"
    python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)' "${first:-0}" "${last:-99}" || rc=1
  done
  # Data-parallel over two processes on CUDA: NCCL where each has a GPU of its own, else Gloo, and it says which.
  train_run ddp $((stage_cap / 6)) --device cuda --steps 5 --batch 4 --nproc 2 || rc=1
  local backend
  backend=$(grep -o 'data-parallel over [0-9]* processes through .*' "$build_dir/gpu-train/ddp.log" | head -1)
  detail+="; ${backend:-no data-parallel line}"
  # The CUDA checkpoint evaluated on the CPU: it loads there.
  within 60 "$build_dir/app/cli/stx" eval --model "$build_dir/gpu-train/fp32" --data "$text_data" --windows 4 || rc=1
  figures=$(python3 -c 'import json,sys; print(json.dumps({"cpu_first": sys.argv[1], "cuda_fp32_first": sys.argv[2], "cuda_fp32_last": sys.argv[3]}))' \
    "$cpu_first" "$fp32_first" "$fp32_last")
  python3 - "$cpu_first" "$fp32_first" "$fp32_last" <<'PY' || rc=1
import sys
cpu, first, last = map(float, sys.argv[1:])
# The printed losses have 3 decimals; the two devices sum the same terms in another order.
assert abs(cpu - first) <= 0.01, f"first-step loss CPU {cpu} against CUDA {first}"
assert last < first - 0.5, f"the loss did not fall: {first} -> {last}"
PY
  note=$detail
  return $rc
}

# ---- 7. CUDA sampling ---------------------------------------------------------------------------------------
stage_sample() {
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  local stx="$build_dir/app/cli/stx" rc=0 rates=() kind
  if [ "$have_device" = 0 ]; then
    # Here the CPU side: --device cuda must be refused in one line with exit 2.
    "$stx" sample text --model text --prompt "In the beginning" --max-bytes 10 --device cuda \
      --out "$build_dir/gpu-sample.txt" --force >>"$log" 2>&1
    rc=$?
    [ $rc = 2 ] || { note="--device cuda without a device exited $rc, not 2"; return 1; }
    no_device "--device cuda refused with exit 2"
    return
  fi
  for kind in text audio; do
    local args=(--model "$kind" --seed 1 --device cuda --force)
    if [ $kind = text ]; then
      args+=(--prompt "In the beginning" --max-bytes 1000 --out "$build_dir/gpu-sample.txt")
    else
      args+=(--seconds 1 --out "$build_dir/gpu-sample.wav")
    fi
    # One sample, then four at once: where a GPU's width pays.
    for n in 1 4; do
      within $((stage_cap / 4)) "$stx" sample "$kind" "${args[@]}" --n $n || rc=1
      rates+=("$kind x$n: $(grep -o '[0-9.]* tok/s' "$log" | tail -1)")
    done
  done
  note="${rates[*]}"
  return $rc
}

# ---- 8. optional: the audio recipe on the GPU for the minutes left ----------------------------------------
stage_audio_training() {
  [ "$have_device" = 1 ] || { no_device; return; }
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  local subset="$root/third_party/audio-subset"
  [ -d "$subset" ] || { note="no corpus subset carried (third_party/audio-subset)"; return 3; }
  local seconds=$((stage_cap - 30))
  [ $seconds -ge 60 ] || { note="under a minute left"; return 3; }
  local run="$build_dir/gpu-audio"
  # The bundled model, fine-tuned at its recipe's context with the larger batch a GPU affords; SIGINT at the
  # deadline stops it after the current step with a checkpoint (exit 130).
  timeout --signal=INT --kill-after=30 "$seconds" "$build_dir/app/cli/stx" train --init-from audio \
    --data "$subset" --out "$run" --device cuda --precision bf16 --batch 4 --lr 0.0006 --warmup-steps 20 \
    --steps 3000 --eval-every 100 --checkpoint-every 50 --keep 1 >>"$log" 2>&1
  local rc=$?
  if [ -f "$run/latest.json" ]; then
    "$build_dir/app/cli/stx" export --model "$run" --out "$build_dir/gpu-audio-fp16" --fp16 >>"$log" 2>&1 &&
      tar -C "$build_dir" -cf "$out_dir/audio-checkpoint.tar" gpu-audio-fp16 && note="audio checkpoint returned"
  fi
  [ $rc = 0 ] || [ $rc = 130 ] || [ $rc = 124 ]
}

say "started $(date -u +%FT%TZ) on $(hostname), $cores cores, deadline ${deadline} s, dry run $dry_run"
run_stage versions 30 stage_versions
run_stage deps 30 stage_deps
run_stage configure 120 stage_configure
run_stage build-kernels 200 stage_build_kernels
run_stage build-torch 300 stage_build_torch
run_stage cuda-tests 90 stage_cuda_tests
run_stage memcheck 60 stage_memcheck
run_stage bench-attention 90 stage_bench
run_stage train 120 stage_train
run_stage sample 90 stage_sample
run_stage audio-training 100000 stage_audio_training
say "finished in $(($(date +%s) - started)) s; summary in $summary"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["ok"] else 1)' "$summary"
