package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch/internal/envtest"
)

// startTimeout bounds how long a server may take to answer /readyz and
// create its default objects; generous because the machine is shared.
const startTimeout = 60 * time.Second

// Server is one `orch server` process with its data directory and ports.
type Server struct {
	t          testing.TB
	Dir        string // --data-dir
	Kubeconfig string // --write-kubeconfig
	Port       int    // --https-listen-port
	// WithAgent runs the server's own agent (node e2e-server); without
	// it the server runs with --disable-agent.
	WithAgent   bool
	etcdPorts   [2]int // client, peer
	kubeletPort int    // --kubelet-port of its agent
	bindAddress string
	extraArgs   []string
	// host is where the test reaches the apiserver (127.0.0.1 unless the
	// server runs in a network namespace of its own: see wrap).
	host string
	// wrap runs the process inside a network namespace (inNetns).
	wrap    []string
	starts  int  // how many times it was started (one log file each)
	ready   bool // it was ready once
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	exitErr error
}

// StartServer starts a server (with --disable-agent) in a fresh temporary
// directory on free loopback ports and waits until it is ready; it is
// stopped when t ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return startServer(t, false, "127.0.0.1")
}

// StartServerAt is StartServer listening on every address, its serving
// certificate naming ip too, so that agents in other network namespaces
// reach it at https://ip:port; extra are more flags.
func StartServerAt(t testing.TB, ip string, extra ...string) *Server {
	t.Helper()
	return startServer(t, false, "0.0.0.0", append([]string{"--tls-san", ip}, extra...)...)
}

// StartServerWithAgent is StartServer with the server's own agent, whose
// node is e2e-server and whose image directory holds the busybox test
// image. What its runtime leaves is removed when t ends.
func StartServerWithAgent(t testing.TB) *Server {
	t.Helper()
	requireRuntime(t)
	return startServer(t, true, "127.0.0.1")
}

func startServer(t testing.TB, withAgent bool, bindAddress string, extra ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{t: t, Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig.yaml"), WithAgent: withAgent,
		bindAddress: bindAddress, extraArgs: extra, host: "127.0.0.1"}
	s.pickPorts()
	if withAgent {
		writeBusyboxImage(t, dir)
	}
	s.stopWhenDone(withAgent)
	s.Start()
	return s
}

// refusedComponent is what the apiserver logs when it refuses a request of
// one of orch's own components (internal/apiserver/authorize.go).
const refusedComponent = "refused a request of an orch component: the bootstrap policy lacks a rule"

// stopWhenDone stops the server when the test ends, logs its output if
// the test failed, and cleans up after its agent. A request of one of
// orch's own components that the apiserver refused fails the test: the
// bootstrap policy lacks a rule.
func (s *Server) stopWhenDone(withAgent bool) {
	t, dir := s.t, s.Dir
	t.Cleanup(func() {
		s.Stop()
		for _, line := range strings.Split(s.Logs(), "\n") {
			if strings.Contains(line, refusedComponent) {
				t.Errorf("the apiserver refused an orch component: %s", line)
			}
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", s.Logs())
		}
		if withAgent {
			cleanUpRuntime(t, dir)
			cleanUpNetwork(t, s.wrap)
		}
	})
}

func (s *Server) pickPorts() {
	s.Port = envtest.FreePort(s.t)
	s.etcdPorts = [2]int{envtest.FreePort(s.t), envtest.FreePort(s.t)}
	s.kubeletPort = envtest.FreePort(s.t)
}

// URL is the apiserver's address.
func (s *Server) URL() string { return fmt.Sprintf("https://%s:%d", s.host, s.Port) }

// Start starts the process (again) on the same data directory and ports and
// waits for /readyz and the default namespaces and kubernetes Service.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("server is already running")
	}
	for attempt := 1; ; attempt++ {
		s.launch()
		problem := s.waitReady()
		if problem == "" {
			s.ready = true
			return
		}
		// Another process may take a port between freePort and the
		// server's bind: before the first successful start, try others.
		if s.cmd == nil && !s.ready && attempt < 3 && strings.Contains(s.RunLog(s.starts), "address already in use") {
			s.pickPorts()
			continue
		}
		s.t.Fatal(problem) // the logs follow from the cleanup
	}
}

