package plugins

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	fw "orch/internal/scheduler/framework"
)

// NodeName rejects nodes other than the one spec.nodeName asks for.
type NodeName struct{}

// Name of the plugin.
func (NodeName) Name() string { return "NodeName" }

// Filter checks spec.nodeName.
func (NodeName) Filter(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	if want := pi.Pod.Spec.NodeName; want != "" && want != n.Name() {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) didn't match the requested node name")
	}
	return nil
}

// NodeUnschedulable rejects cordoned nodes unless the pod tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint.
type NodeUnschedulable struct{}

// Name of the plugin.
func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

// Filter checks spec.unschedulable.
func (NodeUnschedulable) Filter(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	if !n.Node.Spec.Unschedulable {
		return nil
	}
	taint := &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(klog.Background(), pi.Pod.Spec.Tolerations, taint, false) {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) were unschedulable")
}

// TaintToleration rejects nodes with NoSchedule or NoExecute taints the
// pod does not tolerate, and prefers nodes with fewer untolerated
// PreferNoSchedule taints.
type TaintToleration struct{}

// Name of the plugin.
func (TaintToleration) Name() string { return "TaintToleration" }

func doNotSchedule(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// Filter names the first untolerated taint.
func (TaintToleration) Filter(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	taint, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Node.Spec.Taints, pi.Pod.Spec.Tolerations, doNotSchedule, false)
	if !bad {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

// Score counts untolerated PreferNoSchedule taints (fewer is better once
// normalized).
func (TaintToleration) Score(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) int64 {
	var tolerations []v1.Toleration
	for _, t := range pi.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tolerations = append(tolerations, t)
		}
	}
	var count int64
	for i := range n.Node.Spec.Taints {
		t := &n.Node.Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(klog.Background(), tolerations, t, false) {
			count++
		}
	}
	return count
}

// NormalizeScore reverses the counts onto 0..100.
func (TaintToleration) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, _ []*fw.NodeInfo, scores []int64) {
	defaultNormalize(scores, true)
}

// NodeAffinity enforces nodeSelector and required node affinity, and
// scores preferred node affinity terms.
type NodeAffinity struct{}

// Name of the plugin.
func (NodeAffinity) Name() string { return "NodeAffinity" }

type nodeAffinityState struct {
	required  nodeaffinity.RequiredNodeAffinity
	preferred *nodeaffinity.PreferredSchedulingTerms
}

func (s *nodeAffinityState) Clone() fw.StateData { return s }

// PreFilter parses the pod's selector and required terms once; terms
// that name nodes (matchFields metadata.name In, as DaemonSet pods have)
// limit the nodes filtered.
func (p NodeAffinity) PreFilter(cs *fw.CycleState, pi *fw.PodInfo, _ *fw.Snapshot) *fw.Status {
	cs.Write(p.Name(), &nodeAffinityState{required: nodeaffinity.GetRequiredNodeAffinity(pi.Pod)})
	a := pi.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var names map[string]bool
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var term map[string]bool
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			values := map[string]bool{}
			for _, v := range r.Values {
				if term == nil || term[v] {
					values[v] = true
				}
			}
			term = values
		}
		if term == nil {
			return nil // a term that names no node allows all
		}
		if names == nil {
			names = map[string]bool{}
		}
		for n := range term {
			names[n] = true
		}
	}
	switch {
	case names == nil:
	case len(names) == 0:
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, "pod affinity terms conflict")
	default:
		cs.RestrictNodes(p.Name(), names)
	}
	return nil
}

// Filter matches the node.
func (p NodeAffinity) Filter(cs *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	s, _ := cs.Read(p.Name()).(*nodeAffinityState)
	if s == nil {
		s = &nodeAffinityState{required: nodeaffinity.GetRequiredNodeAffinity(pi.Pod)}
	}
	if ok, _ := s.required.Match(n.Node); !ok {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
	}
	return nil
}

// PreScore parses the preferred terms; pods without any skip scoring.
func (p NodeAffinity) PreScore(cs *fw.CycleState, pi *fw.PodInfo, _ *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	a := pi.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return fw.NewStatus(fw.Skip)
	}
	cs.Write(p.Name()+"/score", &nodeAffinityState{preferred: terms})
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (p NodeAffinity) Score(cs *fw.CycleState, _ *fw.PodInfo, n *fw.NodeInfo) int64 {
	if s, _ := cs.Read(p.Name() + "/score").(*nodeAffinityState); s != nil && s.preferred != nil {
		return s.preferred.Score(n.Node)
	}
	return 0
}

// NormalizeScore scales onto 0..100.
func (NodeAffinity) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, _ []*fw.NodeInfo, scores []int64) {
	defaultNormalize(scores, false)
}

// NodePorts rejects nodes where a host port the pod asks for is taken.
type NodePorts struct{}

// Name of the plugin.
func (NodePorts) Name() string { return "NodePorts" }

// Filter checks each host port.
func (NodePorts) Filter(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	for _, hp := range fw.HostPortsOf(pi.Pod) {
		if n.UsedPorts.Conflicts(hp) {
			return fw.NewStatus(fw.Unschedulable, "node(s) didn't have free ports for the requested pod ports")
		}
	}
	return nil
}

// defaultNormalize scales scores so the highest is 100 (reversed: the
// lowest is 100), as upstream's DefaultNormalizeScore.
func defaultNormalize(scores []int64, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i] = fw.MaxNodeScore
			}
		}
		return
	}
	for i, s := range scores {
		s = fw.MaxNodeScore * s / highest
		if reverse {
			s = fw.MaxNodeScore - s
		}
		scores[i] = s
	}
}
