#!/usr/bin/env bash
# Real kernel packet loss (and, optionally, ECN marking) between two mroce processes.
#
# Creates two network namespaces of its own joined by a veth pair (MTU 9000), adds nftables
# rules in each that drop a random fraction of incoming UDP 4791 datagrams
# (`numgen random mod 1000 < N drop`, so both directions are lossy: data and ACKs), runs
# `mroce udp listen` in one and `mroce udp send` in the other, and prints one JSON line per
# run:
#   {"loss_permille":N,"transport":"mroce","ecn_reroute":P|null,"ce_port_mask":M,
#    "nft_seen":S,"nft_dropped":D,"nft_ce_marked":C,
#    "listener":{...listen --json...},"sender":{...send --json...}}
# Everything it created is removed on exit (trap), whatever happens.
#
# Usage: scripts/netns-loss.sh [options]
#   --loss-permille LIST   drop N per mille of UDP 4791 datagrams, per run (default "0,10")
#   --transport LIST       transports to run for each loss (default "mroce,rocev2")
#   --bytes SIZE           payload per transfer (default 64MiB)
#   --paths N              paths per connection (default 16)
#   --planes N             planes (one address pair per plane on the veth; default 1)
#   --bin PATH             mroce binary (default: target/release/mroce, built if missing)
#   --rt-priority N        run both ends under SCHED_FIFO N (0 = normal; on a busy host
#                          scheduling delays otherwise look like loss to the transport)
#   --ce-port-mask M       set ECN CE on every data datagram reaching the listener whose UDP
#                          source port has (port & M) == 0, as a congested switch would on the
#                          routes those entropies hash to (M+1 a power of two: 1/(M+1) of the
#                          ports; default 0, no marking). Counted as "nft_ce_marked".
#   --ecn-reroute LIST     for mroce runs, one run per policy (`mroce udp send --ecn-reroute`),
#                          e.g. "every,one,off"; default: the sender's default, not passed
#   --send-args "ARGS"     extra arguments for `mroce udp send`
#   --listen-args "ARGS"   extra arguments for `mroce udp listen`
#   --probe                only check that this machine can run it (exit 0 or 77)
# Exit status: 0 all runs completed with integrity ok; 1 some run failed; 2 usage error;
# 77 this machine cannot run it (not root, no `ip netns`, no nft): the reason is on stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

losses="0,10"
transports="mroce,rocev2"
bytes="64MiB"
paths=16
planes=1
bin=""
send_args=""
listen_args=""
rt=0
probe=0
ce_mask=0
policies=""
while (($#)); do
  case "$1" in
    --loss-permille) losses=$2; shift 2 ;;
    --transport) transports=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --planes) planes=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --rt-priority) rt=$2; shift 2 ;;
    --ce-port-mask) ce_mask=$2; shift 2 ;;
    --ecn-reroute) policies=$2; shift 2 ;;
    --send-args) send_args=$2; shift 2 ;;
    --listen-args) listen_args=$2; shift 2 ;;
    --probe) probe=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "netns-loss.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

[[ $ce_mask =~ ^[0-9]+$ ]] && ((ce_mask < 65536)) || { echo "netns-loss.sh: --ce-port-mask wants 0..65535, got $ce_mask" >&2; exit 2; }

skip() { echo "netns-loss.sh: SKIP: $*" >&2; exit 77; }

# --- can this machine do it? ------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces and nftables)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v nft >/dev/null || skip "nftables (nft) is not installed"

tag="mrl$$"
nsl="${tag}l" # listener namespace
nss="${tag}s" # sender namespace
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null || true; done
  ip netns del "$nsl" 2>/dev/null || true
  ip netns del "$nss" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$nsl" 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
ip netns add "$nss" 2>/dev/null || skip "cannot create a second network namespace"
ip netns exec "$nsl" nft add table inet probe 2>/dev/null || skip "nftables does not work inside a namespace"
ip netns exec "$nsl" nft delete table inet probe
if ((probe)); then
  echo "netns-loss.sh: this machine can run the real-loss tests" >&2
  exit 0
fi

# --- the binary -------------------------------------------------------------------------
if [[ -z $bin ]]; then
  bin=target/release/mroce
  [[ -x $bin ]] || cargo build --release --bin mroce >&2
fi
[[ -x $bin ]] || { echo "netns-loss.sh: $bin is not executable" >&2; exit 2; }
bin=$(realpath "$bin")

# --- network: veth pair, addresses per plane, MTU 9000 ----------------------------------
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}a" netns "$nsl"
ip link set "${tag}b" netns "$nss"
for ns in "$nsl" "$nss"; do ip -n "$ns" link set lo up; done
ip -n "$nsl" link set "${tag}a" mtu 9000 up
ip -n "$nss" link set "${tag}b" mtu 9000 up
for ((p = 0; p < planes; p++)); do
  ip -n "$nsl" addr add "10.77.$p.1/24" dev "${tag}a"
  ip -n "$nss" addr add "10.77.$p.2/24" dev "${tag}b"
