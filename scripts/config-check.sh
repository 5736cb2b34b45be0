#!/usr/bin/env bash
# The reduced hardware configurations (SPEC.md §7.1.1) as CI checks them: the model's
# hardware-mapped components and every HDL block, built with mroce-model's config-reduced and
# config-small features, pass their tests against the model built the same way (rust-hdl
# simulation, directed cases and seeded random streams; the generated Verilog lints clean), and
# each configuration's Verilated blocks run in lockstep with its model and its board (SoC,
# firmware, self-test) passes its self-test. The small configuration's output FIFOs are block
# RAM (hdl/src/fifo_bram.rs) and its transport_core takes the compact blocks
# (hdl/src/*_compact.rs): Verilog that only this build produces, so it is Verilated too.
# Each configuration builds under target/config-<name>/ (where `mroce synth` also builds it).
# Usage: scripts/config-check.sh [reduced|small ...]   (default: both)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
configs=("$@")
((${#configs[@]})) || configs=(reduced small)
for c in "${configs[@]}"; do
  case $c in
    reduced | small) ;;
    *) echo "config-check: unknown configuration $c (reduced, small)" >&2; exit 2 ;;
  esac
  echo "-- configuration $c"
  # the model: components, properties and the loopback tests (not the wire-format golden frames,
  # which are the default configuration's)
  cargo test -q --release -p mroce-model --features "config-$c" --target-dir "target/config-$c" --lib --tests
  cargo test -q --release -p mroce-hdl --features "config-$c" --target-dir "target/config-$c"
  # the Verilated blocks in lockstep with the model (1,000,000 transactions for transport_core)
  cargo test -q --release -p mroce-cosim --features "config-$c" --target-dir "target/config-$c" --test lockstep
  # the board as built (PicoRV32 running this configuration's firmware, the self-test, the
  # UART report): the verdict line must say PASS with every message intact
  cargo build -q --release -p mroce-firmware --target riscv32im-unknown-none-elf --features "config-$c" \
    --target-dir "target/config-$c"
  cargo run -q --release -p mroce-cosim --features "config-$c" --target-dir "target/config-$c" \
    --example board_selftest -- "target/config-$c/riscv32im-unknown-none-elf/release/mroce-firmware"
done
