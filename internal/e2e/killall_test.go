package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKillallSparesAnotherInstance runs testdata/killall-scenario.sh on a
// clean root: orch-killall.sh and orch-uninstall.sh stop and remove the
// installed orch (its processes, its pods' network namespaces, its mounts
// and runtime state) and leave a second orch with another data dir, in a
// network namespace of its own, running. Stand-in processes play orch,
// containerd and the shims, so it needs neither containerd nor a cluster.
func TestKillallSparesAnotherInstance(t *testing.T) {
	root := scenarioRoot(t, "unshare", "nsenter", "ip")
	work := t.TempDir()
	fake := filepath.Join(work, "fakeproc")
	build := exec.Command("go", "build", "-o", fake, "./internal/e2e/testdata/fakeproc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build fakeproc: %v\n%s", err, out)
	}
	output := runScenario(t, root, "killall-scenario.sh",
		"FAKEPROC="+fake, "INSTALL_SH="+filepath.Join(root, "scripts", "install.sh"), "WORK="+work)
	wantReported(t, output,
		"ok: A's orch, containerd, shim and pod are stopped",
		"ok: A's pod network namespace is gone",
		"ok: after orch-killall.sh: B's orch, containerd, shim and pod run",
		"ok: after orch-killall.sh: B's network namespaces stay",
		"ok: after orch-uninstall.sh: B's orch, containerd, shim and pod run",
		"ok: after orch-uninstall.sh: B's data stays",
	)
}

// wantReported fails the test for each check the scenario's output does
// not report, and logs the output.
func wantReported(t *testing.T, output string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(output, want) {
			t.Errorf("the scenario did not report %q", want)
		}
	}
	t.Logf("scenario output:\n%s", output)
}

// scenarioRoot skips the test unless it runs as root, fails it unless the
// binaries bins are installed, and returns the repository's root, for the
// tests that run a testdata scenario (runScenario).
func scenarioRoot(t *testing.T, bins ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("%s runs its scenario in new namespaces and must run as root (make test does)", t.Name())
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh as root", bin)
		}
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
