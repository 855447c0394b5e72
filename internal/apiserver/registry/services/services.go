// Package services is the registry entry for core/v1 services.
//
// Defaults follow upstream (type ClusterIP, session affinity None, TCP ports,
// traffic policies); the IP family fields follow the cluster's service CIDRs
// (InitIPFamilies, which the handler calls). Cluster IPs and node ports are
// allocated by the handler, not here: this package only checks values that
// are set, and on update carries forward the values a client left out and
// drops those the new type no longer uses, as upstream does.
package services

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the services entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "services",
		Kind:             "Service",
		SingularName:     "service",
		Namespaced:       true,
		ShortNames:       []string{"svc"},
		Categories:       []string{"all"},
		New:              func() runtime.Object { return &corev1.Service{} },
		NewList:          func() runtime.Object { return &corev1.ServiceList{} },
		HasStatus:        true,
		Default:          func(obj runtime.Object) { Default(obj.(*corev1.Service)) },
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: func(obj, old runtime.Object) { prepareForUpdate(obj.(*corev1.Service), old.(*corev1.Service)) },
		Validate:         func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Service)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*corev1.Service), old.(*corev1.Service))
		},
		NameValidation: registry.NameLabel1035,
		Columns:        columns,
		Row:            row,
		SelectableFields: func(obj runtime.Object) fields.Set {
			svc := obj.(*corev1.Service)
			return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
		},
	}
}

// prepareForCreate drops the status and completes clusterIPs.
func prepareForCreate(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	svc.Status = corev1.ServiceStatus{}
	normalizeClusterIPs(svc, nil)
}

// Default applies upstream's service defaults. The IP family fields are
// not defaulted here: their defaults depend on the cluster's service CIDRs
// and, on an update, on the stored service (see InitIPFamilies).
func Default(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			yes := true
			spec.AllocateLoadBalancerNodePorts = &yes
		}
		vip := corev1.LoadBalancerIPModeVIP
		for i := range svc.Status.LoadBalancer.Ingress {
			if ing := &svc.Status.LoadBalancer.Ingress[i]; ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = &vip
			}
		}
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
}

// normalizeClusterIPs fills clusterIPs from clusterIP for clients that set
// only the older field, as upstream: on a create, and on an update that
// changed clusterIP alone (an update that left clusterIPs out keeps the
// stored ones, the second too).
func normalizeClusterIPs(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old == nil {
		if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
		return
	}
	if len(spec.ClusterIPs) == 0 && spec.ClusterIP == old.Spec.ClusterIP {
		spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if spec.ClusterIP != old.Spec.ClusterIP && slices.Equal(spec.ClusterIPs, old.Spec.ClusterIPs) {
		if spec.ClusterIP == "" {
			spec.ClusterIPs = nil
		} else {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
	}
}

// prepareForUpdate keeps allocated values a client did not send (so that
// `kubectl apply` and `replace` work) and drops values the new type does
// not use when the client did not change them.
func prepareForUpdate(svc, old *corev1.Service) {
	normalizeClusterIPs(svc, old)
	patchAllocatedValues(svc, old)
	dropTypeDependentFields(svc, old)
}

func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = old.Spec.IPFamilies
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			inNew[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !inNew[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

func dropTypeDependentFields(svc, old *corev1.Service) {
	s, o := &svc.Spec, &old.Spec
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if s.ClusterIP == o.ClusterIP && slices.Equal(s.ClusterIPs, o.ClusterIPs) {
			s.ClusterIP, s.ClusterIPs = "", nil
		}
		if slices.Equal(s.IPFamilies, o.IPFamilies) {
			s.IPFamilies = nil
		}
		if equalPolicy(s.IPFamilyPolicy, o.IPFamilyPolicy) {
			s.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && sameNodePorts(s.Ports, o.Ports) {
		for i := range s.Ports {
			s.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && s.HealthCheckNodePort == o.HealthCheckNodePort {
		s.HealthCheckNodePort = 0
	}
	if o.Type == corev1.ServiceTypeLoadBalancer && s.Type != corev1.ServiceTypeLoadBalancer {
		if s.AllocateLoadBalancerNodePorts != nil && o.AllocateLoadBalancerNodePorts != nil && *s.AllocateLoadBalancerNodePorts == *o.AllocateLoadBalancerNodePorts {
			s.AllocateLoadBalancerNodePorts = nil
		}
		if equalStringPtr(s.LoadBalancerClass, o.LoadBalancerClass) {
			s.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && s.ExternalTrafficPolicy == o.ExternalTrafficPolicy {
		s.ExternalTrafficPolicy = ""
	}
}

// externallyAccessible is true for services reachable from outside the
// cluster: node ports, load balancers and cluster IPs with external IPs.
func externallyAccessible(svc *corev1.Service) bool {
	t := svc.Spec.Type
	return t == corev1.ServiceTypeLoadBalancer || t == corev1.ServiceTypeNodePort ||
		(t == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName
}

func needsNodePort(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func sameNodePorts(a, b []corev1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].NodePort != b[i].NodePort {
			return false
		}
	}
	return true
}

func equalPolicy(a, b *corev1.IPFamilyPolicy) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func equalStringPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
