#!/bin/sh
# airgap-scenario.sh — TestAirGapInstall runs this as PID 1 of new mount,
# network and PID namespaces (see cleanroot.sh): a host with no route out.
# It unpacks the air-gap bundle (BUNDLE, from scripts/airgap.sh), checks its
# checksums, installs orch from it as its README says, starts the server
# (and its agent) as the unit says, joins an agent from another network
# namespace (node2, 10.250.0.2), and runs the README's example on node2 and
# a Service on the server's node that it reaches by name; then stops node2's
# agent with a killall of its own data dir (the install's killall leaves
# another orch alone) and uninstalls.
# It prints "ok: ..." per check and ends with "SCENARIO PASSED".
. "$(dirname "$0")/cleanroot.sh"

# runtime_is_orchs: every containerd runs orch's own binary, every shim
# the one orch installed under its data dir; there is one of each at least.
runtime_is_orchs() {
	n=0
	for p in $(live_procs | awk '$2 == "containerd" || $2 ~ /^containerd-shim/ {print $1}'); do
		exe=$(readlink "/proc/$p/exe")
		case "$(cat "/proc/$p/comm"):$exe" in
		containerd:/usr/local/bin/orch) ;;
		containerd-shim*:/var/lib/orch*/agent/runtime/*/bin/containerd-shim-runc-v2) ;;
		*)
			echo "process $p ($(cat "/proc/$p/comm")) runs $exe"
			return 1
			;;
		esac
		n=$((n + 1))
	done
	[ "$n" -ge 2 ] || { echo "only $n containerd and shim processes"; return 1; }
}

step "unpacking the bundle"
check "no route to the outside" sh -c '! ip route get 1.1.1.1 >/dev/null 2>&1'
mkdir -p "$WORK/scratch/bundle"
tar -C "$WORK/scratch/bundle" -xzf "$BUNDLE" || fail "tar -xzf $BUNDLE"
cd "$WORK/scratch/bundle"/orch-airgap-* || fail "no orch-airgap-* directory in the bundle"
check "the bundle's checksums match" sha256sum -c sha256sum-*.txt
check "the bundle carries no runtime tarball" sh -c '! ls runtime >/dev/null 2>&1'
# This host has no container runtime of its own: any containerd, runc, ctr,
# shim or CNI plugin directory of the machine's is hidden.
for b in containerd runc ctr containerd-shim-runc-v2; do
	p=$(command -v "$b") && { mount --bind /dev/null "$p" || fail "hide $p"; }
done
for d in /usr/lib/cni /opt/cni/bin /usr/libexec/cni; do
	[ -d "$d" ] && { mount -t tmpfs none "$d" || fail "hide $d"; }
done
check "orch check-config passes on this host" ./orch check-config

step "install.sh from the bundle"
INSTALL_ORCH_SKIP_DOWNLOAD=true sh install.sh >"$WORK/install.log" 2>&1 || fail "install.sh exited $?"
cat "$WORK/install.log"
check "verified the bundle's orch" contains "$WORK/install.log" "verified $PWD/orch"
check "installed the bundle's orch" cmp -s orch /usr/local/bin/orch
mkdir -p /var/lib/orch/agent/images && cp images/*.tar /var/lib/orch/agent/images/ || fail "copy the images"

EXEC=$(sed -n 's/^ExecStart=//p' /etc/systemd/system/orch.service)
step "starting: $EXEC"
(
	set -a
	. /etc/systemd/system/orch.service.env
	set +a
	exec $EXEC
) >>"$WORK/server.log" 2>&1 &
wait_for 120 "the node is Ready" sh -c 'kubectl get nodes --no-headers 2>/dev/null | grep -q " Ready "'
check "the node runs orch's containerd 2.x" sh -c 'kubectl get nodes -o wide --no-headers | grep -q "containerd://2\."'

step "an agent on a second node (network namespace node2, no default route either)"
ip netns add node2 && ip link set eth1 netns node2 && ip -n node2 addr add 10.250.0.2/24 dev eth1 &&
	ip -n node2 link set eth1 up && ip -n node2 link set lo up || fail "node2's network"
mkdir -p /var/lib/orch-node2/agent/images && cp images/*.tar /var/lib/orch-node2/agent/images/ || fail "node2's images"
nsenter --net=/run/netns/node2 /usr/local/bin/orch agent --server https://10.250.0.1:6443 --token "$(cat /var/lib/orch/server/token)" \
	--data-dir /var/lib/orch-node2 --node-name node2 --node-ip 10.250.0.2 >>"$WORK/agent.log" 2>&1 &
wait_for 120 "the agent's node is Ready" sh -c 'kubectl get node node2 --no-headers 2>/dev/null | grep -q " Ready "'

step "the examples"
check "kubectl run (the README's example, on node2)" kubectl run box --image=orch.test/busybox:1 --image-pull-policy=Never \
	--overrides='{"apiVersion":"v1","spec":{"nodeName":"node2"}}' -- sleep 3600
wait_for 90 "the example pod runs" kubectl wait --for=condition=Ready pod/box --timeout=2s
check "containerd is orch itself, the shims and runc are orch's" runtime_is_orchs
check "a web pod on the server's node" kubectl run web --image=orch.test/busybox:1 --image-pull-policy=Never --labels=app=web \
	--overrides='{"apiVersion":"v1","spec":{"nodeSelector":{"node-role.kubernetes.io/control-plane":"true"}}}' -- httpd -f -p 80 -h /etc
check "its Service" kubectl expose pod web --port 80
wait_for 90 "the web pod runs" kubectl wait --for=condition=Ready pod/web --timeout=2s
wait_for 60 "a pod on node2 reaches the Service on the other node by name" timeout 10 kubectl exec box -- wget -q -O /dev/null http://web/hostname

step "uninstall"
# node2's agent is another orch (its own data dir): the install's killall
# leaves it alone, so it is stopped by a killall made for its data dir.
sed "s|^DATA_DIR=.*|DATA_DIR='/var/lib/orch-node2'|" /usr/local/bin/orch-killall.sh >"$WORK/killall-node2.sh" &&
	nsenter --net=/run/netns/node2 sh "$WORK/killall-node2.sh" >"$WORK/killall-node2.log" 2>&1 || fail "node2's killall exited $?"
/usr/local/bin/orch-uninstall.sh >"$WORK/uninstall.log" 2>&1 || fail "orch-uninstall.sh exited $?"
check "no orch, containerd, shim or container process left" no_runtime_procs
check "no KUBE-/ORCH-/CNI- rules left" no_orch_rules
check "no installed file left" absent /usr/local/bin/orch /usr/local/bin/kubectl /var/lib/orch /etc/orch
echo "SCENARIO PASSED"
