package plugins

import (
	"math"

	fw "orch/internal/scheduler/framework"
)

// hardAffinityWeight is upstream's default HardPodAffinityWeight: how much
// an existing pod's required affinity towards the incoming pod counts.
const hardAffinityWeight = 1

type affinityScoreState struct {
	scores map[string]map[string]int64 // topology key → value → score
}

func (s *affinityScoreState) Clone() fw.StateData { return s }

func (s *affinityScoreState) add(labels map[string]string, key string, delta int64) {
	value, ok := labels[key]
	if !ok {
		return
	}
	if s.scores[key] == nil {
		s.scores[key] = map[string]int64{}
	}
	s.scores[key][value] += delta
}

// PreScore sums, per topology pair, the weights of the preferred terms
// between the incoming pod and the pods already placed, both ways.
func (p InterPodAffinity) PreScore(cs *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	own := len(pi.PreferredAffinity)+len(pi.PreferredAntiAffinity) > 0
	s := &affinityScoreState{scores: map[string]map[string]int64{}}
	inNS := snap.NamespaceLabels(pi.Pod.Namespace)
	for _, n := range snap.Nodes() {
		pods := n.PodsWithAffinity
		if own {
			pods = n.Pods
		}
		nodeLabels := n.Node.Labels
		if len(nodeLabels) == 0 {
			continue
		}
		for _, other := range pods {
			otherNS := snap.NamespaceLabels(other.Pod.Namespace)
			for _, t := range pi.PreferredAffinity {
				if t.Matches(other.Pod, otherNS) {
					s.add(nodeLabels, t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range pi.PreferredAntiAffinity {
				if t.Matches(other.Pod, otherNS) {
					s.add(nodeLabels, t.TopologyKey, -int64(t.Weight))
				}
			}
			for _, t := range other.RequiredAffinity {
				if t.Matches(pi.Pod, inNS) {
					s.add(nodeLabels, t.TopologyKey, hardAffinityWeight)
				}
			}
			for _, t := range other.PreferredAffinity {
				if t.Matches(pi.Pod, inNS) {
					s.add(nodeLabels, t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range other.PreferredAntiAffinity {
				if t.Matches(pi.Pod, inNS) {
					s.add(nodeLabels, t.TopologyKey, -int64(t.Weight))
				}
			}
		}
	}
	if len(s.scores) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	cs.Write(p.Name()+"/score", s)
	return nil
}

// Score adds the scores of the node's topology pairs.
func (p InterPodAffinity) Score(cs *fw.CycleState, _ *fw.PodInfo, n *fw.NodeInfo) int64 {
	s, _ := cs.Read(p.Name() + "/score").(*affinityScoreState)
	if s == nil {
		return 0
	}
	var score int64
	for key, values := range s.scores {
		if v, ok := n.Node.Labels[key]; ok {
			score += values[v]
		}
	}
	return score
}

// NormalizeScore maps the range of scores onto 0..100.
func (p InterPodAffinity) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, _ []*fw.NodeInfo, scores []int64) {
	lowest, highest := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lowest, highest = min(lowest, s), max(highest, s)
	}
	for i, s := range scores {
		if highest > lowest {
			scores[i] = int64(float64(fw.MaxNodeScore) * float64(s-lowest) / float64(highest-lowest))
		} else {
			scores[i] = 0
		}
	}
}
