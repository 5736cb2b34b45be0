#!/usr/bin/env bash
# Full check, as CI runs it: setup, release build of every target, tests, short fuzzing, and
# the smallest board synthesised end to end.
# Usage: scripts/test.sh [ARGS...]   (ARGS are appended to `cargo test`, e.g. a test name filter)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # runnable from any cwd

section() { printf '\n==== %s ====\n' "$*"; }
step() { # step TITLE CMD...: header, run, and report how long it took
  local title=$1 t0=$SECONDS; shift
  section "$title"
  "$@"
  echo "---- $title: ok ($((SECONDS - t0)) s)"
}

step "setup" bash scripts/setup.sh
step "build (release, all targets)" cargo build --workspace --all-targets --release
# lints every crate and target of the workspace; a warning fails the run (reuses the build's
# build-script outputs, so Verilator does not run again)
step "lint (clippy, warnings are errors)" cargo clippy --workspace --all-targets --release -- -D warnings
step "firmware image (riscv32imc) and section sizes" bash scripts/firmware-size.sh
step "test (release)" cargo test --workspace --release "$@"
# the release profile wraps on integer overflow; the model's own tests run once more in a debug
# build, where an overflow in any component's arithmetic panics (about 20 s)
step "model tests (debug build: overflow checks on)" cargo test -p mroce-model
step "fuzz (short, seeded)" bash scripts/fuzz-short.sh 20000
step "hardware configurations (reduced, small): model components and HDL blocks" bash scripts/config-check.sh
# the smallest board that holds the transport, end to end: Colorlight i5 (ECP5-25F), reduced
# configuration with its own firmware image (built under target/config-reduced); 8-15 minutes.
# The ULX3S (default configuration, 10-17 minutes) runs outside CI, which it pushed to ~81 of
# its 90 minutes: bash scripts/synth-check.sh ulx3s   (its SoC is still simulated as built in
# the tests above: tests/board_ulx3s.rs)
step "board synthesis (Colorlight i5: reduced configuration)" bash scripts/synth-check.sh colorlight-i5
section "all ok"
