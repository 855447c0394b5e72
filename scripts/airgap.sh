#!/usr/bin/env bash
# airgap.sh ORCH OUT_DIR — build orch-airgap-<arch>.tar.gz in OUT_DIR from the
# orch binary ORCH: everything a host with no network needs to run orch
# (`make airgap` calls it; see scripts/airgap-README.md, which goes inside).
#
#   orch, install.sh, sha256sum-<arch>.txt      install with INSTALL_ORCH_SKIP_DOWNLOAD=true
#   images/orch-images.tar                      for DATA_DIR/agent/images/ (orch.test/busybox:1)
#   README.md                                   the steps
#
# orch carries its container runtime (containerd, runc, the CNI plugins);
# the host provides the kernel and iptables. ARCH (default: this machine's)
# names the architecture of ORCH; BUSYBOX (default /bin/busybox) is a static
# busybox of that architecture for the example image.
set -euo pipefail

orch=${1:?usage: airgap.sh ORCH OUT_DIR}
out=${2:?usage: airgap.sh ORCH OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
arch=${ARCH:-$(go env GOARCH 2>/dev/null || dpkg --print-architecture)}
busybox=${BUSYBOX:-/bin/busybox}
name=orch-airgap-$arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$work/$name
mkdir -p "$dir/images" "$out"

cp "$orch" "$dir/orch"
chmod 0755 "$dir/orch"
cp "$root/scripts/install.sh" "$dir/install.sh"
cp "$root/scripts/airgap-README.md" "$dir/README.md"
(cd "$dir" && sha256sum orch >"sha256sum-$arch.txt")

# The image the docs' examples use.
(cd "$root" && go run ./scripts/busybox-image -arch "$arch" -busybox "$busybox" "$dir/images/orch-images.tar" >/dev/null)
(cd "$dir" && sha256sum images/orch-images.tar >>"sha256sum-$arch.txt")

tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
