#!/usr/bin/env bash
# kube-proxy-peer.sh measures upstream kube-proxy (iptables mode) on the input of
# internal/proxy's BenchmarkFullSync and BenchmarkPartialSync: N ClusterIP
# Services with one TCP port, each with an EndpointSlice of 2 ready endpoints,
# one of them on kube-proxy's node. It is the side-by-side peer of
#
#   go test -run '^$' -bench 'FullSync|PartialSync' -count 3 ./internal/proxy/
#
# Usage (as root, from the repository, kube-proxy built by build-peer.sh):
#
#   internal/e2e/bench/kube-proxy-peer.sh [N ...]     # default 1000 5000 10000
#
# For each N, in a fresh private network namespace orch-kpbench-$$ (a loopback
# and an interface kp0 holding the node IP; deleted at exit, so the host's
# iptables are never touched):
#
#   1. `orch server --disable-agent` runs inside the namespace (its apiserver on
#      the namespace's own loopback; no agent, so no orch proxy writes rules);
#   2. svcload (cmd/svcload) creates the N Services, their EndpointSlices and
#      the Node kube-proxy runs as;
#   3. RUNS times (default 3): the namespace's iptables are emptied, kube-proxy
#      starts, and the script records
#        - its first full sync, from kube-proxy's own histogram
#          kubeproxy_sync_full_proxy_rules_duration_seconds (_sum/_count, IPv4),
#          and the rules it wrote (`iptables-save | grep -c '^-A'`);
#        - one endpoint change (the first endpoint of Service N/2 moves), made
#          at least 1.5 s after kube-proxy's last sync so that its
#          --iptables-min-sync-period (default 1s) does not hold it back: the
#          duration of the sync that follows (kubeproxy_sync_proxy_rules_
#          duration_seconds, full or partial as kube-proxy chose) and the time
#          from the update request to the end of that sync (kube-proxy's
#          kubeproxy_sync_proxy_rules_last_timestamp_seconds);
#      then kube-proxy is stopped.
#
# kube-proxy runs dual-stack when ip6tables works (it does in the namespace):
# its IPv6 proxier syncs too, with no Services; every figure is the IPv4
# proxier's (ip_family="IPv4"). Between sizes the whole namespace and orch's
# data go; kube-proxy's and orch's logs stay in $WORK (printed) for a look
# afterwards. Lines go to stdout and to $OUT (default /tmp/kube-proxy-peer.txt).
#
# Measure on a quiet machine; with the e2e tests around, under their lock:
#
#   flock -o /tmp/orch-e2e.lock internal/e2e/bench/kube-proxy-peer.sh
set -euo pipefail

cd "$(dirname "$0")/../../.."
ORCH_BIN=${ORCH_BIN:-$PWD/bin/orch}
KUBE_PROXY_BIN=${KUBE_PROXY_BIN:-/tmp/orch-bench-peer/bin/kube-proxy}
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/kube-proxy-peer.txt}
GO=${GO:-go}
NODE=kp-node
NODE_IP=10.199.0.2
NS=orch-kpbench-$$
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 5000 10000)

[ "$(id -u)" = 0 ] || { echo "kube-proxy-peer.sh: needs root (ip netns)" >&2; exit 1; }
for b in "$ORCH_BIN" "$KUBE_PROXY_BIN"; do
	[ -x "$b" ] || { echo "kube-proxy-peer.sh: $b missing (make build; build-peer.sh)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/kpbench.XXXXXX)
SVCLOAD=$WORK/svcload
$GO build -o "$SVCLOAD" ./internal/e2e/bench/cmd/svcload

# Processes this script started, stopped (by pid) at exit with the namespace.
server_pid=
proxy_pid=
stop() { # stop PID: TERM, then KILL after 10 s
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null || return 0
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
cleanup() {
	stop "$proxy_pid"
	stop "$server_pid"
	ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_ns() { ip netns exec "$NS" "$@"; }

# flush_iptables empties every table kube-proxy writes, IPv4 and IPv6, in the
# namespace only.
flush_iptables() {
	for cmd in iptables ip6tables; do
		for t in nat filter mangle; do
			in_ns "$cmd" -t "$t" -F
			in_ns "$cmd" -t "$t" -X
		done
	done
}

say() { echo "$*" | tee -a "$OUT"; }
say "# kube-proxy-peer.sh $(date -u +%FT%TZ) $("$KUBE_PROXY_BIN" --version) runs=$RUNS work=$WORK"

for n in "${SIZES[@]}"; do
	# A fresh namespace and a fresh orch server per size.
	ip netns del "$NS" 2>/dev/null || true
	ip netns add "$NS"
	in_ns ip link set lo up
	# This kernel has no dummy driver, so the node's interface is one end of a
	# veth pair whose both ends stay in the namespace.
	in_ns ip link add kp0 type veth peer name kp1
	in_ns ip addr add "$NODE_IP/24" dev kp0
	in_ns ip link set kp1 up
	in_ns ip link set kp0 up
	in_ns ip route add default dev kp0

	data=$WORK/orch-$n
	mkdir -p "$data"
	# ip netns exec execs the command, so $! is the server's own pid (not so
	# through the in_ns function, which would fork a subshell).
	ip netns exec "$NS" "$ORCH_BIN" server --disable-agent --data-dir "$data" \
		--write-kubeconfig "$data/kubeconfig" --https-listen-port 6443 \
		--advertise-address "$NODE_IP" --node-ip "$NODE_IP" >"$data/server.log" 2>&1 &
	server_pid=$!

	# The server is up when svcload can create; create skips what exists.
	for i in $(seq 120); do
		if [ -s "$data/kubeconfig" ] && in_ns "$SVCLOAD" create -kubeconfig "$data/kubeconfig" \
			-n "$n" -node "$NODE" -node-ip "$NODE_IP" >"$data/create.out" 2>&1; then
			break
		fi
		kill -0 "$server_pid" 2>/dev/null || { cat "$data/server.log" >&2; exit 1; }
		[ "$i" -lt 120 ] || { cat "$data/create.out" >&2; exit 1; }
		sleep 1
	done
	say "services=$n $(cat "$data/create.out")"

	for run in $(seq "$RUNS"); do
		flush_iptables
		log=$WORK/kube-proxy-$n-$run.log
		ip netns exec "$NS" "$KUBE_PROXY_BIN" --kubeconfig "$data/kubeconfig" --proxy-mode iptables \
			--hostname-override "$NODE" --cluster-cidr 10.42.0.0/16 \
			--metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256 \
			--conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 \
			--conntrack-tcp-timeout-close-wait 0 --v=2 >"$log" 2>&1 &
		proxy_pid=$!
		full=$(in_ns "$SVCLOAD" wait-full -timeout 5m) || { tail -30 "$log" >&2; exit 1; }
		rules=$(in_ns iptables-save | grep -c '^-A' || true)
		nat=$(in_ns iptables-save -t nat | grep -c '^-A' || true)
		chg=$(in_ns "$SVCLOAD" change -kubeconfig "$data/kubeconfig" -n "$n" -timeout 5m) || { tail -30 "$log" >&2; exit 1; }
		say "services=$n run=$run $full iptables_save_rules=$rules nat=$nat"
		say "services=$n run=$run $chg"
		stop "$proxy_pid"
		proxy_pid=
	done

	stop "$server_pid"
	server_pid=
	rm -rf "$data/server"
done
