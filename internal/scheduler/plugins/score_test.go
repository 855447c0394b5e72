package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

func TestLeastAllocated(t *testing.T) {
	nodes := []*v1.Node{st.Node("empty").Obj(), st.Node("busy").Obj()}
	busy := st.Pod("b").Node("busy").Req("cpu", "2", "memory", "2Gi").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// empty: cpu (4-1)/4, memory (8-2)/8 → 75; busy: cpu 1/4 → 25, memory 4/8 → 50 → 37.
		{"requests", st.Pod("p").Req("cpu", "1", "memory", "2Gi").Obj(), map[string]int64{"empty": 75, "busy": 37}},
		// No requests: scored as 100m and 200MiB; busy: cpu 47, memory 72.
		{"best effort", st.Pod("p").Obj(), map[string]int64{"empty": 97, "busy": 59}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, scores(Fit{}, fw.NewSnapshot(nodes, []*v1.Pod{busy}), tc.pod), tc.want)
		})
	}
}

func TestBalancedAllocation(t *testing.T) {
	nodes := []*v1.Node{st.Node("empty").Obj(), st.Node("cpuheavy").Obj()}
	heavy := st.Pod("h").Node("cpuheavy").Req("cpu", "2").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// cpuheavy: without the pod cpu .5, memory 0 (75); with it .625 and
		// .5 (93): 50 + (50 + 93 - 75)/2 = 84. empty: 100 → 81: 65.
		{"memory-heavy pod evens out a cpu-heavy node", st.Pod("p").Req("cpu", "500m", "memory", "4Gi").Obj(), map[string]int64{"empty": 65, "cpuheavy": 84}},
		{"best effort pods skip it", st.Pod("p").Obj(), map[string]int64{"empty": 0, "cpuheavy": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, scores(BalancedAllocation{}, fw.NewSnapshot(nodes, []*v1.Pod{heavy}), tc.pod), tc.want)
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("clean").Obj(),
		st.Node("one").Taint("spot", "", v1.TaintEffectPreferNoSchedule).Obj(),
		st.Node("two").Taint("spot", "", v1.TaintEffectPreferNoSchedule).Taint("old", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	check(t, scores(TaintToleration{}, fw.NewSnapshot(nodes, nil), st.Pod("p").Obj()),
		map[string]int64{"clean": 100, "one": 50, "two": 0})
	tolerant := st.Pod("p").Toleration("spot", v1.TolerationOpExists, "", v1.TaintEffectPreferNoSchedule).Obj()
	check(t, scores(TaintToleration{}, fw.NewSnapshot(nodes, nil), tolerant),
		map[string]int64{"clean": 100, "one": 100, "two": 0})
}

func TestNodeAffinityScore(t *testing.T) {
	nodes := []*v1.Node{st.Node("both").Label("disk", "ssd").Label("gpu", "yes").Obj(), st.Node("ssd").Label("disk", "ssd").Obj(), st.Node("none").Obj()}
	term := func(w int32, k, v string) v1.PreferredSchedulingTerm {
		return v1.PreferredSchedulingTerm{Weight: w, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{v}}}}}
	}
	pod := st.Pod("p").Affinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{term(2, "disk", "ssd"), term(8, "gpu", "yes")}}}).Obj()
	check(t, scores(NodeAffinity{}, fw.NewSnapshot(nodes, nil), pod), map[string]int64{"both": 100, "ssd": 20, "none": 0})
}

func TestImageLocality(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a").Image("nginx:1.0", 500*mb).Obj(),
		st.Node("b").Image("nginx:1.0", 500*mb).Image("docker.io/library/redis:latest", 2000*mb).Obj(),
		st.Node("c").Obj(),
	}
	snap := fw.NewSnapshot(nodes, nil)
	// 500 MB on 2 of 3 nodes counts 333 MB: (333-23)/(1000-23) → 31.
	check(t, scores(ImageLocality{}, snap, st.Pod("p").Image("nginx:1.0").Obj()), map[string]int64{"a": 31, "b": 31, "c": 0})
	// 2000 MB on 1 of 3 counts 666 MB.
	check(t, scores(ImageLocality{}, snap, st.Pod("p").Image("docker.io/library/redis").Obj()), map[string]int64{"a": 0, "b": 65, "c": 0})
}
