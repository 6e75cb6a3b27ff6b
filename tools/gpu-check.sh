#!/usr/bin/env bash
# The one prepared run on a lent GPU machine, ordered so that every minute counts: the checks that prove new
# code first, then the benchmarks, then training whose weights come home.
#
#   tools/gpu-check.sh [--dry-run] [--train-only] [--no-build] [--deadline SECONDS] [--build-dir DIR] [OUT_DIR]
#
# The plan, with a clock (the deadline, 540 s by default, leaves a 600 s call a minute to bring $OUT back):
#   1. versions and the carried libraries (seconds);
#   2. the LibTorch part (models, engine, stx, stx-bench, the model tests) starts building in the background;
#   3. meanwhile the prebuilt torch-free CUDA kernel tests (third_party/prebuilt, from tools/gpu-carry.sh) run,
#      then compute-sanitizer memcheck and racecheck on a few: the first results within a minute of the start
#      (without a usable prebuilt binary the kernel tests are built first, in the same background build);
#   4. when the build is done: the attention benchmark (ours against LibTorch's dense attention and the reshape
#      route), the model's CUDA tests, the generation benchmark (CPU and GPU decoders), CUDA sampling (with
#      Automatic's choice), training parity (CUDA's first-step loss equals the CPU's, and the loss falls;
#      bf16, fp16, data-parallel);
#   5. every second left: tools/gpu-train-home.sh trains the bundled models (audio, text, image) on the
#      carried corpora, evaluates them and writes fp16 exports with their records under OUT_DIR/home, which
#      tools/gpu-import.sh installs here where they beat the bundled models.
# --train-only (a second call on the same machine, or a fresh one given the first's exports by
# `tools/gpu-carry.sh --return`): the build (a no-op when warm) and stage 5 only; the training resumes. A first
# call spends about 5 of its 9 minutes on the build and the checks, so most of a session's training is the
# second call's.
#
# OUT_DIR (default $OUT, else build/gpu-check-out) receives summary.json (rewritten after every stage: status
# pass, fail or skipped, seconds, figures), gpu-check.log, build.log, bench-attention.json, bench-sample.json
# and home/. A failing stage does not stop the others; one that needs what a failed one should have made is
# skipped, with the reason.
# --dry-run runs every stage this machine can: the build with CUDA compiled, the CPU side of each check, and
# the home training as a few CPU steps of each model; --no-build takes the build folder as it is (the test
# suite's dry run uses build/release). --build-dir: default build/gpu-check.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dry_run=0
train_only=0
no_build=0
deadline=540
build_dir=""
out_dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --train-only) train_only=1 ;;
    --no-build) no_build=1 ;;
    --deadline) deadline=${2:?--deadline needs seconds}; shift ;;
    --build-dir) build_dir=${2:?--build-dir needs a folder}; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out_dir=$1 ;;
  esac
  shift
done
out_dir=${out_dir:-${OUT:-$root/build/gpu-check-out}}
build_dir=${build_dir:-$root/build/gpu-check}
mkdir -p "$out_dir" "$build_dir" || exit 2
build_dir=$(cd "$build_dir" && pwd)
out_dir=$(cd "$out_dir" && pwd)
log="$out_dir/gpu-check.log"
summary="$out_dir/summary.json"
records="$out_dir/.stages.tsv"
: >"$log"
: >"$records"
started=$(date +%s)
cores=$(nproc)
carry=${STX_CARRY_DIR:-$root/third_party}  # what tools/gpu-carry.sh laid out (the test suite's dry run: its own)
# Scratch (training runs, samples): the build folder, which a second call on the same machine finds again;
# with --no-build, OUT_DIR/.scratch, so that a dry run leaves the build folder as it was.
scratch=$build_dir
if [ "$no_build" = 1 ]; then
  scratch="$out_dir/.scratch"
  mkdir -p "$scratch"
fi
source "$root/tools/lib/gpu-stages.sh"
source "$root/tools/lib/kernels-hash.sh"

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
  local debs="$carry/debs"
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    note="missing ${missing[*]}, and no packages carried in third_party/debs (tools/gpu-carry.sh)"
    return 1
  fi
  sysroot="$carry/sysroot"
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

