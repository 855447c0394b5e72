#!/usr/bin/env bash
# make conformance: run upstream's Kubernetes conformance suite (e2e.test at
# the version of k8s.io/api in go.mod) against a fresh two-node orch cluster
# on this machine, then write docs/conformance.md and print the summary.
#
#   [FOCUS=regexp] [LABELS='Conformance'] [PROCS=2] [NODE_ARGS='--proxy-mode nftables']
#   [SERVER_ARGS='--disable ingress'] [DUAL_STACK=1] [SUITE=gateway] scripts/conformance.sh
#
# SUITE=gateway runs Gateway API's conformance suite instead
# (sigs.k8s.io/gateway-api/conformance at the version of orch's go.mod,
# profile GATEWAY-HTTP, GatewayClass orch) against the same cluster, its
# server started with --gateway-api; FOCUS is then one test's name
# (ShortName, e.g. HTTPRouteSimpleSameNamespace), GATEWAY_FEATURES the
# features to test besides the profile's core ones (default: those the
# GatewayClass orch lists in its status). Its test images (echo-basic and
# the CoreDNS of its UDP tests) are built from the module proxy. The
# report (report.yaml and the test log) stays in CONFORMANCE_RUN/gateway;
# docs/conformance.md is not written.
#
# Runs as root. Steps:
#  1. Once, cached in CONFORMANCE_CACHE/<version> (default
#     /var/cache/orch-conformance): a scratch module requiring
#     k8s.io/kubernetes, e2e.test and ginkgo built from it, an etcd binary,
#     and the images built by ../shared/conformance/images.sh.
#  2. A cluster of `orch server` (with its agent) and one `orch agent`, each
#     in a network namespace of its own on a bridge of the host
#     (10.198.0.0/24), the images in both nodes' images directories and
#     in a registry on the bridge that both nodes' registry.k8s.io mirror.
#  3. The parallel part (ginkgo -p, labels LABELS && !Serial && !Disruptive),
#     then the [Serial] and [Disruptive] part alone (the two [Disruptive]
#     conformance tests taint a node NoExecute); FOCUS narrows both to the
#     tests whose names match it.
#  4. Everything stopped and removed; the reports go to docs/conformance.md
#     (scripts/conformance-report) and stay in CONFORMANCE_RUN.
# (Steps 1 and 3 differ for SUITE=gateway, see above.)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ORCH=${ORCH_BIN:-$ROOT/bin/orch}
SHARED=${CONFORMANCE_SHARED:-$ROOT/../shared/conformance}
RUN=${CONFORMANCE_RUN:-/var/tmp/orch-conformance}
PROCS=${PROCS:-2}
LABELS=${LABELS:-Conformance}
FOCUS=${FOCUS:-}
# NODE_ARGS are more flags for both nodes' agents (e.g. --proxy-mode nftables).
NODE_ARGS=${NODE_ARGS:-}
# SERVER_ARGS are more flags for the server only.
SERVER_ARGS=${SERVER_ARGS:-}
# DUAL_STACK=1: a dual-stack cluster (IPv4 and IPv6 cluster and service
# CIDRs), the nodes with an IPv6 address (NET6::N) next to their IPv4 one.
DUAL_STACK=${DUAL_STACK:-}
SUITE=${SUITE:-e2e}
GATEWAY_FEATURES=${GATEWAY_FEATURES:-}
NET6=fd00:198
if [ -n "$DUAL_STACK" ]; then
	SERVER_ARGS="$SERVER_ARGS --cluster-cidr 10.42.0.0/16,fd00:42::/56 --service-cidr 10.43.0.0/16,fd00:43::/112"
fi
NET=10.198.0
BRIDGE=orchconf0

