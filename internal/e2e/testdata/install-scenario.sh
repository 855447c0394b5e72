#!/bin/sh
# install-scenario.sh — TestInstall runs this as PID 1 of new mount, network
# and PID namespaces (unshare --mount --net --pid --fork --mount-proc), so
# that install.sh, the orch it starts and the uninstall script act on a
# clean root without touching the host:
#   - tmpfs over /usr/local/bin, /var/lib (the data dir's parent) and /run;
#   - /etc and /usr/bin as overlays on a tmpfs (their files stay visible,
#     /etc/orch and /usr/bin/kubectl are removed from the view, and whatever
#     the installer writes or removes stays in the namespace);
#   - a network of lo and eth0 (a veth) with 10.250.0.1/24, no default route.
# Environment: ORCH_BIN (the orch to install), INSTALL_SH (scripts/install.sh),
# BUSYBOX_TAR (the test image archive), WORK (a scratch directory).
# It prints "ok: ..." per check and ends with "SCENARIO PASSED"; the first
# failed check prints "FAIL: ..." with the logs and exits 1.
. "$(dirname "$0")/cleanroot.sh"

# --- install a server ------------------------------------------------------
step "install.sh (server, no supervisor)"
INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BINARY=$ORCH_BIN INSTALL_ORCH_EXEC="--node-label orch.test/installed=yes" \
	sh "$INSTALL_SH" >"$WORK/install-1.log" 2>&1 || fail "install.sh exited $?"
cat "$WORK/install-1.log"
check "installed the binary" cmp -s "$ORCH_BIN" /usr/local/bin/orch
check "the binary is executable" test -x /usr/local/bin/orch
check "kubectl links to orch" test "$(readlink /usr/local/bin/kubectl)" = orch
UNIT=/etc/systemd/system/orch.service
ENVF=/etc/systemd/system/orch.service.env
for line in Type=notify Delegate=yes KillMode=process Restart=always LimitNOFILE=1048576 LimitNPROC=infinity LimitCORE=infinity \
	TasksMax=infinity "EnvironmentFile=-$ENVF" "ExecStartPre=-/sbin/modprobe br_netfilter" "ExecStartPre=-/sbin/modprobe overlay" \
	"ExecStart=/usr/local/bin/orch server --node-label orch.test/installed=yes"; do
	check "unit has $line" grep -qx -- "$line" "$UNIT"
done
check "env file mode 0600" test "$(stat -c %a "$ENVF")" = 600
check "orch-uninstall.sh installed" test -x /usr/local/bin/orch-uninstall.sh
check "orch-killall.sh installed" test -x /usr/local/bin/orch-killall.sh
check "no OpenRC script without OpenRC" test ! -e /etc/init.d/orch
check "says how to start orch by hand" contains "$WORK/install-1.log" "Start it by hand"
check "uninstall script passes sh -n" sh -n /usr/local/bin/orch-uninstall.sh
check "killall script passes sh -n" sh -n /usr/local/bin/orch-killall.sh

# --- start it as the unit says ---------------------------------------------
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
start_server() {
	# shellcheck disable=SC2086
	(
		set -a
		. "$ENVF"
		set +a
		exec $EXEC
	) >>"$WORK/server.log" 2>&1 &
}
step "starting: $EXEC"
mkdir -p /var/lib/orch/agent/images
cp "$BUSYBOX_TAR" /var/lib/orch/agent/images/busybox.tar
start_server
node_ready() { kubectl get nodes --no-headers 2>/dev/null | grep -q ' Ready '; }
wait_for 90 "the node is Ready (kubectl, the link to orch)" node_ready
kubectl get nodes -o wide
check "the node has the label from INSTALL_ORCH_EXEC" sh -c 'kubectl get nodes -l orch.test/installed=yes --no-headers | grep -q Ready'
check "kubectl create a deployment" kubectl create deployment sleeper --image=orch.test/busybox:1 -- sleep 3600
wait_for 60 "the pod runs" kubectl wait --for=condition=Ready pod -l app=sleeper --timeout=2s
sleep_pid() { for d in /proc/[0-9]*; do [ "$(cat "$d/comm" 2>/dev/null)" != sleep ] || echo "${d#/proc/}"; done | head -n 1; }
SLEEP=$(sleep_pid)
check "a sleep process of the pod runs" test -n "$SLEEP"
# Its cgroup (cgroupfs driver: kubepods/.../pod<uid>/<container>), which killall removes.
POD_CGROUP=$(awk -F: '$2 == "pids" || $2 == "" {print $3; exit}' "/proc/$SLEEP/cgroup")
if grep -q '^[0-9]*:pids:' "/proc/$SLEEP/cgroup"; then POD_CGROUP=/sys/fs/cgroup/pids$POD_CGROUP; else POD_CGROUP=/sys/fs/cgroup$POD_CGROUP; fi
check "the container has a kubepods cgroup ($POD_CGROUP)" test -d "$POD_CGROUP"
wait_for 30 "the proxy wrote KUBE- rules" sh -c 'iptables-save | grep -q KUBE-'
check "the pod bridge orch0 exists" ip link show orch0
check "the pod has a veth on orch0" sh -c 'ip -o link show master orch0 | grep -q veth'

