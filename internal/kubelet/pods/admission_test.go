package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRejection(t *testing.T) {
	withPort := func(p *corev1.Pod, port int32) *corev1.Pod {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
		return p
	}
	withCPU := func(p *corev1.Pod, cpu string) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		return p
	}
	withExtended := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		return p
	}
	selecting := func(p *corev1.Pod, zone string) *corev1.Pod {
		p.Spec.NodeSelector = map[string]string{"zone": zone}
		return p
	}
	node := func(pods string, labels map[string]string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: labels}}
		if pods != "" {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				corev1.ResourcePods: resource.MustParse(pods)}
		}
		return n
	}
	withGPUs := func(n *corev1.Node, gpus string) *corev1.Node {
		n.Status.Allocatable["example.com/gpu"] = resource.MustParse(gpus)
		return n
	}
	pod := func(name string) *corev1.Pod { return testPod(name, corev1.RestartPolicyAlways) }
	for _, tc := range []struct {
		name            string
		pod             *corev1.Pod
		node            *corev1.Node
		admitted        []*corev1.Pod
		reason, message string
	}{
		{"room for it", withCPU(pod("p"), "500m"), node("10", nil), []*corev1.Pod{withCPU(pod("a"), "500m")}, "", ""},
		{"cpu taken", withCPU(pod("p"), "600m"), node("10", nil), []*corev1.Pod{withCPU(pod("a"), "500m")},
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000"},
		{"too many pods", pod("p"), node("1", nil), []*corev1.Pod{pod("a")},
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"},
		{"an extended resource the node does not list (cluster-level)", withExtended(pod("p")), node("10", nil), nil, "", ""},
		{"an extended resource the node lists", withExtended(pod("p")), withGPUs(node("10", nil), "2"), []*corev1.Pod{withExtended(pod("a"))}, "", ""},
		{"an extended resource taken", withExtended(pod("p")), withGPUs(node("10", nil), "1"), []*corev1.Pod{withExtended(pod("a"))},
			"OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 1, used: 1, capacity: 1"},
		{"an extended resource the node lists as zero", withExtended(pod("p")), withGPUs(node("10", nil), "0"), nil,
			"OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0"},
		{"resources unknown", withCPU(pod("p"), "5"), node("", nil), nil, "", ""},
		{"a host port taken", withPort(pod("p"), 21017), node("10", nil), []*corev1.Pod{withPort(pod("a"), 21017)},
			"NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{"another host port", withPort(pod("p"), 21018), node("10", nil), []*corev1.Pod{withPort(pod("a"), 21017)}, "", ""},
		{"a selector the node does not match", selecting(pod("p"), "b"), node("10", map[string]string{"zone": "a"}), nil,
			"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"a selector the node matches", selecting(pod("p"), "a"), node("10", map[string]string{"zone": "a"}), nil, "", ""},
		{"labels unknown", selecting(pod("p"), "b"), node("10", nil), nil, "", ""},
		{"resources come first", withPort(withCPU(pod("p"), "2"), 21017), node("10", nil), []*corev1.Pod{withPort(pod("a"), 21017)},
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, message := rejection(tc.pod, tc.node, tc.admitted)
			if reason != tc.reason || message != tc.message {
				t.Errorf("rejection = %q, %q; want %q, %q", reason, message, tc.reason, tc.message)
			}
		})
	}
}

// A pod bound to the node whose host port an admitted pod holds fails
// at admission and is never run. A pod that started before (an agent
// restart) is not checked again.
func TestAdmissionRejectsPortConflict(t *testing.T) {
	port := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "conflict", ContainerPort: 21017, HostPort: 21017, Protocol: corev1.ProtocolTCP}}
		return p
	}
	started := port(testPod("started", corev1.RestartPolicyAlways))
	started.Status.StartTime = &metav1.Time{}
	h := newHarness(t, port(testPod("first", corev1.RestartPolicyAlways)), port(testPod("second", corev1.RestartPolicyAlways)), started)
	h.mustSync("first")
	if err := h.sync("second"); err != nil {
		t.Fatal(err)
	}
	second := h.pod("second")
	if second.Status.Phase != corev1.PodFailed || second.Status.Reason != "NodePorts" ||
		second.Status.Message != "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" {
		t.Fatalf("second pod status %s %q %q, want Failed by NodePorts", second.Status.Phase, second.Status.Reason, second.Status.Message)
	}
	if events := strings.Join(h.drainEvents(), "\n"); !strings.Contains(events, "Warning NodePorts Predicate NodePorts failed") {
		t.Errorf("events:\n%s", events)
	}
	for _, sb := range h.sandboxes() {
		if sb.Metadata.Name == "second" {
			t.Errorf("the rejected pod has a sandbox")
		}
	}
	if err := h.sync("second"); err != nil {
		t.Fatal(err)
	}
	h.mustSync("started")
	if p := h.pod("started"); p.Status.Phase == corev1.PodFailed {
		t.Errorf("a pod that started before was rejected: %q", p.Status.Message)
	}
}
