package daemonset

import (
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
)

func TestRollingLimits(t *testing.T) {
	tests := []struct {
		name                      string
		unavailable, surge        *intstr.IntOrString
		desired                   int
		wantSurge, wantUnavailble int
	}{
		{"numbers", ptr(intstr.FromInt32(2)), ptr(intstr.FromInt32(0)), 10, 0, 2},
		{"percent rounds up", ptr(intstr.FromString("25%")), nil, 10, 0, 3},
		{"surge percent", ptr(intstr.FromInt32(0)), ptr(intstr.FromString("50%")), 3, 2, 0},
		{"neither: one unavailable", ptr(intstr.FromInt32(0)), ptr(intstr.FromInt32(0)), 4, 0, 1},
		{"no nodes", ptr(intstr.FromInt32(0)), ptr(intstr.FromInt32(0)), 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := dsWith(nil)
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: tt.unavailable, MaxSurge: tt.surge}}
			s, u, err := rollingLimits(ds, tt.desired)
			if err != nil || s != tt.wantSurge || u != tt.wantUnavailble {
				t.Fatalf("surge %d unavailable %d err %v; want %d %d", s, u, err, tt.wantSurge, tt.wantUnavailble)
			}
		})
	}
	onDelete := dsWith(nil)
	onDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	if s, u, _ := rollingLimits(onDelete, 5); s != 0 || u != 0 {
		t.Fatalf("OnDelete has limits %d %d", s, u)
	}
}

// daemonPod is a pod of revision hash on node, ready since readySince
// (zero: not ready).
func daemonPod(name, node, hash string, readySince time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{hashLabel: hash}},
		Spec: corev1.PodSpec{NodeName: node}}
	if !readySince.IsZero() {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func TestPlanUnavailableUpdate(t *testing.T) {
	now := time.Now()
	c := &Controller{clock: testingclock.NewFakeClock(now)}
	ds := dsWith(nil)
	ready := now.Add(-time.Minute)
	tests := []struct {
		name    string
		perNode map[string][]*corev1.Pod
		max     int
		want    int
		must    []string // pods that must be among those deleted
	}{
		{"two of four old pods go", map[string][]*corev1.Pod{
			"a": {daemonPod("a-old", "a", "old", ready)}, "b": {daemonPod("b-old", "b", "old", ready)},
			"c": {daemonPod("c-old", "c", "old", ready)}, "d": {daemonPod("d-old", "d", "old", ready)},
		}, 2, 2, nil},
		{"a new pod not yet ready uses the budget", map[string][]*corev1.Pod{
			"a": {daemonPod("a-new", "a", "new", time.Time{})}, "b": {daemonPod("b-old", "b", "old", ready)},
		}, 1, 0, nil},
		{"an unavailable old pod goes regardless", map[string][]*corev1.Pod{
			"a": {daemonPod("a-new", "a", "new", time.Time{})}, "b": {daemonPod("b-old", "b", "old", time.Time{})},
			"c": {daemonPod("c-old", "c", "old", ready)},
		}, 1, 1, []string{"b-old"}},
		{"a node waiting for its pod counts as unavailable", map[string][]*corev1.Pod{
			"a": nil, "b": {daemonPod("b-old", "b", "old", ready)},
		}, 1, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(c.planUnavailableUpdate(ds, tt.perNode, "new", tt.max))
			if len(got) != tt.want {
				t.Fatalf("deleting %v, want %d pods", got, tt.want)
			}
			for _, m := range tt.must {
				if sort.SearchStrings(got, m) == len(got) || got[sort.SearchStrings(got, m)] != m {
					t.Fatalf("deleting %v, want %s among them", got, m)
				}
			}
		})
	}
}

func TestPlanSurgeUpdate(t *testing.T) {
	now := time.Now()
	c := &Controller{clock: testingclock.NewFakeClock(now)}
	ds := dsWith(nil)
	ready := now.Add(-time.Minute)
	all := map[string]bool{"a": true, "b": true, "c": true}
	perNode := map[string][]*corev1.Pod{
		"a": {daemonPod("a-old", "a", "old", ready), daemonPod("a-new", "a", "new", ready)}, // replaced: old goes
		"b": {daemonPod("b-old", "b", "old", ready), daemonPod("b-new", "b", "new", time.Time{})},
		"c": {daemonPod("c-old", "c", "old", ready)},
	}
	remove, create := c.planSurgeUpdate(ds, perNode, all, 3, "new", 1)
	if got := names(remove); len(got) != 1 || got[0] != "a-old" {
		t.Fatalf("removing %v, want [a-old]", got)
	}
	if len(create) != 0 {
		t.Fatalf("creating on %v while b's new pod uses the one surge slot", create)
	}
	remove, create = c.planSurgeUpdate(ds, perNode, all, 3, "new", 2)
	if len(create) != 1 || create[0] != "c" || len(remove) != 1 {
		t.Fatalf("with two slots: remove %v create %v, want remove [a-old] create [c]", names(remove), create)
	}
	// An old pod that is not available is replaced at once, beyond maxSurge.
	broken := map[string][]*corev1.Pod{"a": {daemonPod("a-old", "a", "old", time.Time{})}, "b": {daemonPod("b-old", "b", "old", ready)}}
	_, create = c.planSurgeUpdate(ds, broken, all, 2, "new", 0)
	if len(create) != 1 || create[0] != "a" {
		t.Fatalf("create %v, want [a]", create)
	}
}
