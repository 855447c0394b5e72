package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch/internal/agent"
	"orch/internal/envtest"
	"orch/internal/kubelet/images"
	"orch/internal/network"
)

// Agent is one `orch agent` process with its data directory.
type Agent struct {
	t       testing.TB
	Name    string // --node-name
	DataDir string
	args    []string
	cmd     *exec.Cmd
	logs    *envtest.SyncBuffer
	exited  chan error
	started time.Time // when the process last started
}

// agentIP is the node IP of agents that share the test host with their
// server: a loopback address, but not 127.0.0.1, which the server's
// certificate names (a node's serving certificate may not).
const agentIP = "127.0.0.2"

// StartAgent starts `orch agent` joined to s as node name, with its own
// containerd under a fresh data dir holding the busybox test image
// (images.BusyboxRef) in its air-gap image directory. When t ends the
// agent is stopped and whatever its runtime left (shims, mounts, the
// bridge) is removed.
func StartAgent(t testing.TB, s *Server, name string, extra ...string) *Agent {
	t.Helper()
	args := []string{"--server", s.URL(), "--token", s.Token(), "--node-ip", agentIP, "--kubelet-port", strconv.Itoa(envtest.FreePort(t))}
	if !slices.Contains(extra, "--eviction-hard") {
		args = append(args, testEvictionHard...)
	}
	return startAgent(t, name, nil, append(args, extra...))
}

// testEvictionHard are the pressure thresholds of the tests' agents:
// memory only, so that a test machine's nearly full disk (upstream's
// default imagefs.available<15%) does not taint its nodes.
var testEvictionHard = []string{"--eviction-hard", "memory.available<100Mi"}

// StartAgentIn is StartAgent inside network namespace netns (its
// containerd and pods too), joining server (a URL reachable from there)
// with token as node name at nodeIP.
func StartAgentIn(t testing.TB, netns, server, token, name, nodeIP string, extra ...string) *Agent {
	t.Helper()
	args := append([]string{"--server", server, "--token", token, "--node-ip", nodeIP}, testEvictionHard...)
	return startAgent(t, name, inNetns(netns), append(args, extra...))
}

// inNetns prefixes a command to run it in network namespace netns.
// nsenter enters only the network namespace: `ip netns exec` also
// remounts /sys, which hides cgroup v1 mounts from runc.
func inNetns(netns string) []string {
	return []string{"nsenter", "--net=/run/netns/" + netns}
}

// startAgent runs `orch agent --data-dir D --node-name name args…`,
// prefixed by wrap (e.g. nsenter --net=…).
func startAgent(t testing.TB, name string, wrap, args []string) *Agent {
	t.Helper()
	requireRuntime(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	writeBusyboxImage(t, dataDir)
	a := &Agent{t: t, Name: name, DataDir: dataDir, logs: &envtest.SyncBuffer{},
		args: append(append(slices.Clone(wrap), orchBin, "agent", "--data-dir", dataDir, "--node-name", name), args...)}
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("agent %s logs:\n%s", name, truncateHead(a.logs.String(), 20000))
			if data, err := os.ReadFile(filepath.Join(dataDir, "agent", "containerd", "containerd.log")); err == nil {
				t.Logf("containerd log (tail):\n%s", truncateHead(string(data), 3000))
			}
		}
		cleanUpRuntime(t, dataDir)
		cleanUpNetwork(t, wrap)
	})
	a.Start()
	return a
}

// cleanUpNetwork runs `orch agent cleanup` (prefixed by wrap) to remove
// the Service rules, routes and masquerade rules a stopped agent left.
func cleanUpNetwork(t testing.TB, wrap []string) {
	args := append(slices.Clone(wrap), orchBin, "agent", "cleanup")
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Start starts the agent process (again).
func (a *Agent) Start() {
	a.t.Helper()
	cmd := exec.Command(a.args[0], a.args[1:]...)
	cmd.Stdout, cmd.Stderr = a.logs, a.logs
	a.started = time.Now()
	if err := cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.cmd, a.exited = cmd, make(chan error, 1)
	go func(exited chan error) { exited <- cmd.Wait() }(a.exited)
}

// Stop sends SIGTERM and waits for the agent to exit (SIGKILL and a test
// failure after 60 s). Its containers keep running.
func (a *Agent) Stop() {
	a.t.Helper()
	if a.cmd == nil {
		return
	}
	defer func() { a.cmd = nil }()
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.exited:
		if err != nil {
			a.t.Errorf("orch agent %s after SIGTERM: %v, want exit status 0", a.Name, err)
		}
	case <-time.After(60 * time.Second):
		a.cmd.Process.Kill()
		<-a.exited
		a.t.Errorf("orch agent %s did not exit within 60 s of SIGTERM", a.Name)
	}
}

