#!/usr/bin/env bash
# release.sh — `make release`: orch for linux/amd64, linux/arm64 and linux/arm
# (ARMv7), each carrying its own runtime (scripts/payload builds runc, the
# shim and the CNI plugins for it), and an air-gap tarball for each:
#
#   bin/orch-linux-<arch>           the binary install.sh downloads
#   bin/orch-airgap-<arch>.tar.gz   scripts/airgap.sh's bundle for <arch>
#   bin/sha256sum-<arch>.txt        checksums of both (install.sh verifies them)
#
# It checks what it built: file(1) must say each binary and every program
# of its runtime payload are static executables of the right architecture,
# and each must run (foreign ones under qemu user emulation): orch, runc and
# the shim print their versions, the CNI plugins answer CNI_COMMAND=VERSION. LDFLAGS and VERSION
# come from the Makefile. ARCHS limits the architectures.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
archs=${ARCHS:-amd64 arm64 arm}
: "${LDFLAGS:?release.sh is run by make release, which sets LDFLAGS}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A file_says=([amd64]="x86-64" [arm64]="ARM aarch64" [arm]="ARM, EABI5")
declare -A qemu=([amd64]=qemu-x86_64-static [arm64]=qemu-aarch64-static [arm]=qemu-arm-static)
declare -A debarch=([amd64]=amd64 [arm64]=arm64 [arm]=armhf)
host=$(go env GOARCH)

check_file() { # FILE ARCH: file(1) says it is a static executable for ARCH
	out=$(file -b "$1")
	case "$out" in
	*"${file_says[$2]}"*"statically linked"* | *"${file_says[$2]}"*"static-pie linked"*) echo "release: $1: $out" ;;
	*) echo "release: $1 is not a static $2 executable: $out" >&2; exit 1 ;;
	esac
}

# check_payload ARCH: every program of ARCH's runtime payload is a static
# executable of ARCH and runs (under qemu for a foreign ARCH): runc and the
# shim print their versions, each CNI plugin answers CNI_COMMAND=VERSION.
check_payload() {
	local dir=$work/payload-$1 f name
	mkdir -p "$dir"
	for f in "internal/kubelet/containerd/payload/files/$1"/*.zst; do
		name=$(basename "$f" .zst)
		zstd -q -d -f -o "$dir/$name" "$f"
		chmod +x "$dir/$name"
		check_file "$dir/$name" "$1"
		case "$name" in
		runc) "${run[@]}" "$dir/$name" --version | sed -n 1p ;;
		containerd-shim-runc-v2) "${run[@]}" "$dir/$name" -v | grep Version: ;;
		*) CNI_COMMAND=VERSION "${run[@]}" "$dir/$name" | grep -q supportedVersions ||
			{ echo "release: CNI plugin $name for $1 does not answer VERSION" >&2; exit 1; } ;;
		esac
	done
	echo "release: the $1 runtime payload runs"
}

go run ./scripts/gateway-crds
for arch in $archs; do
	[ -n "${file_says[$arch]:-}" ] || { echo "release: no such target $arch (amd64, arm64, arm)" >&2; exit 1; }
	go run ./scripts/payload -arch "$arch"
	bin=bin/orch-linux-$arch
	echo "release: building $bin"
	GOOS=linux GOARCH=$arch GOARM=7 CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o "$bin" .
	check_file "$bin" "$arch"
	run=()
	[ "$arch" = "$host" ] || run=("${qemu[$arch]}")
	"${run[@]}" "$bin" --version | sed -n 1p
	check_payload "$arch"

	# The example image of the bundle: the static busybox of Debian's
	# busybox-static for that architecture.
	busybox=/bin/busybox
	if [ "$arch" != "$host" ]; then
		(cd "$work" && apt-get download -qq "busybox-static:${debarch[$arch]}" >/dev/null)
		dpkg-deb -x "$work"/busybox-static_*_"${debarch[$arch]}".deb "$work/busybox-$arch"
		busybox=$work/busybox-$arch/bin/busybox
		check_file "$busybox" "$arch"
	fi
	ARCH=$arch BUSYBOX=$busybox bash scripts/airgap.sh "$bin" bin
	(cd bin && sha256sum "orch-linux-$arch" "orch-airgap-$arch.tar.gz" >"sha256sum-$arch.txt")
done
# Leave this machine's payload in place for make build.
go run ./scripts/payload >/dev/null
ls -l bin/orch-linux-* bin/orch-airgap-*.tar.gz
