package pods

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/volumes"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type harness struct {
	t       *testing.T
	w       *Workers
	rt      *cri.Fake
	client  *fake.Clientset
	indexer cache.Indexer
	events  *record.FakeRecorder
}

func newHarness(t *testing.T, pods ...*corev1.Pod) *harness {
	t.Helper()
	objs := make([]runtime.Object, 0, len(pods))
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	rt := cri.NewFake()
	w := New(client, podconfig.Node{Name: "node-1", HostIPs: []string{"10.0.0.1"}}, rt, quiet)
	w.LogRoot, w.RootDir = t.TempDir(), t.TempDir()
	w.DNS = podconfig.ClusterDNS{Servers: []string{"10.43.0.10"}, Domain: "cluster.local"}
	w.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		indexer.Add(p)
	}
	w.lister = listerscorev1.NewPodLister(indexer)
	w.services = listerscorev1.NewServiceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	events := record.NewFakeRecorder(100)
	w.setUp(events)
	t.Cleanup(w.probes.Close)
	return &harness{t: t, w: w, rt: rt, client: client, indexer: indexer, events: events}
}

// sync syncs the pod and copies what the API has of it into the lister, as
// the informer would.
func (h *harness) sync(name string) error {
	h.t.Helper()
	err := h.w.sync(context.Background(), "default/"+name)
	p, getErr := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(getErr):
		if old, ok, _ := h.indexer.GetByKey("default/" + name); ok {
			h.indexer.Delete(old)
		}
	case getErr != nil:
		h.t.Fatal(getErr)
	default:
		h.indexer.Update(p)
	}
	return err
}

func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) called(method string) int {
	n := 0
	for _, c := range h.rt.Calls() {
		if c == method || strings.HasPrefix(c, method+" ") {
			n++
		}
	}
	return n
}

func testPod(name string, policy corev1.RestartPolicy) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName: "node-1", RestartPolicy: policy, EnableServiceLinks: &yes,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo hi"}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestSyncStartsPodAndReportsRunning(t *testing.T) {
	h := newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	// ImageStatus twice: before the pull and after it, for the image's user.
	for m, n := range map[string]int{"ImageStatus": 2, "PullImage": 1, "RunPodSandbox": 1, "CreateContainer": 1, "StartContainer": 1} {
		if h.called(m) != n {
			t.Errorf("%s called %d times, want %d; calls: %v", m, h.called(m), n, h.rt.Calls())
		}
	}
	events := h.drainEvents()
	want := []string{`Normal Pulling Pulling image "busybox"`, `Normal Pulled Successfully pulled image "busybox"`,
		"Normal Created Created container: main", "Normal Started Started container main"}
	if len(events) != len(want) {
		t.Fatalf("events %q, want %q", events, want)
	}
	for i := range want {
		if !strings.HasPrefix(events[i], want[i]) {
			t.Errorf("event %d is %q, want %q…", i, events[i], want[i])
		}
	}
	p := h.pod("p")
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %q, want Running; status %+v", p.Status.Phase, p.Status)
	}
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready || !*cs[0].Started ||
		!strings.HasPrefix(cs[0].ContainerID, "containerd://container") || cs[0].ImageID != "sha256:busybox" {
		t.Fatalf("container statuses %+v", cs)
	}
	if p.Status.HostIP != "10.0.0.1" || p.Status.QOSClass != corev1.PodQOSBestEffort || p.Status.StartTime == nil {
		t.Errorf("status %+v", p.Status)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if c := findCondition(p.Status.Conditions, ct); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s: %+v", ct, c)
		}
	}

	// A second sync changes nothing and writes nothing.
	before := len(h.client.Actions())
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if h.called("CreateContainer") != 1 || h.called("RunPodSandbox") != 1 {
		t.Errorf("second sync started again: %v", h.rt.Calls())
	}
	for _, a := range h.client.Actions()[before:] {
		if a.GetVerb() == "update" {
			t.Errorf("second sync wrote an unchanged status: %v", a)
		}
	}
}

func TestSyncUsesPresentImage(t *testing.T) {
	h := newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	h.rt.SetImage("busybox", 1, false)
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if h.called("PullImage") != 0 {
		t.Errorf("pulled a present image: %v", h.rt.Calls())
	}
	if ev := h.drainEvents(); len(ev) == 0 || ev[0] != `Normal Pulled Container image "busybox" already present on machine` {
		t.Errorf("events %q", ev)
	}
}

