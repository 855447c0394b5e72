package containerd_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/envtest"
	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
)

// TestRuntimeEndToEnd runs a busybox container through the whole stack:
// the supervised containerd, the image importer and the CRI client.
func TestRuntimeEndToEnd(t *testing.T) {
	dir, cfg, log, sup := containerdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Images: the built-in pause image, and busybox dropped into the
	// air-gap directory as a zstd-compressed archive.
	if err := os.MkdirAll(cfg.ImagesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	busybox := filepath.Join(cfg.ImagesDir, "busybox.tar.zst")
	writeZstdBusybox(t, busybox)
	store, err := containerd.NewStore(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	im := containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(), log)
	im.Settle = 0
	imported, err := im.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{busybox, "builtin:" + images.PauseRef}; !sameSet(imported, want) {
		t.Fatalf("imported %q, want %q", imported, want)
	}

	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	t.Logf("runtime %s %s, CRI %s", rt.RuntimeVersion().RuntimeName, rt.RuntimeVersion().RuntimeVersion, rt.RuntimeVersion().RuntimeApiVersion)
	for _, ref := range []string{images.PauseRef, images.BusyboxRef} {
		st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Image == nil {
			t.Fatalf("CRI does not see the imported image %s", ref)
		}
		// containerd 1.7+ reports the pinned label as Pinned; 1.6 never pins.
		t.Logf("image %s: id %s, pinned %v", ref, st.Image.Id, st.Image.Pinned)
	}

	hostNetwork := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "box", Namespace: "default", Uid: "uid-box"},
		// No Hostname: a sandbox on the node's network shares its UTS namespace.
		LogDirectory: filepath.Join(dir, "pods", "box"),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostNetwork},
		},
	}
	if err := os.MkdirAll(sbConfig.LogDirectory, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	cConfig := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		Image:    &runtimeapi.ImageSpec{Image: images.BusyboxRef},
		Command:  []string{"sh", "-c", "echo hello; sleep 3600"},
		LogPath:  "main/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: hostNetwork},
		},
	}
	id, err := rt.CreateContainer(ctx, sb, cConfig, sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantRunning := func(when string) {
		t.Helper()
		st, err := rt.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("%s: container state %s (exit %d, %s), want RUNNING", when, st.Status.State, st.Status.ExitCode, st.Status.Reason)
		}
	}
	wantRunning("after start")

	hostname, _ := os.Hostname()
	stdout, stderr, code, err := rt.ExecSync(ctx, id, []string{"cat", "/etc/hostname"}, 10*time.Second)
	if err != nil || code != 0 || string(stdout) != hostname+"\n" {
		t.Errorf("exec cat /etc/hostname: %q, %q, exit %d, %v", stdout, stderr, code, err)
	}
	stdout, _, code, err = rt.ExecSync(ctx, id, []string{"sh", "-c", "echo out; exit 3"}, 10*time.Second)
	if err != nil || code != 3 || string(stdout) != "out\n" {
		t.Errorf("exec exit 3: %q, exit %d, %v", stdout, code, err)
	}

	logPath := filepath.Join(sbConfig.LogDirectory, cConfig.LogPath)
	envtest.Eventually(t, "a CRI log line with hello in "+logPath, func() (bool, error) {
		data, err := os.ReadFile(logPath)
		return strings.Contains(string(data), " stdout F hello\n"), err
	})

	// containerd dies: the supervisor starts it again, and the container,
	// whose shim is its own process, runs on.
	old := sup.Pid()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "containerd to be restarted", func() bool { return sup.Restarts() == 1 && sup.Pid() != 0 && sup.Pid() != old })
	select {
	case <-sup.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("restarted containerd not ready")
	}
	wantRunning("after containerd restarted")

	if err := rt.StopContainer(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, id, false)
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("after stop: %v, %v", st, err)
	}
	t.Logf("stopped: exit code %d, reason %s", st.Status.ExitCode, st.Status.Reason)
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(ctx, id, false); !cri.IsNotFound(err) {
		t.Errorf("status of a removed container: %v, want NotFound", err)
	}
	if err := rt.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if list, err := rt.ListPodSandbox(ctx, nil); err != nil || len(list) != 0 {
		t.Errorf("sandboxes left: %v, %v", list, err)
	}

	// The importer watching the directory picks up a new gzip archive.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watching := make(chan error, 1)
	im.Interval = 200 * time.Millisecond
	go func() { watching <- im.Start(watchCtx) }()
	hello := filepath.Join(cfg.ImagesDir, "hello.tar.gz")
	writeGzipImage(t, hello, "orch.test/hello:1")
	envtest.EventuallyTrue(t, "the watching importer to import hello.tar.gz", func() bool { return slices.Contains(im.Images(), "orch.test/hello:1") })
	if st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "orch.test/hello:1"}, false); err != nil || st.Image == nil {
		t.Errorf("CRI does not see orch.test/hello:1: %v, %v", st, err)
	}
	stopWatch()
	if err := <-watching; err != nil {
		t.Errorf("importer Start: %v", err)
	}

	// The importer, run again (and as after an agent restart, from its state
	// file), finds nothing new.
	for _, imp := range []*containerd.Importer{im, containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(), log)} {
		imp.Settle = 0
		if again, err := imp.Sync(ctx); err != nil || len(again) != 0 {
			t.Errorf("second import: %q, %v; want nothing imported", again, err)
		}
	}
	if got := im.Images(); !slices.Contains(got, images.PauseRef) || !slices.Contains(got, images.BusyboxRef) {
		t.Errorf("Images() = %q", got)
	}
}

func writeZstdBusybox(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, err := zstd.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := images.WriteBusybox(zw, "/bin/busybox", runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeGzipImage(t *testing.T, path, ref string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := images.Write(zw, ref, []images.File{{Path: "/hello.txt", Mode: 0o644, Data: []byte("hello\n")}}, images.Config{Arch: runtime.GOARCH}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed in, as an operator should copy archives.
	if err := os.WriteFile(path+".part", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".part", path); err != nil {
		t.Fatal(err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// TestSupervisorStopsALeftoverContainerd: a containerd that an earlier orch
// left running on the same state (it died without stopping it) holds the
// socket and the database; the supervisor stops it before it starts its own.
func TestSupervisorStopsALeftoverContainerd(t *testing.T) {
	containerdtest.RequireRuntime(t)
	dir := t.TempDir()
	cfg := containerdtest.Config(t, dir)
	for _, d := range []string{filepath.Dir(cfg.ConfigPath), cfg.State} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg.ConfigPath, cfg.TOML(), 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := exec.Command(cfg.Binary, "containerd", "--config", cfg.ConfigPath)
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { leftover.Wait(); close(exited) }()
	t.Cleanup(func() { leftover.Process.Kill(); <-exited })
	envtest.Eventually(t, "the leftover containerd to start", func() (bool, error) { _, err := os.Stat(cfg.Address); return err == nil, err })
	if err := os.WriteFile(filepath.Join(cfg.State, "orch-containerd.pid"), []byte(fmt.Sprint(leftover.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}

	sup := containerdtest.StartContainerd(t, dir, cfg, containerdtest.Logger(t), containerdtest.Options{})
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover containerd still runs")
	}
	if sup.Pid() == leftover.Process.Pid || sup.Restarts() != 0 {
		t.Errorf("pid %d, restarts %d", sup.Pid(), sup.Restarts())
	}
}
