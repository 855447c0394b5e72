package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		pct         int32
		nodes, want int
	}{
		{0, 10, 10}, {0, 99, 99}, {0, 100, 100}, {0, 1000, 420}, {0, 5000, 500}, {0, 10000, 500},
		{0, 200, 100}, {10, 1000, 100}, {50, 1000, 500}, {100, 1000, 1000},
	}
	for _, tc := range tests {
		f := &Framework{PercentageOfNodesToScore: tc.pct}
		if got := f.numFeasibleNodesToFind(tc.nodes); got != tc.want {
			t.Errorf("%d nodes at %d%%: %d, want %d", tc.nodes, tc.pct, got, tc.want)
		}
	}
}

func TestFitErrorWithPreFilterMessage(t *testing.T) {
	st := NewStatus(UnschedulableAndUnresolvable, "pod has unbound immediate PersistentVolumeClaims")
	fe := &FitError{NumAllNodes: 2, Diagnosis: Diagnosis{PreFilterMsg: st.Message(), NodeToStatus: map[string]*Status{"a": st, "b": st},
		PostFilterMsg: "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."}}
	want := "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if got := fe.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestCountMatchingFollowsPods(t *testing.T) {
	node := func(name string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	pod := func(name, node, app string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": app}},
			Spec: v1.PodSpec{NodeName: node}}
	}
	s := NewSnapshot([]*v1.Node{node("a"), node("b")}, []*v1.Pod{pod("w1", "a", "web"), pod("d1", "a", "db")})
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	counts := s.CountMatching("ns", web)
	s.AddPod(pod("w2", "b", "web"))
	s.AddPod(pod("w3", "b", "web"))
	gone := pod("w3", "b", "web")
	gone.DeletionTimestamp = &metav1.Time{}
	s.AddPod(gone)                  // terminating pods do not count
	s.AddPod(pod("w4", "c", "web")) // node not known yet
	s.RemovePod("w1")
	if counts["a"] != 0 || counts["b"] != 1 {
		t.Errorf("counts %v, want a:0 b:1", counts)
	}
	s.SetNode(node("c"))
	if got := s.CountMatching("ns", web); got["c"] != 1 || got["b"] != 1 || got["a"] != 0 {
		t.Errorf("after node c arrived: %v", got)
	}
	if got := s.CountMatching("other", web); len(got) != 0 {
		t.Errorf("other namespace: %v", got)
	}
	if got := s.CountMatching("ns", labels.Everything()); got != nil {
		t.Errorf("an empty selector counted %v", got)
	}
}
