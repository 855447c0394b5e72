package services

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/cidr"
)

// maxClientIPAffinitySeconds is the longest ClientIP session affinity (a day).
const maxClientIPAffinitySeconds = 86400

var (
	supportedTypes        = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	supportedProtocols    = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	supportedAffinity     = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	supportedTraffic      = []string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}
	supportedFamilyPolicy = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}
	supportedFamilies     = []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}
	supportedDistribution = []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameNode, corev1.ServiceTrafficDistributionPreferSameZone}
)

func validate(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	var errs field.ErrorList

	if !contains(supportedTypes, string(spec.Type)) {
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, supportedTypes))
	}
	headless := spec.ClusterIP == corev1.ClusterIPNone
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		errs = append(errs, validateExternalName(spec, specPath)...)
	} else {
		errs = append(errs, validateClusterIPs(spec, specPath)...)
	}
	errs = append(errs, validatePorts(svc, specPath.Child("ports"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)

	if !contains(supportedAffinity, string(spec.SessionAffinity)) {
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, supportedAffinity))
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		p := specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds")
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			errs = append(errs, field.Required(p, fmt.Sprintf("when `sessionAffinity` is %s", corev1.ServiceAffinityClientIP)))
		} else if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
			errs = append(errs, field.Invalid(p, t, fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
		}
	} else if spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig"), spec.SessionAffinityConfig,
			fmt.Sprintf("must not be set when session affinity is %s", spec.SessionAffinity)))
	}

	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if addr, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(p, ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		} else if addr.IsUnspecified() || addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() {
			errs = append(errs, field.Invalid(p, ip, "may not be unspecified, loopback or link-local"))
		}
	}
	isLB := spec.Type == corev1.ServiceTypeLoadBalancer
	if len(spec.LoadBalancerSourceRanges) > 0 && !isLB {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'"))
	}
	for i, cidr := range spec.LoadBalancerSourceRanges {
		if _, err := netip.ParsePrefix(strings.TrimSpace(cidr)); err != nil {
			errs = append(errs, field.Invalid(specPath.Child("loadBalancerSourceRanges").Index(i), cidr, "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "))
		}
	}
	if spec.LoadBalancerIP != "" && !isLB {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerIP"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.AllocateLoadBalancerNodePorts != nil && !isLB {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if isLB && spec.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(specPath.Child("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		if !isLB {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		} else {
			for _, msg := range validation.IsQualifiedName(*spec.LoadBalancerClass) {
				errs = append(errs, field.Invalid(specPath.Child("loadBalancerClass"), *spec.LoadBalancerClass, msg))
			}
		}
	}
	errs = append(errs, validateTrafficPolicies(svc, specPath)...)
	if d := spec.TrafficDistribution; d != nil && !contains(supportedDistribution, *d) {
		errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *d, supportedDistribution))
	}
	return errs
}

func validateExternalName(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ClusterIP != "" {
		errs = append(errs, field.Forbidden(specPath.Child("clusterIP"), "may not be set for ExternalName services"))
	}
	if len(spec.ClusterIPs) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
	}
	if spec.IPFamilyPolicy != nil {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
	}
	if len(spec.IPFamilies) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
	}
	// The name may end with a dot to mark it fully qualified.
	cname := strings.TrimSuffix(spec.ExternalName, ".")
	if cname == "" {
		return append(errs, field.Required(specPath.Child("externalName"), ""))
	}
	for _, msg := range content.IsDNS1123Subdomain(cname) {
		errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
	}
	return errs
}

func validateClusterIPs(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	if spec.ClusterIP == corev1.ClusterIPNone && (spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) {
		errs = append(errs, field.Invalid(ipsPath.Index(0), spec.ClusterIP, fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
	}
	if len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			if i > 0 || len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, "must be empty, 'None', or a valid IP address"))
		}
	}
	if len(spec.ClusterIPs) == 2 && cidr.FamilyOf(spec.ClusterIPs[0]) == cidr.FamilyOf(spec.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}

	if p := spec.IPFamilyPolicy; p != nil && !contains(supportedFamilyPolicy, string(*p)) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, supportedFamilyPolicy))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range spec.IPFamilies {
		p := specPath.Child("ipFamilies").Index(i)
		if !contains(supportedFamilies, string(f)) {
			errs = append(errs, field.NotSupported(p, f, supportedFamilies))
		} else if seen.Has(f) {
			errs = append(errs, field.Duplicate(p, f))
		}
		seen.Insert(f)
	}
	if len(spec.IPFamilies) > 2 {
		errs = append(errs, field.Invalid(specPath.Child("ipFamilies"), spec.IPFamilies, "may only hold up to 2 values"))
	}
	// How many values the policy allows is InitIPFamilies' to check (as
	// upstream's allocator does), since it depends on the cluster.
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone || i >= len(spec.IPFamilies) {
			continue
		}
		if _, err := netip.ParseAddr(ip); err == nil && cidr.FamilyOf(ip) != spec.IPFamilies[i] {
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", spec.IPFamilies[i], i)))
		}
	}
	return errs
}