done
# Wait for the veth to be usable (DAD does not apply to IPv4; the link comes up at once).
for _ in $(seq 50); do
  ip netns exec "$nss" ping -c1 -W1 10.77.0.1 >/dev/null 2>&1 && break
  sleep 0.1
done

set_loss() { # set_loss N: (re)write the drop rules in both namespaces
  local n=$1 ns
  for ns in "$nsl" "$nss"; do
    ip netns exec "$ns" nft delete table inet mroce 2>/dev/null || true
    ip netns exec "$ns" nft add table inet mroce
    ip netns exec "$ns" nft add chain inet mroce in '{ type filter hook input priority 0; policy accept; }'
    ip netns exec "$ns" nft add rule inet mroce in udp dport 4791 counter
    if ((n > 0)); then
      ip netns exec "$ns" nft add rule inet mroce in udp dport 4791 numgen random mod 1000 "<" "$n" counter drop
    fi
  done
  # Data reaches the listener; marking there leaves the ACKs alone, as a congested forward
  # route would. The ICRC masks the ECN bits, so the frame stays valid.
  if ((ce_mask > 0)); then
    ip netns exec "$nsl" nft add rule inet mroce in udp dport 4791 udp sport "&" "$ce_mask" == 0 ip ecn set ce counter
  fi
}

nft_counts() { # prints "seen dropped ce_marked" summed over both namespaces
  local seen=0 dropped=0 marked=0 ns line pk
  for ns in "$nsl" "$nss"; do
    while read -r line; do
      pk=$(sed -n 's/.*counter packets \([0-9]*\).*/\1/p' <<<"$line")
      [[ -z $pk ]] && continue
      if [[ $line == *drop* ]]; then
        dropped=$((dropped + pk))
      elif [[ $line == *"ecn set"* ]]; then
        marked=$((marked + pk))
      else
        seen=$((seen + pk))
      fi
    done < <(ip netns exec "$ns" nft list chain inet mroce in)
  done
  echo "$seen $dropped $marked"
}

status=0
IFS=, read -ra loss_list <<<"$losses"
IFS=, read -ra tr_list <<<"$transports"
for loss in "${loss_list[@]}"; do
  for tr in "${tr_list[@]}"; do
    # the re-route policy is mroce's; other transports run once
    pol_list=("")
    if [[ -n $policies && $tr == mroce ]]; then IFS=, read -ra pol_list <<<"$policies"; fi
    for pol in "${pol_list[@]}"; do
      set_loss "$loss"
      pol_args=()
      [[ -n $pol ]] && pol_args=(--ecn-reroute "$pol")
      lout=$(mktemp)
      lerr=$(mktemp)
      # shellcheck disable=SC2086
      ip netns exec "$nsl" "$bin" udp listen --bind 10.77.0.1:4791 --transport "$tr" --paths "$paths" \
        --planes "$planes" --transfers 1 --exit-after-s 300 --rt-priority "$rt" --json $listen_args >"$lout" 2>"$lerr" &
      lpid=$!
      pids=("$lpid")
      sleep 0.2
      serr=$(mktemp)
      # shellcheck disable=SC2086
      sout=$(ip netns exec "$nss" "$bin" udp send --to 10.77.0.1:4791 --local 10.77.0.2 --transport "$tr" \
        --bytes "$bytes" --paths "$paths" --planes "$planes" --rt-priority "$rt" "${pol_args[@]}" --json \
        $send_args 2>"$serr") || status=1
      wait "$lpid" || status=1
      pids=()
      read -r seen dropped marked < <(nft_counts)
      lline=$(grep -v '"kind":"blast"' "$lout" | tail -n1)
      [[ -n $lline ]] || lline=null
      [[ -n $sout ]] || sout=null
      [[ $sout == *'"integrity":"ok"'* ]] || status=1
      polj=null
      [[ -n $pol ]] && polj="\"$pol\""
      printf '{"loss_permille":%s,"transport":"%s","ecn_reroute":%s,"ce_port_mask":%s,"nft_seen":%s,"nft_dropped":%s,"nft_ce_marked":%s,"listener":%s,"sender":%s}\n' \
        "$loss" "$tr" "$polj" "$ce_mask" "$seen" "$dropped" "$marked" "$lline" "$sout"
      if [[ -s $serr || -s $lerr ]]; then
        sed "s/^/[send $tr${pol:+ $pol} loss=$loss] /" "$serr" >&2
        sed "s/^/[listen $tr${pol:+ $pol} loss=$loss] /" "$lerr" >&2
      fi
      rm -f "$lout" "$lerr" "$serr"
    done
  done
done
exit "$status"