# --- re-run: an upgrade with nothing new -----------------------------------
step "install.sh again"
INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BINARY=$ORCH_BIN INSTALL_ORCH_EXEC="--node-label orch.test/installed=yes" \
	sh "$INSTALL_SH" >"$WORK/install-2.log" 2>&1 || fail "install.sh (again) exited $?"
cat "$WORK/install-2.log"
check "the re-run reports no change" contains "$WORK/install-2.log" "no change: orch (orch server) is up to date"
check "the re-run left the binary alone" contains "$WORK/install-2.log" "no change to /usr/local/bin/orch"
check "the re-run left the unit alone" contains "$WORK/install-2.log" "no change to $UNIT"
check "the server still answers" node_ready

# --- killall ---------------------------------------------------------------
step "orch-killall.sh"
/usr/local/bin/orch-killall.sh >"$WORK/killall.log" 2>&1 || fail "orch-killall.sh exited $?"
cat "$WORK/killall.log"
check "no orch, containerd, shim or container process left" no_runtime_procs
check "no mounts left under the data dir and /run/orch" no_mounts_under '/var/lib/orch|/run/orch'
check "the data stays" test -f /var/lib/orch/server/token
check "the binary stays" test -x /usr/local/bin/orch
check "the kubeconfig stays" test -f /etc/orch/orch.yaml
check "no orch interfaces left" no_orch_links
check "no KUBE-/ORCH-/CNI- rules left" no_orch_rules
check "the container's cgroup is gone" test ! -d "$POD_CGROUP"
check "no pod network namespaces left" no_netns

step "starting again on the kept data"
start_server
wait_for 90 "the node is Ready again" node_ready
check "the deployment is still there" kubectl get deployment sleeper
# killall killed every sleep: a new one is the pod's container started again.
wait_for 60 "its pod runs again" sh -c 'for d in /proc/[0-9]*; do cat "$d/comm" 2>/dev/null; done | grep -qx sleep'
wait_for 30 "the proxy wrote its rules again" sh -c 'iptables-save | grep -q KUBE-'

# --- uninstall -------------------------------------------------------------
step "orch-uninstall.sh"
/usr/local/bin/orch-uninstall.sh >"$WORK/uninstall.log" 2>&1 || fail "orch-uninstall.sh exited $?"
cat "$WORK/uninstall.log"
check "uninstall killed the pod's containers" contains "$WORK/uninstall.log" "killing the containers of orch's pods"
check "no orch, containerd, shim or container process left" no_runtime_procs
check "no KUBE-/ORCH-/CNI- rules left" no_orch_rules
check "no orch interfaces left" no_orch_links
check "no mounts left under the data dir and /run/orch" no_mounts_under '/var/lib/orch|/run/orch'
check "no pod network namespaces left" no_netns
check "no installed file left" absent /usr/local/bin/orch /usr/local/bin/kubectl /usr/local/bin/orch-uninstall.sh \
	/usr/local/bin/orch-killall.sh "$UNIT" "$ENVF" /etc/orch /var/lib/orch /run/orch
check "no orch route left" sh -c '! ip route show | grep -q "10\.42\."'

