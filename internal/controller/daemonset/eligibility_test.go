package daemonset

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testNode(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: "v", Effect: effect}
}

func dsWith(mutate func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if mutate != nil {
		mutate(&ds.Spec.Template.Spec)
	}
	return ds
}

func requiredAffinity(reqs ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
	}}}
}

func TestEligibility(t *testing.T) {
	run := eligibility{shouldRun: true, mayContinue: true}
	stayOnly := eligibility{mayContinue: true}
	none := eligibility{}
	tests := []struct {
		name string
		spec func(*corev1.PodSpec)
		node *corev1.Node
		want eligibility
	}{
		{"plain node", nil, testNode("n", nil), run},
		{"nodeName matches", func(s *corev1.PodSpec) { s.NodeName = "n" }, testNode("n", nil), run},
		{"nodeName elsewhere", func(s *corev1.PodSpec) { s.NodeName = "other" }, testNode("n", nil), none},
		{"nodeSelector matches", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
			testNode("n", map[string]string{"disk": "ssd"}), run},
		{"nodeSelector does not match", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
			testNode("n", map[string]string{"disk": "hdd"}), none},
		{"required affinity matches", func(s *corev1.PodSpec) {
			s.Affinity = requiredAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}})
		}, testNode("n", map[string]string{"zone": "b"}), run},
		{"required affinity does not match", func(s *corev1.PodSpec) {
			s.Affinity = requiredAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}})
		}, testNode("n", map[string]string{"zone": "b"}), none},
		{"preferred affinity is ignored", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			}}}}
		}, testNode("n", map[string]string{"zone": "b"}), run},
		{"untolerated NoSchedule: no new pod, the old one stays", nil, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule)), stayOnly},
		{"untolerated NoExecute: none", nil, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoExecute)), none},
		{"PreferNoSchedule is ignored", nil, testNode("n", nil, taint("dedicated", corev1.TaintEffectPreferNoSchedule)), run},
		{"tolerated NoSchedule", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule}}
		}, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule)), run},
		{"toleration with another value", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule)), stayOnly},
		{"Exists toleration of every effect", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule), taint("dedicated", corev1.TaintEffectNoExecute)), run},
		{"NoSchedule tolerated, NoExecute not", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, testNode("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule), taint("dedicated", corev1.TaintEffectNoExecute)), none},
		{"cordoned node (unschedulable taint) is tolerated", nil, testNode("n", nil, taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), run},
		{"not-ready node (NoExecute tolerated, NoSchedule not): the pod stays, no new one", nil, testNode("n", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), stayOnly},
		{"unreachable NoExecute is tolerated", nil, testNode("n", nil, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), run},
		{"pressure taints are tolerated", nil, testNode("n", nil,
			taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)), run},
		{"network-unavailable blocks pod networking", nil, testNode("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), stayOnly},
		{"network-unavailable is tolerated with hostNetwork", func(s *corev1.PodSpec) { s.HostNetwork = true },
			testNode("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), run},
		{"selector and taint together", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} },
			testNode("n", map[string]string{"disk": "ssd"}, taint("dedicated", corev1.TaintEffectNoExecute)), none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placementOf(dsWith(tt.spec)).on(tt.node); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAddDaemonTolerations(t *testing.T) {
	spec := corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Key: "mine", Operator: corev1.TolerationOpExists},
		// The template already tolerates not-ready for 60 s: replaced by the forever one.
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(60))},
	}}
	addDaemonTolerations(&spec)
	addDaemonTolerations(&spec) // idempotent
	want := []corev1.Toleration{
		{Key: "mine", Operator: corev1.TolerationOpExists},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if !reflect.DeepEqual(spec.Tolerations, want) {
		t.Fatalf("tolerations:\n got %+v\nwant %+v", spec.Tolerations, want)
	}
	host := corev1.PodSpec{HostNetwork: true}
	addDaemonTolerations(&host)
	if last := host.Tolerations[len(host.Tolerations)-1]; last.Key != corev1.TaintNodeNetworkUnavailable || last.Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("hostNetwork pod lacks the network-unavailable toleration: %+v", host.Tolerations)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPinToNode(t *testing.T) {
	pinned := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}
	tests := []struct {
		name string
		in   *corev1.Affinity
	}{
		{"no affinity", nil},
		{"pod affinity only", &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}},
		{"node affinity without required terms", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
		{"required terms are replaced", requiredAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}})},
		{"an older matchFields term is replaced", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"old"}}}}},
		}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pinToNode(tt.in, "n1")
			terms := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if !reflect.DeepEqual(terms, []corev1.NodeSelectorTerm{pinned}) {
				t.Fatalf("terms %+v", terms)
			}
			if tt.in != nil && tt.in.PodAffinity != nil && got.PodAffinity == nil {
				t.Fatal("pod affinity lost")
			}
			pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: got}}
			if n, err := targetNode(pod); err != nil || n != "n1" {
				t.Fatalf("targetNode = %q, %v", n, err)
			}
		})
	}
}

func TestTargetNode(t *testing.T) {
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2", Affinity: pinToNode(nil, "n1")}}
	if n, _ := targetNode(bound); n != "n2" {
		t.Fatalf("a bound pod is for its node, got %q", n)
	}
	if _, err := targetNode(&corev1.Pod{}); err == nil {
		t.Fatal("a pod without node or affinity has no target")
	}
	two := &corev1.Pod{Spec: corev1.PodSpec{Affinity: pinToNode(nil, "n1")}}
	two.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values = []string{"a", "b"}
	if _, err := targetNode(two); err == nil {
		t.Fatal("two node names are not a target")
	}
}
