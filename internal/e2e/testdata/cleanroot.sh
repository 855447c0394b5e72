#!/bin/sh
# cleanroot.sh — sourced by the install and air-gap scenarios, which run as
# PID 1 of new mount, network and PID namespaces: the checks they share,
# and the clean root (tmpfs and overlays over what an install writes; a
# network of lo and eth0 with 10.250.0.1/24 and no default route).
# Needs WORK (a scratch directory).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

step() { echo "=== $*"; }
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	for f in "$WORK"/*.log; do
		[ -f "$f" ] || continue
		echo "----- $f (last 80 lines)"
		tail -n 80 "$f"
	done
	exit 1
}
# check DESCRIPTION COMMAND...: the command must succeed.
check() {
	d=$1
	shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}
# wait_for SECONDS DESCRIPTION COMMAND...
wait_for() {
	t=$1 d=$2
	shift 2
	end=$(($(date +%s) + t))
	while [ "$(date +%s)" -lt $end ]; do
		if "$@" >/dev/null 2>&1; then
			ok "$d"
			return
		fi
		sleep 0.5
	done
	fail "$d (not within ${t}s)"
}
contains() { grep -q -- "$2" "$1"; }
lacks() { ! grep -q -- "$2" "$1"; }
absent() { for f in "$@"; do if [ -e "$f" ] || [ -L "$f" ]; then echo "still there: $f"; return 1; fi; done; }

# live_procs prints "pid comm" of the processes that are not zombies,
# except this script and its helpers.
live_procs() {
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" != 1 ] || continue
		st=$(cat "$d/stat" 2>/dev/null) || continue
		rest=${st##*) }
		[ "${rest%% *}" != Z ] || continue
		echo "$p $(cat "$d/comm" 2>/dev/null)"
	done
}
no_runtime_procs() {
	left=$(live_procs | grep -E ' (orch|containerd|containerd-shim.*|runc|sleep|pause)$')
	[ -z "$left" ] || {
		echo "left: $left"
		return 1
	}
}
no_netns() {
	n=$(ls /run/netns 2>/dev/null)
	[ -z "$n" ] || {
		echo "network namespaces left: $n"
		awk '$2 ~ /^\/run\/netns\//' /proc/self/mounts
		return 1
	}
}
mounts_under() { awk '{print $2}' /proc/self/mounts | grep -E "^($1)/"; }
no_mounts_under() {
	m=$(mounts_under "$1")
	[ -z "$m" ] || {
		echo "mounted: $m"
		return 1
	}
}
no_orch_rules() {
	r=$(iptables-save | grep -E 'KUBE-|ORCH-|CNI-|name: \\"orch\\"')
	[ -z "$r" ] || {
		echo "rules left:"
		echo "$r"
		return 1
	}
}
no_orch_links() {
	l=$(ip -o link show | grep -E ': (orch0|orch\.vxlan|veth[^:]*)[:@]')
	[ -z "$l" ] || {
		echo "interfaces left: $l"
		return 1
	}
}

# --- the clean root --------------------------------------------------------
step "setting up the clean root"
mount --make-rprivate / || fail "mount --make-rprivate /"
mkdir -p "$WORK/scratch"
mount -t tmpfs scratch "$WORK/scratch" || fail "tmpfs on $WORK/scratch"
for d in etc usr-bin; do mkdir -p "$WORK/scratch/$d-upper" "$WORK/scratch/$d-work"; done
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$WORK/scratch/etc-upper,workdir=$WORK/scratch/etc-work" /etc || fail "overlay on /etc"
mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$WORK/scratch/usr-bin-upper,workdir=$WORK/scratch/usr-bin-work" /usr/bin || fail "overlay on /usr/bin"
# The host's mounts under /run and /var/lib (other orch agents' containerd
# state, network namespaces) would hide under the tmpfs but stay in this
# namespace's mount table: drop this namespace's copies first.
awk '{print $2}' /proc/self/mounts | grep -E '^(/run|/var/lib)/' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
for d in /usr/local/bin /var/lib /run; do
	mkdir -p "$d" && mount -t tmpfs tmpfs "$d" || fail "tmpfs on $d"
done
rm -rf /etc/orch /usr/bin/kubectl /etc/systemd/system/orch* /etc/init.d/orch*
mkdir -p /etc/systemd/system
check "no kubectl on PATH in the clean root" sh -c '! command -v kubectl'
check "no systemd in the clean root" test ! -d /run/systemd/system
ip link set lo up || fail "lo up"
# (no dummy module here: a veth pair, both ends in this namespace)
ip link add eth0 type veth peer name eth1 && ip addr add 10.250.0.1/24 dev eth0 &&
	ip link set eth1 up && ip link set eth0 up || fail "eth0 with 10.250.0.1/24"
check "no default route" sh -c '! ip route show default | grep -q .'
