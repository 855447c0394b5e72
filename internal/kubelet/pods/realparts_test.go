package pods

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/envtest"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
	"orch/internal/kubelet/podconfig"
	"orch/internal/network"
)

// TestWorkersWithRealContainerd runs a busybox pod through the workers, a
// real containerd and a bridge pod network: it reaches Running with a real
// container ID and a pod IP on the pod CIDR, and its deletion stops and
// removes its containers and sandbox and deletes the object. A pod whose
// container exits 1 under restartPolicy Always is restarted and goes into
// CrashLoopBackOff; a pod's init container finishes before its main
// container starts.
func TestWorkersWithRealContainerd(t *testing.T) {
	containerdtest.RequireCNI(t)
	log := containerdtest.Logger(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const podCIDR = "10.244.9.0/24"
	bridge := fmt.Sprintf("orchp%d", os.Getpid()%1000000)
	cfg := containerdtest.Config(t, dir)
	conf, err := network.BridgeConfList([]string{podCIDR}, network.BridgeOptions{NetworkName: "orch-test-" + bridge, Bridge: bridge,
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

	sup := containerdtest.StartContainerd(t, dir, cfg, log, containerdtest.Options{})
	containerdtest.ImportImages(t, ctx, cfg, log)
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.UpdateRuntimeConfig(ctx, podCIDR); err != nil {
		t.Fatal(err)
	}

	env := envtest.New(t, "work")
	client := env.Client
	w := New(client, podconfig.Node{Name: "node-1", HostIPs: []string{"10.0.0.1"}}, rt, log)
	w.LogRoot, w.SystemdCgroups, w.Relist = filepath.Join(dir, "pods"), cfg.SystemdCgroup, 200*time.Millisecond
	w.RootDir = filepath.Join(dir, "kubelet")
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
	envtest.Eventually(t, "pod box running", func() (bool, error) {
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
	envtest.Eventually(t, "the container's log", func() (bool, error) {
		data, _ := os.ReadFile(st.Status.LogPath)
		return strings.Contains(string(data), " stdout F hi\n"), nil
	})

	// A crash loop: restarted at once, then backing off.
	crash, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "work"},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{
			Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", "exit 1"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePodCgroups(t, string(crash.UID)) })
	// An init container that must finish before the main container starts.
	initPod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "init", Namespace: "work"},
		Spec: corev1.PodSpec{NodeName: "node-1",
			InitContainers: []corev1.Container{{Name: "init", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "sleep 1"}}},
			Containers: []corev1.Container{{Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "sleep 3600"}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePodCgroups(t, string(initPod.UID)) })
	envtest.Eventually(t, "pod crash in CrashLoopBackOff", func() (bool, error) {
		p, err := pods.Get(ctx, "crash", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		w, last := cs.State.Waiting, cs.LastTerminationState.Terminated
		return cs.RestartCount >= 1 && w != nil && w.Reason == "CrashLoopBackOff" &&
			strings.HasPrefix(w.Message, "back-off 10s restarting failed container=main pod=crash_work(") &&
			last != nil && last.ExitCode == 1 && last.Reason == "Error", nil
	})
	envtest.Eventually(t, "the BackOff event", func() (bool, error) {
		ev := envtest.Events(t, client, "work", "Pod", "crash")
		return envtest.CountPrefix(ev, "Warning BackOff Back-off restarting failed container main in pod crash_work(") > 0, nil
	})
	var initStatus, mainStatus corev1.ContainerStatus
	envtest.Eventually(t, "pod init running", func() (bool, error) {
		p, err := pods.Get(ctx, "init", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.InitContainerStatuses) != 1 || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		initStatus, mainStatus = p.Status.InitContainerStatuses[0], p.Status.ContainerStatuses[0]
		c := findCondition(p.Status.Conditions, corev1.PodInitialized)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "" && mainStatus.State.Running != nil, nil
	})
	if term := initStatus.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("init container %+v", initStatus)
	}
	initRT, err := rt.ContainerStatus(ctx, strings.TrimPrefix(initStatus.ContainerID, "containerd://"), false)
	if err != nil {
		t.Fatal(err)
	}
	mainRT, err := rt.ContainerStatus(ctx, strings.TrimPrefix(mainStatus.ContainerID, "containerd://"), false)
	if err != nil {
		t.Fatal(err)
	}
	if initRT.Status.FinishedAt == 0 || mainRT.Status.StartedAt < initRT.Status.FinishedAt {
		t.Errorf("main started at %d, before init finished at %d", mainRT.Status.StartedAt, initRT.Status.FinishedAt)
	}

	// In-place resize: the new limits reach the container's cgroup
	// without a restart.
	sized, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sized", Namespace: "work"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("35Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("30m"), corev1.ResourceMemory: resource.MustParse("45Mi")}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePodCgroups(t, string(sized.UID)) })
	envtest.Eventually(t, "pod sized running", func() (bool, error) {
		p, err := pods.Get(ctx, "sized", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		sized = p
		return p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[0].Resources != nil, nil
	})
	sized.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("60Mi")}
	if _, err := pods.UpdateResize(ctx, "sized", sized, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sizedStatus corev1.ContainerStatus
	envtest.Eventually(t, "pod sized resized", func() (bool, error) {
		p, err := pods.Get(ctx, "sized", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ObservedGeneration != p.Generation {
			return false, err
		}
		sizedStatus = p.Status.ContainerStatuses[0]
		r := sizedStatus.Resources
		return r != nil && r.Limits.Cpu().String() == "50m" && r.Limits.Memory().String() == "60Mi" &&
			findCondition(p.Status.Conditions, corev1.PodResizeInProgress) == nil, nil
	})
	if sizedStatus.RestartCount != 0 {
		t.Errorf("resized container restarted %d times", sizedStatus.RestartCount)
	}
	sizedID := strings.TrimPrefix(sizedStatus.ContainerID, "containerd://")
	for file, want := range map[string]string{"memory/memory.limit_in_bytes": "62914560", "cpu/cpu.cfs_quota_us": "5000"} {
		if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil { // cgroup v2
			file = map[string]string{"memory/memory.limit_in_bytes": "memory.max", "cpu/cpu.cfs_quota_us": "cpu.max"}[file]
		}
		out, _, _, err := rt.ExecSync(ctx, sizedID, []string{"cat", "/sys/fs/cgroup/" + file}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(string(out)); len(got) == 0 || got[0] != want {
			t.Errorf("%s in the resized container: %q, want %s", file, out, want)
		}
	}

	grace := int64(2)
	for _, name := range []string{"box", "crash", "init", "sized"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"box", "crash", "init", "sized"} {
		envtest.Eventually(t, "pod "+name+" gone", func() (bool, error) {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
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
	ev := envtest.Events(t, client, "work", "Pod", "box")
	for _, prefix := range []string{"Normal Pulled", "Normal Created", "Normal Started", "Normal Killing"} {
		if envtest.CountPrefix(ev, prefix) == 0 {
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
