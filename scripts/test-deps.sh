#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when they are
# missing. Run as root on Debian 12; `make test` and `make run` call it.
# With --release it adds what `make release` needs to build runc for arm64
# and arm: the cross compilers and those architectures' libseccomp-dev (and
# zstd, to check the runc it built).
set -euo pipefail

# orch carries containerd, runc and the CNI plugins (scripts/payload builds
# them into it): runc needs gcc, pkg-config and libseccomp-dev to build.
# busybox-static is the test image; iptables, nftables (nft, for the
# proxy's nftables tables) and conntrack serve pod networking; util-linux
# (nsenter) and bsdutils (script) run agents in network namespaces and give
# `kubectl exec -it` a terminal in the end-to-end tests. qemu-user-static
# runs the arm64 pause program, runc and orch in their tests; file tells
# their architecture; curl is what install.sh downloads with in its test.
packages=(ca-certificates curl iproute2 gcc libc6-dev pkg-config libseccomp-dev iptables nftables conntrack busybox-static openssl
	util-linux bsdutils qemu-user-static file)
foreign=()
if [ "${1:-}" = --release ]; then
	packages+=(gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross
		libseccomp-dev:arm64 libseccomp-dev:armhf zstd)
	foreign=(arm64 armhf)
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "test-deps: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
for a in "${foreign[@]}"; do
	dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
done
echo "test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
