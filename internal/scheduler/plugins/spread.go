package plugins

import (
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	fw "orch/internal/scheduler/framework"
)

// PodTopologySpread enforces DoNotSchedule topology spread constraints
// and scores ScheduleAnyway ones. Pods without constraints get upstream's
// system defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
// over the pods their Services and controllers select.
type PodTopologySpread struct{}

// Name of the plugin.
func (PodTopologySpread) Name() string { return "PodTopologySpread" }

const errSpread = "node(s) didn't match pod topology spread constraints"

type constraint struct {
	maxSkew, minDomains int32
	key                 string
	selector            labels.Selector
	honorAffinity       bool
	honorTaints         bool
}

var systemDefaults = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// constraintsOf returns the pod's constraints with the given action, or
// the system defaults when it has none.
func constraintsOf(pod *v1.Pod, action v1.UnsatisfiableConstraintAction, snap *fw.Snapshot) []constraint {
	in, defaulted := pod.Spec.TopologySpreadConstraints, false
	if len(in) == 0 {
		in, defaulted = systemDefaults, true
	}
	var def labels.Selector
	if defaulted {
		if snap.Selectors == nil {
			return nil
		}
		if def = snap.Selectors(pod); def == nil || def.Empty() {
			return nil
		}
	}
	var out []constraint
	for _, c := range in {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel := def
		if !defaulted {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
				continue
			}
			sel = fw.MergeLabelKeys(sel, pod.Labels, c.MatchLabelKeys, selection.In)
		}
		out = append(out, constraint{maxSkew: c.MaxSkew, minDomains: 1, key: c.TopologyKey, selector: sel,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor})
		if c.MinDomains != nil {
			out[len(out)-1].minDomains = *c.MinDomains
		}
	}
	return out
}

// counts tells whether a node takes part in constraint c for pod.
func (c *constraint) counts(pod *v1.Pod, node *v1.Node, req nodeaffinity.RequiredNodeAffinity) bool {
	if c.honorAffinity {
		if ok, _ := req.Match(node); !ok {
			return false
		}
	}
	if c.honorTaints {
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, doNotSchedule, false); bad {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, cons []constraint) bool {
	for _, c := range cons {
		if _, ok := node.Labels[c.key]; !ok {
			return false
		}
	}
	return true
}

type spreadState struct {
	cons     []constraint
	perValue []map[string]int // matching pods per topology value, per constraint
	lowest   []int
	required nodeaffinity.RequiredNodeAffinity
}

func (s *spreadState) Clone() fw.StateData {
	c := *s
	c.perValue = make([]map[string]int, len(s.perValue))
	for i, m := range s.perValue {
		c.perValue[i] = make(map[string]int, len(m))
		for k, v := range m {
			c.perValue[i][k] = v
		}
	}
	c.lowest = append([]int(nil), s.lowest...)
	return &c
}

func (s *spreadState) recompute(i int) {
	low := math.MaxInt
	for _, v := range s.perValue[i] {
		low = min(low, v)
	}
	if low == math.MaxInt {
		low = 0
	}
	s.lowest[i] = low
}

// PreFilter counts, per constraint and topology value, the matching pods.
func (p PodTopologySpread) PreFilter(cs *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	cons := constraintsOf(pi.Pod, v1.DoNotSchedule, snap)
	if len(cons) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	s := &spreadState{cons: cons, perValue: make([]map[string]int, len(cons)), lowest: make([]int, len(cons)),
		required: nodeaffinity.GetRequiredNodeAffinity(pi.Pod)}
	for i := range cons {
		s.perValue[i] = map[string]int{}
	}
	counts := make([]map[string]int, len(cons))
	for i := range cons {
		counts[i] = snap.CountMatching(pi.Pod.Namespace, cons[i].selector)
	}
	for _, n := range snap.Nodes() {
		if !hasAllKeys(n.Node, cons) {
			continue
		}
		for i := range cons {
			if c := &cons[i]; c.counts(pi.Pod, n.Node, s.required) {
				s.perValue[i][n.Node.Labels[c.key]] += counts[i][n.Name()]
			}
		}
	}
	for i := range cons {
		s.recompute(i)
	}
	cs.Write(p.Name(), s)
	return nil
}

// AddPod counts a pod added during a dry run.
func (p PodTopologySpread) AddPod(cs *fw.CycleState, pi, added *fw.PodInfo, n *fw.NodeInfo) {
	p.update(cs, pi, added, n, 1)
}

// RemovePod uncounts a pod removed during a dry run.
func (p PodTopologySpread) RemovePod(cs *fw.CycleState, pi, removed *fw.PodInfo, n *fw.NodeInfo) {
	p.update(cs, pi, removed, n, -1)
}

func (p PodTopologySpread) update(cs *fw.CycleState, pi, other *fw.PodInfo, n *fw.NodeInfo, delta int) {
	s, _ := cs.Read(p.Name()).(*spreadState)
	if s == nil || other.Pod.Namespace != pi.Pod.Namespace || !hasAllKeys(n.Node, s.cons) {
		return
	}
	for i := range s.cons {
		c := &s.cons[i]
		if c.selector.Matches(labels.Set(other.Pod.Labels)) && c.counts(pi.Pod, n.Node, s.required) {
			s.perValue[i][n.Node.Labels[c.key]] += delta
			s.recompute(i)
		}
	}
}

// Filter checks that placing the pod keeps every skew within maxSkew.
func (p PodTopologySpread) Filter(cs *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	s, _ := cs.Read(p.Name()).(*spreadState)
	if s == nil {
		return nil
	}
	for i, c := range s.cons {
		value, ok := n.Node.Labels[c.key]
		if !ok {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, errSpread+" (missing required label)")
		}
		low := s.lowest[i]
		if len(s.perValue[i]) < int(c.minDomains) {
			low = 0
		}
		self := 0
		if c.selector.Matches(labels.Set(pi.Pod.Labels)) {
			self = 1
		}
		if s.perValue[i][value]+self-low > int(c.maxSkew) {
			return fw.NewStatus(fw.Unschedulable, errSpread)
		}
	}
	return nil
}
