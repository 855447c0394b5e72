package plugins

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "orch/internal/scheduler/framework"
)

// InterPodAffinity enforces required pod affinity and anti-affinity (the
// pod's own and that of the pods already placed) and scores the preferred
// terms of both sides (and existing pods' required affinity, weight 1).
type InterPodAffinity struct{}

// Name of the plugin.
func (InterPodAffinity) Name() string { return "InterPodAffinity" }

const (
	errExistingAnti = "node(s) didn't satisfy existing pods anti-affinity rules"
	errAffinity     = "node(s) didn't match pod affinity rules"
	errAnti         = "node(s) didn't match pod anti-affinity rules"
)

type topoPair struct{ key, value string }

type pairCounts map[topoPair]int64

func (m pairCounts) add(node *v1.Node, key string, delta int64) {
	if value, ok := node.Labels[key]; ok {
		p := topoPair{key, value}
		if m[p] += delta; m[p] == 0 {
			delete(m, p)
		}
	}
}

func (m pairCounts) clone() pairCounts {
	c := make(pairCounts, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

type affinityState struct {
	snap *fw.Snapshot
	// existingAnti counts, per topology pair, the terms of placed pods'
	// required anti-affinity that select the incoming pod.
	existingAnti pairCounts
	// affinity counts placed pods matching all the pod's affinity terms;
	// anti counts placed pods matching each of its anti-affinity terms.
	affinity, anti pairCounts
}

func (s *affinityState) Clone() fw.StateData {
	return &affinityState{snap: s.snap, existingAnti: s.existingAnti.clone(), affinity: s.affinity.clone(), anti: s.anti.clone()}
}

// matchesAll tells whether pod matches every term (and there is one).
func matchesAll(terms []fw.AffinityTerm, pod *v1.Pod, ns labels.Set) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, ns) {
			return false
		}
	}
	return true
}

// PreFilter counts the topology pairs the filter checks.
func (p InterPodAffinity) PreFilter(cs *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	if pi.ParseErr != nil {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, "parsing pod: "+pi.ParseErr.Error())
	}
	s := &affinityState{snap: snap, existingAnti: pairCounts{}, affinity: pairCounts{}, anti: pairCounts{}}
	mine := len(pi.RequiredAffinity)+len(pi.RequiredAntiAffinity) > 0
	for _, n := range snap.Nodes() {
		for _, other := range n.PodsWithRequiredAntiAffinity {
			s.countExistingAnti(other, pi, n, 1)
		}
		if mine {
			for _, other := range n.Pods {
				s.countIncoming(pi, other, n, 1)
			}
		}
	}
	if len(s.existingAnti) == 0 && !mine {
		return fw.NewStatus(fw.Skip)
	}
	cs.Write(p.Name(), s)
	return nil
}

func (s *affinityState) countExistingAnti(other, pi *fw.PodInfo, n *fw.NodeInfo, delta int64) {
	ns := s.snap.NamespaceLabels(pi.Pod.Namespace)
	for i := range other.RequiredAntiAffinity {
		if t := &other.RequiredAntiAffinity[i]; t.Matches(pi.Pod, ns) {
			s.existingAnti.add(n.Node, t.TopologyKey, delta)
		}
	}
}

func (s *affinityState) countIncoming(pi, other *fw.PodInfo, n *fw.NodeInfo, delta int64) {
	ns := s.snap.NamespaceLabels(other.Pod.Namespace)
	if matchesAll(pi.RequiredAffinity, other.Pod, ns) {
		for _, t := range pi.RequiredAffinity {
			s.affinity.add(n.Node, t.TopologyKey, delta)
		}
	}
	for i := range pi.RequiredAntiAffinity {
		if t := &pi.RequiredAntiAffinity[i]; t.Matches(other.Pod, ns) {
			s.anti.add(n.Node, t.TopologyKey, delta)
		}
	}
}

// AddPod counts a pod added during a dry run.
func (p InterPodAffinity) AddPod(cs *fw.CycleState, pi, added *fw.PodInfo, n *fw.NodeInfo) {
	if s, _ := cs.Read(p.Name()).(*affinityState); s != nil {
		s.countExistingAnti(added, pi, n, 1)
		s.countIncoming(pi, added, n, 1)
	}
}

// RemovePod uncounts a pod removed during a dry run.
func (p InterPodAffinity) RemovePod(cs *fw.CycleState, pi, removed *fw.PodInfo, n *fw.NodeInfo) {
	if s, _ := cs.Read(p.Name()).(*affinityState); s != nil {
		s.countExistingAnti(removed, pi, n, -1)
		s.countIncoming(pi, removed, n, -1)
	}
}

// Filter applies, in upstream's order, the pod's affinity, its
// anti-affinity, then the anti-affinity of the pods already placed.
func (p InterPodAffinity) Filter(cs *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	s, _ := cs.Read(p.Name()).(*affinityState)
	if s == nil {
		return nil
	}
	node := n.Node
	if len(pi.RequiredAffinity) > 0 {
		exist := true
		for _, t := range pi.RequiredAffinity {
			value, ok := node.Labels[t.TopologyKey]
			if !ok {
				return fw.NewStatus(fw.UnschedulableAndUnresolvable, errAffinity)
			}
			if s.affinity[topoPair{t.TopologyKey, value}] <= 0 {
				exist = false
			}
		}
		// The first pod of a group that selects itself may go anywhere.
		if !exist && !(len(s.affinity) == 0 && matchesAll(pi.RequiredAffinity, pi.Pod, s.snap.NamespaceLabels(pi.Pod.Namespace))) {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, errAffinity)
		}
	}
	if len(s.anti) > 0 {
		for _, t := range pi.RequiredAntiAffinity {
			if value, ok := node.Labels[t.TopologyKey]; ok && s.anti[topoPair{t.TopologyKey, value}] > 0 {
				return fw.NewStatus(fw.Unschedulable, errAnti)
			}
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range node.Labels {
			if s.existingAnti[topoPair{k, v}] > 0 {
				return fw.NewStatus(fw.Unschedulable, errExistingAnti)
			}
		}
	}
	return nil
}
