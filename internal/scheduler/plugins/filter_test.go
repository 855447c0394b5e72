package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

func TestFit(t *testing.T) {
	n := st.Node("n").CPU("4").Memory("8Gi").Pods("3").Alloc("example.com/gpu", "1").Alloc(v1.ResourceEphemeralStorage, "10Gi")
	busy := st.Pod("busy").Node("n").Req("cpu", "1500m", "memory", "2Gi").Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     string
	}{
		{"fits", st.Pod("p").Req("cpu", "2", "memory", "4Gi").Obj(), []*v1.Pod{busy}, "ok"},
		{"insufficient cpu", st.Pod("p").Req("cpu", "3").Obj(), []*v1.Pod{busy}, "unschedulable: Insufficient cpu"},
		{"more than the node has", st.Pod("p").Req("cpu", "5").Obj(), nil, "unresolvable: Insufficient cpu"},
		{"cpu and memory", st.Pod("p").Req("cpu", "3", "memory", "7Gi").Obj(), []*v1.Pod{busy}, "unschedulable: Insufficient cpu, Insufficient memory"},
		{"ephemeral storage", st.Pod("p").Req("ephemeral-storage", "11Gi").Obj(), nil, "unresolvable: Insufficient ephemeral-storage"},
		{"extended resource taken", st.Pod("p").Req("example.com/gpu", "1").Obj(),
			[]*v1.Pod{st.Pod("g").Node("n").Req("example.com/gpu", "1").Obj()}, "unschedulable: Insufficient example.com/gpu"},
		{"extended resource absent", st.Pod("p").Req("example.com/fpga", "1").Obj(), nil, "unresolvable: Insufficient example.com/fpga"},
		{"too many pods", st.Pod("p").Obj(), []*v1.Pod{busy, st.Pod("a").Node("n").Obj(), st.Pod("b").Node("n").Obj()}, "unschedulable: Too many pods"},
		{"best effort on a full node", st.Pod("p").Obj(), []*v1.Pod{st.Pod("all").Node("n").Req("cpu", "4", "memory", "8Gi").Obj()}, "ok"},
		// Init containers run one after the other: the largest counts if
		// it exceeds the sum of the app containers.
		{"init container larger than containers", st.Pod("p").Req("cpu", "1").Init(false, "cpu", "3").Obj(), []*v1.Pod{busy}, "unschedulable: Insufficient cpu"},
		{"init container smaller than containers", st.Pod("p").Req("cpu", "2").Init(false, "cpu", "1").Obj(), []*v1.Pod{busy}, "ok"},
		// A sidecar keeps running: it adds to the app containers.
		{"sidecar adds up", st.Pod("p").Req("cpu", "2").Init(true, "cpu", "1").Obj(), []*v1.Pod{busy}, "unschedulable: Insufficient cpu"},
		{"overhead adds up", st.Pod("p").Req("cpu", "2").Overhead("cpu", "1").Obj(), []*v1.Pod{busy}, "unschedulable: Insufficient cpu"},
		{"existing pod counts its largest init container, not the sum", st.Pod("p").Req("cpu", "2").Obj(),
			[]*v1.Pod{st.Pod("x").Node("n").Req("cpu", "1").Init(false, "cpu", "2").Obj()}, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := filterOutcome(Fit{}, tc.pod, []*v1.Node{n.Obj()}, tc.existing...)
			check(t, got, map[string]string{"n": tc.want})
		})
	}
}

func TestNodeNameAndUnschedulable(t *testing.T) {
	nodes := []*v1.Node{st.Node("a").Obj(), st.Node("b").Unschedulable().Obj()}
	check(t, filterOutcome(NodeName{}, st.Pod("p").Node("a").Obj(), nodes), map[string]string{
		"a": "ok", "b": "unresolvable: node(s) didn't match the requested node name"})
	check(t, filterOutcome(NodeUnschedulable{}, st.Pod("p").Obj(), nodes), map[string]string{
		"a": "ok", "b": "unresolvable: node(s) were unschedulable"})
	tolerant := st.Pod("p").Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj()
	check(t, filterOutcome(NodeUnschedulable{}, tolerant, nodes), map[string]string{"a": "ok", "b": "ok"})
}

