package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"orch/internal/fsutil"
	"orch/internal/kubelet/containerd/payload"
	"orch/internal/kubelet/cri"
)

// Supervisor runs containerd as a child process: it writes its config,
// starts it, waits until its socket answers CRI Version, restarts it with
// backoff when it dies, and stops it when Start's context ends. Containers
// outlive a containerd restart: their shims are separate processes.
type Supervisor struct {
	cfg Config
	log *slog.Logger

	// StopTimeout is how long containerd has to exit after SIGTERM before
	// SIGKILL (10 s when zero).
	StopTimeout time.Duration
	// ReadyTimeout is how long a started containerd has to answer before it
	// is killed and started again (60 s when zero).
	ReadyTimeout time.Duration

	mu       sync.Mutex
	ready    chan struct{}
	pid      int
	restarts int
}

// NewSupervisor returns a supervisor for cfg; log may be nil.
func NewSupervisor(cfg Config, log *slog.Logger) *Supervisor {
	if log == nil {
		log = slog.Default()
	}
	return &Supervisor{cfg: cfg, log: log.With("component", "containerd"), ready: make(chan struct{})}
}

// Config is the configuration the supervisor runs containerd with.
func (s *Supervisor) Config() Config { return s.cfg }

// Endpoint is the CRI endpoint of the supervised containerd.
func (s *Supervisor) Endpoint() string { return "unix://" + s.cfg.Address }

// Ready returns a channel closed once the running containerd answers CRI
// Version. After containerd died, it returns the channel of the next one.
func (s *Supervisor) Ready() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// Pid is the process ID of the running containerd, 0 when none runs.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Restarts counts the times containerd was started again after it died.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Start runs containerd until ctx ends, then stops it and returns nil. It
// returns an error at once when the runtime cannot be installed or its
// directories cannot be made.
func (s *Supervisor) Start(ctx context.Context) error {
	bin, err := s.prepare()
	if err != nil {
		return err
	}
	backoff := time.Second
	for {
		started := time.Now()
		err := s.run(ctx, bin)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > 2*time.Minute {
			backoff = time.Second // it ran well for a while: this is a new failure
		}
		s.log.Error("containerd exited; starting it again", "err", err, "after", backoff, "log", s.cfg.LogPath, "lastLog", tail(s.cfg.LogPath, 5))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// prepare installs the runtime orch carries (runc, the shim, the CNI
// plugins), makes the directories, writes the config and stops a
// containerd a previous orch left running on the same state. It returns
// the executable to run containerd with.
func (s *Supervisor) prepare() (string, error) {
	bin := s.cfg.Binary
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("containerd: find orch's own executable: %w", err)
		}
		bin = self
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", fmt.Errorf("containerd: %w", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("containerd: %w (the orch executable that runs containerd)", err)
	}
	if n := len(s.cfg.Address); n >= 108 {
		return "", fmt.Errorf("containerd: socket path %q is %d bytes; unix socket paths must be shorter than 108", s.cfg.Address, n)
	}
	started := time.Now()
	binDir, wrote, err := payload.Install(s.cfg.RuntimeDir)
	if err != nil {
		return "", fmt.Errorf("containerd: %w", err)
	}
	if len(wrote) > 0 {
		s.log.Info("installed the node runtime orch carries", "dir", binDir, "files", wrote, "took", time.Since(started).Round(time.Millisecond))
	} else {
		s.log.Info("checked the node runtime orch carries", "dir", binDir, "took", time.Since(started).Round(time.Millisecond))
	}
	// containerd runs through a link named containerd, so that it is
	// called so in ps and /proc/PID/comm, as on any other node.
	link := filepath.Join(binDir, "containerd")
	if err := fsutil.SymlinkAtomic(bin, link); err != nil {
		return "", fmt.Errorf("containerd: %w", err)
	}
	for _, dir := range []string{filepath.Dir(s.cfg.ConfigPath), s.cfg.Root, s.cfg.State, filepath.Dir(s.cfg.Address), filepath.Dir(s.cfg.LogPath), s.cfg.CNIConfDir, s.cfg.CertsDir} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return "", fmt.Errorf("containerd: %w", err)
		}
	}
	if err := fsutil.WriteFileAtomic(s.cfg.ConfigPath, s.cfg.TOML(), 0o600); err != nil {
		return "", fmt.Errorf("containerd: write its config: %w", err)
	}
	s.stopLeftover()
	return link, nil
}

