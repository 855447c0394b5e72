package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orch/internal/kubelet/images"
)

// TestInstall runs scripts/install.sh for real on a clean root: the
// scenario in testdata/install-scenario.sh runs as PID 1 of new mount,
// network and PID namespaces, with tmpfs and overlays over the directories
// the installer writes, so nothing reaches the host. It installs a server
// from a local binary (no supervisor), starts it as the unit's ExecStart
// says, runs a pod, re-runs the installer (no change), runs orch-killall.sh
// (nothing left running, the data stays), starts again, runs
// orch-uninstall.sh (no process, rule, interface, mount or file left), then
// installs an agent from the air-gap layout under a stand-in systemctl, a
// server from a download URL with a checksum, and one under stand-in OpenRC
// commands.
func TestInstall(t *testing.T) {
	root := scenarioRoot(t, "unshare", "iptables-save", "sha256sum", "curl", "timeout")
	requireRuntime(t)
	work := t.TempDir()
	busybox := filepath.Join(work, "busybox.tar")
	if err := images.WriteBusyboxFile(busybox); err != nil {
		t.Fatal(err)
	}
	output := runScenario(t, root, "install-scenario.sh",
		"ORCH_BIN="+orchBin,
		"INSTALL_SH="+filepath.Join(root, "scripts", "install.sh"),
		"BUSYBOX_TAR="+busybox,
		"WORK="+work,
	)
	// The checks that make the acceptance criteria; each must have run.
	wantReported(t, output,
		"ok: installed the binary",
		"ok: kubectl links to orch",
		"ok: unit has Type=notify",
		"ok: unit has Delegate=yes",
		"ok: unit has KillMode=process",
		"ok: env file mode 0600",
		"ok: the node is Ready (kubectl, the link to orch)",
		"ok: the pod runs",
		"ok: the re-run reports no change",
		"ok: no orch, containerd, shim or container process left",
		"ok: the data stays",
		"ok: the node is Ready again",
		"ok: its pod runs again",
		"ok: uninstall killed the pod's containers",
		"ok: the container's cgroup is gone",
		"ok: no KUBE-/ORCH-/CNI- rules left",
		"ok: no orch interfaces left",
		"ok: no installed file left",
		"ok: agent env file has ORCH_URL",
		"ok: agent env file has ORCH_TOKEN, read back as given",
		"ok: the agent re-run did not restart",
		"ok: the upgrade restarted the agent",
		"ok: orch agent reads ORCH_URL from the env file",
		"ok: a wrong checksum is refused",
		"ok: uname -m aarch64 asks for sha256sum-arm64.txt",
		"ok: uname -m armv7l asks for sha256sum-arm.txt",
		"ok: downloaded and verified",
		"ok: the joining server's unit passes ORCH_URL as --server",
		"ok: removing one service keeps the other's binary",
		"ok: the OpenRC script runs orch server with the flags",
		"ok: uninstalled the OpenRC service and the --data-dir in use",
	)
}

// runScenario runs testdata/SCRIPT as PID 1 of new mount, network and PID
// namespaces with env added, and fails unless it reports SCENARIO PASSED.
func runScenario(t *testing.T, root, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// --kill-child: if the test ends first, PID 1 of the namespace dies
	// and takes every process in it along.
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc", "--kill-child",
		"sh", filepath.Join(root, "internal", "e2e", "testdata", script))
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	output := string(out)
	t.Logf("%s took %s", script, time.Since(start).Round(time.Second))
	if err != nil || !strings.Contains(output, "SCENARIO PASSED") || strings.Contains(output, "FAIL:") {
		t.Fatalf("%s failed (%v); its output:\n%s", script, err, output)
	}
	return output
}

// TestAirGapInstall builds the air-gap bundle (scripts/airgap.sh, as make
// airgap does) and installs orch from it on a clean root with no route out
// (testdata/airgap-scenario.sh): checksums, install.sh, the images, a server
// with its agent and a second node's agent, the README's example and a
// Service across the nodes, then uninstall.
func TestAirGapInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("TestAirGapInstall installs orch into new namespaces and must run as root (make test does)")
	}
	requireRuntime(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	build := exec.Command("bash", filepath.Join(root, "scripts", "airgap.sh"), orchBin, work)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/airgap.sh: %v\n%s", err, out)
	}
	bundles, _ := filepath.Glob(filepath.Join(work, "orch-airgap-*.tar.gz"))
	if len(bundles) != 1 {
		t.Fatalf("scripts/airgap.sh made %v, want one orch-airgap-<arch>.tar.gz", bundles)
	}
	output := runScenario(t, root, "airgap-scenario.sh", "BUNDLE="+bundles[0], "WORK="+work)
	wantReported(t, output, "ok: no route to the outside", "ok: the bundle's checksums match", "ok: verified the bundle's orch",
		"ok: the node is Ready", "ok: the agent's node is Ready", "ok: the example pod runs",
		"ok: a pod on node2 reaches the Service on the other node by name", "ok: no installed file left")
}
