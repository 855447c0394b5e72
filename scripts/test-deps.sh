#!/usr/bin/env bash
# Installs the Debian packages the tests need, when they are missing.
# Run as root on Debian 12; `make test` calls it.
set -euo pipefail

# The runtime tests start Debian's containerd with runc; busybox-static is the
# test image; CNI plugins, iptables and conntrack serve pod networking;
# util-linux (nsenter) and bsdutils (script) run agents in network
# namespaces and give `kubectl exec -it` a terminal in the end-to-end tests.
# qemu-user-static runs the built-in arm64 pause program in its test; curl is
# what install.sh downloads with in its test.
packages=(ca-certificates curl iproute2 containerd runc containernetworking-plugins iptables conntrack busybox-static util-linux bsdutils qemu-user-static)
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
echo "test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
