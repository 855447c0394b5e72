// Package quota counts what a namespace's objects use of a ResourceQuota,
// as upstream's quota evaluators: the quota controller recounts a
// namespace from it, and the apiserver's admission adds what a new object
// would use.
package quota

import (
	"strings"

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
	// Counts are the objects of other resources, by their
	// count/<resource>.<group> name (those CountedHere does not count).
	Counts map[corev1.ResourceName]int
}

// countedHere are the object counts Usage takes from Objects' own fields.
var countedHere = map[corev1.ResourceName]bool{"count/pods": true, "count/services": true, "count/configmaps": true,
	"count/secrets": true, "count/replicationcontrollers": true, "count/resourcequotas": true, "count/persistentvolumeclaims": true}

// CountedHere reports whether Usage counts name (a count/<resource>.<group>
// name) from Objects' own fields; others come from Objects.Counts.
func CountedHere(name corev1.ResourceName) bool { return countedHere[name] }

// Parts of the names of the other resources: a storage class's claims
// (<class>.storageclass.storage.k8s.io/persistentvolumeclaims), requests
// of extended resources (requests.example.com/dongle), object counts.
const (
	storageClassInfix = ".storageclass.storage.k8s.io/"
	requestsPrefix    = "requests."
	countPrefix       = "count/"
)

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
		default:
			if q, ok := otherUsage(name, active, o); ok {
				used[name] = q
			}
		}
	}
	return used
}

// otherUsage is the usage of what the switch of Usage does not name: the
// requests of extended resources and huge pages (requests.<name>), a
// storage class's claims and their storage, and the objects counted in
// o.Counts. ok is false for a name nothing counts.
func otherUsage(name corev1.ResourceName, active []*corev1.Pod, o Objects) (q resource.Quantity, ok bool) {
	s := string(name)
	if class, what, found := strings.Cut(s, storageClassInfix); found {
		var claims []*corev1.PersistentVolumeClaim
		for _, c := range o.Claims {
			if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == class {
				claims = append(claims, c)
			}
		}
		switch corev1.ResourceName(what) {
		case corev1.ResourcePersistentVolumeClaims:
			return *resource.NewQuantity(int64(len(claims)), resource.DecimalSI), true
		case corev1.ResourceRequestsStorage:
			return claimStorage(claims), true
		}
		return q, false
	}
	if rest, found := strings.CutPrefix(s, requestsPrefix); found && (IsExtendedResourceName(rest) || strings.HasPrefix(rest, corev1.ResourceHugePagesPrefix)) {
		return podTotal(active, corev1.ResourceName(rest), false), true
	}
	if strings.HasPrefix(s, countPrefix) {
		if n, counted := o.Counts[name]; counted {
			return *resource.NewQuantity(int64(n), resource.DecimalSI), true
		}
	}
	return q, false
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

// IsExtendedResourceName is upstream's: a name with a domain
// outside kubernetes.io.
func IsExtendedResourceName(name string) bool {
	return strings.Contains(name, "/") && !strings.Contains(name, "kubernetes.io/") && !strings.HasPrefix(name, requestsPrefix)
}
