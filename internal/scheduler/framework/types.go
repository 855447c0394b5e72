// Package framework is the pure core of the scheduler: a Snapshot of nodes
// and the pods on them, the plugin interfaces, and the algorithm that runs
// the plugins over a snapshot (Framework.Schedule, Framework.Preempt). It
// never talks to the API; the caller keeps the snapshot up to date.
package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	v1helper "k8s.io/component-helpers/resource"
)

// Requests given to containers without any, for scoring only (as upstream).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of each resource, in the units the scheduler
// compares: millicores, bytes, pods, and plain values for scalar resources
// (extended resources, hugepages).
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
	Scalar           map[v1.ResourceName]int64
}

// NewResource sums a resource list.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.Pods += q.Value()
		default:
			if IsScalarResourceName(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
	return r
}

// add adds sign times o to r.
func (r *Resource) add(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.Pods += sign * o.Pods
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] += sign * v
	}
}

func (r Resource) clone() Resource {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// IsScalarResourceName tells extended resources, hugepages, prefixed native
// resources and attachable volumes: the ones counted as plain numbers.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) ||
		(strings.Contains(s, "/") && !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix))
}

// PodInfo is a pod with what the plugins need parsed once.
type PodInfo struct {
	Pod      *v1.Pod
	Priority int32
	// Requests is what the pod asks of a node (containers, init containers
	// and overhead as upstream sums them); NonZeroCPU and NonZeroMem give
	// containers without requests the scoring defaults.
	Requests              Resource
	NonZeroCPU            int64
	NonZeroMem            int64
	RequiredAffinity      []AffinityTerm
	RequiredAntiAffinity  []AffinityTerm
	PreferredAffinity     []WeightedAffinityTerm
	PreferredAntiAffinity []WeightedAffinityTerm
	// ParseErr is set when a selector of the pod does not parse.
	ParseErr error
}

// NewPodInfo parses a pod.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	if pod.Spec.Priority != nil {
		pi.Priority = *pod.Spec.Priority
	}
	opts := v1helper.PodResourcesOptions{UseStatusResources: true}
	reqs := v1helper.PodRequests(pod, opts)
	pi.Requests = NewResource(reqs)
	pi.Requests.Pods = 0
	nonMissing := v1.ResourceList{}
	podLevel := v1helper.IsPodLevelRequestsSet(pod)
	if _, ok := reqs[v1.ResourceCPU]; !podLevel || !ok {
		nonMissing[v1.ResourceCPU] = *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI)
	}
	if _, ok := reqs[v1.ResourceMemory]; !podLevel || !ok {
		nonMissing[v1.ResourceMemory] = *resource.NewQuantity(DefaultMemoryRequest, resource.DecimalSI)
	}
	opts.NonMissingContainerRequests = nonMissing
	non0 := v1helper.PodRequests(pod, opts)
	pi.NonZeroCPU = non0.Cpu().MilliValue()
	pi.NonZeroMem = non0.Memory().Value()
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			pi.RequiredAffinity = pi.terms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinity = pi.weighted(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			pi.RequiredAntiAffinity = pi.terms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinity = pi.weighted(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

// HasAffinity tells whether the pod has any inter-pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinity)+len(pi.RequiredAntiAffinity)+len(pi.PreferredAffinity)+len(pi.PreferredAntiAffinity) > 0
}

// AffinityTerm is a parsed PodAffinityTerm.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	NamespaceSelector labels.Selector
	Selector          labels.Selector
	TopologyKey       string
}

// WeightedAffinityTerm is a parsed WeightedPodAffinityTerm.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches tells whether pod (whose namespace has nsLabels) is selected by t.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

func (pi *PodInfo) terms(in []v1.PodAffinityTerm) []AffinityTerm {
	var out []AffinityTerm
	for i := range in {
		out = append(out, pi.term(&in[i]))
	}
	return out
}

func (pi *PodInfo) weighted(in []v1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	var out []WeightedAffinityTerm
	for i := range in {
		out = append(out, WeightedAffinityTerm{AffinityTerm: pi.term(&in[i].PodAffinityTerm), Weight: in[i].Weight})
	}
	return out
}

// term parses one term; matchLabelKeys and mismatchLabelKeys are merged
// into the selector with the pod's own values, as the apiserver does.
func (pi *PodInfo) term(in *v1.PodAffinityTerm) AffinityTerm {
	pod := pi.Pod
	t := AffinityTerm{TopologyKey: in.TopologyKey, Namespaces: sets.New[string]()}
	var err error
	if t.Selector, err = metav1.LabelSelectorAsSelector(in.LabelSelector); err != nil {
		pi.ParseErr = err
		t.Selector = labels.Nothing()
	}
	if in.LabelSelector != nil {
		t.Selector = MergeLabelKeys(t.Selector, pod.Labels, in.MatchLabelKeys, selection.In)
		t.Selector = MergeLabelKeys(t.Selector, pod.Labels, in.MismatchLabelKeys, selection.NotIn)
	}
	if t.NamespaceSelector, err = metav1.LabelSelectorAsSelector(in.NamespaceSelector); err != nil {
		pi.ParseErr = err
		t.NamespaceSelector = labels.Nothing()
	}
	if len(in.Namespaces) == 0 && in.NamespaceSelector == nil {
		t.Namespaces.Insert(pod.Namespace)
	} else {
		t.Namespaces.Insert(in.Namespaces...)
	}
	return t
}

// MergeLabelKeys adds to sel, for each key the pod has, the requirement
// "key op (pod's value)".
func MergeLabelKeys(sel labels.Selector, podLabels map[string]string, keys []string, op selection.Operator) labels.Selector {
	for _, k := range keys {
		v, ok := podLabels[k]
		if !ok {
			continue
		}
		if r, err := labels.NewRequirement(k, op, []string{v}); err == nil {
			sel = sel.Add(*r)
		}
	}
	return sel
}
