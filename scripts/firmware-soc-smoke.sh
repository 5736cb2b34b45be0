#!/usr/bin/env bash
# SoC smoke test of the soft-core firmware: PicoRV32 + RAM (the firmware image) + transport_core
# (generated Verilog) on its CSR bus, Verilated (verilator --binary --timing). A plane is failed
# by RTOs on its paths; the firmware, running on the core, must declare it down and move its
# paths, with FAULT = 0. Prints the cycles from the third RTO round to SET_PLANE_UP.
# Usage: scripts/firmware-soc-smoke.sh [CYCLES]   (default 1500000; about 1 minute here)
# Needs: the riscv32imc target, verilator >= 5 with a C++20 compiler, pythondata-cpu-picorv32.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CYCLES=${1:-1500000}
TARGET=riscv32imc-unknown-none-elf
tgt=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d /tmp/mroce-soc-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT

picorv32=$(python3 -c 'import pythondata_cpu_picorv32 as p; print(p.data_location)')/picorv32.v
[[ -f $picorv32 ]] || { echo "picorv32.v not found: pip install pythondata-cpu-picorv32" >&2; exit 1; }

cargo build -q -p mroce-firmware --target "$TARGET" --release
cargo run -q --release -p mroce-firmware -- hex "$tgt/$TARGET/release/mroce-firmware" "$work/fw.hex"
cargo run -q --release -- hdl verilog --out "$work/v" >/dev/null
verilator --binary --timing -Wno-fatal -Wno-lint -Wno-style -O2 --Mdir "$work/obj" \
  -DCYCLES="$CYCLES" -DGAP=60000 -DHEX="\"$work/fw.hex\"" --top-module tb \
  firmware/soc/tb_smoke.v "$picorv32" "$work/v/transport_core.v" -o tbsim >"$work/verilator.log" 2>&1 ||
  { tail -20 "$work/verilator.log" >&2; exit 1; }
out=$("$work/obj/tbsim" | grep '^RESULT')
echo "$out"
field() { sed -nE "s/.* $1=([0-9a-f]+).*/\1/p" <<<"$out"; }
[[ $out == "RESULT cycles="* ]] || { echo "the core stopped early" >&2; exit 1; }
[[ $(field fault) == 00000000 ]] || { echo "firmware fault $(field fault)" >&2; exit 1; }
down=$(field plane_down_cycle) rto3=$(field rto3_cycle)
((down > 0)) || { echo "plane 1 was never declared down" >&2; exit 1; }
(($(field moved) >= 3)) || { echo "the plane's paths were not moved" >&2; exit 1; }
echo "plane down $((down - rto3)) cycles after the third RTO round (poll loop on the core)"
