package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// ErrNoNodesAvailable is returned when the snapshot has no node at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// WeightedScore is a score plugin with its weight.
type WeightedScore struct {
	Plugin ScorePlugin
	Weight int64
}

// Framework runs plugins over a snapshot. Its methods are not safe for
// concurrent use (they rotate the node a search starts from, as upstream).
type Framework struct {
	PreFilters []PreFilterPlugin
	Filters    []FilterPlugin
	PreScores  []PreScorePlugin
	Scores     []WeightedScore
	// PercentageOfNodesToScore bounds how many feasible nodes are looked
	// for before scoring; 0 is upstream's adaptive default (50% minus 1%
	// per 125 nodes, at least 5% and at least 100 nodes).
	PercentageOfNodesToScore int32
	// Rand breaks ties between the best nodes; nil uses a random source.
	Rand *rand.Rand
	// Now is the clock preemption uses for pods not started yet.
	Now func() time.Time

	nextStart int
}

// Result is where a pod goes.
type Result struct {
	Node      string
	Evaluated int
	Feasible  int
}

// Schedule picks a node for pod. When none fits, the error is a *FitError
// whose Diagnosis Preempt uses.
func (f *Framework) Schedule(pod *v1.Pod, snap *Snapshot) (Result, error) {
	nodes := snap.Nodes()
	if len(nodes) == 0 {
		return Result{}, ErrNoNodesAvailable
	}
	pi := NewPodInfo(pod)
	cs := NewCycleState()
	diag := Diagnosis{NodeToStatus: map[string]*Status{}, UnschedulablePlugins: map[string]bool{}}
	if st := f.runPreFilters(cs, pi, snap); !st.IsSuccess() {
		if !st.IsRejected() {
			return Result{}, errors.New(st.Message())
		}
		diag.PreFilterMsg = st.Message()
		for _, n := range nodes {
			diag.NodeToStatus[n.Name()] = st
		}
		diag.UnschedulablePlugins[st.Plugin] = true
		return Result{}, &FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}
	}
	candidates := nodes
	if cs.nodeNames != nil {
		candidates = nil
		for _, n := range nodes {
			if cs.nodeNames[n.Name()] {
				candidates = append(candidates, n)
			}
		}
		diag.AbsentStatus = absentStatus(cs)
	}
	// The node a preemption nominated is tried first, alone.
	if nnn := pod.Status.NominatedNodeName; nnn != "" && (cs.nodeNames == nil || cs.nodeNames[nnn]) {
		if n := snap.Get(nnn); n != nil {
			if st := f.filterWithNominated(cs, pi, n, snap); st.IsSuccess() {
				return Result{Node: nnn, Evaluated: 1, Feasible: 1}, nil
			}
		}
	}
	feasible, err := f.findFeasible(cs, pi, snap, candidates, &diag)
	if err != nil {
		return Result{}, err
	}
	evaluated := len(feasible) + len(diag.NodeToStatus)
	switch len(feasible) {
	case 0:
		return Result{}, &FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}
	case 1:
		return Result{Node: feasible[0].Name(), Evaluated: evaluated, Feasible: 1}, nil
	}
	scores := f.prioritize(cs, pi, snap, feasible)
	return Result{Node: f.selectHost(feasible, scores), Evaluated: evaluated, Feasible: len(feasible)}, nil
}