func TestSyncExitedContainerStaysExited(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		code   int32
		phase  corev1.PodPhase
		reason string
	}{
		{corev1.RestartPolicyNever, 0, corev1.PodSucceeded, "Completed"},
		{corev1.RestartPolicyNever, 1, corev1.PodFailed, "Error"},
		{corev1.RestartPolicyOnFailure, 0, corev1.PodSucceeded, "Completed"},
	} {
		t.Run(string(tc.policy)+"/"+tc.reason, func(t *testing.T) {
			h := newHarness(t, testPod("p", tc.policy))
			if err := h.sync("p"); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimPrefix(h.pod("p").Status.ContainerStatuses[0].ContainerID, "containerd://")
			if err := h.rt.Exit(id, tc.code, ""); err != nil {
				t.Fatal(err)
			}
			if err := h.sync("p"); err != nil {
				t.Fatal(err)
			}
			if h.called("CreateContainer") != 1 {
				t.Errorf("exited container was created again: %v", h.rt.Calls())
			}
			st := h.pod("p").Status
			term := st.ContainerStatuses[0].State.Terminated
			if st.Phase != tc.phase || term == nil || term.ExitCode != tc.code || term.Reason != tc.reason || st.ContainerStatuses[0].Ready {
				t.Fatalf("phase %q, container %+v; want %q, exit %d %s", st.Phase, st.ContainerStatuses[0], tc.phase, tc.code, tc.reason)
			}
			if c := findCondition(st.Conditions, corev1.PodReady); c.Status != corev1.ConditionFalse {
				t.Errorf("Ready %+v", c)
			}
			// The next sync stops the sandbox of a finished pod, and only then.
			if err := h.sync("p"); err != nil {
				t.Fatal(err)
			}
			terminal := tc.phase == corev1.PodSucceeded || tc.phase == corev1.PodFailed
			if stopped := h.called("StopPodSandbox") == 1; stopped != terminal {
				t.Errorf("sandbox stopped %v, want %v: %v", stopped, terminal, h.rt.Calls())
			}
			if h.called("CreateContainer") != 1 || h.called("RunPodSandbox") != 1 {
				t.Errorf("finished pod started again: %v", h.rt.Calls())
			}
		})
	}
}

func TestSyncPullFailureWaits(t *testing.T) {
	h := newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	h.rt.FailNext("PullImage", errors.New("registry unreachable"))
	if err := h.sync("p"); err == nil {
		t.Fatal("sync succeeded though the pull failed")
	}
	st := h.pod("p").Status
	w := st.ContainerStatuses[0].State.Waiting
	if st.Phase != corev1.PodPending || w == nil || w.Reason != "ErrImagePull" || !strings.Contains(w.Message, "registry unreachable") {
		t.Fatalf("status %+v", st)
	}
	// Within the 10 s back-off no pull is tried: ImagePullBackOff.
	now := h.w.Now()
	h.w.Now = func() time.Time { return now.Add(9 * time.Second) }
	if err := h.sync("p"); err != nil {
		t.Fatal(err) // not an error: the pod is requeued for when the back-off ends
	}
	w = h.pod("p").Status.ContainerStatuses[0].State.Waiting
	if w == nil || w.Reason != "ImagePullBackOff" || !strings.HasPrefix(w.Message, `Back-off pulling image "busybox": ErrImagePull: `) || h.called("PullImage") != 1 {
		t.Fatalf("waiting %+v after %d pulls, want ImagePullBackOff and no new pull", w, h.called("PullImage"))
	}
	h.w.Now = func() time.Time { return now.Add(11 * time.Second) }
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if st := h.pod("p").Status; st.Phase != corev1.PodRunning {
		t.Fatalf("after a good pull: %+v", st)
	}
}

func TestSyncTerminatesDeletedPod(t *testing.T) {
	h := newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	h.drainEvents()
	p := h.pod("p")
	now := metav1.Now()
	grace := int64(7)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	h.indexer.Update(p)
	if err := h.w.sync(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	stops := slices.DeleteFunc(h.rt.Calls(), func(c string) bool {
		return !strings.HasPrefix(c, "StopContainer") && !strings.HasPrefix(c, "StopPodSandbox") && !strings.HasPrefix(c, "RemovePodSandbox")
	})
	if len(stops) != 3 || !strings.HasPrefix(stops[0], "StopContainer") || !strings.HasPrefix(stops[1], "StopPodSandbox") || !strings.HasPrefix(stops[2], "RemovePodSandbox") {
		t.Errorf("calls %v", stops)
	}
	if ev := h.drainEvents(); len(ev) != 1 || ev[0] != "Normal Killing Stopping container main" {
		t.Errorf("events %q", ev)
	}
	var del clienttesting.DeleteActionImpl
	var final *corev1.Pod // the last status written before the delete
	for _, a := range h.client.Actions() {
		if u, ok := a.(clienttesting.UpdateActionImpl); ok && u.GetSubresource() == "status" && del.GetName() == "" {
			final = u.GetObject().(*corev1.Pod)
		}
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			del = d
		}
	}
	if final == nil || (final.Status.Phase != corev1.PodFailed && final.Status.Phase != corev1.PodSucceeded) || final.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("the status written before the delete: %+v, want a terminal phase and the container terminated", final)
	}
	opts := del.GetDeleteOptions()
	if del.GetName() != "p" || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 ||
		opts.Preconditions == nil || *opts.Preconditions.UID != "uid-p" {
		t.Errorf("delete %+v", del)
	}
	if _, err := h.client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod still there: %v", err)
	}
}

