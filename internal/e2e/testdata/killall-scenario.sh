#!/bin/sh
# killall-scenario.sh — TestKillallSparesAnotherInstance runs this as PID 1
# of new mount, network and PID namespaces on the clean root of
# cleanroot.sh. install.sh installs "orch" (FAKEPROC, a process that only
# sleeps) with the default data dir; two instances then run side by side as
# orch starts them: A (the installed one, data dir /var/lib/orch) on this
# network namespace, and B (the same binary, data dir /var/lib/orch-second)
# in a network namespace of its own, each with its containerd (its config
# under its data dir, its state under /run/orch), a shim and a pod in a
# network namespace of its own. orch-killall.sh, then orch-uninstall.sh,
# must stop and remove A and leave B running with its namespaces, mounts,
# runtime state and data.
# Environment: FAKEPROC, INSTALL_SH (scripts/install.sh), WORK.
. "$(dirname "$0")/cleanroot.sh"

step "install.sh (server, no supervisor) with a stand-in binary"
INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BINARY=$FAKEPROC sh "$INSTALL_SH" >"$WORK/install.log" 2>&1 || fail "install.sh exited $?"
check "orch-killall.sh installed" test -x /usr/local/bin/orch-killall.sh

# instance DATA_DIR STATE POD_NETNS [RUNTIME_NETNS]: starts orch, its
# containerd and a shim whose child runs in POD_NETNS, as orch would (the
# containerd config written as orch writes it); prints their pids.
instance() {
	conf=$1/agent/etc/containerd/config.toml
	mkdir -p "$(dirname "$conf")" "$2/io.containerd.runtime.v2.task/k8s.io/x/rootfs" "$1/agent/kubelet/pods/x/volumes"
	printf '# Written by orch at every start; edits are overwritten.\nversion = 2\nroot = "%s"\nstate = "%s"\n\n[grpc]\n  address = "%s"\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    stream_server_address = "127.0.0.1"\n' \
		"$1/agent/containerd" "$2" "$2/containerd.sock" >"$conf"
	mount -t tmpfs rootfs "$2/io.containerd.runtime.v2.task/k8s.io/x/rootfs" || fail "mount a rootfs under $2"
	mount -t tmpfs volume "$1/agent/kubelet/pods/x/volumes" || fail "mount a volume under $1"
	ip netns add "$3" || fail "ip netns add $3"
	in=
	[ -z "${4:-}" ] || in="nsenter --net=/run/netns/$4"
	$in /usr/local/bin/orch server --data-dir "$1" >/dev/null 2>&1 &
	echo $!
	$in "$WORK/scratch/containerd" --config "$conf" >/dev/null 2>&1 &
	echo $!
	CHILD_NETNS=$3 $in "$WORK/scratch/containerd-shim-runc-v2" -namespace k8s.io -id x -address "$2/containerd.sock" >/dev/null 2>&1 &
	echo $!
}
cp "$FAKEPROC" "$WORK/scratch/containerd"
cp "$FAKEPROC" "$WORK/scratch/containerd-shim-runc-v2"
step "instance A (the installed one) and instance B (another data dir, its own network namespace)"
ip netns add second || fail "ip netns add second"
A=$(instance /var/lib/orch /run/orch/containerd pod-a)
B=$(instance /var/lib/orch-second /run/orch/containerd-0123456789ab pod-b second)
alive() { [ -d "/proc/$1" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }
pod_of() { # the child of shim $1
	for d in /proc/[0-9]*; do [ "$(cut -d' ' -f4 "$d/stat" 2>/dev/null)" != "$1" ] || echo "${d#/proc/}"; done
}
shim_a=$(echo $A | cut -d' ' -f3) shim_b=$(echo $B | cut -d' ' -f3)
pods_run() { [ -n "$(pod_of "$shim_a")" ] && [ -n "$(pod_of "$shim_b")" ]; }
wait_for 10 "the pods run" pods_run
POD_A=$(pod_of "$shim_a") POD_B=$(pod_of "$shim_b")
b_mounts() { mounts_under /run/orch/containerd-0123456789ab | grep -q rootfs && mounts_under /var/lib/orch-second | grep -q volumes; }
# b_survives WHAT: instance B's processes, namespaces, mounts, state and data are all there.
b_survives() {
	for p in $B $POD_B; do alive "$p" || fail "$1: B's process $p ($(cat /proc/$p/cmdline 2>/dev/null | tr '\0' ' ')) was killed"; done
	ok "$1: B's orch, containerd, shim and pod run"
	check "$1: B's network namespaces stay" test -e /run/netns/second -a -e /run/netns/pod-b
	check "$1: B's mounts stay" b_mounts
	check "$1: B's runtime state stays" test -e /run/orch/containerd-0123456789ab
	check "$1: B's data stays" test -f /var/lib/orch-second/agent/etc/containerd/config.toml
}

step "orch-killall.sh"
/usr/local/bin/orch-killall.sh >"$WORK/killall.log" 2>&1 || fail "orch-killall.sh exited $?"
cat "$WORK/killall.log"
for p in $A $POD_A; do alive "$p" && fail "A's process $p ($(cat /proc/$p/cmdline | tr '\0' ' ')) still runs"; done
ok "A's orch, containerd, shim and pod are stopped"
check "A's pod network namespace is gone" test ! -e /run/netns/pod-a
check "A's runtime state is gone" test ! -e /run/orch/containerd
check "no mounts left under A's data dir and runtime state" no_mounts_under '/var/lib/orch|/run/orch/containerd'
check "A's data stays" test -f /var/lib/orch/agent/etc/containerd/config.toml
b_survives "after orch-killall.sh"

step "orch-uninstall.sh"
/usr/local/bin/orch-uninstall.sh >"$WORK/uninstall.log" 2>&1 || fail "orch-uninstall.sh exited $?"
cat "$WORK/uninstall.log"
check "A's data dir is removed" absent /var/lib/orch /usr/local/bin/orch
b_survives "after orch-uninstall.sh"

echo "SCENARIO PASSED"
