// Package containerdtest holds what the tests that run a real, supervised
// containerd share: the check that the test can run here (root, orch's
// binary with its runtime payload), starting containerd in a
// temporary directory and checking afterwards that nothing it started is
// left, importing the built-in pause and the busybox test image, and a
// logger writing to the test's log.
package containerdtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/containerd/payload"
	"orch/internal/kubelet/images"
)

// RequireRuntime fails (never skips) unless the test can run orch's own
// containerd: it runs as root, $ORCH_BIN is the orch binary (make test
// sets it; containerd runs as `$ORCH_BIN containerd`), this test binary
// carries the runtime payload (runc, the shim, the CNI plugins: make build
// writes it) and /bin/busybox exists for the test image. It says how to
// fix what is missing.
func RequireRuntime(t *testing.T) {
	t.Helper()
	require(t, "containerd and runc")
}

// RequireCNI is RequireRuntime for tests that also set up pod networks: it
// wants ip, and the extra binaries bins as well.
func RequireCNI(t *testing.T, bins ...string) {
	t.Helper()
	require(t, "containerd, runc and the CNI plugins", append([]string{"ip"}, bins...)...)
}

func require(t *testing.T, what string, bins ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs %s and must run as root (make test does; scripts/test-deps.sh installs what it needs)", what)
	}
	if _, err := os.Stat(OrchBin(t)); err != nil {
		t.Fatalf("ORCH_BIN: %v (run `make build`)", err)
	}
	if _, err := payload.Manifest(); err != nil {
		t.Fatalf("%v (then run the test again: it embeds the payload when it is built)", err)
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh as root", bin)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Fatalf("/bin/busybox is missing: run scripts/test-deps.sh as root (it installs busybox-static)")
	}
}

// OrchBin is the orch binary that runs containerd in tests: $ORCH_BIN
// (make test sets it to bin/orch); the test fails without it.
func OrchBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ORCH_BIN")
	if bin == "" {
		t.Fatalf("ORCH_BIN is not set: containerd runs as `orch containerd`; run `make build` and set ORCH_BIN=$PWD/bin/orch (make test does)")
	}
	return bin
}

// Logger returns a logger that writes to t.Log.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Config is the containerd configuration the tests use: everything under
// dir, the state in dir/run, containerd run by OrchBin.
func Config(t *testing.T, dir string) containerd.Config {
	cfg := containerd.NewConfig(dir).WithState(filepath.Join(dir, "run"))
	cfg.Binary = OrchBin(t)
	return cfg
}

// Options tunes StartContainerd's checks after the test.
type Options struct {
	// MountsLeftFail reports mounts left under the directory as errors;
	// without it they are logged. Either way they are unmounted.
	MountsLeftFail bool
}

// StartContainerd runs a supervised containerd with cfg (whose files are
// under dir) until the test ends. Then it checks that containerd stopped
// and that no process mentioning its socket is left (killing and
// reporting any), unmounts what is left under dir, and, when the test
// failed, logs the tail of containerd's log.
func StartContainerd(t *testing.T, dir string, cfg containerd.Config, log *slog.Logger, opts Options) *containerd.Supervisor {
	t.Helper()
	sup := containerd.NewSupervisor(cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Start(ctx) }()
	t.Cleanup(func() {
		pid := sup.Pid()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v after its context ended", err)
		}
		if pid != 0 && syscall.Kill(pid, 0) == nil {
			t.Errorf("containerd (pid %d) still runs after Start returned", pid)
		}
		if t.Failed() {
			t.Logf("containerd log:\n%s", tail(cfg.LogPath, 40))
		}
		cleanUp(t, dir, cfg.Address, opts)
	})
	select {
	case <-sup.Ready():
	case err := <-done:
		t.Fatalf("supervisor ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("containerd not ready after 60 s; log:\n%s", tail(cfg.LogPath, 40))
	}
	return sup
}

// Start is how a test that runs pods on containerd begins: it checks
// RequireRuntime, then starts containerd (StartContainerd, no Options) in
// a temporary directory dir with Config(dir) and a Logger.
func Start(t *testing.T) (dir string, cfg containerd.Config, log *slog.Logger, sup *containerd.Supervisor) {
	t.Helper()
	RequireRuntime(t)
	log = Logger(t)
	dir = t.TempDir()
	cfg = Config(t, dir)
	return dir, cfg, log, StartContainerd(t, dir, cfg, log, Options{})
}

// cleanUp kills the processes of the containerd at address that are left
// (its shims: the test failed to remove a pod), reporting them as errors,
// and unmounts what is left under dir.
func cleanUp(t *testing.T, dir, address string, opts Options) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(cmdline), address) {
			continue
		}
		var pid int
		fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		t.Errorf("process %d still runs after the test: %q", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		syscall.Kill(pid, syscall.SIGKILL)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if opts.MountsLeftFail {
			t.Errorf("still mounted after the test: %s", m)
		} else {
			t.Logf("unmounting %s", m)
		}
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ImportImages imports the built-in pause image and the busybox test image
// (built from /bin/busybox, written as busybox.tar into cfg.ImagesDir) into
// the containerd at cfg.Address.
func ImportImages(t *testing.T, ctx context.Context, cfg containerd.Config, log *slog.Logger) {
	t.Helper()
	if err := images.WriteBusyboxFile(filepath.Join(cfg.ImagesDir, "busybox.tar")); err != nil {
		t.Fatal(err)
	}
	store, err := containerd.NewStore(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	im := containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(), log)
	im.Settle = 0
	if _, err := im.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}
