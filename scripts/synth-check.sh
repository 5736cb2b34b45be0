#!/usr/bin/env bash
# End-to-end board synthesis as CI runs it: `mroce synth --board BOARD --json` (yosys ->
# nextpnr -> pack, bitstream under target/synth/BOARD/), then checks that a bitstream was
# written with timing met and prints the figures. Needs a release build and, for boards with
# the control core, the firmware image (scripts/test.sh builds both first).
# Usage: scripts/synth-check.sh [BOARD [MROCE-SYNTH-OPTIONS...]]   (default ulx3s, run outside CI;
# CI builds alchitry-cu with --seeds 4, then colorlight-i5)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
board=${1:-ulx3s}
shift || true
out="target/synth/$board"
mkdir -p "$out"
status=0
./target/release/mroce synth --board "$board" "$@" --json >"$out/summary.json" || status=$?
cat "$out/summary.json"
python3 - "$out/summary.json" "$status" <<'EOF'
import json, os, sys
path, status = sys.argv[1], int(sys.argv[2])
try:
    s = json.loads(open(path).read().strip().splitlines()[-1])
except (IndexError, ValueError) as e:
    sys.exit(f"synth-check: no JSON summary from mroce synth (exit {status}): {e}")
problems = []
if status != 0:
    problems.append(f"mroce synth exited {status}")
if not s.get("timing_met"):
    problems.append(f"timing not met: Fmax {s.get('fmax_mhz')} MHz, target {s.get('target_mhz')} MHz")
if not (s.get("bitstream") and os.path.isfile(s["bitstream"]) and os.path.getsize(s["bitstream"]) > 0):
    problems.append(f"no bitstream at {s.get('bitstream')}")
print(f"synth-check {s.get('board')}: {s.get('luts')}/{s.get('luts_total')} LUTs, {s.get('ffs')} FFs, "
      f"{s.get('brams')} block RAMs, Fmax {s.get('fmax_mhz')} MHz (target {s.get('target_mhz')}), "
      f"seed {s.get('seed')} ({s.get('seeds_tried')} tried), {s.get('wall_s', 0):.0f} s")
if problems:
    sys.exit("synth-check: " + "; ".join(problems))
EOF