// pidFile records the running containerd, so that the next start can stop
// one an earlier orch left behind (it would hold the socket and the
// metadata database).
func (s *Supervisor) pidFile() string { return filepath.Join(s.cfg.State, "orch-containerd.pid") }

func (s *Supervisor) stopLeftover() {
	data, err := os.ReadFile(s.pidFile())
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), s.cfg.ConfigPath) {
		return // gone, or the PID now belongs to something else
	}
	s.log.Info("stopping the containerd a previous run left", "pid", pid)
	if p, err := os.FindProcess(pid); err == nil {
		s.signalAndWait(p, func() bool { return syscall.Kill(pid, 0) != nil })
	}
}

// run starts containerd once and returns when it exits or ctx ends (after
// stopping it).
func (s *Supervisor) run(ctx context.Context, bin string) error {
	logFile, err := os.OpenFile(s.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--config", s.cfg.ConfigPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// What containerd and its shims run they find through the config;
	// PATH is for whatever looks there (the payload first).
	cmd.Env = append(os.Environ(), "PATH="+s.cfg.BinDir()+":"+os.Getenv("PATH"))
	// containerd gets SIGTERM if orch dies without stopping it. The signal
	// is tied to the thread that started the child, so that thread stays
	// locked to this goroutine until containerd exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	startErr := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		done <- cmd.Wait()
	}()
	if err := <-startErr; err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	pid := cmd.Process.Pid
	_ = fsutil.WriteFileAtomic(s.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o600)
	s.mu.Lock()
	s.pid = pid
	ready := s.ready
	s.mu.Unlock()
	s.log.Info("containerd started", "pid", pid, "config", s.cfg.ConfigPath, "socket", s.cfg.Address)

	readyCtx, cancelReady := context.WithCancel(ctx)
	defer cancelReady()
	readyErr := make(chan error, 1)
	go func() { readyErr <- s.waitReady(readyCtx) }()

	defer func() {
		s.mu.Lock()
		s.pid = 0
		select {
		case <-s.ready: // this one was ready: the next instance gets a new channel
			s.ready = make(chan struct{})
		default:
		}
		s.mu.Unlock()
		os.Remove(s.pidFile())
	}()
	for {
		select {
		case err := <-done:
			return fmt.Errorf("containerd (pid %d) exited: %v", pid, err)
		case err := <-readyErr:
			if err != nil {
				if ctx.Err() != nil {
					continue // the ctx.Done case stops it
				}
				s.log.Error("containerd does not answer; killing it", "pid", pid, "err", err)
				s.signalAndWait(cmd.Process, func() bool { return len(done) > 0 })
				return fmt.Errorf("containerd (pid %d) did not answer: %v; exited: %v", pid, err, <-done)
			}
			s.log.Info("containerd is ready", "pid", pid)
			close(ready)
			readyErr = nil
		case <-ctx.Done():
			s.log.Info("stopping containerd", "pid", pid)
			s.signalAndWait(cmd.Process, func() bool { return len(done) > 0 })
			<-done
			return nil
		}
	}
}

// waitReady polls the socket until CRI Version answers v1.
func (s *Supervisor) waitReady(ctx context.Context) error {
	timeout := s.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if _, err := os.Stat(s.cfg.Address); err == nil {
			r, err := cri.Connect(ctx, s.cfg.Address, cri.WithTimeout(2*time.Second))
			if err == nil {
				r.Close()
				return nil
			}
			if errors.Is(err, cri.ErrRuntimeVersion) {
				return err
			}
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("socket %s never appeared", s.cfg.Address)
			}
			return fmt.Errorf("not ready after %v: %w", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// signalAndWait sends SIGTERM, waits for exited() up to StopTimeout, then
// sends SIGKILL and waits a little more.
func (s *Supervisor) signalAndWait(p *os.Process, exited func() bool) {
	timeout := s.StopTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	_ = p.Signal(syscall.SIGTERM)
	if waitFor(exited, timeout) {
		return
	}
	s.log.Warn("containerd ignored SIGTERM; killing it", "pid", p.Pid, "after", timeout)
	_ = p.Signal(syscall.SIGKILL)
	waitFor(exited, 5*time.Second)
}

func waitFor(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// tail returns the last n lines of a file, for error logs.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > 64<<10 {
		data = data[len(data)-64<<10:]
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
