package plugins

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	fw "orch/internal/scheduler/framework"
)

type spreadScoreState struct {
	cons    []constraint
	ignored map[string]bool
	// perValue counts matching pods per topology value (hostname
	// constraints count on the node itself at Score).
	perValue []map[string]int64
	weight   []float64
	perNode  []map[string]int // matching pods per node name
}

func (s *spreadScoreState) Clone() fw.StateData { return s }

// PreScore counts, over all nodes, the pods matching each ScheduleAnyway
// constraint in the topology values of the feasible nodes.
func (p PodTopologySpread) PreScore(cs *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot, feasible []*fw.NodeInfo) *fw.Status {
	cons := constraintsOf(pi.Pod, v1.ScheduleAnyway, snap)
	if len(cons) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	requireAll := len(pi.Pod.Spec.TopologySpreadConstraints) > 0
	s := &spreadScoreState{cons: cons, ignored: map[string]bool{}, perValue: make([]map[string]int64, len(cons)),
		weight: make([]float64, len(cons)), perNode: make([]map[string]int, len(cons))}
	sizes := make([]int, len(cons))
	for i := range cons {
		s.perValue[i] = map[string]int64{}
		s.perNode[i] = snap.CountMatching(pi.Pod.Namespace, cons[i].selector)
	}
	for _, n := range feasible {
		if requireAll && !hasAllKeys(n.Node, cons) {
			s.ignored[n.Name()] = true
			continue
		}
		for i, c := range cons {
			if c.key == v1.LabelHostname {
				continue
			}
			value := n.Node.Labels[c.key]
			if _, ok := s.perValue[i][value]; !ok {
				s.perValue[i][value] = 0
				sizes[i]++
			}
		}
	}
	for i, c := range cons {
		size := sizes[i]
		if c.key == v1.LabelHostname {
			size = len(feasible) - len(s.ignored)
		}
		s.weight[i] = math.Log(float64(size + 2))
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pi.Pod)
	for _, n := range snap.Nodes() {
		if requireAll && !hasAllKeys(n.Node, cons) {
			continue
		}
		for i := range cons {
			c := &cons[i]
			if !c.counts(pi.Pod, n.Node, req) {
				continue
			}
			value := n.Node.Labels[c.key]
			if _, ok := s.perValue[i][value]; ok && c.key != v1.LabelHostname {
				s.perValue[i][value] += int64(s.perNode[i][n.Name()])
			}
		}
	}
	cs.Write(p.Name()+"/score", s)
	return nil
}

// Score grows with the matching pods already in the node's domains (the
// normalization turns fewer into better).
func (p PodTopologySpread) Score(cs *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) int64 {
	s, _ := cs.Read(p.Name() + "/score").(*spreadScoreState)
	if s == nil || s.ignored[n.Name()] {
		return 0
	}
	var score float64
	for i, c := range s.cons {
		value, ok := n.Node.Labels[c.key]
		if !ok {
			continue
		}
		var count int64
		if c.key == v1.LabelHostname {
			count = int64(s.perNode[i][n.Name()])
		} else {
			count = s.perValue[i][value]
		}
		score += float64(count)*s.weight[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score))
}

// NormalizeScore maps the lowest count to 100; ignored nodes get 0.
func (p PodTopologySpread) NormalizeScore(cs *fw.CycleState, _ *fw.PodInfo, nodes []*fw.NodeInfo, scores []int64) {
	s, _ := cs.Read(p.Name() + "/score").(*spreadScoreState)
	if s == nil {
		return
	}
	lowest, highest := int64(math.MaxInt64), int64(0)
	for i, n := range nodes {
		if s.ignored[n.Name()] {
			continue
		}
		lowest, highest = min(lowest, scores[i]), max(highest, scores[i])
	}
	for i, n := range nodes {
		switch {
		case s.ignored[n.Name()]:
			scores[i] = 0
		case highest == 0:
			scores[i] = fw.MaxNodeScore
		default:
			scores[i] = fw.MaxNodeScore * (highest + lowest - scores[i]) / highest
		}
	}
}