// Kill kills the agent with SIGKILL (its containerd follows, by its
// parent-death signal) and waits for it to exit.
func (a *Agent) Kill() {
	a.t.Helper()
	if a.cmd == nil {
		return
	}
	a.cmd.Process.Kill()
	<-a.exited
	a.cmd = nil
}

// Alive fails the test if the agent exited.
func (a *Agent) Alive() {
	a.t.Helper()
	select {
	case err := <-a.exited:
		a.cmd = nil
		a.t.Fatalf("orch agent %s exited: %v", a.Name, err)
	default:
	}
}

// Token is the server's join token.
func (s *Server) Token() string {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, "server", "token"))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// requireRuntime fails (never skips) unless the test can run containers.
func requireRuntime(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs containerd and must run as root (make test does; scripts/test-deps.sh installs what it needs)")
	}
	// containerd, runc and the CNI plugins are orch's own.
	for _, bin := range []string{"ip", "nsenter", "script", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh as root", bin)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Fatalf("/bin/busybox is missing: run scripts/test-deps.sh as root")
	}
}

// writeBusyboxImage puts the busybox test image where the agent of
// dataDir imports images from.
// The archive is dated a minute back, as one copied there before the
// agent starts: the importer takes it at once instead of waiting for a
// file changed less than its settle time ago to stop changing.
func writeBusyboxImage(t testing.TB, dataDir string) {
	t.Helper()
	archive := filepath.Join(dataDir, "agent", "images", "busybox.tar")
	if err := images.WriteBusyboxFile(archive); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-time.Minute)
	if err := os.Chtimes(archive, then, then); err != nil {
		t.Fatal(err)
	}
}

// cleanUpRuntime removes what the runtime of the agent with dataDir left
// after the agent stopped: the shims of running containers (an agent
// leaves its pods running, by design), mounts under its directories, its
// runtime state, the pods' network namespaces (their veths go with them,
// as at a reboot) and the pod bridge.
func cleanUpRuntime(t testing.TB, dataDir string) {
	state := agent.ContainerdState(dataDir)
	runtime := map[int]bool{}
	for _, p := range processesMentioning(state) {
		pid, _, _ := strings.Cut(p, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			runtime[n] = true
		}
	}
	containers, podNetns := children(runtime)
	for _, pid := range containers { // a container outlives its shim
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for pid := range runtime {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	removeNetns(podNetns)
	time.Sleep(200 * time.Millisecond) // the killed processes let go of their mounts
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (strings.HasPrefix(f[4], dataDir) || strings.HasPrefix(f[4], state)) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	os.RemoveAll(state)
	exec.Command("ip", "link", "del", network.DefaultBridgeName).Run()
}

// children is the processes whose parent is in parents (the shims'
// containers, pause among them) and the inodes of their network
// namespaces.
func children(parents map[int]bool) ([]int, map[uint64]bool) {
	var pids []int
	netns := map[uint64]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			ppid, ok := strings.CutPrefix(line, "PPid:")
			if n, err := strconv.Atoi(strings.TrimSpace(ppid)); ok && err == nil && parents[n] {
				pid, _ := strconv.Atoi(e.Name())
				pids = append(pids, pid)
				var st syscall.Stat_t
				if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil {
					netns[st.Ino] = true
				}
			}
		}
	}
	return pids, netns
}

// removeNetns unmounts and removes the CNI network namespaces under
// /run/netns whose inode is in inodes.
func removeNetns(inodes map[uint64]bool) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		path := filepath.Join("/run/netns", e.Name())
		var st syscall.Stat_t
		if !strings.HasPrefix(e.Name(), "cni-") || syscall.Stat(path, &st) != nil || !inodes[st.Ino] {
			continue
		}
		syscall.Unmount(path, syscall.MNT_DETACH)
		os.Remove(path)
	}
}