# --- an agent, from the air-gap layout, under a stand-in systemd -----------
step "install.sh (agent) from the air-gap layout"
AIRGAP=$WORK/scratch/airgap
mkdir -p "$AIRGAP" "$WORK/scratch/fakebin"
cp "$ORCH_BIN" "$AIRGAP/orch"
cp "$INSTALL_SH" "$AIRGAP/install.sh"
ARCH=$(uname -m)
case "$ARCH" in x86_64) ARCH=amd64 ;; aarch64) ARCH=arm64 ;; arm*) ARCH=arm ;; esac
(cd "$AIRGAP" && sha256sum orch >"sha256sum-$ARCH.txt")
# systemctl stand-in: logs its calls; is-active after a restart.
mkdir -p /run/systemd/system
cat >"$WORK/scratch/fakebin/systemctl" <<EOF
#!/bin/sh
echo "systemctl \$*" >>"$WORK/systemctl.log"
case "\$1" in
restart | start) touch "$WORK/scratch/active" ;;
is-active) [ -f "$WORK/scratch/active" ] ;;
esac
EOF
chmod +x "$WORK/scratch/fakebin/systemctl"
TOKEN="K10abc::server:it's a \$ecret"
agent_install() {
	PATH=$WORK/scratch/fakebin:$PATH ORCH_URL=https://10.250.0.1:6443 ORCH_TOKEN=$TOKEN INSTALL_ORCH_SKIP_DOWNLOAD=true \
		sh "$AIRGAP/install.sh" >"$WORK/$1.log" 2>&1 || fail "install.sh (agent) exited $?"
	cat "$WORK/$1.log"
}
agent_install install-agent-1
AUNIT=/etc/systemd/system/orch-agent.service
AENV=/etc/systemd/system/orch-agent.service.env
check "verified the binary against sha256sum-$ARCH.txt" contains "$WORK/install-agent-1.log" "verified $AIRGAP/orch against $AIRGAP/sha256sum-$ARCH.txt"
check "installed the air-gap binary" cmp -s "$ORCH_BIN" /usr/local/bin/orch
check "agent unit runs orch agent" grep -qx "ExecStart=/usr/local/bin/orch agent" "$AUNIT"
check "agent unit is Type=notify" grep -qx "Type=notify" "$AUNIT"
check "agent unit reads its env file" grep -qx "EnvironmentFile=-$AENV" "$AUNIT"
check "agent env file mode 0600" test "$(stat -c %a "$AENV")" = 600
check "agent env file has ORCH_URL" grep -qx "ORCH_URL='https://10.250.0.1:6443'" "$AENV"
check "agent env file has ORCH_TOKEN, read back as given" sh -c '. "$1"; test "$ORCH_TOKEN" = "$2"' - "$AENV" "$TOKEN"
check "orch-agent-uninstall.sh installed" test -x /usr/local/bin/orch-agent-uninstall.sh
check "no server unit" test ! -e /etc/systemd/system/orch.service
check "systemd was reloaded" contains "$WORK/systemctl.log" "systemctl daemon-reload"
check "the agent was enabled" contains "$WORK/systemctl.log" "systemctl enable orch-agent"
check "the agent was started" contains "$WORK/systemctl.log" "systemctl restart orch-agent"
: >"$WORK/systemctl.log"
agent_install install-agent-2
check "the agent re-run reports no change" contains "$WORK/install-agent-2.log" "no change: orch-agent (orch agent) is up to date"
check "the agent re-run did not restart" lacks "$WORK/systemctl.log" "restart"
# An upgrade: another binary (one byte more) replaces orch and restarts the agent.
cp "$ORCH_BIN" "$WORK/scratch/orch-next" && printf 'x' >>"$WORK/scratch/orch-next"
: >"$WORK/systemctl.log"
PATH=$WORK/scratch/fakebin:$PATH ORCH_URL=https://10.250.0.1:6443 ORCH_TOKEN=$TOKEN INSTALL_ORCH_SKIP_DOWNLOAD=true \
	INSTALL_ORCH_BINARY=$WORK/scratch/orch-next sh "$INSTALL_SH" >"$WORK/install-agent-3.log" 2>&1 || fail "install.sh (upgrade) exited $?"
cat "$WORK/install-agent-3.log"
check "the upgrade installed the new binary" cmp -s "$WORK/scratch/orch-next" /usr/local/bin/orch
check "the upgrade restarted the agent" contains "$WORK/systemctl.log" "systemctl restart orch-agent"
check "the upgrade left the unit alone" contains "$WORK/install-agent-3.log" "no change to $AUNIT"
# orch agent takes --server and --token from ORCH_URL and ORCH_TOKEN: with
# no server there it must try 10.250.0.1:6443, not ask for --server.
(
	set -a
	. "$AENV"
	set +a
	exec timeout 5 /usr/local/bin/orch agent --data-dir "$WORK/scratch/agent-data"
) >"$WORK/agent.log" 2>&1
check "orch agent reads ORCH_URL from the env file" contains "$WORK/agent.log" "10.250.0.1:6443"
check "orch agent does not ask for --server or --token" lacks "$WORK/agent.log" "is required"
/usr/local/bin/orch-killall.sh >/dev/null 2>&1 # what the agent may have started
ORCH_URL=https://10.250.0.1:6443 INSTALL_ORCH_SKIP_DOWNLOAD=true sh "$INSTALL_SH" >"$WORK/install-notoken.log" 2>&1 &&
	fail "install.sh with ORCH_URL and no token succeeded"
