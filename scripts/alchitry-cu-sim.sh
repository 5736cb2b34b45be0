#!/usr/bin/env bash
# The Alchitry Cu top as `mroce synth --board alchitry-cu` built it (the Verilog it wrote under
# target/synth/alchitry-cu/), simulated with Verilator until the self-test's "done" LED: the
# board's own parameters (1,024 messages, 16-bit counters and data words) and the small
# configuration's transport_core. Fails unless the self-test passes with every message intact.
# Usage: scripts/alchitry-cu-sim.sh [SRC_DIR]   (run `mroce synth --board alchitry-cu` first)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=${1:-target/synth/alchitry-cu}
command -v verilator >/dev/null || { echo "alchitry-cu-sim: verilator not found (apt-get install verilator, or scripts/setup.sh)" >&2; exit 2; }
[[ -f $src/transport_core.v ]] || { echo "alchitry-cu-sim: no $src/transport_core.v (run ./target/release/mroce synth --board alchitry-cu first)" >&2; exit 2; }
obj=target/alchitry-cu-sim
rm -rf "$obj"
tb=$PWD/fpga-boards/alchitry-cu/tb_mroce_alchitry_cu.v
(cd "$src" && verilator --binary --timing -Wno-fatal -Wno-lint -Wno-style -DVERILATOR -I. \
  --top-module tb_mroce_alchitry_cu --Mdir "$OLDPWD/$obj" -o simv \
  mroce_defines.vh "$tb" mroce_alchitry_cu.v mroce_selftest.v mroce_bist.v mroce_uart_report.v transport_core.v) \
  >"$obj.log" 2>&1 || { cat "$obj.log" >&2; echo "alchitry-cu-sim: Verilator failed" >&2; exit 1; }
line=$("$obj/simv" | grep "alchitry-cu self-test")
echo "$line"
[[ $line == *PASS* && $line == *err=00000000 ]] || { echo "alchitry-cu-sim: the self-test did not pass" >&2; exit 1; }