// launch starts the process with its output in a new log file.
func (s *Server) launch() {
	s.t.Helper()
	s.starts++
	out, err := os.Create(s.logPath(s.starts))
	if err != nil {
		s.t.Fatal(err)
	}
	args := []string{"server", "--data-dir", s.Dir, "--write-kubeconfig", s.writtenKubeconfig(),
		"--bind-address", s.bindAddress, "--https-listen-port", strconv.Itoa(s.Port),
		"--etcd-client-port", strconv.Itoa(s.etcdPorts[0]), "--etcd-peer-port", strconv.Itoa(s.etcdPorts[1])}
	args = append(args, s.extraArgs...)
	if s.WithAgent {
		args = append(args, "--node-name", "e2e-server", "--kubelet-port", strconv.Itoa(s.kubeletPort))
		args = append(args, testEvictionHard...)
	} else {
		args = append(args, "--disable-agent")
	}
	cmd := exec.Command(orchBin, args...)
	if len(s.wrap) > 0 {
		cmd = exec.Command(s.wrap[0], append(append(s.wrap[1:], orchBin), args...)...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
	if err := cmd.Start(); err != nil {
		out.Close()
		s.t.Fatalf("start %s: %v", orchBin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		s.exitErr = cmd.Wait()
		out.Close()
		close(done)
	}(s.done)
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL and a test
// failure if it does not within 15 seconds).
func (s *Server) Stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	defer func() { s.cmd = nil }()
	select {
	case <-s.done:
		s.t.Errorf("orch server exited before it was stopped: %v", s.exitErr)
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		if s.exitErr != nil {
			s.t.Errorf("orch server did not exit cleanly on SIGTERM: %v", s.exitErr)
		}
	case <-time.After(15 * time.Second):
		// SIGQUIT makes the Go runtime print every goroutine to the log.
		s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		s.t.Errorf("orch server did not exit within 15s of SIGTERM; its goroutines in orch code:\n%s",
			orchGoroutines(s.logPath(s.starts)))
	}
}

// Kill ends the process with SIGKILL, as a crash or a power cut would.
func (s *Server) Kill() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// writtenKubeconfig is where the server writes its admin kubeconfig: the
// test's own one, unless the server is in a network namespace, where the
// kubeconfig's 127.0.0.1 is not the test's (see copyKubeconfig).
func (s *Server) writtenKubeconfig() string {
	if s.host == "127.0.0.1" {
		return s.Kubeconfig
	}
	return s.Kubeconfig + ".written"
}

// copyKubeconfig makes the test's kubeconfig from the written one, with
// the server's address in it, when they differ.
func (s *Server) copyKubeconfig() error {
	if s.host == "127.0.0.1" {
		return nil
	}
	data, err := os.ReadFile(s.writtenKubeconfig())
	if err != nil {
		return fmt.Errorf("no kubeconfig yet: %w", err)
	}
	data = []byte(strings.ReplaceAll(string(data), "https://127.0.0.1:", "https://"+s.host+":"))
	return os.WriteFile(s.Kubeconfig, data, 0o600)
}

// Restart stops the server and starts it again on the same data directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

func (s *Server) logPath(n int) string { return filepath.Join(s.Dir, fmt.Sprintf("server-%d.log", n)) }

// Logs is the output of every run of the process so far, without the
// goroutine dumps of SIGQUIT.
func (s *Server) Logs() string {
	var b strings.Builder
	for i := 1; i <= s.starts; i++ {
		fmt.Fprintf(&b, "--- run %d ---\n%s", i, s.RunLog(i))
	}
	return b.String()
}

// orchGoroutines condenses a SIGQUIT dump to the goroutines that run orch's
// code: their orch frames (function and file:line), identical stacks counted.
func orchGoroutines(logPath string) string {
	data, _ := os.ReadFile(logPath)
	_, dump, _ := strings.Cut(string(data), "SIGQUIT: quit")
	counts := map[string]int{}
	var order []string
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || !strings.Contains(g, "orch/internal/") {
			continue
		}
		var frames []string
		for _, l := range strings.Split(g, "\n") {
			if strings.Contains(l, "orch/internal/") || strings.Contains(l, "etcd/client/v3") {
				l, _, _ = strings.Cut(strings.TrimSpace(l), " +0x")
				if i := strings.LastIndex(l, "("); i > 0 && !strings.Contains(l, ".go:") {
					l = l[:i]
				}
				frames = append(frames, "  "+l)
			}
		}
		key := strings.Join(frames, "\n")
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "%d goroutine(s):\n%s\n", counts[k], k)
	}
	return b.String()
}

// RunLog is the output of the n-th run (1-based), without a goroutine dump.
func (s *Server) RunLog(n int) string {
	data, _ := os.ReadFile(s.logPath(n))
	log, _, _ := strings.Cut(string(data), "SIGQUIT: quit")
	return log
}

// waitReady polls /readyz (anonymous, allowed) and then the bootstrap
// objects with the admin certificate; it returns what went wrong, or "".
// If the process exits it returns at once (and s.cmd is nil).
func (s *Server) waitReady() string {
	deadline := time.Now().Add(startTimeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			s.cmd = nil
			return fmt.Sprintf("orch server exited during start: %v", s.exitErr)
		default:
		}
		last = s.readyProblem()
		if last == "" {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("orch server not ready within %v: %s", startTimeout, last)
}

// readyProblem says what is not ready yet, or "" when all is.
func (s *Server) readyProblem() string {
	if err := s.copyKubeconfig(); err != nil {
		return err.Error()
	}
	if _, err := os.Stat(s.Kubeconfig); err != nil {
		return "no kubeconfig yet"
	}
	c, err := s.anonymousClient()
	if err != nil {
		return err.Error()
	}
	if r, err := c.get(s.URL() + "/readyz"); err != nil || r.Code != 200 {
		return fmt.Sprintf("/readyz: %v %s", err, r.describe())
	}
	admin, err := s.adminClient()
	if err != nil {
		return err.Error()
	}
	paths := []string{"/api/v1/namespaces/default/services/kubernetes"}
	for _, ns := range defaultNamespaces {
		paths = append(paths, "/api/v1/namespaces/"+ns)
	}
	for _, p := range paths {
		if r, err := admin.get(s.URL() + p); err != nil || r.Code != 200 {
			return fmt.Sprintf("GET %s: %v %s", p, err, r.describe())
		}
	}
	return ""
}

// defaultNamespaces exist in every cluster.
var defaultNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// eventually polls cond until it returns "" or timeout passes, then fails
// with the last thing cond reported.
func eventually(t testing.TB, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
