package pods

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// clockHarness is a harness whose workers and fake runtime share a clock
// the test moves.
func clockHarness(t *testing.T, pods ...*corev1.Pod) (*harness, *time.Time) {
	h := newHarness(t, pods...)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.w.Now = func() time.Time { return now }
	h.rt.Now = h.w.Now
	return h, &now
}

// containers returns the runtime's containers named name, oldest first.
func (h *harness) containers(name string) []*runtimeapi.Container {
	h.t.Helper()
	all, err := h.rt.ListContainers(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(c *runtimeapi.Container) bool { return c.Metadata.Name != name })
}

// exitNewest makes the newest container named name exit with code.
func (h *harness) exitNewest(name string, code int32) {
	h.t.Helper()
	cs := h.containers(name)
	if len(cs) == 0 {
		h.t.Fatalf("no container %s", name)
	}
	newest := cs[0]
	for _, c := range cs {
		if c.Metadata.Attempt > newest.Metadata.Attempt {
			newest = c
		}
	}
	if err := h.rt.Exit(newest.Id, code, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) mustSync(name string) {
	h.t.Helper()
	if err := h.sync(name); err != nil {
		h.t.Fatal(err)
	}
}

func statusOf(statuses []corev1.ContainerStatus, name string) corev1.ContainerStatus {
	for _, s := range statuses {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

func TestRestartPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.RestartPolicy
		code    int32
		restart bool
		phase   corev1.PodPhase
	}{
		{corev1.RestartPolicyAlways, 0, true, corev1.PodRunning},
		{corev1.RestartPolicyAlways, 1, true, corev1.PodRunning},
		{corev1.RestartPolicyOnFailure, 1, true, corev1.PodRunning},
		{corev1.RestartPolicyOnFailure, 0, false, corev1.PodSucceeded},
		{corev1.RestartPolicyNever, 1, false, corev1.PodFailed},
		{corev1.RestartPolicyNever, 0, false, corev1.PodSucceeded},
	} {
		t.Run(fmt.Sprintf("%s/exit%d", tc.policy, tc.code), func(t *testing.T) {
			h, _ := clockHarness(t, testPod("p", tc.policy))
			h.mustSync("p")
			h.exitNewest("main", tc.code)
			h.mustSync("p")
			want := 1
			if tc.restart {
				want = 2 // upstream restarts the first time at once
			}
			if got := h.called("CreateContainer"); got != want {
				t.Fatalf("CreateContainer called %d times, want %d: %v", got, want, h.rt.Calls())
			}
			st := h.pod("p").Status
			cs := st.ContainerStatuses[0]
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if tc.restart {
				last := cs.LastTerminationState.Terminated
				if cs.RestartCount != 1 || cs.State.Running == nil || last == nil || last.ExitCode != tc.code {
					t.Errorf("container status %+v", cs)
				}
			} else if cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tc.code {
				t.Errorf("container status %+v", cs)
			}
		})
	}
}

// TestCrashLoopBackOff crashes a container again and again under
// restartPolicy Always: the first restart is at once, then each waits
// 10 s, 20 s, 40 s … at most 5 min after the exit, in CrashLoopBackOff
// with a BackOff event; the runtime keeps the newest exited attempt only.
func TestCrashLoopBackOff(t *testing.T) {
	h, now := clockHarness(t, testPod("p", corev1.RestartPolicyAlways))
	h.mustSync("p")
	h.exitNewest("main", 1)
	*now = now.Add(time.Second)
	h.mustSync("p")
	if cs := h.pod("p").Status.ContainerStatuses[0]; cs.RestartCount != 1 || cs.State.Running == nil {
		t.Fatalf("after the first exit: %+v", cs)
	}
	h.drainEvents()
	wantMsg := "back-off %s restarting failed container=main pod=p_default(uid-p)"
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute} {
		restarts := int32(i + 1)
		*now = now.Add(3 * time.Second) // it ran 3 s
		h.exitNewest("main", 2)
		exitedAt := *now
		h.mustSync("p")
		st := h.pod("p").Status
		cs := st.ContainerStatuses[0]
		w, last := cs.State.Waiting, cs.LastTerminationState.Terminated
		if w == nil || w.Reason != "CrashLoopBackOff" || w.Message != fmt.Sprintf(wantMsg, delay) {
			t.Fatalf("restart %d: state %+v, want CrashLoopBackOff %q", restarts, cs.State, fmt.Sprintf(wantMsg, delay))
		}
		if cs.RestartCount != restarts || last == nil || last.ExitCode != 2 || last.Reason != "Error" ||
			!last.FinishedAt.Time.Equal(exitedAt) || last.StartedAt.IsZero() || cs.Ready {
			t.Fatalf("restart %d: status %+v", restarts, cs)
		}
		if st.Phase != corev1.PodRunning {
			t.Errorf("phase %s in CrashLoopBackOff, want Running", st.Phase)
		}
		ev := h.drainEvents()
		if !slices.Contains(ev, "Warning BackOff Back-off restarting failed container main in pod p_default(uid-p)") {
			t.Errorf("events %q", ev)
		}
		// Not a second early (and no second event for the same exit)…
		*now = exitedAt.Add(delay - time.Second)
		h.mustSync("p")
		if cs := h.pod("p").Status.ContainerStatuses[0]; cs.State.Waiting == nil || cs.RestartCount != restarts {
			t.Fatalf("restart %d came before %s: %+v", restarts, delay, cs)
		}
		if ev := h.drainEvents(); slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, "BackOff") }) {
			t.Errorf("BackOff event again for the same exit: %q", ev)
		}
		// …but once the back-off is over.
		*now = exitedAt.Add(delay)
		h.mustSync("p")
		cs = h.pod("p").Status.ContainerStatuses[0]
		if cs.State.Running == nil || cs.RestartCount != restarts+1 || cs.LastTerminationState.Terminated == nil {
			t.Fatalf("after %s: %+v", delay, cs)
		}
		if n := len(h.containers("main")); n != 2 {
			t.Errorf("%d containers in the runtime, want the running and the last exited one", n)
		}
	}
	if h.called("RemoveContainer") == 0 {
		t.Errorf("old attempts were not removed: %v", h.rt.Calls())
	}

	// A container that ran for more than 10 min starts over: restarted at
	// once, then 10 s.
	*now = now.Add(11 * time.Minute)
	h.exitNewest("main", 1)
	h.mustSync("p")
	cs := h.pod("p").Status.ContainerStatuses[0]
	if cs.State.Running == nil {
		t.Fatalf("after a long run: %+v", cs)
	}
	*now = now.Add(time.Second)
	h.exitNewest("main", 1)
	h.mustSync("p")
	if w := h.pod("p").Status.ContainerStatuses[0].State.Waiting; w == nil || w.Message != fmt.Sprintf(wantMsg, 10*time.Second) {
		t.Fatalf("after the reset: %+v", w)
	}
}

