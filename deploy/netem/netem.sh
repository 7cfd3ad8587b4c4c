#!/usr/bin/env bash
# Network testbed for the data-plane benchmarks: N hosts in network
# namespaces on this machine, joined by veth pairs to one bridge, each
# host's egress shaped by tc netem (delay, rate, loss). Root only.
#
#   deploy/netem/netem.sh check                      exit 0 when root, `ip netns` and sch_netem work
#   deploy/netem/netem.sh up [--nodes 3] [--rate 500mbit] [--delay 0.5ms] [--loss 0%]
#   deploy/netem/netem.sh exec I -- COMMAND...       run COMMAND in host I (0-based)
#   deploy/netem/netem.sh status
#   deploy/netem/netem.sh down
#
# Host I is namespace dmoe-nI with address 10.77.0.(I+1)/24 on interface
# eth0; the bridge dmoe-br0 in the root namespace has 10.77.0.254, so
# processes outside the namespaces reach every host. The delay applies to
# each host's egress, so a round trip between two hosts sees it twice
# (--delay 0.5ms: RTT about 1 ms), as between two machines whose links each
# add 0.5 ms. Defaults follow the paper's testbed: 500 Mbit/s, 0.5 ms.
set -euo pipefail

PREFIX=dmoe-n
BRIDGE=dmoe-br0
SUBNET=10.77.0

die() { echo "netem.sh: $*" >&2; exit 1; }

check() {
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces and tc)"
  command -v ip > /dev/null || die "needs iproute2 (ip)"
  command -v tc > /dev/null || die "needs iproute2 (tc)"
  local probe=dmoe-probe$$
  ip netns add "$probe" 2> /dev/null || die "cannot create network namespaces (ip netns add)"
  local ok=0
  ip netns exec "$probe" ip link add dmoe-pv0 type veth peer name dmoe-pv1 2> /dev/null &&
    ip netns exec "$probe" tc qdisc add dev dmoe-pv0 root netem delay 1ms 2> /dev/null && ok=1
  ip netns del "$probe" 2> /dev/null || true
  [[ $ok -eq 1 ]] || die "the kernel has no sch_netem (tc qdisc netem: unknown qdisc kind)"
  echo "netem.sh: root, network namespaces and sch_netem available"
}

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep "^${PREFIX}[0-9]" || true); do
    ip netns del "$ns" || true
  done
  ip link del "$BRIDGE" 2> /dev/null || true
}

up() {
  local nodes=3 rate=500mbit delay=0.5ms loss=0%
  while [[ $# -gt 0 ]]; do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      *) die "unknown option $1 (see the top of this script)" ;;
    esac
  done
  [[ $nodes -ge 1 && $nodes -le 250 ]] || die "--nodes must be in 1..250"
  down
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for ((i = 0; i < nodes; i++)); do
    local ns="$PREFIX$i" host="dmoe-h$i" peer="dmoe-b$i"
    ip netns add "$ns"
    ip link add "$host" type veth peer name "$peer"
    ip link set "$peer" master "$BRIDGE" up
    ip link set "$host" netns "$ns"
    ip netns exec "$ns" ip link set "$host" name eth0
    ip netns exec "$ns" ip addr add "$SUBNET.$((i + 1))/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" loss "$loss"
  done
  echo "netem.sh: $nodes hosts up ($SUBNET.1..$SUBNET.$nodes), egress netem delay $delay rate $rate loss $loss"
}

status() {
  ip -br addr show "$BRIDGE" 2> /dev/null || echo "no testbed (run: netem.sh up)"
  for ns in $(ip netns list | awk '{print $1}' | grep "^${PREFIX}[0-9]" || true); do
    echo "$ns: $(ip netns exec "$ns" ip -br addr show eth0 | awk '{print $3}')" \
      "$(ip netns exec "$ns" tc qdisc show dev eth0 | head -1)"
  done
}

run_in() {
  local i=$1; shift
  [[ ${1:-} == "--" ]] && shift
  exec ip netns exec "$PREFIX$i" "$@"
}

case ${1:-} in
  check) check ;;
  up) shift; check > /dev/null; up "$@" ;;
  down) down ;;
  status) status ;;
  exec) shift; run_in "$@" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