func TestTaintToleration(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("plain").Obj(),
		st.Node("cp").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.Node("gpu").Taint("dedicated", "gpu", v1.TaintEffectNoExecute).Obj(),
		st.Node("soft").Taint("spot", "true", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no tolerations", st.Pod("p").Obj(), map[string]string{"plain": "ok", "soft": "ok",
			"cp":  "unresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
			"gpu": "unresolvable: node(s) had untolerated taint {dedicated: gpu}"}},
		{"exists tolerates any value", st.Pod("p").Toleration("dedicated", v1.TolerationOpExists, "", "").Obj(), map[string]string{
			"plain": "ok", "soft": "ok", "gpu": "ok",
			"cp": "unresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"}},
		{"equal needs the value", st.Pod("p").Toleration("dedicated", v1.TolerationOpEqual, "tpu", v1.TaintEffectNoExecute).Obj(), map[string]string{
			"plain": "ok", "soft": "ok", "gpu": "unresolvable: node(s) had untolerated taint {dedicated: gpu}",
			"cp": "unresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"}},
		{"empty key with exists tolerates all", st.Pod("p").Toleration("", v1.TolerationOpExists, "", "").Obj(), map[string]string{
			"plain": "ok", "soft": "ok", "gpu": "ok", "cp": "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { check(t, filterOutcome(TaintToleration{}, tc.pod, nodes), tc.want) })
	}
}

func TestNodeAffinityFilter(t *testing.T) {
	nodes := []*v1.Node{st.Node("ssd").Label("disk", "ssd").Label("zone", "a").Obj(), st.Node("hdd").Label("disk", "hdd").Obj(), st.Node("none").Obj()}
	required := func(op v1.NodeSelectorOperator, values ...string) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: op, Values: values}}}}}}}
	}
	const no = "unresolvable: node(s) didn't match Pod's node affinity/selector"
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"nodeSelector", st.Pod("p").NodeSelector("disk", "ssd").Obj(), map[string]string{"ssd": "ok", "hdd": no, "none": no}},
		{"In", st.Pod("p").Affinity(required(v1.NodeSelectorOpIn, "ssd", "hdd")).Obj(), map[string]string{"ssd": "ok", "hdd": "ok", "none": no}},
		{"NotIn", st.Pod("p").Affinity(required(v1.NodeSelectorOpNotIn, "ssd")).Obj(), map[string]string{"ssd": no, "hdd": "ok", "none": "ok"}},
		{"DoesNotExist", st.Pod("p").Affinity(required(v1.NodeSelectorOpDoesNotExist)).Obj(), map[string]string{"ssd": no, "hdd": no, "none": "ok"}},
		{"matchFields names nodes", st.Pod("p").Affinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"hdd"}}}}}}}}).Obj(),
			map[string]string{"ssd": "unresolvable: node(s) didn't satisfy plugin(s) [NodeAffinity]", "hdd": "ok", "none": "unresolvable: node(s) didn't satisfy plugin(s) [NodeAffinity]"}},
		{"selector and affinity both apply", st.Pod("p").NodeSelector("zone", "a").Affinity(required(v1.NodeSelectorOpIn, "hdd")).Obj(),
			map[string]string{"ssd": no, "hdd": no, "none": no}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { check(t, filterOutcome(NodeAffinity{}, tc.pod, nodes), tc.want) })
	}
}

func TestNodePorts(t *testing.T) {
	nodes := []*v1.Node{st.Node("n").Obj()}
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"same port", st.Pod("x").Node("n").HostPort(8080, "", "").Obj(), st.Pod("p").HostPort(8080, v1.ProtocolTCP, "").Obj(),
			"unschedulable: node(s) didn't have free ports for the requested pod ports"},
		{"other protocol", st.Pod("x").Node("n").HostPort(8080, "", "").Obj(), st.Pod("p").HostPort(8080, v1.ProtocolUDP, "").Obj(), "ok"},
		{"specific address against all", st.Pod("x").Node("n").HostPort(8080, "", "").Obj(), st.Pod("p").HostPort(8080, "", "127.0.0.1").Obj(),
			"unschedulable: node(s) didn't have free ports for the requested pod ports"},
		{"two specific addresses", st.Pod("x").Node("n").HostPort(8080, "", "10.0.0.1").Obj(), st.Pod("p").HostPort(8080, "", "127.0.0.1").Obj(), "ok"},
		{"other port", st.Pod("x").Node("n").HostPort(8080, "", "").Obj(), st.Pod("p").HostPort(8081, "", "").Obj(), "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, filterOutcome(NodePorts{}, tc.pod, nodes, tc.existing), map[string]string{"n": tc.want})
		})
	}
}

// TestDefaultFilterOrder checks that the first failing filter, in
// upstream's order, names the node's reason.
func TestDefaultFilterOrder(t *testing.T) {
	nodes := []*v1.Node{st.Node("n").CPU("1").Taint("k", "v", v1.TaintEffectNoSchedule).Obj()}
	st2, _ := NewDefault().Evaluate(st.Pod("p").Req("cpu", "2").Obj(), fw.NewSnapshot(nodes, nil))
	check(t, verdicts(st2, nodes), map[string]string{"n": "unresolvable: node(s) had untolerated taint {k: v}"})
}
