#!/usr/bin/env bash
# Short, seeded runs of every cargo-fuzz target (CI). Long campaigns:
#   cd fuzz && cargo +nightly fuzz run <target>          (runs until stopped)
#   bash scripts/fuzz-campaign.sh 1800                  (every cosim_* target for 30 minutes, JSON figures)
# Usage: scripts/fuzz-short.sh [RUNS]   (default 20000 executions per target)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz"
runs=${1:-20000}
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "SKIP fuzz: cargo-fuzz or the nightly toolchain is missing (bash scripts/setup.sh installs them)"
  exit 0
fi
have_verilator=1
command -v "${MROCE_VERILATOR:-verilator}" >/dev/null 2>&1 || have_verilator=0
for t in $(cargo +nightly fuzz list); do
  # cosim_* targets run the Verilated blocks (mroce-cosim): they need Verilator at build time.
  # ASAN instruments only the Rust side; the Verilated C++ links uninstrumented, which ASAN accepts.
  if [[ $t == cosim_* ]] && ((!have_verilator)); then
    echo "SKIP fuzz $t: Verilator missing (sudo apt-get install verilator, or bash scripts/setup.sh)"
    continue
  fi
  # cosim_* targets compare safe Rust against uninstrumented C++: AddressSanitizer finds nothing
  # there and halves the speed, so they run without it (-s none); the decoders keep it.
  # The decoders need no hardware: built without the cosim feature, their AddressSanitizer
  # build does not verilate and compile every block a second time (~6 minutes of CI).
  san=address features=--no-default-features
  [[ $t == cosim_* ]] && san=none features=
  echo "fuzz $t: $runs runs, seed 1, sanitizer $san"
  if ! out=$(cargo +nightly fuzz run $features -s "$san" "$t" -- -runs="$runs" -seed=1 2>&1); then
    echo "$out" | tail -40
    echo "fuzz $t: FAILED (the crashing input is under fuzz/artifacts/$t/)"
    exit 1
  fi
  echo "$out" | grep -E "^Done" || true
done
