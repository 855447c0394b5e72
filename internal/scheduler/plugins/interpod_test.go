package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

func affinity(required ...v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
}

func antiAffinity(required ...v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
}

func TestInterPodAffinityFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("n1").Label(zone, "a").Obj(), st.Node("n2").Label(zone, "a").Obj(), st.Node("n3").Label(zone, "b").Obj(),
	}
	host := v1.LabelHostname
	const (
		noAff      = "unresolvable: " + errAffinity
		noAnti     = "unschedulable: " + errAnti
		noExisting = "unschedulable: " + errExistingAnti
	)
	allNS := st.Term(host, "app", "web")
	allNS.NamespaceSelector = &metav1.LabelSelector{}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{"affinity to a db pod's node", st.Pod("p").Affinity(affinity(st.Term(host, "app", "db"))).Obj(),
			[]*v1.Pod{st.Pod("db").Label("app", "db").Node("n1").Obj()}, map[string]string{"n1": "ok", "n2": noAff, "n3": noAff}},
		{"affinity to a db pod's zone", st.Pod("p").Affinity(affinity(st.Term(zone, "app", "db"))).Obj(),
			[]*v1.Pod{st.Pod("db").Label("app", "db").Node("n1").Obj()}, map[string]string{"n1": "ok", "n2": "ok", "n3": noAff}},
		{"no match anywhere", st.Pod("p").Affinity(affinity(st.Term(host, "app", "db"))).Obj(), nil,
			map[string]string{"n1": noAff, "n2": noAff, "n3": noAff}},
		{"the first of a group that selects itself", st.Pod("p").Label("app", "db").Affinity(affinity(st.Term(host, "app", "db"))).Obj(), nil,
			map[string]string{"n1": "ok", "n2": "ok", "n3": "ok"}},
		{"anti-affinity by hostname", st.Pod("p").Label("app", "web").Affinity(antiAffinity(st.Term(host, "app", "web"))).Obj(),
			[]*v1.Pod{st.Pod("w").Label("app", "web").Node("n1").Obj()}, map[string]string{"n1": noAnti, "n2": "ok", "n3": "ok"}},
		{"anti-affinity ignores other namespaces", st.Pod("p").Affinity(antiAffinity(st.Term(host, "app", "web"))).Obj(),
			[]*v1.Pod{st.Pod("w").Namespace("other").Label("app", "web").Node("n1").Obj()}, map[string]string{"n1": "ok", "n2": "ok", "n3": "ok"}},
		{"anti-affinity with an empty namespaceSelector spans namespaces", st.Pod("p").Affinity(antiAffinity(allNS)).Obj(),
			[]*v1.Pod{st.Pod("w").Namespace("other").Label("app", "web").Node("n1").Obj()}, map[string]string{"n1": noAnti, "n2": "ok", "n3": "ok"}},
		{"existing pod's anti-affinity by zone", st.Pod("p").Label("app", "web").Obj(),
			[]*v1.Pod{st.Pod("x").Node("n1").Affinity(antiAffinity(st.Term(zone, "app", "web"))).Obj()},
			map[string]string{"n1": noExisting, "n2": noExisting, "n3": "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, filterOutcome(InterPodAffinity{}, tc.pod, nodes, tc.existing...), tc.want)
		})
	}
}

func TestInterPodAffinityScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("n1").Label(zone, "a").Obj(), st.Node("n2").Label(zone, "a").Obj(), st.Node("n3").Label(zone, "b").Obj(),
	}
	preferred := func(w int32, term v1.PodAffinityTerm) []v1.WeightedPodAffinityTerm {
		return []v1.WeightedPodAffinityTerm{{Weight: w, PodAffinityTerm: term}}
	}
	db := st.Pod("db").Label("app", "db").Node("n1").Obj()
	web := st.Pod("web").Label("app", "web").Node("n2").Obj()
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"near the db zone", st.Pod("p").Affinity(&v1.Affinity{PodAffinity: &v1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: preferred(10, st.Term(zone, "app", "db"))}}).Obj(),
			map[string]int64{"n1": 100, "n2": 100, "n3": 0}},
		{"away from web hosts", st.Pod("p").Affinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: preferred(5, st.Term(v1.LabelHostname, "app", "web"))}}).Obj(),
			map[string]int64{"n1": 100, "n2": 0, "n3": 100}},
		// The web pod's own preference for app=cache pulls a cache pod.
		{"existing pods' preferences count too", st.Pod("p").Label("app", "cache").Obj(), map[string]int64{"n1": 0, "n2": 100, "n3": 0}},
	}
	web.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred(20, st.Term(v1.LabelHostname, "app", "cache"))}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, scores(InterPodAffinity{}, fw.NewSnapshot(nodes, []*v1.Pod{db, web}), tc.pod), tc.want)
		})
	}
}
