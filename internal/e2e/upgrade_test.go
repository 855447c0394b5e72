package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/agent"
	"orch/internal/kubelet/images"
)

// TestRuntimeUpgradeInPlace: containers outlive an agent restart and an
// upgrade of orch in place (a new binary file, the same data dir, a
// runtime payload of another version installed before), and the upgraded
// node runs new pods with its own runtime: the runtime dir's current link
// moves to the new payload, the old one is removed, containerd runs from
// the new binary, a new pod's shim is the new payload's, and runc (found
// through current) still execs into the old pod.
func TestRuntimeUpgradeInPlace(t *testing.T) {
	s := StartServer(t)
	a := StartAgent(t, s, "e2e-upgrade")
	client := s.client(t)
	waitNodeReady(t, client, "e2e-upgrade")
	runtimeDir := filepath.Join(a.DataDir, "agent", "runtime")
	socket := filepath.Join(agent.ContainerdState(a.DataDir), "containerd.sock")

	run := func(name string) string {
		s.Kubectl(t, "run", name, "--image="+images.BusyboxRef, "--image-pull-policy=Never", "--command", "--",
			"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
		p := waitPod(t, client, name, 2*time.Minute, func(p *corev1.Pod) string {
			if p.Status.Phase != corev1.PodRunning || mainOrOnly(p).ContainerID == "" {
				return fmt.Sprintf("pod %s: phase %s", p.Name, p.Status.Phase)
			}
			return ""
		})
		return mainOrOnly(p).ContainerID
	}
	untouched := func(when, name, id string, shims []string) {
		t.Helper()
		cs := mainOrOnly(getPod(t, client, name))
		if cs.ContainerID != id || cs.RestartCount != 0 || cs.State.Running == nil {
			t.Errorf("%s: pod %s has container %s (restarts %d, running %v), want %s untouched",
				when, name, cs.ContainerID, cs.RestartCount, cs.State.Running != nil, id)
		}
		for _, pid := range shims {
			if _, err := os.Stat(filepath.Join("/proc", pid)); err != nil {
				t.Errorf("%s: shim %s is gone", when, pid)
			}
		}
	}

	oldID := run("old")
	oldShims := shimsOf(socket)
	if len(oldShims) == 0 {
		t.Fatalf("no shim of %s runs", socket)
	}

	// An agent restart. The Node stays Ready meanwhile: what says the new
	// agent is up is its log.
	a.Stop()
	a.Start()
	waitConnected(t, a, 2)
	waitNodeReady(t, client, "e2e-upgrade")
	untouched("after an agent restart", "old", oldID, oldShims)

	// An upgrade in place: the node ran an older payload (moved aside
	// here, the shims keep their executables); the new binary is another
	// file.
	a.Stop()
	current, err := os.Readlink(filepath.Join(runtimeDir, "current"))
	if err != nil {
		t.Fatal(err)
	}
	const older = "0000000000000000"
	if err := os.Rename(filepath.Join(runtimeDir, current), filepath.Join(runtimeDir, older)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(runtimeDir, "current")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(older, filepath.Join(runtimeDir, "current")); err != nil {
		t.Fatal(err)
	}
	newBin := filepath.Join(t.TempDir(), "orch")
	data, err := os.ReadFile(orchBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newBin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	a.args[slices.Index(a.args, orchBin)] = newBin
	a.Start()
	waitConnected(t, a, 3)
	waitNodeReady(t, client, "e2e-upgrade")
	untouched("after the upgrade", "old", oldID, oldShims)

	if link, _ := os.Readlink(filepath.Join(runtimeDir, "current")); link != current {
		t.Errorf("runtime/current -> %q after the upgrade, want the new payload %q", link, current)
	}
	if _, err := os.Stat(filepath.Join(runtimeDir, older)); !os.IsNotExist(err) {
		t.Errorf("the older payload is still there: %v", err)
	}
	var containerdExe []string
	for _, p := range processesMentioning(filepath.Join(a.DataDir, "agent", "etc", "containerd", "config.toml")) {
		pid, _, _ := strings.Cut(p, ":")
		if comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm")); strings.TrimSpace(string(comm)) == "containerd" {
			exe, _ := os.Readlink(filepath.Join("/proc", pid, "exe"))
			containerdExe = append(containerdExe, exe)
		}
	}
	if !slices.Equal(containerdExe, []string{newBin}) {
		t.Errorf("containerd runs %v, want the new binary %s", containerdExe, newBin)
	}

	run("new")
	wantShim := filepath.Join(runtimeDir, current, "bin", "containerd-shim-runc-v2")
	var newShims []string
	for _, pid := range shimsOf(socket) {
		if !slices.Contains(oldShims, pid) {
			newShims = append(newShims, pid)
			if exe, _ := os.Readlink(filepath.Join("/proc", pid, "exe")); exe != wantShim {
				t.Errorf("the new pod's shim %s runs %s, want %s", pid, exe, wantShim)
			}
		}
	}
	if len(newShims) == 0 {
		t.Error("no new shim for the new pod")
	}
	if out := s.Kubectl(t, "exec", "old", "--", "echo", "still-here"); !strings.Contains(out, "still-here") {
		t.Errorf("exec into the old pod after the upgrade: %q", out)
	}
	s.Kubectl(t, "delete", "pod", "old", "new", "--timeout=60s")
	waitGone(t, client, "old")
	waitGone(t, client, "new")
}

// waitConnected waits until the agent has connected to its runtime n times
// in all (once per start).
func waitConnected(t *testing.T, a *Agent, n int) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		a.Alive()
		if got := strings.Count(a.logs.String(), "container runtime connected"); got < n {
			return fmt.Sprintf("the agent connected to its runtime %d times, want %d", got, n)
		}
		return ""
	})
}

// shimsOf lists the PIDs of the shims of the containerd at socket.
func shimsOf(socket string) []string {
	var pids []string
	for _, p := range processesMentioning(socket) {
		pid, _, _ := strings.Cut(p, ":")
		if comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm")); strings.HasPrefix(string(comm), "containerd-shim") {
			pids = append(pids, pid)
		}
	}
	return pids
}