// absentStatus is the status of the nodes PreFilters ruled out.
func absentStatus(cs *CycleState) *Status {
	plugins := append([]string(nil), cs.restrictedBy...)
	sort.Strings(plugins)
	return NewStatus(UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", plugins))
}

func (f *Framework) runPreFilters(cs *CycleState, pi *PodInfo, snap *Snapshot) *Status {
	skip := map[string]bool{}
	for _, p := range f.PreFilters {
		st := p.PreFilter(cs, pi, snap)
		switch {
		case st.CodeOf() == Skip:
			skip[p.Name()] = true
		case !st.IsSuccess():
			st.Plugin = p.Name()
			return st
		}
	}
	cs.filters = cs.filters[:0]
	for _, p := range f.Filters {
		if !skip[p.Name()] {
			cs.filters = append(cs.filters, p)
		}
	}
	for _, p := range f.PreFilters {
		if e, ok := p.(PreFilterExtensions); ok && !skip[p.Name()] {
			cs.extensions = append(cs.extensions, e)
		}
	}
	return nil
}

// numFeasibleNodesToFind is upstream's adaptive bound.
func (f *Framework) numFeasibleNodesToFind(all int) int {
	const minNodes, minPercent = 100, 5
	if all < minNodes {
		return all
	}
	pct := int(f.PercentageOfNodesToScore)
	if pct == 0 {
		pct = max(50-all/125, minPercent)
	}
	return max(all*pct/100, minNodes)
}

func (f *Framework) findFeasible(cs *CycleState, pi *PodInfo, snap *Snapshot, nodes []*NodeInfo, diag *Diagnosis) ([]*NodeInfo, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	want := f.numFeasibleNodesToFind(len(nodes))
	if len(f.Scores) == 0 {
		want = 1
	}
	feasible := make([]*NodeInfo, 0, want)
	start := f.nextStart % len(nodes)
	processed := 0
	for i := range nodes {
		if len(feasible) >= want {
			break
		}
		n := nodes[(start+i)%len(nodes)]
		processed++
		st := f.filterWithNominated(cs, pi, n, snap)
		switch {
		case st.IsSuccess():
			feasible = append(feasible, n)
		case st.Code == Error:
			return nil, errors.New(st.Message())
		default:
			diag.set(n.Name(), st)
		}
	}
	f.nextStart = (start + processed) % len(nodes)
	return feasible, nil
}

// runFilters runs every filter (but those whose PreFilter skipped) on one
// node and returns the first failure.
func (f *Framework) runFilters(cs *CycleState, pi *PodInfo, n *NodeInfo) *Status {
	for _, p := range cs.filters {
		if st := p.Filter(cs, pi, n); !st.IsSuccess() {
			st.Plugin = p.Name()
			return st
		}
	}
	return nil
}

// filterWithNominated runs the filters as upstream does when pods are
// nominated to the node: once as if the nominated pods of equal or higher
// priority were already there, then without them.
func (f *Framework) filterWithNominated(cs *CycleState, pi *PodInfo, n *NodeInfo, snap *Snapshot) *Status {
	var nominated []*PodInfo
	for _, np := range snap.NominatedPods(n.Name()) {
		if np.Priority >= pi.Priority && np.Pod.UID != pi.Pod.UID {
			nominated = append(nominated, np)
		}
	}
	if len(nominated) > 0 {
		cs2, n2 := cs.Clone(), n.Clone()
		for _, np := range nominated {
			n2.AddPod(np)
			f.addPod(cs2, pi, np, n2)
		}
		if st := f.runFilters(cs2, pi, n2); !st.IsSuccess() {
			return st
		}
	}
	return f.runFilters(cs, pi, n)
}

func (f *Framework) addPod(cs *CycleState, pi, added *PodInfo, n *NodeInfo) {
	for _, e := range cs.extensions {
		e.AddPod(cs, pi, added, n)
	}
}

func (f *Framework) removePod(cs *CycleState, pi, removed *PodInfo, n *NodeInfo) {
	for _, e := range cs.extensions {
		e.RemovePod(cs, pi, removed, n)
	}
}

// prioritize sums the weighted, normalized scores of each feasible node.
func (f *Framework) prioritize(cs *CycleState, pi *PodInfo, snap *Snapshot, nodes []*NodeInfo) []int64 {
	for _, p := range f.PreScores {
		if st := p.PreScore(cs, pi, snap, nodes); st.CodeOf() == Skip {
			cs.skipScore[p.Name()] = true
		}
	}
	total := make([]int64, len(nodes))
	scores := make([]int64, len(nodes))
	for _, w := range f.Scores {
		if cs.skipScore[w.Plugin.Name()] {
			continue
		}
		for i, n := range nodes {
			scores[i] = w.Plugin.Score(cs, pi, n)
		}
		if norm, ok := w.Plugin.(NormalizeScorePlugin); ok {
			norm.NormalizeScore(cs, pi, nodes, scores)
		}
		for i := range nodes {
			total[i] += scores[i] * w.Weight
		}
	}
	return total
}

// selectHost takes the highest score, breaking ties at random.
func (f *Framework) selectHost(nodes []*NodeInfo, scores []int64) string {
	best, ties := 0, 1
	for i := 1; i < len(nodes); i++ {
		switch {
		case scores[i] > scores[best]:
			best, ties = i, 1
		case scores[i] == scores[best]:
			ties++
			if f.intN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best].Name()
}

func (f *Framework) intN(n int) int {
	if f.Rand != nil {
		return f.Rand.IntN(n)
	}
	return rand.IntN(n)
}

// Evaluate runs the filters on every node and scores the nodes that pass
// (each score weighted and normalized, summed over the score plugins): the
// whole decision laid out, for tests and tools. A PreFilter rejection
// gives every node that status.
func (f *Framework) Evaluate(pod *v1.Pod, snap *Snapshot) (map[string]*Status, map[string]int64) {
	pi, cs := NewPodInfo(pod), NewCycleState()
	statuses := map[string]*Status{}
	if st := f.runPreFilters(cs, pi, snap); !st.IsSuccess() {
		for _, n := range snap.Nodes() {
			statuses[n.Name()] = st
		}
		return statuses, nil
	}
	var feasible []*NodeInfo
	for _, n := range snap.Nodes() {
		if cs.nodeNames != nil && !cs.nodeNames[n.Name()] {
			statuses[n.Name()] = absentStatus(cs)
		} else if st := f.filterWithNominated(cs, pi, n, snap); st.IsSuccess() {
			feasible = append(feasible, n)
		} else {
			statuses[n.Name()] = st
		}
	}
	scores := map[string]int64{}
	for i, s := range f.prioritize(cs, pi, snap, feasible) {
		scores[feasible[i].Name()] = s
	}
	return statuses, scores
}
