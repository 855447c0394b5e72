package replicaset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodsToDeleteOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name string, mut func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		p.Spec.NodeName = "n1"
		p.Status = readyStatus(now.Add(-time.Hour))
		if mut != nil {
			mut(p)
		}
		return p
	}
	unscheduled := func(p *corev1.Pod) { p.Spec.NodeName = "" }
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	notReady := func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
	cost := func(c string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{podDeletionCostAnnotation: c} }
	}
	readyAgo := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
	}
	createdAgo := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
	}
	restarted := func(n int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}} }
	}
	onNode := func(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

	tests := []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod
		first   string
	}{
		{"unscheduled before scheduled", []*corev1.Pod{pod("a", nil), pod("b", unscheduled)}, nil, "b"},
		{"pending before running", []*corev1.Pod{pod("a", nil), pod("b", pending)}, nil, "b"},
		{"not ready before ready", []*corev1.Pod{pod("a", nil), pod("b", notReady)}, nil, "b"},
		{"lower deletion cost first", []*corev1.Pod{pod("a", cost("10")), pod("b", cost("-5"))}, nil, "b"},
		{"invalid deletion cost counts as 0", []*corev1.Pod{pod("a", cost("+7")), pod("b", cost("-1"))}, nil, "b"},
		{"doubled up on a node first", []*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n2"))},
			[]*corev1.Pod{pod("x", onNode("n2")), pod("y", onNode("n2")), pod("z", onNode("n1"))}, "b"},
		{"ready more recently first", []*corev1.Pod{pod("a", readyAgo(10*time.Hour)), pod("b", readyAgo(time.Minute))}, nil, "b"},
		{"more restarts first", []*corev1.Pod{pod("a", restarted(1)), pod("b", restarted(4))}, nil, "b"},
		{"newer first", []*corev1.Pod{pod("a", createdAgo(48*time.Hour)), pod("b", createdAgo(time.Minute))}, nil, "b"},
		{"same age bucket: by UID", []*corev1.Pod{pod("b", createdAgo(100*time.Second)), pod("a", createdAgo(101*time.Second))}, nil, "a"},
		{"phase beats cost", []*corev1.Pod{pod("a", cost("-100")), pod("b", pending)}, nil, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podsToDelete(tt.pods, tt.related, 1, now)
			if len(got) != 1 || got[0].Name != tt.first {
				t.Fatalf("deleted %s first, want %s", got[0].Name, tt.first)
			}
		})
	}
}

func TestPodsToDeleteAll(t *testing.T) {
	pods := []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	if got := podsToDelete(pods, nil, 2, time.Now()); len(got) != 2 {
		t.Fatalf("got %d pods, want 2", len(got))
	}
}
