#!/usr/bin/env bash
# build-peer.sh builds the side-by-side peers of `make bench`: upstream
# kube-apiserver v1.37.2 and etcd v3.6.16, and kube-proxy v1.37.2 for
# kube-proxy-peer.sh, from the Go module proxy, in scratch modules under
# $PEER_DIR (default /tmp/orch-bench-peer), binaries in $PEER_DIR/bin. Nothing
# here goes into orch's go.mod. It prints the environment `make bench` needs
# (KUBE_PROXY_BIN is read by kube-proxy-peer.sh only):
#
#   eval "$(internal/e2e/bench/build-peer.sh)" && make bench
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod replaces every
# k8s.io/* staging module with ./staging/src/..., which the proxy's zip does not
# carry, so the scratch module replaces each of them with its published v0.37.2.
# On two cores the first build takes about six minutes; kube-proxy, sharing most
# packages with kube-apiserver, took about 20 s more here.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=${STAGING_VERSION:-v0.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
PEER_DIR=${PEER_DIR:-/tmp/orch-bench-peer}
GO=${GO:-go}
mkdir -p "$PEER_DIR/kube-apiserver" "$PEER_DIR/kube-proxy" "$PEER_DIR/etcd" "$PEER_DIR/bin"

# kube-apiserver: cmd/kube-apiserver's main, in a module of our own.
cd "$PEER_DIR/kube-apiserver"
cat > main.go <<'EOF'
// Command kube-apiserver is upstream's, built as the peer of orch's benchmarks.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
EOF
GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" > kubernetes.json
upstream_mod=$(sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' kubernetes.json)
{
	printf 'module peer/kube-apiserver\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
	sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$upstream_mod"
	printf ')\n'
} > go.mod
GOFLAGS=-mod=mod $GO mod tidy >&2
v="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
v="$v -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
$GO build -trimpath -ldflags "-s -w $v" -o "$PEER_DIR/bin/kube-apiserver" . >&2

# kube-proxy: cmd/kube-proxy's main, in a module of our own with the same
# requirements and replacements as kube-apiserver's (copied, then tidied).
cd "$PEER_DIR/kube-proxy"
cat > main.go <<'EOF'
// Command kube-proxy is upstream's, built as the peer of orch's service proxy.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() { os.Exit(cli.Run(app.NewProxyCommand())) }
EOF
sed 's#^module peer/kube-apiserver$#module peer/kube-proxy#' "$PEER_DIR/kube-apiserver/go.mod" > go.mod
cp "$PEER_DIR/kube-apiserver/go.sum" go.sum
GOFLAGS=-mod=mod $GO mod tidy >&2
$GO build -trimpath -ldflags "-s -w $v" -o "$PEER_DIR/bin/kube-proxy" . >&2

# etcd: the server module's etcdmain (the etcd main module is not on the proxy
# for v3.6.16).
cd "$PEER_DIR/etcd"
cat > main.go <<'EOF'
// Command etcd is upstream's etcd server, built as the peer of orch's benchmarks.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
printf 'module peer/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
GOFLAGS=-mod=mod $GO mod tidy >&2
$GO build -trimpath -ldflags "-s -w" -o "$PEER_DIR/bin/etcd" . >&2

"$PEER_DIR/bin/kube-apiserver" --version >&2
"$PEER_DIR/bin/kube-proxy" --version >&2
"$PEER_DIR/bin/etcd" --version | head -1 >&2
echo "export KUBE_APISERVER_BIN=$PEER_DIR/bin/kube-apiserver ETCD_BIN=$PEER_DIR/bin/etcd KUBE_PROXY_BIN=$PEER_DIR/bin/kube-proxy"