say() { echo "conformance: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it starts nodes in network namespaces)"
[ -x "$ORCH" ] || die "$ORCH is missing: run make build"
[ "$SUITE" = gateway ] || [ -f "$SHARED/images.sh" ] || die "$SHARED/images.sh is missing: set CONFORMANCE_SHARED to ../shared/conformance"
API=$(cd "$ROOT" && go list -m -f '{{.Version}}' k8s.io/api) # v0.37.2
K8S=v1${API#v0}                                                # v1.37.2
CACHE=${CONFORMANCE_CACHE:-/var/cache/orch-conformance}/$K8S
BIN=$CACHE/bin

# ---------- 1. e2e.test, ginkgo, etcd, images (once) ----------
# The staging modules of k8s.io/kubernetes: each is replaced by its
# published version, as upstream's own go.mod does with local paths.
STAGING="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
cloud-provider cluster-bootstrap code-generator component-base component-helpers
controller-manager cri-api cri-client cri-streaming csi-translation-lib
dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
mount-utils pod-security-admission sample-apiserver streaming"

build_suite() {
	say "building e2e.test and ginkgo $K8S into $BIN (once; ~15 min)"
	mkdir -p "$CACHE/mod" "$BIN"
	(
		cd "$CACHE/mod"
		[ -f go.mod ] || go mod init conformance >/dev/null 2>&1
		go mod edit -require=k8s.io/kubernetes@"$K8S"
		for m in $STAGING; do go mod edit -replace=k8s.io/"$m"=k8s.io/"$m"@"$API"; done
		printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "github.com/onsi/ginkgo/v2/ginkgo"\n\t_ "k8s.io/kubernetes/test/e2e"\n\t_ "k8s.io/kubernetes/test/images/agnhost"\n)\n' >tools.go
		go mod tidy
		# The version upstream's release build stamps in: tests read it
		# (pod security fixtures for "the current version", e.g.).
		go test -c -vet=off -ldflags "$VERSION_LDFLAGS" -o "$BIN/e2e.test" k8s.io/kubernetes/test/e2e
		go build -o "$BIN/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
	)
	echo "$VERSION_LDFLAGS" >"$BIN/e2e.test.ldflags"
}
if [ "$SUITE" = gateway ]; then
	# ---------- 1. Gateway API's suite and images (once) ----------
	GW=$(cd "$ROOT" && go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api)
	COREDNS=v1.12.2 # the image its base manifests run, for its UDP tests
	GWCACHE=${CONFORMANCE_CACHE:-/var/cache/orch-conformance}/gateway-$GW
	BIN=$GWCACHE/bin
	IMAGES=$GWCACHE/images
	if [ ! -x "$BIN/gateway.test" ] || [ ! -x "$BIN/echo-basic" ]; then
		say "building Gateway API's conformance suite $GW and echo-basic into $BIN (once)"
		mkdir -p "$GWCACHE/mod" "$BIN"
		(
			cd "$GWCACHE/mod"
			[ -f go.mod ] || go mod init gatewayconformance >/dev/null 2>&1
			# The suite's own go.mod replaces gateway-api with its parent
			# directory: name both at the same version.
			go mod edit -require=sigs.k8s.io/gateway-api@"$GW" -require=sigs.k8s.io/gateway-api/conformance@"$GW"
			printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "sigs.k8s.io/gateway-api/conformance"\n\t_ "sigs.k8s.io/gateway-api/conformance/echo-basic"\n)\n' >tools.go
			go mod tidy
			go test -c -vet=off -o "$BIN/gateway.test" sigs.k8s.io/gateway-api/conformance
			CGO_ENABLED=0 go build -trimpath -o "$BIN/echo-basic" sigs.k8s.io/gateway-api/conformance/echo-basic
		)
	fi
	if [ ! -x "$BIN/coredns" ]; then
		say "building CoreDNS $COREDNS into $BIN (once)"
		GOBIN=$BIN CGO_ENABLED=0 go install -trimpath github.com/coredns/coredns@"$COREDNS"
	fi
	if [ ! -s "$IMAGES/images.txt" ]; then
		src=$(cd "$GWCACHE/mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api/conformance)
		refs=$(grep -rhoE 'registry.k8s.io/gateway-api/echo-basic:[A-Za-z0-9.-]+' "$src/base" "$src/tests" | sort -u)
		(cd "$ROOT" && go run ./scripts/binary-image -binary "$BIN/echo-basic" -user 65532 -out "$IMAGES/echo" $refs)
		(cd "$ROOT" && go run ./scripts/binary-image -binary "$BIN/coredns" -out "$IMAGES/coredns" registry.k8s.io/coredns/coredns:$COREDNS)
		mv "$IMAGES"/echo/*.tar "$IMAGES"/coredns/*.tar "$IMAGES/"
		cat "$IMAGES/echo/images.txt" "$IMAGES/coredns/images.txt" >"$IMAGES/images.txt"
		rm -r "$IMAGES/echo" "$IMAGES/coredns"
	fi
	SERVER_ARGS="$SERVER_ARGS --gateway-api"
else
	minor=${K8S#v1.}; minor=${minor%%.*}
	VERSION_LDFLAGS="-X k8s.io/component-base/version.gitVersion=$K8S -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
	[ -x "$BIN/e2e.test" ] && [ -x "$BIN/ginkgo" ] && [ "$(cat "$BIN/e2e.test.ldflags" 2>/dev/null)" = "$VERSION_LDFLAGS" ] || build_suite
	if [ ! -x "$BIN/etcd" ]; then
		say "building etcd (for the aggregator test's sample-apiserver) from orch's go.mod"
		(cd "$ROOT" && CGO_ENABLED=0 go build -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
	fi
	IMAGES=$CACHE/images
	WANT="agnhost busybox pause nginx glibc-dns-testing kitten nautilus nonewprivs sample-apiserver etcd"
	missing=""
	for i in $WANT; do grep -q "[/]$i:" "$IMAGES/images.txt" 2>/dev/null || missing="$missing $i"; done
	if [ -n "$missing" ]; then
		say "building the suite's images into $IMAGES (once)"
		command -v busybox >/dev/null || apt-get install -y busybox-static >/dev/null
		PEERS_MOD=$CACHE/mod ETCD_BIN=$BIN/etcd bash "$SHARED/images.sh" "$IMAGES" \
			$WANT
	fi
fi

# ---------- 2. the cluster ----------
NODES="server agent"
# state_of NAME: the containerd state directory of node NAME, as
# agent.ContainerdState derives it from the data dir.
state_of() { echo "/run/orch/containerd-$(printf %s "$RUN/$1" | sha256sum | cut -c1-12)"; }
teardown() {
	set +e
	say "stopping the cluster"
	[ -f "$RUN/registry.pid" ] && kill "$(cat "$RUN/registry.pid")" 2>/dev/null && rm -f "$RUN/registry.pid"
	for n in agent server; do
		[ -f "$RUN/$n.pid" ] && kill "$(cat "$RUN/$n.pid")" 2>/dev/null
	done
	for n in agent server; do
		[ -f "$RUN/$n.pid" ] || continue
		pid=$(cat "$RUN/$n.pid")
		for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
		kill -9 "$pid" 2>/dev/null
		rm -f "$RUN/$n.pid"
	done
	# Pods outlive their node's process: stop their containers (killing a
	# shim leaves them running) and their shims, then what they held.
	for n in $NODES; do
		s=$(cat "$RUN/$n.state" 2>/dev/null) || continue
		if [ -n "$s" ]; then
			for shim in $(pgrep -f "containerd-shim-runc-v2 .*$s"); do pkill -9 -P "$shim"; done
			pkill -9 -f "containerd-shim-runc-v2 .*$s" && sleep 1
		fi
		nsenter --net=/run/netns/orch-conf-$n "$ORCH" agent cleanup >/dev/null 2>&1
		awk -v d="$RUN/" -v s="$s" '$5 ~ "^"d || (s != "" && $5 ~ "^"s) {print $5}' /proc/self/mountinfo |
			sort -r | xargs -r -n1 umount -l
		[ -n "$s" ] && rm -rf "$s"
		ip netns del orch-conf-$n 2>/dev/null
		ip link del oc-$n 2>/dev/null
	done
	for ns in $(ip netns list | awk '/^cni-/{print $1}'); do
		[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && ip netns del "$ns"
	done
	ip link del $BRIDGE 2>/dev/null
	set -e
}

start_node() { # start_node NAME IP ARGS...
	local n=$1 ip=$2; shift 2
	ip netns add orch-conf-$n
	ip link add oc-$n type veth peer name eth0 netns orch-conf-$n
	ip link set oc-$n master $BRIDGE up
	ip -n orch-conf-$n addr add "$ip/24" dev eth0
	ip -n orch-conf-$n link set eth0 up
	ip -n orch-conf-$n link set lo up
	ip -n orch-conf-$n route add default via $NET.1
	local node_ip=$ip
	if [ -n "$DUAL_STACK" ]; then
		node_ip="$ip,$NET6::${ip##*.}"
		ip -n orch-conf-$n addr add "$NET6::${ip##*.}/64" dev eth0 nodad
		ip -n orch-conf-$n route add default via $NET6::1
	fi
	mkdir -p "$RUN/$n/agent/images"
	cp "$IMAGES"/*.tar "$RUN/$n/agent/images/"
	nsenter --net=/run/netns/orch-conf-$n "$ORCH" "$@" --data-dir "$RUN/$n" --node-name "conf-$n" \
		--node-ip "$node_ip" --resolv-conf "$RUN/resolv.conf" --private-registry "$RUN/registries.yaml" >"$RUN/$n.log" 2>&1 &
	echo $! >"$RUN/$n.pid"
}

# A run before this one may have been killed: remove what it left first.
teardown 2>/dev/null
rm -rf "$RUN"
mkdir -p "$RUN"
trap teardown EXIT
ip link add $BRIDGE type bridge
ip addr add $NET.1/24 dev $BRIDGE
[ -z "$DUAL_STACK" ] || ip addr add $NET6::1/64 dev $BRIDGE nodad
ip link set $BRIDGE up
# The nodes' upstream resolver is the host's bridge address, where nothing
# listens: names outside the cluster fail at once instead of timing out.
echo "nameserver $NET.1" >"$RUN/resolv.conf"
# The suite's images, served read-only on the bridge for the pulls that a
# pull policy of Always makes (scripts/conformance-registry).
REGISTRY=$NET.1:5000
(cd "$ROOT" && go build -o "$RUN/registry" ./scripts/conformance-registry)
"$RUN/registry" -listen "$REGISTRY" "$IMAGES"/registry.k8s.io_*.tar >"$RUN/registry.log" 2>&1 &
echo $! >"$RUN/registry.pid"
# Pulls of registry.k8s.io (imagePullPolicy Always) go there first
# (docs/operations.md, Private registries).
printf 'mirrors:\n  registry.k8s.io:\n    endpoint: ["http://%s"]\n' "$REGISTRY" >"$RUN/registries.yaml"

KC=$RUN/kubeconfig
KUBECTL=$RUN/kubectl
printf '#!/bin/sh\nexec %s kubectl "$@"\n' "$ORCH" >"$KUBECTL"
chmod +x "$KUBECTL"
say "starting orch server (conf-server, $NET.11) and orch agent (conf-agent, $NET.12)"
start_node server $NET.11 server --advertise-address $NET.11 --write-kubeconfig "$KC" $NODE_ARGS $SERVER_ARGS
for _ in $(seq 120); do [ -s "$RUN/server/server/token" ] && [ -s "$KC" ] && break; sleep 1; done
[ -s "$KC" ] || die "the server did not start: $RUN/server.log"
"$KUBECTL" --kubeconfig "$KC" config set-cluster default --server "https://$NET.11:6443" >/dev/null
start_node agent $NET.12 agent --server "https://$NET.11:6443" --token "$(cat "$RUN/server/server/token")" $NODE_ARGS
for n in $NODES; do state_of $n >"$RUN/$n.state"; done

# Ready nodes that hold every image of the suite.
want=$(awk '{print $2}' "$IMAGES/images.txt" | sort -u | wc -l)
for i in $(seq 300); do
	have=$("$KUBECTL" --kubeconfig "$KC" get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True || true)
	imgs=$("$KUBECTL" --kubeconfig "$KC" get nodes -o go-template='{{range .items}}{{range .status.images}}{{range .names}}{{.}}{{"\n"}}{{end}}{{end}}{{end}}' 2>/dev/null |
		grep -cxFf <(awk '{print $2}' "$IMAGES/images.txt") || true)
	[ "$have" = 2 ] && [ "$imgs" -ge $((2 * want)) ] && break
	[ "$i" = 300 ] && die "the nodes were not Ready with the images within 10 minutes ($have ready, $imgs images): $RUN/*.log"
	sleep 2
done
"$KUBECTL" --kubeconfig "$KC" get nodes -o wide

# ---------- 3. the suite ----------
run_suite() { # run_suite NAME LABEL-FILTER GINKGO-ARGS...
	local name=$1 labels=$2; shift 2
	mkdir -p "$RUN/$name"
	say "running the $name part (log: $RUN/$name/ginkgo.log)"
	local focus=()
	[ -n "$FOCUS" ] && focus=(--focus="$FOCUS")
	(cd "$RUN/$name" && "$BIN/ginkgo" "$@" --no-color --timeout=3h --label-filter="$labels" "${focus[@]}" \
		--json-report=report.json --output-dir="$RUN/$name" "$BIN/e2e.test" -- \
		--kubeconfig="$KC" --kubectl-path="$KUBECTL" --provider=skeleton --num-nodes=2 --report-dir="$RUN/$name" \
		>ginkgo.log 2>&1) || true
}
# The commit the nodes run, taken now: the tree may move during the run.
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD || echo +changes)
START=$(date +%s)
if [ "$SUITE" = gateway ]; then
	mkdir -p "$RUN/gateway"
	features=$GATEWAY_FEATURES
	if [ -z "$features" ]; then
		features=$("$KUBECTL" --kubeconfig "$KC" get gatewayclass orch -o jsonpath='{range .status.supportedFeatures[*]}{.name}{","}{end}')
		features=${features%,}
	fi
	features=${features:-Gateway,HTTPRoute,ReferenceGrant} # the profile's core ones
	say "running Gateway API's suite $GW, profile GATEWAY-HTTP, features $features (log: $RUN/gateway/test.log)"
	(cd "$RUN/gateway" && KUBECONFIG=$KC "$BIN/gateway.test" -test.run '^TestConformance$' -test.v -test.timeout 3h \
		-gateway-class orch -conformance-profiles GATEWAY-HTTP -supported-features "$features" ${FOCUS:+-run-test "$FOCUS"} \
		-organization orch -project orch -url https://orch.dev -version "$COMMIT" -contact orch \
		-report-output "$RUN/gateway/report.yaml" >test.log 2>&1) || true
	teardown
	trap - EXIT
	# The suite's tests are TestConformance's subtests, indented by four.
	count() { grep -cE "^    --- $1: TestConformance/" "$RUN/gateway/test.log" || true; }
	say "Gateway API $GW, orch $COMMIT, $((($(date +%s) - START) / 60)) minutes: $(count PASS) tests passed, $(count FAIL) failed, $(count SKIP) skipped (test.log and report.yaml in $RUN/gateway)"
	grep -E "^    --- FAIL: TestConformance/" "$RUN/gateway/test.log" >&2 || true
	exit 0
fi
run_suite parallel "($LABELS) && !Serial && !Disruptive" -p -procs="$PROCS"
run_suite serial "($LABELS) && (Serial || Disruptive)"
MINUTES=$((($(date +%s) - START) / 60))

# ---------- 4. the report ----------
teardown
trap - EXIT
reports=()
for p in parallel serial; do [ -f "$RUN/$p/report.json" ] && reports+=("$RUN/$p/report.json"); done
[ ${#reports[@]} -gt 0 ] || die "ginkgo wrote no report: $RUN/*/ginkgo.log"
(cd "$ROOT" && go run ./scripts/conformance-report -out docs/conformance.md \
	-commit "$COMMIT" \
	-version "$K8S" -minutes "$MINUTES" -focus "$FOCUS" -labels "$LABELS" "${reports[@]}")
