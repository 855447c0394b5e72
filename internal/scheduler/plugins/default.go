// Package plugins holds the scheduler's filter and score plugins, each a
// small stateless type over the framework's snapshot, and the default
// profile that wires them in upstream's order with upstream's weights.
package plugins

import (
	fw "orch/internal/scheduler/framework"
)

// NewDefault returns a Framework with upstream's default plugins: filters
// in upstream's order (NodeName, NodeUnschedulable, TaintToleration,
// NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions (its
// PreFilter), VolumeBinding,
// PodTopologySpread, InterPodAffinity) and scores with upstream's weights
// (TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
// PodTopologySpread 2, InterPodAffinity 2, BalancedAllocation 1,
// ImageLocality 1).
func NewDefault() *fw.Framework {
	var (
		taint    TaintToleration
		affinity NodeAffinity
		fit      Fit
		volumes  VolumeBinding
		spread   PodTopologySpread
		interpod InterPodAffinity
		balanced BalancedAllocation
		images   ImageLocality
	)
	return &fw.Framework{
		PreFilters: []fw.PreFilterPlugin{affinity, VolumeRestrictions{}, volumes, spread, interpod},
		Filters:    []fw.FilterPlugin{NodeName{}, NodeUnschedulable{}, taint, affinity, NodePorts{}, fit, volumes, spread, interpod},
		PreScores:  []fw.PreScorePlugin{affinity, spread, interpod, balanced, images},
		Scores: []fw.WeightedScore{
			{Plugin: taint, Weight: 3},
			{Plugin: affinity, Weight: 2},
			{Plugin: fit, Weight: 1},
			{Plugin: spread, Weight: 2},
			{Plugin: interpod, Weight: 2},
			{Plugin: balanced, Weight: 1},
			{Plugin: images, Weight: 1},
		},
	}
}
