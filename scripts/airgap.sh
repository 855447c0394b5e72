#!/usr/bin/env bash
# airgap.sh ORCH OUT_DIR — build orch-airgap-<arch>.tar.gz in OUT_DIR from the
# orch binary ORCH: everything a host with no network needs to run orch
# (`make airgap` calls it; see scripts/airgap-README.md, which goes inside).
#
#   orch, install.sh, sha256sum-<arch>.txt      install with INSTALL_ORCH_SKIP_DOWNLOAD=true
#   images/orch-images.tar                      for DATA_DIR/agent/images/ (orch.test/busybox:1)
#   runtime/orch-runtime-<arch>.tar.gz          containerd, runc, the CNI plugins, iptables and
#                                               conntrack, as installed on this (Debian 12) host,
#                                               for hosts that lack them
#   README.md                                   the steps
set -euo pipefail

orch=${1:?usage: airgap.sh ORCH OUT_DIR}
out=${2:?usage: airgap.sh ORCH OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
arch=$(go env GOARCH 2>/dev/null || dpkg --print-architecture)
name=orch-airgap-$arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$work/$name
mkdir -p "$dir/images" "$dir/runtime" "$out"

cp "$orch" "$dir/orch"
chmod 0755 "$dir/orch"
cp "$root/scripts/install.sh" "$dir/install.sh"
cp "$root/scripts/airgap-README.md" "$dir/README.md"
(cd "$dir" && sha256sum orch >"sha256sum-$arch.txt")

# The images the docs' examples use.
(cd "$root" && go run ./scripts/busybox-image "$dir/images/orch-images.tar" >/dev/null)

# The runtime pieces, as files of this host's Debian packages (the test
# dependencies install them): no download, so this works offline too.
packages=(containerd runc containernetworking-plugins iptables libip4tc2 libip6tc2 libxtables12 libnftnl11
	libnetfilter-conntrack3 libnfnetlink0 libmnl0 conntrack libseccomp2)
files=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		echo "airgap: package $p is not installed here; run scripts/test-deps.sh (or apt-get install $p) first" >&2
		exit 1
	fi
	while IFS= read -r f; do
		# Only files (and links) that exist, not directories or docs.
		case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
		if [ -f "$f" ] || [ -L "$f" ]; then files+=("${f#/}"); fi
	done < <(dpkg -L "$p")
done
tar -C / -czf "$dir/runtime/orch-runtime-$arch.tar.gz" "${files[@]}"
(cd "$dir" && sha256sum "runtime/orch-runtime-$arch.tar.gz" images/orch-images.tar >>"sha256sum-$arch.txt")

tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
