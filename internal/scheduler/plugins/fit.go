package plugins

import (
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
)

// Fit is NodeResourcesFit: the node must have room for the pod's requests
// (pods, cpu, memory, ephemeral-storage, extended resources). It scores
// with LeastAllocated over cpu and memory, weight 1 each.
type Fit struct{}

// Name of the plugin.
func (Fit) Name() string { return "NodeResourcesFit" }

// Filter rejects a node that lacks room; when the pod asks for more than
// the node has at all, preemption cannot help.
func (Fit) Filter(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	var reasons []string
	code := fw.Unschedulable
	if int64(len(n.Pods))+1 > n.Allocatable.Pods {
		reasons = append(reasons, "Too many pods")
	}
	r, alloc, used := &pi.Requests, &n.Allocatable, &n.Requested
	check := func(name string, want, have, inUse int64) {
		if want > 0 && want > have-inUse {
			reasons = append(reasons, "Insufficient "+name)
			if want > have {
				code = fw.UnschedulableAndUnresolvable
			}
		}
	}
	check("cpu", r.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check("memory", r.Memory, alloc.Memory, used.Memory)
	check("ephemeral-storage", r.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage)
	if len(r.Scalar) > 0 {
		names := make([]string, 0, len(r.Scalar))
		for name := range r.Scalar {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			rn := v1.ResourceName(name)
			check(name, r.Scalar[rn], alloc.Scalar[rn], used.Scalar[rn])
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return fw.NewStatus(code, reasons...)
}

// Score is LeastAllocated: the more cpu and memory left free (counting
// the scoring defaults for containers without requests), the higher.
func (Fit) Score(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) int64 {
	var score, weights int64
	for _, r := range [...][2]int64{
		{n.NonZeroRequested.MilliCPU + pi.NonZeroCPU, n.Allocatable.MilliCPU},
		{n.NonZeroRequested.Memory + pi.NonZeroMem, n.Allocatable.Memory},
	} {
		requested, capacity := r[0], r[1]
		if capacity == 0 {
			continue
		}
		weights++
		if requested <= capacity {
			score += (capacity - requested) * fw.MaxNodeScore / capacity
		}
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// BalancedAllocation favours nodes whose cpu and memory use stay even
// once the pod is placed (upstream's 1.37 form: half the maximum plus half
// the change in balance the pod brings). Pods without requests skip it.
type BalancedAllocation struct{}

// Name of the plugin.
func (BalancedAllocation) Name() string { return "NodeResourcesBalancedAllocation" }

// PreScore skips best-effort pods.
func (BalancedAllocation) PreScore(_ *fw.CycleState, pi *fw.PodInfo, _ *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	if pi.Requests.MilliCPU == 0 && pi.Requests.Memory == 0 {
		return fw.NewStatus(fw.Skip)
	}
	return nil
}

// Score compares the balance with and without the pod.
func (BalancedAllocation) Score(_ *fw.CycleState, pi *fw.PodInfo, n *fw.NodeInfo) int64 {
	alloc := [2]int64{n.Allocatable.MilliCPU, n.Allocatable.Memory}
	used := [2]int64{n.Requested.MilliCPU, n.Requested.Memory}
	with := [2]int64{used[0] + pi.Requests.MilliCPU, used[1] + pi.Requests.Memory}
	withPod, withoutPod := balance(with, alloc), balance(used, alloc)
	return fw.MaxNodeScore/2 + (fw.MaxNodeScore/2+withPod-withoutPod)/2
}

// balance is (1 - standard deviation of the used fractions) * 100.
func balance(requested, allocatable [2]int64) int64 {
	var fractions []float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		fractions = append(fractions, min(float64(requested[i])/float64(allocatable[i]), 1))
	}
	std := 0.0
	if len(fractions) == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * float64(fw.MaxNodeScore))
}
