#!/usr/bin/env bash
# Long fuzzing campaign (not CI): each target runs for SECONDS on one core, one after the other,
# and appends one JSON line per target to target/fuzz-campaign/results.jsonl:
#   {"target", "sanitizer", "seconds", "executions", "exec_per_s", "finding", "corpus_units"}
# Usage: scripts/fuzz-campaign.sh [SECONDS] [TARGET...]   (default 1800 s, every cosim_* target)
# A finding stops that target: the input is under fuzz/artifacts/<target>/ (a cosim_* mismatch
# also prints its replay JSON; `mroce cosim replay FILE` reruns it). Exit status 1 if any target found one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
secs=${1:-1800}
shift || true
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "error: cargo-fuzz or the nightly toolchain is missing (bash scripts/setup.sh installs them)" >&2
  exit 2
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo +nightly fuzz list | grep '^cosim_')
fi
out="$root/target/fuzz-campaign"
mkdir -p "$out"
found=0
for t in "${targets[@]}"; do
  # same sanitizer choice as scripts/fuzz-short.sh
  san=address features=--no-default-features
  [[ $t == cosim_* ]] && san=none features=
  log="$out/$t.log"
  echo "fuzz campaign $t: ${secs} s, sanitizer $san, log $log" >&2
  cargo +nightly fuzz build $features -s "$san" "$t" >&2
  status=0
  cargo +nightly fuzz run $features -s "$san" "$t" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1 || status=$?
  # libFuzzer's final statistics: total executions and the average rate over the whole run
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  finding=false
  if ((status != 0)); then
    finding=true
    found=1
    grep -E "^(==|thread|artifact_prefix|Test unit written)" "$log" | head -20 >&2 || true
  fi
  line=$(printf '{"target":"%s","sanitizer":"%s","seconds":%s,"executions":%s,"exec_per_s":%s,"new_units":%s,"finding":%s}' \
    "$t" "$san" "$secs" "${execs:-0}" "${rate:-0}" "${units:-0}" "$finding")
  echo "$line" | tee -a "$out/results.jsonl"
done
exit "$found"
