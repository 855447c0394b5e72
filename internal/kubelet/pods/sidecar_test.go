package pods

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sidecarPod has an init container, a sidecar and a regular container.
func sidecarPod(policy corev1.RestartPolicy) *corev1.Pod {
	p := testPod("p", policy)
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{
		{Name: "setup", Image: "busybox", Command: []string{"true"}},
		{Name: "proxy", Image: "busybox", Command: []string{"sleep", "1d"}, RestartPolicy: &always},
	}
	return p
}

// running are the names of the runtime's running containers, sorted.
func (h *harness) running() []string {
	h.t.Helper()
	all, err := h.rt.ListContainers(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			names = append(names, c.Metadata.Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestSidecarRunsBesideContainers(t *testing.T) {
	h, now := clockHarness(t, sidecarPod(corev1.RestartPolicyAlways))
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"setup"}) {
		t.Fatalf("running %v, want the first init container alone", got)
	}
	h.exitNewest("setup", 0)
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"proxy"}) {
		t.Fatalf("running %v, want the sidecar alone (the regular container waits for it to start)", got)
	}
	st := h.pod("p").Status
	if main := statusOf(st.ContainerStatuses, "main"); st.Phase != corev1.PodPending || main.State.Waiting == nil {
		t.Errorf("phase %s, main %+v; want Pending with main waiting", st.Phase, main)
	}
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"main", "proxy"}) {
		t.Fatalf("running %v, want sidecar and main", got)
	}
	st = h.pod("p").Status
	proxy := statusOf(st.InitContainerStatuses, "proxy")
	if proxy.State.Running == nil || !proxy.Ready || proxy.Started == nil || !*proxy.Started {
		t.Errorf("sidecar status %+v, want running, started and ready", proxy)
	}
	if c := findCondition(st.Conditions, corev1.PodInitialized); st.Phase != corev1.PodRunning || c.Status != corev1.ConditionTrue {
		t.Errorf("phase %s, Initialized %+v", st.Phase, c)
	}
	if c := findCondition(st.Conditions, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}

	// A sidecar that exits is restarted, even with exit code 0, and the
	// init container is not run again.
	h.exitNewest("proxy", 0)
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"main", "proxy"}) || len(h.containers("setup")) != 1 {
		t.Fatalf("running %v, setup containers %d; want the sidecar restarted at once", got, len(h.containers("setup")))
	}
	*now = now.Add(time.Second)
	h.exitNewest("proxy", 1)
	h.mustSync("p")
	proxy = statusOf(h.pod("p").Status.InitContainerStatuses, "proxy")
	if proxy.State.Waiting == nil || proxy.State.Waiting.Reason != "CrashLoopBackOff" || proxy.RestartCount != 1 {
		t.Errorf("sidecar %+v, want CrashLoopBackOff after its second exit", proxy)
	}
	st = h.pod("p").Status
	if st.Phase != corev1.PodRunning {
		t.Errorf("phase %s while the sidecar backs off", st.Phase)
	}
	if c := findCondition(st.Conditions, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [proxy]" {
		t.Errorf("Ready %+v with the sidecar down", c)
	}
}

// startedSidecarPod is a harness whose sidecarPod got past its init
// container: the sidecar and main run.
func startedSidecarPod(t *testing.T, policy corev1.RestartPolicy) *harness {
	h, _ := clockHarness(t, sidecarPod(policy))
	h.mustSync("p")
	h.exitNewest("setup", 0)
	h.mustSync("p")
	h.mustSync("p")
	return h
}

func TestSidecarStopsWhenContainersComplete(t *testing.T) {
	h := startedSidecarPod(t, corev1.RestartPolicyNever)
	if got := h.running(); !slices.Equal(got, []string{"main", "proxy"}) {
		t.Fatalf("running %v", got)
	}
	h.exitNewest("main", 0)
	h.mustSync("p")
	if got := h.running(); len(got) != 0 {
		t.Fatalf("running %v after the regular container completed, want the sidecar stopped", got)
	}
	h.mustSync("p")
	st := h.pod("p").Status
	if st.Phase != corev1.PodSucceeded {
		t.Fatalf("phase %s, want Succeeded (an exited sidecar does not count)", st.Phase)
	}
	if len(h.containers("proxy")) != 1 {
		t.Errorf("the sidecar was restarted after the pod completed")
	}
	if c := findCondition(st.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionTrue || c.Reason != "PodCompleted" {
		t.Errorf("Initialized %+v", c)
	}
}

func TestSidecarStartupProbeGatesNextContainer(t *testing.T) {
	p := sidecarPod(corev1.RestartPolicyAlways)
	p.Spec.InitContainers = p.Spec.InitContainers[1:]
	p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 3600, InitialDelaySeconds: 3600,
	}
	h, _ := clockHarness(t, p)
	h.mustSync("p")
	h.mustSync("p")
	if got := h.running(); !slices.Equal(got, []string{"proxy"}) {
		t.Fatalf("running %v, want the sidecar alone until its startup probe passes", got)
	}
	st := h.pod("p").Status
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	if c := findCondition(st.Conditions, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [proxy]" {
		t.Errorf("Initialized %+v", c)
	}
}

func TestSidecarsStopAfterContainersOnDelete(t *testing.T) {
	h := startedSidecarPod(t, corev1.RestartPolicyAlways)
	ids := map[string]string{}
	for _, name := range []string{"main", "proxy"} {
		ids[h.containers(name)[0].Id] = name
	}
	p := h.pod("p")
	now := metav1.Now()
	grace := int64(5)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	h.indexer.Update(p)
	if err := h.w.sync(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	var stops []string
	for _, c := range h.rt.Calls() {
		if strings.HasPrefix(c, "StopContainer ") {
			stops = append(stops, c)
		}
	}
	var order []string
	for _, s := range stops {
		order = append(order, ids[strings.TrimPrefix(s, "StopContainer ")])
	}
	if !slices.Equal(order, []string{"main", "proxy"}) {
		t.Errorf("stop order %v (calls %v), want the sidecar after the regular container", order, stops)
	}
}