func TestSyncRemovesSandboxesOfGonePods(t *testing.T) {
	h := newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	h.indexer.Delete(h.pod("p"))
	if err := h.w.sync(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	if sbs, _ := h.rt.ListPodSandbox(context.Background(), nil); len(sbs) != 0 {
		t.Errorf("sandboxes left: %v", sbs)
	}
	if h.called("StopContainer") != 1 {
		t.Errorf("calls %v", h.rt.Calls())
	}

	// A new pod of the same name replaces the old one's sandbox.
	h = newHarness(t, testPod("p", corev1.RestartPolicyAlways))
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	p := testPod("p", corev1.RestartPolicyAlways)
	p.UID = "uid-new"
	h.indexer.Update(p)
	if err := h.w.sync(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	sbs, _ := h.rt.ListPodSandbox(context.Background(), nil)
	if len(sbs) != 1 || sbs[0].Labels[podconfig.LabelPodUID] != "uid-new" {
		t.Errorf("sandboxes %v", sbs)
	}
}

// TestPostStartHook: a postStart exec hook runs in the started container;
// when it fails (non-zero exit) the container is stopped and the
// FailedPostStartHook event says so without the hook's output.
func TestPostStartHook(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exitCode int32
		stopped  int
	}{{"succeeds", 0, 0}, {"fails", 3, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod("p", corev1.RestartPolicyAlways)
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"touch", "/started"}}}}
			h := newHarness(t, p)
			var ran []string
			h.rt.ExecFunc = func(id string, cmd []string) ([]byte, []byte, int32, error) {
				ran = append(ran, strings.Join(cmd, " "))
				return nil, []byte("secret output"), tc.exitCode, nil
			}
			err := h.sync("p")
			if (err != nil) != (tc.exitCode != 0) {
				t.Fatalf("sync = %v", err)
			}
			if len(ran) != 1 || ran[0] != "touch /started" {
				t.Errorf("hooks run: %q", ran)
			}
			if n := h.called("StopContainer"); n != tc.stopped {
				t.Errorf("StopContainer called %d times, want %d", n, tc.stopped)
			}
			events := strings.Join(h.drainEvents(), "\n")
			if tc.exitCode != 0 && (!strings.Contains(events, "Warning FailedPostStartHook PostStartHook failed") || strings.Contains(events, "secret output")) {
				t.Errorf("events:\n%s", events)
			}
		})
	}
}

// TestEvictsOverEmptyDirSizeLimit: a pod whose disk-backed emptyDir grew
// past its sizeLimit is Failed with reason Evicted and upstream's message,
// and the next sync stops its sandbox.
func TestEvictsOverEmptyDirSizeLimit(t *testing.T) {
	p := testPod("p", corev1.RestartPolicyAlways)
	limit := resource.MustParse("1Mi")
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	h := newHarness(t, p)
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if st := h.pod("p").Status; st.Phase != corev1.PodRunning {
		t.Fatalf("before the volume grew: %+v", st)
	}
	dir := h.w.volumes.VolumeDir(p.UID, volumes.PluginEmptyDir, "scratch")
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	st := h.pod("p").Status
	want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != want {
		t.Fatalf("status %s/%s/%q, want Failed/Evicted/%q", st.Phase, st.Reason, st.Message, want)
	}
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if h.called("StopPodSandbox") == 0 {
		t.Errorf("the evicted pod's sandbox was not stopped: %v", h.rt.Calls())
	}
}

// TestFailsPastActiveDeadline: a running pod active longer than its
// activeDeadlineSeconds is Failed with reason DeadlineExceeded, and the
// next sync stops its sandbox; before the deadline it runs.
func TestFailsPastActiveDeadline(t *testing.T) {
	p := testPod("p", corev1.RestartPolicyAlways)
	p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	h := newHarness(t, p)
	now := h.w.Now()
	h.w.Now = func() time.Time { return now }
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(29 * time.Second)
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if st := h.pod("p").Status; st.Phase != corev1.PodRunning {
		t.Fatalf("before the deadline: %s/%s, want Running", st.Phase, st.Reason)
	}
	now = now.Add(time.Second)
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	st := h.pod("p").Status
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("status %s/%s/%q, want Failed/DeadlineExceeded", st.Phase, st.Reason, st.Message)
	}
	if err := h.sync("p"); err != nil {
		t.Fatal(err)
	}
	if h.called("StopPodSandbox") == 0 {
		t.Errorf("the pod's sandbox was not stopped: %v", h.rt.Calls())
	}
}
