package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
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

// TestResize follows upstream's resize error table (test/e2e/common/node/
// pod_resize.go, "apply invalid resize patch requests") and its accepted
// resizes.
func TestResize(t *testing.T) {
	sub := Resource().SpecSubresources["resize"]
	withResources := func(rs ...corev1.ResourceRequirements) *corev1.Pod {
		pod := newPod()
		pod.Spec.Containers = nil
		for i, r := range rs {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + string(rune('1'+i)), Image: "busybox", Resources: r})
		}
		pod.Status.QOSClass = QOSClass(&pod.Spec)
		return pod
	}
	burstable := resources("20m", "35Mi", "30m", "45Mi")
	guaranteed := resources("20m", "35Mi", "20m", "35Mi")
	cases := []struct {
		name   string
		old    *corev1.Pod
		resize func(p *corev1.Pod)
		want   string // substring of the error, "" when valid
	}{
		{"burstable: all resources up", withResources(burstable), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources("25m", "40Mi", "35m", "50Mi")
		}, ""},
		{"add limits and requests", withResources(resources("20m", "", "", ""), resources("", "35Mi", "", "")), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources("25m", "", "35m", "")
			p.Spec.Containers[1].Resources = resources("20m", "30Mi", "", "50Mi")
		}, ""},
		{"resize policy", withResources(burstable), func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		}, "only cpu and memory resources are mutable"},
		{"BestEffort asks for memory", withResources(corev1.ResourceRequirements{}), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources("", "35Mi", "", "")
		}, "Pod QOS Class may not change as a result of resizing"},
		{"Burstable sets requests == limits", withResources(burstable), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources("30m", "45Mi", "30m", "45Mi")
		}, "Pod QOS Class may not change as a result of resizing"},
		{"Guaranteed removes limits", withResources(guaranteed), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = resources("20m", "35Mi", "", "")
		}, "resource limits cannot be removed"},
		{"Burstable removes memory requests", withResources(resources("", "35Mi", "", "")), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, "resource requests cannot be removed"},
		{"reorder", withResources(burstable, burstable), func(p *corev1.Pod) {
			p.Spec.Containers[0], p.Spec.Containers[1] = p.Spec.Containers[1], p.Spec.Containers[0]
		}, "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"},
		{"ephemeral storage", withResources(burstable), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("3")
		}, "only cpu and memory resources are mutable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.old.DeepCopy()
			tc.resize(pod)
			sub.PrepareForUpdate(pod, tc.old)
			errs := sub.ValidateUpdate(pod, tc.old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}

	// Only the containers' resources and resize policies get through.
	old := withResources(burstable)
	written := old.DeepCopy()
	written.Spec.Containers[0].Image = "other"
	written.Spec.Containers[0].Resources = resources("25m", "40Mi", "35m", "50Mi")
	written.Spec.ActiveDeadlineSeconds = new(int64)
	sub.PrepareForUpdate(written, old)
	if written.Spec.Containers[0].Image != "busybox" || written.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("resize let through image %q, activeDeadlineSeconds %v", written.Spec.Containers[0].Image, written.Spec.ActiveDeadlineSeconds)
	}
	if got := written.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "35m" {
		t.Errorf("resized cpu limit %s, want 35m", got)
	}

	running := withResources(burstable)
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if errs := sub.ValidateUpdate(running.DeepCopy(), running); !strings.Contains(errs.ToAggregate().Error(), "Pod running on node without support for resize") {
		t.Errorf("a node that reports no resources: %v", errs)
	}
	static := withResources(burstable)
	static.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	if errs := sub.ValidateUpdate(static.DeepCopy(), static); len(errs) != 1 || !strings.Contains(errs[0].Error(), "static pods cannot be resized") {
		t.Errorf("static pod: %v", errs)
	}
}