func initPod(policy corev1.RestartPolicy) *corev1.Pod {
	p := testPod("p", policy)
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init1", Image: "busybox", Command: []string{"true"}},
		{Name: "init2", Image: "busybox", Command: []string{"true"}},
	}
	return p
}

func TestInitContainersInOrder(t *testing.T) {
	h, now := clockHarness(t, initPod(corev1.RestartPolicyAlways))
	h.mustSync("p")
	created := func() []string {
		var names []string
		all, _ := h.rt.ListContainers(context.Background(), nil)
		for _, c := range all {
			names = append(names, fmt.Sprintf("%s/%d", c.Metadata.Name, c.Metadata.Attempt))
		}
		return names
	}
	check := func(step string, containers []string, phase corev1.PodPhase, initialized corev1.ConditionStatus, reason string) corev1.PodStatus {
		t.Helper()
		st := h.pod("p").Status
		if got := created(); !slices.Equal(got, containers) {
			t.Fatalf("%s: containers %v, want %v", step, got, containers)
		}
		c := findCondition(st.Conditions, corev1.PodInitialized)
		if st.Phase != phase || c == nil || c.Status != initialized || c.Reason != reason {
			t.Fatalf("%s: phase %s, Initialized %+v; want %s, %s %s", step, st.Phase, c, phase, initialized, reason)
		}
		return st
	}
	st := check("start", []string{"init1/0"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")
	if c := findCondition(st.Conditions, corev1.PodInitialized); c.Message != "containers with incomplete status: [init1 init2]" {
		t.Errorf("Initialized message %q", c.Message)
	}
	if s := statusOf(st.InitContainerStatuses, "init1"); s.State.Running == nil || s.Ready || !*s.Started {
		t.Errorf("init1 %+v", s)
	}
	for _, s := range []corev1.ContainerStatus{statusOf(st.InitContainerStatuses, "init2"), st.ContainerStatuses[0]} {
		if s.State.Waiting == nil || s.State.Waiting.Reason != "PodInitializing" {
			t.Errorf("%s %+v, want waiting PodInitializing", s.Name, s.State)
		}
	}
	h.mustSync("p") // a running init container is waited for
	check("init1 running", []string{"init1/0"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")

	h.exitNewest("init1", 0)
	h.mustSync("p")
	st = check("init1 done", []string{"init1/0", "init2/0"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")
	if s := statusOf(st.InitContainerStatuses, "init1"); s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" || !s.Ready {
		t.Errorf("init1 %+v", s)
	}

	// A failing init container is restarted (with back-off), the regular
	// ones wait.
	h.exitNewest("init2", 1)
	h.mustSync("p")
	check("init2 failed", []string{"init1/0", "init2/0", "init2/1"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")
	*now = now.Add(time.Second)
	h.exitNewest("init2", 1)
	h.mustSync("p")
	st = check("init2 failed twice", []string{"init1/0", "init2/0", "init2/1"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")
	if s := statusOf(st.InitContainerStatuses, "init2"); s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff" || s.RestartCount != 1 {
		t.Errorf("init2 %+v", s)
	}
	*now = now.Add(10 * time.Second)
	h.mustSync("p")
	check("init2 restarted", []string{"init1/0", "init2/1", "init2/2"}, corev1.PodPending, corev1.ConditionFalse, "ContainersNotInitialized")

	h.exitNewest("init2", 0)
	h.mustSync("p")
	st = check("initialized", []string{"init1/0", "init2/1", "init2/2", "main/0"}, corev1.PodRunning, corev1.ConditionTrue, "")
	if s := statusOf(st.InitContainerStatuses, "init2"); s.State.Terminated == nil || s.RestartCount != 2 || s.LastTerminationState.Terminated == nil {
		t.Errorf("init2 %+v", s)
	}
	if c := findCondition(st.Conditions, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}
	// Completed init containers are not run again.
	h.mustSync("p")
	check("again", []string{"init1/0", "init2/1", "init2/2", "main/0"}, corev1.PodRunning, corev1.ConditionTrue, "")
}

func TestInitContainerFailsPod(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		phase  corev1.PodPhase
		create int
	}{
		{corev1.RestartPolicyNever, corev1.PodFailed, 1},
		{corev1.RestartPolicyOnFailure, corev1.PodPending, 2},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			h, _ := clockHarness(t, initPod(tc.policy))
			h.mustSync("p")
			h.exitNewest("init1", 3)
			h.mustSync("p")
			st := h.pod("p").Status
			if st.Phase != tc.phase || h.called("CreateContainer") != tc.create {
				t.Fatalf("phase %s (want %s), calls %v", st.Phase, tc.phase, h.rt.Calls())
			}
			if slices.ContainsFunc(h.rt.Calls(), func(c string) bool { return strings.Contains(c, "main") }) ||
				len(h.containers("main")) != 0 || len(h.containers("init2")) != 0 {
				t.Errorf("later containers were started: %v", h.rt.Calls())
			}
			if s := statusOf(st.InitContainerStatuses, "init1"); tc.policy == corev1.RestartPolicyNever &&
				(s.State.Terminated == nil || s.State.Terminated.ExitCode != 3) {
				t.Errorf("init1 %+v", s)
			}
		})
	}
}

// delays is a queue that records the delays keys are added after.
type delays struct {
	workqueue.TypedRateLimitingInterface[string]
	mu    sync.Mutex
	added []string // "key after"
}

func (d *delays) AddAfter(key string, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.added = append(d.added, fmt.Sprintf("%s %s", key, after))
}

func (d *delays) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.added
	d.added = nil
	return out
}

// TestCrashLoopBackOffRequeues checks that a pod in CrashLoopBackOff is
// queued again for when its back-off ends, not before.
func TestCrashLoopBackOffRequeues(t *testing.T) {
	h, now := clockHarness(t, testPod("p", corev1.RestartPolicyAlways))
	queue := &delays{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer queue.ShutDown()
	h.w.queue = queue
	h.mustSync("p")
	h.exitNewest("main", 1)
	h.mustSync("p") // restarted at once
	if got := queue.take(); len(got) != 0 {
		t.Fatalf("queued %q for a restart done at once", got)
	}
	*now = now.Add(4 * time.Second)
	h.exitNewest("main", 1)
	*now = now.Add(3 * time.Second) // 3 s of the 10 s back-off gone
	h.mustSync("p")
	if w := h.pod("p").Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" {
		t.Fatalf("not backing off: %+v", w)
	}
	if got := queue.take(); !slices.Equal(got, []string{"default/p 7s"}) {
		t.Errorf("queued %q, want the pod once, for when its back-off ends", got)
	}
}

// TestChangedImageReplacesContainer: a running container whose image the
// pod's spec changed is stopped and created again at once, whatever the
// restartPolicy, as upstream's.
func TestChangedImageReplacesContainer(t *testing.T) {
	h, _ := clockHarness(t, testPod("p", corev1.RestartPolicyNever))
	h.mustSync("p")
	h.mustSync("p")
	if n := h.called("StopContainer"); n != 0 {
		t.Fatalf("an unchanged container was stopped: %v", h.rt.Calls())
	}
	updated := h.pod("p")
	updated.Spec.Containers[0].Image = "busybox:2"
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.indexer.Update(updated)
	h.drainEvents()
	h.mustSync("p")
	if h.called("StopContainer") != 1 || h.called("CreateContainer") != 2 {
		t.Fatalf("calls %v, want the container stopped and created again", h.rt.Calls())
	}
	cs := statusOf(h.pod("p").Status.ContainerStatuses, "main")
	if cs.State.Running == nil || cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil {
		t.Errorf("status %+v", cs)
	}
	main := h.containers("main")
	newest := main[len(main)-1]
	for _, c := range main {
		if c.Metadata.Attempt > newest.Metadata.Attempt {
			newest = c
		}
	}
	if img := h.rt.ContainerConfig(newest.Id).GetImage().GetImage(); !strings.HasSuffix(img, "busybox:2") {
		t.Errorf("the new container runs %q", img)
	}
	if ev := h.drainEvents(); !slices.Contains(ev, "Normal Killing Container main definition changed, will be restarted") {
		t.Errorf("events %q", ev)
	}
}
