#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and reproduce the
# headline results (goodput under random loss on the multipath pipe, then the six fabric
# experiments on 64 hosts and 4 planes; mroce beside the RoCEv2 baseline in each).
# Usage: scripts/demo.sh [--seeds N]   Results also go to out/pipe-sweep.json and out/sim/*/
# (summary.json, CSV, SVG plots).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=5
if [ "${1:-}" = "--seeds" ] && [ -n "${2:-}" ]; then seeds=$2; fi

bash scripts/setup.sh
cargo build --release --bin mroce
mkdir -p out
echo
echo "== mroce vs RoCEv2 on the lossy multipath pipe: 16 paths x 25 Gb/s, 64 MiB, medians of $seeds seeds =="
./target/release/mroce pipe-sweep --losses 0,0.001,0.01,0.05,0.1 --seeds "$seeds"
./target/release/mroce pipe-sweep --losses 0,0.001,0.01,0.05,0.1 --seeds "$seeds" --json > out/pipe-sweep.json
echo
echo "== the same with 5% reordering and 2% duplication (integrity must stay ok) =="
./target/release/mroce pipe-sweep --losses 0,0.01,0.1 --seeds "$seeds" --transports mroce --reorder 0.05 --dup 0.02
echo
echo "== the fabric simulator: 64 hosts, 4 planes of leaf-spine, seed 1 (about 2 minutes) =="
for e in loss-sweep collectives planes plane-failure incast connections; do
    echo
    ./target/release/mroce sim "$e" --out "out/sim/$e"
done
echo
echo "JSON: out/pipe-sweep.json, out/sim/<experiment>/summary.json"
