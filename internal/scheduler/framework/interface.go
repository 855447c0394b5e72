package framework

// MaxNodeScore is the highest score a score plugin gives a node.
const MaxNodeScore int64 = 100

// Plugin is anything the framework runs.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes, once per pod, what its Filter needs. It may
// return Skip (its Filter is then not run for this pod) or reject the pod
// for every node.
type PreFilterPlugin interface {
	Plugin
	PreFilter(cs *CycleState, pod *PodInfo, snap *Snapshot) *Status
}

// FilterPlugin tells whether a pod may run on a node.
type FilterPlugin interface {
	Plugin
	Filter(cs *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PreFilterExtensions keep a PreFilter's state right when preemption (or a
// nominated pod) adds or removes a pod on a node during a dry run.
type PreFilterExtensions interface {
	AddPod(cs *CycleState, pod, added *PodInfo, node *NodeInfo)
	RemovePod(cs *CycleState, pod, removed *PodInfo, node *NodeInfo)
}

// PreScorePlugin computes, once per pod, what its Score needs; Skip means
// it does not score this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(cs *CycleState, pod *PodInfo, snap *Snapshot, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks a feasible node.
type ScorePlugin interface {
	Plugin
	Score(cs *CycleState, pod *PodInfo, node *NodeInfo) int64
}

// NormalizeScorePlugin rescales the scores of all nodes to 0..MaxNodeScore.
type NormalizeScorePlugin interface {
	NormalizeScore(cs *CycleState, pod *PodInfo, nodes []*NodeInfo, scores []int64)
}

// StateData is what a plugin keeps in the CycleState.
type StateData interface {
	// Clone copies what AddPod/RemovePod may change.
	Clone() StateData
}

// CycleState carries plugin data through one scheduling cycle.
type CycleState struct {
	data map[string]StateData
	// filters and extensions are those whose PreFilter did not skip.
	filters    []FilterPlugin
	extensions []PreFilterExtensions
	skipScore  map[string]bool
	// nodeNames, when not nil, are the only nodes PreFilters allow.
	nodeNames    map[string]bool
	restrictedBy []string
}

// RestrictNodes lets a PreFilter limit the pod to the named nodes (as
// upstream's PreFilterResult); several restrictions intersect.
func (c *CycleState) RestrictNodes(plugin string, names map[string]bool) {
	c.restrictedBy = append(c.restrictedBy, plugin)
	if c.nodeNames == nil {
		c.nodeNames = names
		return
	}
	both := map[string]bool{}
	for n := range names {
		if c.nodeNames[n] {
			both[n] = true
		}
	}
	c.nodeNames = both
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[string]StateData{}, skipScore: map[string]bool{}}
}

// Write stores a plugin's data.
func (c *CycleState) Write(key string, d StateData) { c.data[key] = d }

// Read returns a plugin's data.
func (c *CycleState) Read(key string) StateData { return c.data[key] }

// Clone copies the state for a dry run.
func (c *CycleState) Clone() *CycleState {
	n := &CycleState{data: make(map[string]StateData, len(c.data)), filters: c.filters, extensions: c.extensions, skipScore: c.skipScore}
	for k, v := range c.data {
		if v != nil {
			n.data[k] = v.Clone()
		}
	}
	return n
}
