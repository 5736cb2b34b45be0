#!/usr/bin/env bash
# Where the Alchitry Cu's logic goes: yosys `synth_ice40` cell counts (LUT4, flip-flops, carry,
# block RAM) of the small configuration's blocks, of `transport_core` with its CSR bus tied off
# as the board's self-test ties it, and of the board top with `transport_core` as a black box
# (the self-test, the UART reporter, the PLL), with `mroce synth`'s options (`synth_ice40 -abc9`).
# `mroce synth --board alchitry-cu` gives the placed total; this splits it
# (fpga-boards/alchitry-cu/README.md).
# Usage: scripts/ice40-breakdown.sh [OUT_DIR]   (default target/ice40-breakdown)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-target/ice40-breakdown}
command -v yosys >/dev/null || { echo "ice40-breakdown: yosys not found (apt-get install yosys, or scripts/setup.sh)" >&2; exit 2; }
mkdir -p "$out"
cargo run -q --release -p mroce-hdl --features config-small --target-dir target/config-small \
  --example emit_verilog -- "$out" >/dev/null
cp fpga-boards/common/mroce_bist.v fpga-boards/common/mroce_uart_report.v fpga-boards/common/mroce_selftest.v \
  fpga-boards/alchitry-cu/mroce_alchitry_cu.v "$out/"
# transport_core's ports, as a wrapper that ties the CSR bus off and as a black-box stub
python3 - "$out" <<'EOF'
import re, sys
d = sys.argv[1]
s = open(f"{d}/transport_core.v").read()
i = s.index("module transport_core(")
j = s.index(");", i)
ports = [p.strip() for p in s[i + len("module transport_core("):j].split(",")]
decl = {}
for m in re.finditer(r"^\s*(input|output)\s+(?:wire|reg)?\s*(\[[^\]]+\])?\s*([\w$]+)\s*;", s[j:], re.M):
    decl.setdefault(m.group(3), (m.group(1), m.group(2) or ""))
io, conn, stub = [], [], []
for p in ports:
    direction, width = decl[p]
    stub.append(f"{direction} {width} {p};")
    q = p.replace("$", "_")
    if p in ("csr_addr", "csr_wdata", "csr_we"):
        conn.append(f".{p}(0)")
    elif p in ("csr_rdata", "irq"):
        conn.append(f".{p}()")
    else:
        io.append(f"{direction} wire {width} {q}")
        conn.append(f".\\{p} ({q})" if "$" in p else f".{p}({q})")
open(f"{d}/core_tied.v", "w").write(
    "module core_tied(\n" + ",\n".join(io) + ");\ntransport_core u(" + ",\n".join(conn) + ");\nendmodule\n")
open(f"{d}/core_blackbox.v", "w").write(
    "(* blackbox *)\n" + s[i:j + 2] + "\n" + "\n".join(stub) + "\nendmodule\n")
EOF
cells() { # cells NAME LOG: one table row from a yosys `stat`
  awk -v n="$1" '/SB_LUT4/ {l += $2} /SB_DFF/ {f += $2} /SB_CARRY/ {c += $2} /SB_RAM40_4K/ {r += $2}
    END {printf "| %s | %d | %d | %d | %d |\n", n, l, f, c, r}' "$2"
}
syn() { # syn NAME TOP FILES...: synthesise for iCE40, print the row
  local name=$1 top=$2; shift 2
  (cd "$out" && yosys -q -p "read_verilog -lib +/ice40/cells_sim.v; read_verilog -sv -I. $*; \
     synth_ice40 -abc9 -top $top; tee -q -o $name.stat stat" >"$name.log" 2>&1) ||
    { echo "ice40-breakdown: yosys failed on $name (see $out/$name.log)" >&2; exit 1; }
  cells "$name" "$out/$name.stat"
}
echo "| part (small configuration, yosys synth_ice40) | LUT4 | flip-flops | carry | block RAM |"
echo "|---|---|---|---|---|"
for b in rx_tracker_compact tx_scoreboard_compact path_selector_compact; do
  syn "$b" "$b" "$b.v"
done
syn core_tied core_tied transport_core.v core_tied.v
syn selftest_without_core mroce_alchitry_cu mroce_defines.vh core_blackbox.v mroce_bist.v mroce_uart_report.v \
  mroce_selftest.v mroce_alchitry_cu.v
syn board mroce_alchitry_cu mroce_defines.vh transport_core.v mroce_bist.v mroce_uart_report.v mroce_selftest.v \
  mroce_alchitry_cu.v
