package pods

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
)

// res is cpu and memory requests and limits ("" for none).
func res(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	list := func(cpu, mem string) corev1.ResourceList {
		if cpu == "" && mem == "" {
			return nil
		}
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: list(reqCPU, reqMem), Limits: list(limCPU, limMem)}
}

func TestAllocate(t *testing.T) {
	pod := func(r corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: r}}}}
	}
	small := res("20m", "35Mi", "30m", "45Mi")
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	others := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("900m"), corev1.ResourceMemory: resource.MustParse("100Mi")}
	for _, tc := range []struct {
		name   string
		spec   corev1.ResourceRequirements
		prev   map[string]corev1.ResourceRequirements
		want   corev1.ResourceRequirements
		reason string // of PodResizePending, "" for none
	}{
		{"first admission takes the spec", small, nil, small, ""},
		{"no resize", small, map[string]corev1.ResourceRequirements{"app": res("0.02", "35Mi", "30m", "45Mi")}, small, ""},
		{"a resize that fits", res("50m", "35Mi", "60m", "45Mi"), map[string]corev1.ResourceRequirements{"app": small}, res("50m", "35Mi", "60m", "45Mi"), ""},
		{"more than the node has", res("2", "35Mi", "2", "45Mi"), map[string]corev1.ResourceRequirements{"app": small}, small, corev1.PodReasonInfeasible},
		{"more than is left", res("200m", "35Mi", "200m", "45Mi"), map[string]corev1.ResourceRequirements{"app": small}, small, corev1.PodReasonDeferred},
	} {
		t.Run(tc.name, func(t *testing.T) {
			summed := false
			alloc, pending := allocate(pod(tc.spec), tc.prev, allocatable, func() corev1.ResourceList { summed = true; return others })
			if resizing := tc.prev != nil && !sameResources(tc.prev["app"], tc.spec); summed != resizing {
				t.Errorf("the other pods' requests summed: %v, want %v", summed, resizing)
			}
			if !sameResources(alloc["app"], tc.want) {
				t.Errorf("allocated %v, want %v", alloc["app"], tc.want)
			}
			switch {
			case tc.reason == "" && pending != nil:
				t.Errorf("pending %+v, want none", pending)
			case tc.reason != "" && (pending == nil || pending.Reason != tc.reason || pending.Type != corev1.PodResizePending):
				t.Errorf("pending %+v, want reason %s", pending, tc.reason)
			}
		})
	}
}

