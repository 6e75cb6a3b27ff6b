#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan and UBSan) and runs each in turn, starting from
# the seed files in tests/fuzz/seeds. Exits non-zero if any target found a crash, a sanitizer report or an
# unexpected exception; the input that did it is kept in the work folder (crash-*, printed at the end).
#
#   tools/fuzz.sh [--seconds N] [--work DIR] [--only NAME]...
#
#   --seconds N   run each target for N seconds (default 600: the length docs/reliability.md asks for)
#   --work DIR    where the growing corpora and any crash inputs are kept (default build/fuzz-work)
#   --only NAME   run only this target (config_json, safetensors, image, audio, text); may repeat
#
# Needs clang and the same Debian packages as the build (installer/install-deps.sh); no LibTorch.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds=600
work="$root/build/fuzz-work"
only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -lt 1 ]]; then
  echo "fuzz.sh: --seconds needs a whole number of seconds, not '$seconds'" >&2
  exit 2
fi
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is needed (apt-get install clang)" >&2; exit 2; }

build="$root/build/fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DSTX_BUILD_FUZZERS=ON -DSTX_CUDA=OFF -DSTX_BUILD_APP=OFF \
  -DSTX_BUILD_BENCH=OFF -DSTX_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"

targets=(config_json safetensors image audio text)
[[ ${#only[@]} -gt 0 ]] && targets=("${only[@]}")
failed=()
for name in "${targets[@]}"; do
  program="$build/tests/fuzz/fuzz_$name"
  [[ -x "$program" ]] || { echo "fuzz.sh: no target '$name' (built: $(ls "$build/tests/fuzz" | grep '^fuzz_' | tr '\n' ' '))" >&2; exit 2; }
  corpus="$work/$name/corpus"
  mkdir -p "$corpus" "$work/$name/crashes"
  echo "== fuzz_$name: $seconds s"
  # The seeds go in read-only (a second corpus folder); what the fuzzer finds is added to the first.
  # -rss_limit_mb: a parser that asks for gigabytes on a small input is a bug too.
  if (cd "$work/$name" && "$program" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
        -artifact_prefix="$work/$name/crashes/" -print_final_stats=1 "$corpus" "$root/tests/fuzz/seeds/$name" \
        >"$work/$name/log" 2>&1); then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$work/$name/log" | sed 's/^/   /'
    echo "   clean; corpus $(ls "$corpus" | wc -l) inputs"
  else
    echo "   FAILED: $(ls "$work/$name/crashes" | head -3 | tr '\n' ' ')(log: $work/$name/log)"
    tail -30 "$work/$name/log" | grep -E "ERROR|SUMMARY|runtime error|terminate|what\(\)" | head -5 | sed 's/^/   /'
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: every target ran $seconds s clean"
