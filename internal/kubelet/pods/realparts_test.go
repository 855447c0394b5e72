package pods

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
	"orch/internal/kubelet/podconfig"
	"orch/internal/network"
)

// requireRealParts fails (never skips) when this test cannot run the real
// runtime, and says how to fix it.
func requireRealParts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs containerd, runc and the CNI plugins and must run as root (make test does; scripts/test-deps.sh installs what it needs)")
	}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run scripts/test-deps.sh as root", bin)
		}
	}
	for _, path := range []string{"/bin/busybox", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/portmap", "/usr/lib/cni/loopback"} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is missing: run scripts/test-deps.sh as root (it installs busybox-static and containernetworking-plugins)", path)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestWorkersWithRealContainerd runs a busybox pod through the workers, a
// real containerd and a bridge pod network: it reaches Running with a real
// container ID and a pod IP on the pod CIDR, and its deletion stops and
// removes its containers and sandbox and deletes the object.
func TestWorkersWithRealContainerd(t *testing.T) {
	requireRealParts(t)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const podCIDR = "10.244.9.0/24"
	bridge := fmt.Sprintf("orchp%d", os.Getpid()%1000000)
	cfg := containerd.NewConfig(dir).WithState(filepath.Join(dir, "run"))
	conf, err := network.BridgeConfList(podCIDR, network.BridgeOptions{NetworkName: "orch-test-" + bridge, Bridge: bridge,
		MTU: network.DefaultMTU(), IPAMDataDir: filepath.Join(dir, "ipam")})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.CNIConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.CNIConfDir, network.DefaultConfFile), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", bridge).Run() })

	sup := startContainerd(t, dir, cfg, log)
	importImages(t, ctx, cfg, log)
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.UpdateRuntimeConfig(ctx, podCIDR); err != nil {
		t.Fatal(err)
	}

	env := controllertest.New(t, "work")
	client := env.Context.Client
	w := New(client, podconfig.Node{Name: "node-1", HostIPs: []string{"10.0.0.1"}}, rt, log)
	w.LogRoot, w.SystemdCgroups, w.Relist = filepath.Join(dir, "pods"), cfg.SystemdCgroup, 200*time.Millisecond
	env.Start(t, w) // stopped (cleanup) before containerd is

	pods := client.CoreV1().Pods("work")
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "box", Namespace: "work"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", "echo hi; sleep 3600"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePodCgroups(t, string(pod.UID)) })
	var containerID string
	controllertest.Eventually(t, "pod box running", func() (bool, error) {
		p, err := pods.Get(ctx, "box", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !netip.MustParsePrefix(podCIDR).Contains(ip) {
			return false, fmt.Errorf("pod IP %q is not on %s", p.Status.PodIP, podCIDR)
		}
		containerID = strings.TrimPrefix(cs.ContainerID, "containerd://")
		return cs.State.Running != nil && cs.Ready && len(containerID) == 64, nil
	})
	st, err := rt.ContainerStatus(ctx, containerID, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State.String() != "CONTAINER_RUNNING" {
		t.Fatalf("container %s is %s", containerID, st.Status.State)
	}
	controllertest.Eventually(t, "the container's log", func() (bool, error) {
		data, _ := os.ReadFile(st.Status.LogPath)
		return strings.Contains(string(data), " stdout F hi\n"), nil
	})

	grace := int64(2)
	if err := pods.Delete(ctx, "box", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "pod box gone", func() (bool, error) {
		_, err := pods.Get(ctx, "box", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	containers, err := rt.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 0 || len(containers) != 0 {
		t.Errorf("left in the runtime: sandboxes %v, containers %v", sandboxes, containers)
	}
	ev := controllertest.Events(t, client, "work", "Pod", "box")
	for _, prefix := range []string{"Normal Pulled", "Normal Created", "Normal Started", "Normal Killing"} {
		if controllertest.CountPrefix(ev, prefix) == 0 {
			t.Errorf("no %s event in %q", prefix, ev)
		}
	}
}

// removePodCgroups removes the (empty) cgroup directories runc left of the
// test's pod: upstream's kubelet removes them in its pod cgroup manager,
// which orch does not have yet.
func removePodCgroups(t *testing.T, uid string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods/*/pod" + uid)
	more, _ := filepath.Glob("/sys/fs/cgroup/kubepods/*/pod" + uid)
	for _, d := range append(dirs, more...) {
		if err := syscall.Rmdir(d); err != nil {
			t.Logf("rmdir %s: %v", d, err)
		}
	}
}

func startContainerd(t *testing.T, dir string, cfg containerd.Config, log *slog.Logger) *containerd.Supervisor {
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
			data, _ := os.ReadFile(cfg.LogPath)
			lines := strings.Split(string(data), "\n")
			t.Logf("containerd log:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		cleanUp(t, dir, cfg.Address)
	})
	select {
	case <-sup.Ready():
	case err := <-done:
		t.Fatalf("supervisor ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("containerd not ready after 60 s")
	}
	return sup
}

func importImages(t *testing.T, ctx context.Context, cfg containerd.Config, log *slog.Logger) {
	t.Helper()
	if err := os.MkdirAll(cfg.ImagesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(cfg.ImagesDir, "busybox.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if err := images.WriteBusybox(f, "/bin/busybox", runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := containerd.NewStore(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	im := containerd.NewImporter(store, cfg.ImagesDir, cfg.ImportState, containerd.Builtins(runtime.GOARCH), log)
	im.Settle = 0
	if _, err := im.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// cleanUp kills the processes of the containerd at address that are left
// (shims: the workers failed to remove the pod) and unmounts what is left
// under dir, reporting the processes as errors.
func cleanUp(t *testing.T, dir, address string) {
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
	for i := len(mounts) - 1; i >= 0; i-- {
		syscall.Unmount(mounts[i], syscall.MNT_DETACH)
	}
}
