package pods

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"orch/internal/quota"
	fw "orch/internal/scheduler/framework"
)

// Upstream's predicate names and descriptions for the pods the kubelet
// rejects ("Predicate NodePorts failed: …").
const (
	predicateNodeAffinity = "NodeAffinity"
	predicateNodePorts    = "NodePorts"
	reasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	reasonNodePorts       = "node(s) didn't have free ports for the requested pod ports"
)

// rejection is why the kubelet refuses a new pod bound to node, as
// upstream's GeneralPredicates admission: the pods it admitted before
// leave too little of a resource (OutOfcpu, OutOfmemory, OutOfpods …),
// the node does not match its node selector or required node affinity,
// or a host port is taken. Only the first failure is given, as upstream's.
// A node without allocatable resources (not known) skips the resource
// checks, one without labels the selector's; extended resources the node
// does not list are not checked (upstream's cluster-level resources). "" when the pod may run.
func rejection(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) (reason, message string) {
	pi := fw.NewPodInfo(pod)
	others := make([]*fw.PodInfo, len(admitted))
	for i, p := range admitted {
		others[i] = fw.NewPodInfo(p)
	}
	n := fw.NewNodeInfo(node, others...)
	if len(node.Status.Allocatable) > 0 {
		if reason, message = insufficient(pi, n, node.Status.Allocatable); reason != "" {
			return reason, message
		}
	}
	if node.Labels != nil {
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
			return predicateNodeAffinity, predicateFailed(predicateNodeAffinity, reasonNodeAffinity)
		}
	}
	for _, hp := range fw.HostPortsOf(pod) {
		if n.UsedPorts.Conflicts(hp) {
			return predicateNodePorts, predicateFailed(predicateNodePorts, reasonNodePorts)
		}
	}
	return "", ""
}

func predicateFailed(name, desc string) string {
	return fmt.Sprintf("Predicate %s failed: %s", name, desc)
}

// insufficient is the first resource n lacks for pi, in upstream's order
// (pods, cpu, memory, ephemeral-storage, then extended resources by
// name): reason OutOf<resource> and upstream's message.
func insufficient(pi *fw.PodInfo, n *fw.NodeInfo, allocatable corev1.ResourceList) (reason, message string) {
	fail := func(name corev1.ResourceName, requested, used, capacity int64) (string, string) {
		return "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity)
	}
	if _, counted := allocatable[corev1.ResourcePods]; counted && int64(len(n.Pods))+1 > n.Allocatable.Pods {
		pods := int64(len(n.Pods))
		return fail(corev1.ResourcePods, 1, pods, n.Allocatable.Pods)
	}
	r, alloc, used := &pi.Requests, &n.Allocatable, &n.Requested
	for _, c := range []struct {
		name              corev1.ResourceName
		want, have, inUse int64
	}{
		{corev1.ResourceCPU, r.MilliCPU, alloc.MilliCPU, used.MilliCPU},
		{corev1.ResourceMemory, r.Memory, alloc.Memory, used.Memory},
		{corev1.ResourceEphemeralStorage, r.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage},
	} {
		if c.want > 0 && c.want > c.have-c.inUse {
			return fail(c.name, c.want, c.inUse, c.have)
		}
	}
	names := make([]string, 0, len(r.Scalar))
	for name := range r.Scalar {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, s := range names {
		name := corev1.ResourceName(s)
		if _, known := allocatable[name]; !known && quota.IsExtendedResourceName(s) {
			continue // as upstream: a cluster-level resource the node does not know
		}
		if want := r.Scalar[name]; want > 0 && want > alloc.Scalar[name]-used.Scalar[name] {
			return fail(name, want, used.Scalar[name], alloc.Scalar[name])
		}
	}
	return "", ""
}