# ---- 3. the build: configured now, built in the background while the prebuilt kernel tests run ------------
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
    if [ -f "$carry/googletest.tar.xz" ] && [ ! -d "$scratch/googletest" ]; then
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$carry/googletest.tar.xz" "$scratch"
    fi
    [ -f "$scratch/googletest/CMakeLists.txt" ] && args+=("-DSTX_GTEST_SOURCE_DIR=$scratch/googletest")
    # The carried kernels library, when it was built from these very sources: the build skips the CUDA kernels.
    if [ -f "$unpacked/libstx_kernels.a" ] &&
      [ "$(cat "$carry/prebuilt/kernels-source.sha256" 2>/dev/null)" = "$(kernels_source_hash "$root")" ]; then
      args+=("-DSTX_PREBUILT_KERNELS=$unpacked")
    fi
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


# The prebuilt kernel tests and library travel xz-compressed; they are unpacked into the scratch folder. The
# tests run where this machine's glibc and driver take them: a listing of the tests proves it.
prebuilt="$carry/prebuilt"
unpacked="$scratch/prebuilt"
kernel_tests=""
unpack_prebuilt() {
  rm -rf "$unpacked" && mkdir -p "$unpacked"
  local packed
  for packed in "$prebuilt"/*.xz; do
    [ -f "$packed" ] || continue
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      "$packed" "$unpacked/$(basename "${packed%.xz}")" || return 1
  done
  [ -f "$unpacked/stx_cuda_tests" ] && chmod +x "$unpacked/stx_cuda_tests"
  return 0
}
prebuilt_usable() {
  [ -x "$unpacked/stx_cuda_tests" ] &&
    LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 30 "$unpacked/stx_cuda_tests" \
      --gtest_list_tests >/dev/null 2>>"$log"
}

# The background build: the kernel tests first when no prebuilt binary runs here, then the LibTorch part. Each
# part leaves a file with its exit status in the build folder.
build_status() { cat "$build_dir/gpu-check-$1.status" 2>/dev/null; }
start_build() {
  rm -f "$build_dir"/gpu-check-*.status
  local kernel_targets=() targets=(stx_models stx_model_tests stx stx-bench)
  [ -n "$kernel_tests" ] || kernel_targets=(stx_cuda_tests)
  (
    if [ ${#kernel_targets[@]} -gt 0 ]; then
      echo "ninja ${kernel_targets[*]}" >>"$out_dir/build.log"
      ninja -C "$build_dir" -k 0 -j "$cores" "${kernel_targets[@]}" >>"$out_dir/build.log" 2>&1
      echo $? >"$build_dir/gpu-check-kernels.status"
    fi
    echo "ninja ${targets[*]}" >>"$out_dir/build.log"
    ninja -C "$build_dir" -k 0 -j "$cores" "${targets[@]}" >>"$out_dir/build.log" 2>&1
    local rc=$?
    # The carried kernels library may not link with this machine's compiler: then the kernels are compiled here.
    if [ $rc != 0 ] && grep -q '^STX_PREBUILT_KERNELS:PATH=.\+' "$build_dir/CMakeCache.txt"; then
      echo "gpu-check: the build with the prebuilt kernels failed; compiling them here" >>"$out_dir/build.log"
      cmake -S "$root" -B "$build_dir" -DSTX_PREBUILT_KERNELS= >>"$out_dir/build.log" 2>&1 &&
        ninja -C "$build_dir" -k 0 -j "$cores" "${targets[@]}" >>"$out_dir/build.log" 2>&1
      rc=$?
    fi
    echo $rc >"$build_dir/gpu-check-torch.status"
  ) &
  build_pid=$!
}

# wait_build PART: until PART's status file appears or the stage's time is up.
wait_build() {
  local until=$(($(date +%s) + stage_cap))
  while [ -z "$(build_status "$1")" ] && [ "$(date +%s)" -lt $until ]; do sleep 2; done
  case $(build_status "$1") in
    0) return 0 ;;
    "") note="still building when its time ran out: see build.log"; return 1 ;;
    *) note="the build failed: see build.log"; grep -E 'error' "$out_dir/build.log" | head -30 >>"$log"; return 1 ;;
  esac
}

built_torch=0
stage_build_torch() {
  if [ "$no_build" = 1 ]; then
    [ -x "$build_dir/app/cli/stx" ] || { note="--no-build: $build_dir has no stx"; return 1; }
    built_torch=1
    note="--no-build: $build_dir as it is"
    return 0
  fi
  [ -n "${build_pid:-}" ] || { note="not configured"; return 3; }
  wait_build torch || return 1
  built_torch=1
  note="built $(grep -c '^\[' "$out_dir/build.log") steps"
}

# ---- 4. the CUDA kernel tests (prebuilt), memcheck on a few, then the model's -----------------------------
# suite_verdict COUNTS: a test stage's status from run_gtest's counts: pass when tests passed and none failed
# or crashed; without a device, skipped (the note says so) when none failed, as every CUDA test skips there.
suite_verdict() {
  local all_passed='import json,sys; r = json.loads(sys.argv[1]); sys.exit(0 if r.get("failed", 1) == 0 and r.get("crashed", 1) == 0 and (sys.argv[2] == "0" or r.get("passed", 0) > 0) else 1)'
  if [ "$have_device" = 0 ]; then
    note="skipped: no CUDA device (the suite ran and skipped: $1)"
    python3 -c "$all_passed" "$1" 0 && return 3
    return 1
  fi
  python3 -c "$all_passed" "$1" 1
}

stage_kernel_tests() {
  if [ -z "$kernel_tests" ]; then
    [ "$no_build" = 0 ] || { note="--no-build and no prebuilt kernel tests"; return 3; }
    local until=$(($(date +%s) + stage_cap))
    wait_build kernels || return 1
    kernel_tests="$build_dir/tests/stx_cuda_tests"
    stage_cap=$((until - $(date +%s)))
  fi
  local k scalar
  k=$(LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run_gtest "$kernel_tests" '*' \
    $((stage_cap * 3 / 4)) "$out_dir/kernel-tests.log")
  cat "$out_dir/kernel-tests.log" >>"$log"
  # float16 and bfloat16 run on the tensor-core kernels where the GPU has them; the scalar ones, which
  # STX_CUDA_TENSOR_CORES=0 keeps, are checked again on the n = 113 cases.
  scalar=$(STX_CUDA_TENSOR_CORES=0 LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    run_gtest "$kernel_tests" 'Cases/*_n113_*' $((stage_cap / 4)) "$out_dir/kernel-tests-scalar.log")
  cat "$out_dir/kernel-tests-scalar.log" >>"$log"
  figures="{\"binary\": \"${kernel_tests/#$root\//}\", \"kernels\": $k, \"scalar_kernels\": $scalar}"
  note="${kernel_tests/#$root\//}: $k; STX_CUDA_TENSOR_CORES=0: $scalar"
  suite_verdict "$k" && suite_verdict "$scalar"
}

stage_memcheck() {
  [ "$have_device" = 1 ] || { no_device; return; }
  [ -n "$kernel_tests" ] || { note="no kernel tests to run"; return 3; }
  command -v compute-sanitizer >/dev/null || { note="compute-sanitizer is not installed"; return 3; }
  # One small case of each kernel and dtype: the forward, backward and decode of an awkward size, and GELU;
  # memcheck (out-of-bounds and misaligned accesses), then racecheck (shared-memory hazards) on the n = 7 cases.
  LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" within $((stage_cap * 2 / 3)) compute-sanitizer \
    --tool memcheck --error-exitcode 7 "$kernel_tests" --gtest_filter='Cases/*_n113_*:Cases/*_n7_*:CudaGelu.*'
  local memcheck=$?
  LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" within $((stage_cap / 3)) compute-sanitizer \
    --tool racecheck --error-exitcode 7 "$kernel_tests" --gtest_filter='Cases/*_n7_*'
  local racecheck=$?
  note="compute-sanitizer memcheck exit $memcheck, racecheck exit $racecheck"
  [ $memcheck = 0 ] && [ $racecheck = 0 ]
}

stage_model_tests() {
  [ "$built_torch" = 1 ] || { note="the model tests were not built"; return 3; }
  local m
  m=$(run_gtest "$build_dir/tests/stx_model_tests" '*Cuda*' "$stage_cap" "$out_dir/model-tests.log")
  cat "$out_dir/model-tests.log" >>"$log"
  figures="{\"models\": $m}"
  note="models $m"
  suite_verdict "$m"
}

# ---- 5. training on CUDA: the first step's loss equals the CPU's, and the loss falls -----------------------
text_data="$scratch/gpu-check-text.txt"
# loss_at FILE STEP: the loss printed for step STEP ("step 1/200 (0%) loss 7.981 bpb ...").
loss_at() { sed -n "s/^step $2\/[0-9]* .* loss \([0-9.]*\) bpb.*/\1/p" "$1" | tail -1; }
last_loss() { sed -n 's/^step [0-9]*\/[0-9]* .* loss \([0-9.]*\) bpb.*/\1/p' "$1" | tail -1; }

train_run() {  # train_run NAME SECONDS ARGS...: one stx train into $build_dir/gpu-train/NAME
  local name=$1 seconds=$2
  shift 2
  rm -rf "$scratch/gpu-train/$name"
  timeout --kill-after=5 "$seconds" "$build_dir/app/cli/stx" train --preset text-small --data "$text_data" \
    --out "$scratch/gpu-train/$name" --seed 1 --deterministic "$@" >"$scratch/gpu-train/$name.log" 2>&1
  local rc=$?
  cat "$scratch/gpu-train/$name.log" >>"$log"
  return $rc
}

stage_train() {
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  mkdir -p "$scratch/gpu-train"
  # A small text the script brings: the project's own documents, about 200 KB.
  cat "$root/README.md" "$root"/docs/*.md >"$text_data"
  train_run cpu1 $((stage_cap / 4)) --device cpu --steps 1 --batch 4 || { note="CPU training failed"; return 1; }
  local cpu_first
  cpu_first=$(loss_at "$scratch/gpu-train/cpu1.log" 1)
  [ "$have_device" = 1 ] || { note="skipped: no CUDA device (CPU first-step loss $cpu_first bpb)"; return 3; }

  local steps=150 rc=0 fp32_first fp32_last detail=""
  train_run fp32 $((stage_cap / 3)) --device cuda --steps $steps --batch 4 --eval-every 0 || rc=1
  fp32_first=$(loss_at "$scratch/gpu-train/fp32.log" 1)
  fp32_last=$(last_loss "$scratch/gpu-train/fp32.log")
  detail="fp32: first $fp32_first (CPU $cpu_first), last $fp32_last"
  # bf16 and fp16 autocast, with recompute, a short run each.
  local p first last
  for p in bf16 fp16; do
    train_run "$p" $((stage_cap / 6)) --device cuda --steps 50 --batch 4 --precision $p || rc=1
    first=$(loss_at "$scratch/gpu-train/$p.log" 1)
    last=$(last_loss "$scratch/gpu-train/$p.log")
    detail+="; $p: first $first, last $last"
    python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < a else 1)' "${first:-0}" "${last:-99}" || rc=1
  done
  # Data-parallel over two processes on CUDA: NCCL where each has a GPU of its own, else Gloo, and it says which.
  train_run ddp $((stage_cap / 6)) --device cuda --steps 5 --batch 4 --nproc 2 || rc=1
  local backend
  backend=$(grep -o 'data-parallel over [0-9]* processes through .*' "$scratch/gpu-train/ddp.log" | head -1)
  detail+="; ${backend:-no data-parallel line}"
  # The CUDA checkpoint evaluated on the CPU: it loads there.
  within 60 "$build_dir/app/cli/stx" eval --model "$scratch/gpu-train/fp32" --data "$text_data" --windows 4 --device cpu || rc=1
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

# ---- 5b. CUDA sampling ---------------------------------------------------------------------------------------
stage_sample() {
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  local stx="$build_dir/app/cli/stx" rc=0 rates=() kind
  if [ "$have_device" = 0 ]; then
    # Here the CPU side: --device cuda must be refused in one line with exit 2.
    "$stx" sample text --model text --prompt "In the beginning" --max-bytes 10 --device cuda \
      --out "$scratch/gpu-sample.txt" --force >>"$log" 2>&1
    rc=$?
    [ $rc = 2 ] || { note="--device cuda without a device exited $rc, not 2"; return 1; }
    no_device "--device cuda refused with exit 2"
    return
  fi
  for kind in text audio; do
    local args=(--model "$kind" --seed 1 --device cuda --force)
    if [ $kind = text ]; then
      args+=(--prompt "In the beginning" --max-bytes 1000 --out "$scratch/gpu-sample.txt")
    else
      args+=(--seconds 1 --out "$scratch/gpu-sample.wav")
    fi
    # One sample, then four at once: where a GPU's width pays.
    for n in 1 4; do
      within $((stage_cap / 4)) "$stx" sample "$kind" "${args[@]}" --n $n || rc=1
      rates+=("$kind x$n: $(grep -o '[0-9.]* tok/s' "$log" | tail -1)")
    done
  done
  # Automatic's measured choice for one audio sample, and the reason it prints.
  within $((stage_cap / 5)) "$stx" sample audio --model audio --seed 1 --seconds 1 --device auto --force \
    --out "$scratch/gpu-sample-auto.wav" || rc=1
  rates+=("audio x1 auto: $(grep -o 'device: .*' "$log" | tail -1)")
  note="${rates[*]}"
  return $rc
}

# ---- 6. the benchmarks: attention against LibTorch's dense attention; generation on the CPU and the GPU -----
# run_bench JSON ARGS...: stx-bench ARGS, its rows written to OUT_DIR/JSON and kept as the stage's figures.
run_bench() {
  local json=$1
  shift
  [ "$built_torch" = 1 ] || { note="stx-bench was not built"; return 3; }
  [ "$have_device" = 1 ] || { no_device; return; }
  within "$stage_cap" "$build_dir/bench/stx-bench" "$@" --json "$out_dir/$json"
  local rc=$?
  note="stx-bench $* exit $rc"
  [ -f "$out_dir/$json" ] && figures=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$out_dir/$json" 2>/dev/null)
  [ $rc = 0 ]
}

stage_bench() { run_bench bench-attention.json attention --device cuda --n 4096,16384; }

# The CPU decoder beside the GPU's host loop and its device-resident blocks, eager and replayed from a CUDA
# graph, on the same machine. audio-long with the expert of order 512 is the bundled audio model's shape
# (issue 44's target); without it, the network alone.
stage_bench_sample() {
  run_bench bench-sample.json sample --model audio-long,text,image --expert 0,512 --batch 1,16 \
    --device cpu,cuda --kv-cache float16 --no-dense --seconds 0.4
}

# ---- 7. every second left: the bundled models trained, evaluated and exported under OUT_DIR/home ----------
stage_home_training() {
  [ "$built_torch" = 1 ] || { note="stx was not built"; return 3; }
  local args=(--stx "$build_dir/app/cli/stx" --work "$scratch" --out "$out_dir"
    --until $((started + deadline - 10)))
  if [ "$have_device" = 1 ]; then
    args+=(--device cuda)
  elif [ "$dry_run" = 1 ]; then
    args+=(--device cpu --steps 1)  # the dry run: one CPU step of each model, to prove the way home
  else
    no_device
    return
  fi
  "$root/tools/gpu-train-home.sh" "${args[@]}" >"$out_dir/home-training.log" 2>&1
  local rc=$?
  cat "$out_dir/home-training.log" >>"$log"
  note=$(tr '\n' ';' <"$out_dir/home-training.log")
  figures=$(python3 -c 'import glob,json,sys; print(json.dumps({r["kind"]: r for r in (json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/home/*/record.json")))}))' "$out_dir")
  return $rc
}

say "started $(date -u +%FT%TZ) on $(hostname), $cores cores, deadline ${deadline} s, dry run $dry_run, train only $train_only"
run_stage versions 30 stage_versions
unpack_prebuilt || say "the carried prebuilt files would not unpack"
if [ "$no_build" = 0 ]; then
  run_stage deps 30 stage_deps
  run_stage configure 120 stage_configure
fi
if prebuilt_usable; then
  kernel_tests="$unpacked/stx_cuda_tests"
  say "prebuilt kernel tests: $(tr '\n' ';' <"$prebuilt/MANIFEST" 2>/dev/null)"
else
  say "no prebuilt kernel tests that run here: they are built first"
fi
[ "$no_build" = 0 ] && [ -f "$build_dir/build.ninja" ] && start_build
if [ "$train_only" = 0 ]; then
  # Without a prebuilt binary the stage waits for the kernels' part of the build (about 100 s on 16 cores).
  run_stage kernel-tests $([ -n "$kernel_tests" ] && echo 90 || echo 240) stage_kernel_tests
  run_stage memcheck 60 stage_memcheck
fi
run_stage build-torch 330 stage_build_torch
if [ "$train_only" = 0 ]; then
  # The attention benchmark first (issues 43 and 44: the figures these minutes are for), then the model's
  # CUDA tests, generation's benchmark and runs, and training parity.
  run_stage bench-attention 75 stage_bench
  run_stage model-tests 60 stage_model_tests
  run_stage bench-sample 75 stage_bench_sample
  run_stage sample 60 stage_sample
  run_stage train-parity 90 stage_train
fi
run_stage home-training 100000 stage_home_training
say "finished in $(($(date +%s) - started)) s; summary in $summary"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["ok"] else 1)' "$summary"