check "an agent without a token is refused with a reason" contains "$WORK/install-notoken.log" "set ORCH_TOKEN"
sh "$INSTALL_SH" >"$WORK/install-nourl.log" 2>&1 && fail "install.sh with nothing to download from succeeded"
check "a download without ORCH_DOWNLOAD_URL is refused with a reason" contains "$WORK/install-nourl.log" "set ORCH_DOWNLOAD_URL"

step "orch-agent-uninstall.sh"
: >"$WORK/systemctl.log"
PATH=$WORK/scratch/fakebin:$PATH /usr/local/bin/orch-agent-uninstall.sh >"$WORK/uninstall-agent.log" 2>&1 || fail "orch-agent-uninstall.sh exited $?"
cat "$WORK/uninstall-agent.log"
check "the agent was stopped" contains "$WORK/systemctl.log" "systemctl stop orch-agent.service"
check "the agent was disabled" contains "$WORK/systemctl.log" "systemctl disable orch-agent"
check "no orch process left" no_runtime_procs
check "no installed file left" absent /usr/local/bin/orch /usr/local/bin/kubectl /usr/local/bin/orch-agent-uninstall.sh \
	/usr/local/bin/orch-killall.sh "$AUNIT" "$AENV" /etc/orch /var/lib/orch /run/orch

# --- a download, with a checksum ------------------------------------------
step "install.sh with ORCH_DOWNLOAD_URL"
rm -rf /run/systemd/system
SITE=$WORK/scratch/site
mkdir -p "$SITE"
# make release's names: orch-linux-<arch>, sha256sum-<arch>.txt.
cp "$ORCH_BIN" "$SITE/orch-linux-$ARCH"
echo "0000000000000000000000000000000000000000000000000000000000000000  orch-linux-$ARCH" >"$SITE/sha256sum-$ARCH.txt"
ORCH_DOWNLOAD_URL=file://$SITE sh "$INSTALL_SH" >"$WORK/install-badsum.log" 2>&1 && fail "install.sh installed a binary whose checksum is wrong"
check "a wrong checksum is refused" contains "$WORK/install-badsum.log" "checksum mismatch"
check "nothing installed after a wrong checksum" absent /usr/local/bin/orch
# The architecture comes from uname -m: on an arm64 or a 32-bit ARM machine
# (a uname stand-in says so) install.sh asks for that architecture's files.
for m in aarch64:arm64 armv7l:arm; do
	printf '#!/bin/sh\necho %s\n' "${m%%:*}" >"$WORK/scratch/fakebin/uname" && chmod +x "$WORK/scratch/fakebin/uname"
	PATH=$WORK/scratch/fakebin:$PATH ORCH_DOWNLOAD_URL=file://$SITE sh "$INSTALL_SH" >"$WORK/install-${m#*:}.log" 2>&1 &&
		fail "install.sh installed on a ${m%%:*} machine from a site with only $ARCH files"
	check "uname -m ${m%%:*} asks for sha256sum-${m#*:}.txt" contains "$WORK/install-${m#*:}.log" "$SITE/sha256sum-${m#*:}.txt"
done
rm -f "$WORK/scratch/fakebin/uname"
(cd "$SITE" && sha256sum "orch-linux-$ARCH" >"sha256sum-$ARCH.txt")
ORCH_DOWNLOAD_URL=file://$SITE INSTALL_ORCH_BIN_DIR=/usr/local/bin/sub INSTALL_ORCH_EXEC="server --disable-agent" \
	sh "$INSTALL_SH" >"$WORK/install-download.log" 2>&1 || fail "install.sh (download) exited $?"
cat "$WORK/install-download.log"
check "downloaded and verified" contains "$WORK/install-download.log" "verified"
check "installed into INSTALL_ORCH_BIN_DIR" cmp -s "$ORCH_BIN" /usr/local/bin/sub/orch
check "the unit runs the binary from INSTALL_ORCH_BIN_DIR with INSTALL_ORCH_EXEC" \
	grep -qx "ExecStart=/usr/local/bin/sub/orch server --disable-agent" /etc/systemd/system/orch.service