func TestResizeActions(t *testing.T) {
	restartMemory := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	created := res("20m", "35Mi", "30m", "45Mi")
	for _, tc := range []struct {
		name    string
		want    corev1.ResourceRequirements
		policy  []corev1.ContainerResizePolicy
		updated map[string]corev1.ResourceRequirements
		acts    string
	}{
		{"as created", created, nil, nil, ""},
		{"cpu limit up", res("20m", "35Mi", "35m", "45Mi"), nil, nil, "resizeContainer app id=c1"},
		{"already updated", res("20m", "35Mi", "35m", "45Mi"), nil, map[string]corev1.ResourceRequirements{"c1": res("20m", "35Mi", "35m", "45Mi")}, ""},
		{"cpu with memory to restart", res("25m", "35Mi", "35m", "45Mi"), restartMemory, nil, "resizeContainer app id=c1"},
		{"memory request to restart", res("20m", "40Mi", "30m", "45Mi"), restartMemory, nil,
			`killContainer app id=c1 grace=30 "resize of memory requires a restart"; createContainer app attempt=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Name: "app", Resources: tc.want, ResizePolicy: tc.policy}
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{*c}}}
			cs := runningWith("c1", created)
			var got []string
			for _, a := range resizeActions(pod, c, regularRole, cs, []*runtimeapi.ContainerStatus{cs}, tc.updated) {
				got = append(got, a.String())
			}
			if s := strings.Join(got, "; "); s != tc.acts {
				t.Errorf("actions %q, want %q", s, tc.acts)
			}
		})
	}
	// A container made before orch recorded its resources gets its
	// allocation once, in place.
	c := &corev1.Container{Name: "app", Resources: res("1", "", "", ""), ResizePolicy: restartMemory}
	old := &runtimeapi.ContainerStatus{Id: "c0", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}
	if acts := resizeActions(&corev1.Pod{}, c, regularRole, old, []*runtimeapi.ContainerStatus{old}, nil); len(acts) != 1 || acts[0].kind != resizeContainer {
		t.Errorf("actions for a container without recorded resources: %v", acts)
	}
	if acts := resizeActions(&corev1.Pod{}, c, regularRole, old, []*runtimeapi.ContainerStatus{old}, map[string]corev1.ResourceRequirements{"c0": res("1", "", "", "")}); len(acts) != 0 {
		t.Errorf("actions once it was applied: %v", acts)
	}
}

// runningWith is a running container status created with r.
func runningWith(id string, r corev1.ResourceRequirements) *runtimeapi.ContainerStatus {
	c := &corev1.Container{Name: "app", Resources: r}
	a, err := podconfigAnnotations(c)
	if err != nil {
		panic(err)
	}
	return &runtimeapi.ContainerStatus{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Annotations: a}
}

// TestInPlaceResize resizes a running pod through the workers and the
// fake runtime: an update in place, a resize the node cannot hold, and
// one whose resizePolicy restarts the container.
func TestInPlaceResize(t *testing.T) {
	p := testPod("p", corev1.RestartPolicyAlways)
	p.Generation = 1
	p.Spec.Containers[0].Resources = res("20m", "35Mi", "30m", "45Mi")
	p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	h := newHarness(t, p)
	h.w.node.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	h.mustSync("p")
	check := func(want corev1.ResourceRequirements, restarts int32, pending string) {
		t.Helper()
		got := h.pod("p")
		cs := statusOf(got.Status.ContainerStatuses, "main")
		if cs.Resources == nil || !sameResources(*cs.Resources, want) || !sameList(cs.AllocatedResources, want.Requests) {
			t.Errorf("status resources %v, allocated %v; want %v", cs.Resources, cs.AllocatedResources, want)
		}
		if cs.RestartCount != restarts || cs.State.Running == nil {
			t.Errorf("restarts %d, state %+v; want %d, running", cs.RestartCount, cs.State, restarts)
		}
		c := findCondition(got.Status.Conditions, corev1.PodResizePending)
		switch {
		case pending == "" && c != nil:
			t.Errorf("PodResizePending %+v", c)
		case pending != "" && (c == nil || c.Reason != pending || c.ObservedGeneration != got.Generation):
			t.Errorf("PodResizePending %+v, want reason %s", c, pending)
		}
		if c := findCondition(got.Status.Conditions, corev1.PodResizeInProgress); c != nil {
			t.Errorf("PodResizeInProgress %+v", c)
		}
		if got.Status.ObservedGeneration != got.Generation {
			t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
		}
	}
	check(res("20m", "35Mi", "30m", "45Mi"), 0, "")
	resize := func(r corev1.ResourceRequirements) {
		t.Helper()
		if err := h.syncAfterResize(r); err != nil {
			t.Fatal(err)
		}
	}

	// cpu: updated in place.
	resize(res("25m", "35Mi", "35m", "45Mi"))
	if n := h.called("UpdateContainerResources"); n != 1 {
		t.Fatalf("UpdateContainerResources called %d times: %v", n, h.rt.Calls())
	}
	ctr := h.containers("main")[0]
	st, err := h.rt.ContainerStatus(context.Background(), ctr.Id, false)
	if err != nil {
		t.Fatal(err)
	}
	if l := st.Status.GetResources().GetLinux(); l.GetCpuQuota() != 3500 || l.GetCpuShares() != 25 || l.GetMemoryLimitInBytes() != 45<<20 {
		t.Errorf("the runtime has %+v, want quota 3500, shares 25, memory 45Mi", l)
	}
	check(res("25m", "35Mi", "35m", "45Mi"), 0, "")
	h.mustSync("p")
	if n := h.called("UpdateContainerResources"); n != 1 {
		t.Errorf("a second sync updated again: %v", h.rt.Calls())
	}

	// A failed update shows as PodResizeInProgress, reason Error, until
	// nothing is left to do (here: the resize is taken back).
	h.rt.FailNext("UpdateContainerResources", errors.New("no such cgroup"))
	if err := h.syncAfterResize(res("30m", "35Mi", "40m", "45Mi")); err == nil {
		t.Fatal("a failed update reported no error")
	}
	if c := findCondition(h.pod("p").Status.Conditions, corev1.PodResizeInProgress); c == nil || c.Reason != corev1.PodReasonError ||
		!strings.Contains(c.Message, "no such cgroup") {
		t.Errorf("after a failed update: PodResizeInProgress %+v", c)
	}
	resize(res("25m", "35Mi", "35m", "45Mi"))
	check(res("25m", "35Mi", "35m", "45Mi"), 0, "")

	// More cpu than the node has: it waits, Infeasible.
	resize(res("3", "35Mi", "3", "45Mi"))
	check(res("25m", "35Mi", "35m", "45Mi"), 0, corev1.PodReasonInfeasible)

	// memory, under RestartContainer: the container restarts.
	resize(res("25m", "40Mi", "35m", "50Mi"))
	h.mustSync("p") // the new container's status
	check(res("25m", "40Mi", "35m", "50Mi"), 1, "")
}

func podconfigAnnotations(c *corev1.Container) (map[string]string, error) {
	return podconfig.ContainerAnnotations(&corev1.Pod{}, c, 0)
}

// syncAfterResize sets the resources of pod p's first container, as a
// write to pods/resize does, and syncs it.
func (h *harness) syncAfterResize(r corev1.ResourceRequirements) error {
	h.t.Helper()
	got := h.pod("p")
	got.Spec.Containers[0].Resources = r
	got.Generation++
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.indexer.Update(got)
	return h.sync("p")
}
