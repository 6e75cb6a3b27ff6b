# Sourced by tools/gpu-check.sh: the bookkeeping of its stages (the summary rewritten after each, the time
# each may take) and the GoogleTest runner that survives a crash. Expects root, log, summary, records, dry_run,
# deadline and started to be set.

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

