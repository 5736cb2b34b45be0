#!/usr/bin/env bash
# Build the soft-core firmware image (PicoRV32, riscv32im-unknown-none-elf) and report its
# section sizes with the in-repo ELF reader (`mroce-firmware size`, no extra tools needed).
# Usage: scripts/firmware-size.sh [--json]
# Fails if the image does not fit the memory map, or exceeds the budget of issue 6
# (.text + .rodata <= 32 KiB, .data + .bss <= 16 KiB at 64 connections), or if a panic path
# (a core::panicking symbol) is left in the optimised image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

TARGET=riscv32im-unknown-none-elf
TEXT_BUDGET=$((32 * 1024))
RAM_BUDGET=$((16 * 1024))
json=0
case "${1:-}" in
  --json) json=1 ;;
  "") ;;
  *) echo "usage: $0 [--json]" >&2; exit 2 ;;
esac

if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  echo "rust target $TARGET missing: rustup target add $TARGET (scripts/setup.sh does it)" >&2
  exit 1
fi
tgt=${CARGO_TARGET_DIR:-target}
cargo build -q -p mroce-firmware --target "$TARGET" --release
elf="$tgt/$TARGET/release/mroce-firmware"
out=$(cargo run -q --release -p mroce-firmware -- size "$elf" --json)
if ((json)); then
  echo "$out"
else
  cargo run -q --release -p mroce-firmware -- size "$elf"
fi
# the budget check reads the JSON line: {"file":..,"text":N,"rodata":N,"data":N,"bss":N,...}
field() { sed -E "s/.*\"$1\":([0-9]+).*/\1/" <<<"$out"; }
code=$(($(field text) + $(field rodata)))
ram=$(($(field data) + $(field bss)))
if ((code > TEXT_BUDGET || ram > RAM_BUDGET)); then
  echo "over budget: code $code B (<= $TEXT_BUDGET), static RAM $ram B (<= $RAM_BUDGET)" >&2
  exit 1
fi
# the firmware never panics on hardware values: the optimised image has no panic path left
if (($(field panic_symbols) > 0)); then
  echo "the image has $(field panic_symbols) core::panicking symbols (a reachable panic)" >&2
  exit 1
fi
((json)) || echo "within budget: code $code B <= $TEXT_BUDGET B, static RAM $ram B <= $RAM_BUDGET B"
