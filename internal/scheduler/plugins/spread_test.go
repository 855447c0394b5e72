package plugins

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

const zone = v1.LabelTopologyZone

func TestPodTopologySpreadFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a1").Label(zone, "a").Obj(), st.Node("a2").Label(zone, "a").Obj(),
		st.Node("b1").Label(zone, "b").Obj(), st.Node("nolabel").Obj(),
	}
	web := func(name, node string) *v1.Pod { return st.Pod(name).Label("app", "web").Node(node).Obj() }
	deleting := web("gone", "b1")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	const skew, missing = "unschedulable: " + errSpread, "unresolvable: " + errSpread + " (missing required label)"
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{"zone a is ahead", st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			[]*v1.Pod{web("w1", "a1"), web("w2", "a2"), deleting},
			map[string]string{"a1": skew, "a2": skew, "b1": "ok", "nolabel": missing}},
		{"within maxSkew", st.Pod("p").Label("app", "web").Spread(2, zone, v1.DoNotSchedule, "app", "web").Obj(),
			[]*v1.Pod{web("w1", "a1")}, map[string]string{"a1": "ok", "a2": "ok", "b1": "ok", "nolabel": missing}},
		{"hostname", st.Pod("p").Label("app", "web").Spread(1, v1.LabelHostname, v1.DoNotSchedule, "app", "web").Obj(),
			[]*v1.Pod{web("w1", "a1")}, map[string]string{"a1": skew, "a2": "ok", "b1": "ok", "nolabel": "ok"}},
		{"other namespaces do not count", st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			[]*v1.Pod{st.Pod("o1").Namespace("other").Label("app", "web").Node("a1").Obj(), st.Pod("o2").Namespace("other").Label("app", "web").Node("a2").Obj()},
			map[string]string{"a1": "ok", "a2": "ok", "b1": "ok", "nolabel": missing}},
		{"a pod the selector misses only counts others", st.Pod("p").Label("app", "db").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			[]*v1.Pod{web("w1", "a1"), web("w2", "b1")}, map[string]string{"a1": "ok", "a2": "ok", "b1": "ok", "nolabel": missing}},
		{"ScheduleAnyway never filters", st.Pod("p").Label("app", "web").Spread(1, zone, v1.ScheduleAnyway, "app", "web").Obj(),
			[]*v1.Pod{web("w1", "a1"), web("w2", "a2")}, map[string]string{"a1": "ok", "a2": "ok", "b1": "ok", "nolabel": "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, filterOutcome(PodTopologySpread{}, tc.pod, nodes, tc.existing...), tc.want)
		})
	}
}

func TestPodTopologySpreadMinDomains(t *testing.T) {
	nodes := []*v1.Node{st.Node("a1").Label(zone, "a").Obj(), st.Node("b1").Label(zone, "b").Obj()}
	existing := []*v1.Pod{st.Pod("w1").Label("app", "web").Node("a1").Obj(), st.Pod("w2").Label("app", "web").Node("b1").Obj()}
	pod := st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj()
	check(t, filterOutcome(PodTopologySpread{}, pod, nodes, existing...), map[string]string{"a1": "ok", "b1": "ok"})
	// With fewer domains than minDomains the global minimum counts as 0.
	three := int32(3)
	pod.Spec.TopologySpreadConstraints[0].MinDomains = &three
	check(t, filterOutcome(PodTopologySpread{}, pod, nodes, existing...), map[string]string{"a1": "unschedulable: " + errSpread, "b1": "unschedulable: " + errSpread})
}

func TestPodTopologySpreadScore(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj(), st.Node("n3").Obj()}
	var existing []*v1.Pod
	for i, node := range []string{"n1", "n1", "n2"} {
		existing = append(existing, st.Pod("w"+string(rune('0'+i))).Label("app", "web").Node(node).Obj())
	}
	snap := fw.NewSnapshot(nodes, existing)
	// Weight log(3+2): n1 scores 2*1.6 → 3, n2 → 2, n3 → 0; reversed over the range.
	pod := st.Pod("p").Label("app", "web").Spread(1, v1.LabelHostname, v1.ScheduleAnyway, "app", "web").Obj()
	check(t, scores(PodTopologySpread{}, snap, pod), map[string]int64{"n1": 0, "n2": 33, "n3": 100})

	// Without constraints the system defaults spread over what the pod's
	// Services and controllers select.
	plain := st.Pod("p").Label("app", "web").Obj()
	check(t, scores(PodTopologySpread{}, snap, plain), map[string]int64{"n1": 0, "n2": 0, "n3": 0})
	snap.Selectors = func(*v1.Pod) labels.Selector { return labels.SelectorFromSet(labels.Set{"app": "web"}) }
	got := scores(PodTopologySpread{}, snap, plain)
	if !(got["n3"] > got["n2"] && got["n2"] > got["n1"]) {
		t.Errorf("default spreading scores %v, want n3 > n2 > n1", got)
	}
}