func validatePorts(svc *corev1.Service, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	names := sets.New[string]()
	portProto := sets.New[string]()
	nodePorts := sets.New[string]()
	nodePortAllowed := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer
	for i, p := range spec.Ports {
		pp := path.Index(i)
		if len(spec.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		} else if p.Name != "" {
			for _, msg := range content.IsDNS1123Label(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), p.Port, msg))
		}
		switch {
		case p.Protocol == "":
			errs = append(errs, field.Required(pp.Child("protocol"), ""))
		case !contains(supportedProtocols, string(p.Protocol)):
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, supportedProtocols))
		}
		errs = append(errs, validateTargetPort(p.TargetPort, pp.Child("targetPort"))...)
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), *p.AppProtocol, msg))
			}
		}
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if portProto.Has(key) {
			errs = append(errs, field.Duplicate(pp, key))
		}
		portProto.Insert(key)
		if p.NodePort != 0 {
			if !nodePortAllowed {
				errs = append(errs, field.Forbidden(pp.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", spec.Type)))
			}
			for _, msg := range validation.IsValidPortNum(int(p.NodePort)) {
				errs = append(errs, field.Invalid(pp.Child("nodePort"), p.NodePort, msg))
			}
			npKey := fmt.Sprintf("%d/%s", p.NodePort, p.Protocol)
			if nodePorts.Has(npKey) {
				errs = append(errs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
			}
			nodePorts.Insert(npKey)
		}
	}
	return errs
}

func validateTargetPort(tp intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tp.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(tp.StrVal) {
			errs = append(errs, field.Invalid(path, tp.StrVal, msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortNum(tp.IntValue()) {
		errs = append(errs, field.Invalid(path, tp.IntValue(), msg))
	}
	return errs
}

func validateTrafficPolicies(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	etpPath := specPath.Child("externalTrafficPolicy")
	if !externallyAccessible(svc) {
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	} else if spec.ExternalTrafficPolicy == "" {
		errs = append(errs, field.Required(etpPath, ""))
	} else if !contains(supportedTraffic, string(spec.ExternalTrafficPolicy)) {
		errs = append(errs, field.NotSupported(etpPath, spec.ExternalTrafficPolicy, supportedTraffic))
	}
	itpPath := specPath.Child("internalTrafficPolicy")
	if spec.InternalTrafficPolicy == nil {
		if spec.Type != corev1.ServiceTypeExternalName {
			errs = append(errs, field.Required(itpPath, ""))
		}
	} else if !contains(supportedTraffic, string(*spec.InternalTrafficPolicy)) {
		errs = append(errs, field.NotSupported(itpPath, *spec.InternalTrafficPolicy, supportedTraffic))
	}
	hcPath := specPath.Child("healthCheckNodePort")
	if spec.HealthCheckNodePort != 0 {
		if !needsHealthCheckNodePort(svc) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hcPath, spec.HealthCheckNodePort, msg))
		}
	}
	return errs
}

// validateUpdate lets an update add or drop the second cluster IP and IP
// family but not change the others, unless the service is or becomes an
// ExternalName service; a headless service may change its families. That
// dropping takes ipFamilyPolicy SingleStack is InitIPFamilies' check, which
// runs before validation, as upstream's registry does.
func validateUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	errs := validateClusterIPsUpdate(&svc.Spec, &old.Spec)
	if isHeadless(&svc.Spec) == isHeadless(&old.Spec) && !isHeadless(&svc.Spec) {
		errs = append(errs, validateIPFamiliesUpdate(&svc.Spec, &old.Spec)...)
	}
	return errs
}

func validateClusterIPsUpdate(spec, old *corev1.ServiceSpec) field.ErrorList {
	if isHeadless(spec) && isHeadless(old) {
		return nil
	}
	var errs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	ips, oldIPs := spec.ClusterIPs, old.ClusterIPs
	switch {
	case len(ips) == len(oldIPs):
		for i := range oldIPs {
			if ips[i] != oldIPs[i] {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ips, "may not change once set"))
			}
		}
	case len(ips) < len(oldIPs):
		if len(ips) == 0 {
			errs = append(errs, field.Invalid(ipsPath.Index(0), ips, "primary clusterIP can not be unset"))
		} else if ips[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(ipsPath.Index(0), ips, "may not change once set"))
		}
	case len(oldIPs) > 0 && ips[0] != oldIPs[0]:
		errs = append(errs, field.Invalid(ipsPath.Index(0), ips, "may not change once set"))
	}
	return errs
}

func validateIPFamiliesUpdate(spec, old *corev1.ServiceSpec) field.ErrorList {
	var errs field.ErrorList
	familiesPath := field.NewPath("spec", "ipFamilies")
	families, oldFamilies := spec.IPFamilies, old.IPFamilies
	switch {
	case len(families) == len(oldFamilies):
		if !slices.Equal(families, oldFamilies) {
			errs = append(errs, field.Invalid(familiesPath.Index(0), families, "may not change once set"))
		}
	case len(families) < len(oldFamilies):
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(familiesPath.Index(0), families, "primary ipFamily can not be unset"))
		}
		if len(families) > 0 && families[0] != oldFamilies[0] {
			errs = append(errs, field.Invalid(familiesPath.Index(0), families, "may not change once set"))
		}
	case len(oldFamilies) > 0 && families[0] != oldFamilies[0]:
		errs = append(errs, field.Invalid(familiesPath.Index(0), families, "may not change once set"))
	}
	return errs
}

func isHeadless(spec *corev1.ServiceSpec) bool {
	return len(spec.ClusterIPs) == 1 && spec.ClusterIPs[0] == corev1.ClusterIPNone
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