step "install.sh: a second service, a server that joins a cluster, with the binary already installed"
ORCH_URL=https://10.250.0.1:6443 ORCH_TOKEN=$TOKEN INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BIN_DIR=/usr/local/bin/sub \
	INSTALL_ORCH_EXEC=server INSTALL_ORCH_NAME=ha sh "$INSTALL_SH" >"$WORK/install-ha.log" 2>&1 || fail "install.sh (ha) exited $?"
cat "$WORK/install-ha.log"
check "kept the installed binary" contains "$WORK/install-ha.log" "using the orch already in /usr/local/bin/sub"
check "the joining server's unit passes ORCH_URL as --server" \
	grep -qx "ExecStart=/usr/local/bin/sub/orch server --server https://10.250.0.1:6443" /etc/systemd/system/orch-ha.service
check "the joining server's env file has the token" grep -q "^ORCH_TOKEN=" /etc/systemd/system/orch-ha.service.env
/usr/local/bin/sub/orch-ha-uninstall.sh >"$WORK/uninstall-ha.log" 2>&1 || fail "orch-ha-uninstall.sh exited $?"
cat "$WORK/uninstall-ha.log"
check "removing one service keeps the other's binary" test -x /usr/local/bin/sub/orch
check "removing one service removes its files" absent /etc/systemd/system/orch-ha.service /etc/systemd/system/orch-ha.service.env \
	/usr/local/bin/sub/orch-ha-uninstall.sh
check "the other service stays" test -f /etc/systemd/system/orch.service
/usr/local/bin/sub/orch-uninstall.sh >"$WORK/uninstall-download.log" 2>&1 || fail "orch-uninstall.sh (download) exited $?"
check "uninstalled from INSTALL_ORCH_BIN_DIR" absent /usr/local/bin/sub/orch /usr/local/bin/sub/kubectl /etc/systemd/system/orch.service

# --- OpenRC (stand-ins for openrc-run, rc-update and rc-service) -----------
step "install.sh under a stand-in OpenRC"
mkdir -p "$WORK/scratch/openrc"
for c in openrc-run rc-update rc-service; do
	printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$c" "$WORK/openrc.log" >"$WORK/scratch/openrc/$c"
	chmod +x "$WORK/scratch/openrc/$c"
done
PATH=$WORK/scratch/openrc:$PATH INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BINARY=$ORCH_BIN INSTALL_ORCH_BIN_DIR=/usr/local/bin/rc \
	INSTALL_ORCH_EXEC="server --data-dir /var/lib/orch-rc" sh "$INSTALL_SH" >"$WORK/install-openrc.log" 2>&1 || fail "install.sh (OpenRC) exited $?"
cat "$WORK/install-openrc.log"
check "wrote the OpenRC script" test -x /etc/init.d/orch
check "the OpenRC script parses" sh -n /etc/init.d/orch
check "the OpenRC script runs orch server with the flags" grep -qx 'command_args="server --data-dir /var/lib/orch-rc"' /etc/init.d/orch
check "the OpenRC script runs the installed binary" grep -qx 'command="/usr/local/bin/rc/orch"' /etc/init.d/orch
check "the OpenRC script reads the env file" grep -q "/etc/systemd/system/orch.service.env" /etc/init.d/orch
check "the service was added to the default runlevel" contains "$WORK/openrc.log" "rc-update add orch default"
check "the service was started" contains "$WORK/openrc.log" "rc-service orch restart"
mkdir -p /var/lib/orch-rc/server
PATH=$WORK/scratch/openrc:$PATH /usr/local/bin/rc/orch-uninstall.sh >"$WORK/uninstall-openrc.log" 2>&1 || fail "orch-uninstall.sh (OpenRC) exited $?"
cat "$WORK/uninstall-openrc.log"
check "the service was stopped" contains "$WORK/openrc.log" "rc-service orch stop"
check "the service was removed from the runlevel" contains "$WORK/openrc.log" "rc-update delete orch default"
check "uninstalled the OpenRC service and the --data-dir in use" absent /etc/init.d/orch /usr/local/bin/rc/orch /var/lib/orch-rc
INSTALL_ORCH_SKIP_DOWNLOAD=true INSTALL_ORCH_BINARY=$ORCH_BIN INSTALL_ORCH_BIN_DIR=/usr/local/bin/rc INSTALL_ORCH_EXEC="--data-dir /var/lib" \
	sh "$INSTALL_SH" >"$WORK/install-badir.log" 2>&1 && fail "install.sh accepted --data-dir /var/lib"
check "a system directory as the data dir is refused" contains "$WORK/install-badir.log" "is a system directory"

echo "SCENARIO PASSED"
