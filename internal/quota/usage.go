// Package quota counts what a namespace's objects use of a ResourceQuota,
// as upstream's quota evaluators: the quota controller recounts a
// namespace from it, and the apiserver's admission adds what a new object
// would use.
package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Objects is what a namespace holds, as usage is counted from it.
type Objects struct {
	Pods        []*corev1.Pod
	Services    []*corev1.Service
	ConfigMaps  int
	Secrets     int
	Claims      []*corev1.PersistentVolumeClaim
	Controllers int
	Quotas      int
}

// Usage computes status.used for the resources named in hard, as upstream's
// evaluators count them: pods that have not finished, their container
// requests and limits (the larger of the sum of app containers and any init
// container, plus overhead), services by type, claims and their storage.
func Usage(hard corev1.ResourceList, o Objects) corev1.ResourceList {
	used := corev1.ResourceList{}
	var active []*corev1.Pod
	for _, p := range o.Pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			active = append(active, p)
		}
	}
	count := func(n int) resource.Quantity { return *resource.NewQuantity(int64(n), resource.DecimalSI) }
	for name := range hard {
		switch name {
		case corev1.ResourcePods, "count/pods":
			used[name] = count(len(active))
		case corev1.ResourceServices, "count/services":
			used[name] = count(len(o.Services))
		case corev1.ResourceServicesNodePorts:
			used[name] = count(nodePorts(o.Services))
		case corev1.ResourceServicesLoadBalancers:
			used[name] = count(servicesOfType(o.Services, corev1.ServiceTypeLoadBalancer))
		case corev1.ResourceConfigMaps, "count/configmaps":
			used[name] = count(o.ConfigMaps)
		case corev1.ResourceSecrets, "count/secrets":
			used[name] = count(o.Secrets)
		case corev1.ResourceReplicationControllers, "count/replicationcontrollers":
			used[name] = count(o.Controllers)
		case corev1.ResourceQuotas, "count/resourcequotas":
			used[name] = count(o.Quotas)
		case corev1.ResourcePersistentVolumeClaims, "count/persistentvolumeclaims":
			used[name] = count(len(o.Claims))
		case corev1.ResourceRequestsStorage:
			used[name] = claimStorage(o.Claims)
		case corev1.ResourceCPU, corev1.ResourceRequestsCPU:
			used[name] = podTotal(active, corev1.ResourceCPU, false)
		case corev1.ResourceMemory, corev1.ResourceRequestsMemory:
			used[name] = podTotal(active, corev1.ResourceMemory, false)
		case corev1.ResourceRequestsEphemeralStorage, corev1.ResourceEphemeralStorage:
			used[name] = podTotal(active, corev1.ResourceEphemeralStorage, false)
		case corev1.ResourceLimitsCPU:
			used[name] = podTotal(active, corev1.ResourceCPU, true)
		case corev1.ResourceLimitsMemory:
			used[name] = podTotal(active, corev1.ResourceMemory, true)
		case corev1.ResourceLimitsEphemeralStorage:
			used[name] = podTotal(active, corev1.ResourceEphemeralStorage, true)
		}
	}
	return used
}

func podTotal(pods []*corev1.Pod, name corev1.ResourceName, limits bool) resource.Quantity {
	total := resource.Quantity{Format: resource.DecimalSI}
	if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		total.Format = resource.BinarySI
	}
	for _, p := range pods {
		q := podResource(p, name, limits)
		total.Add(q)
	}
	return total
}

// podResource is max(sum of containers, largest init container) + overhead.
func podResource(p *corev1.Pod, name corev1.ResourceName, limits bool) resource.Quantity {
	get := func(r corev1.ResourceRequirements) resource.Quantity {
		list := r.Requests
		if limits {
			list = r.Limits
		}
		return list[name]
	}
	var sum resource.Quantity
	for _, c := range p.Spec.Containers {
		sum.Add(get(c.Resources))
	}
	for _, c := range p.Spec.InitContainers {
		if q := get(c.Resources); q.Cmp(sum) > 0 {
			sum = q
		}
	}
	if o, ok := p.Spec.Overhead[name]; ok {
		sum.Add(o)
	}
	return sum
}

func nodePorts(services []*corev1.Service) int {
	n := 0
	for _, s := range services {
		if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 {
					n++
				}
			}
		}
	}
	return n
}

func servicesOfType(services []*corev1.Service, t corev1.ServiceType) int {
	n := 0
	for _, s := range services {
		if s.Spec.Type == t {
			n++
		}
	}
	return n
}

func claimStorage(claims []*corev1.PersistentVolumeClaim) resource.Quantity {
	total := resource.Quantity{Format: resource.BinarySI}
	for _, c := range claims {
		total.Add(c.Spec.Resources.Requests[corev1.ResourceStorage])
	}
	return total
}
