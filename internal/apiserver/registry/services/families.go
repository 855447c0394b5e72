package services

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/cidr"
)

// InitIPFamilies settles spec.ipFamilyPolicy and spec.ipFamilies of svc
// (old is the stored service on an update, nil on a create) by upstream's
// rules, for a cluster whose service CIDRs have the families in cluster,
// primary first. It reserves nothing: svc may leave with fewer clusterIPs
// than ipFamilies, and the caller allocates the missing ones in ipFamilies
// order. On an update that sets ipFamilyPolicy to SingleStack and keeps the
// dual-stack clusterIPs and ipFamilies, it drops their second values, as
// upstream reads that as the intent to downgrade.
func InitIPFamilies(svc, old *corev1.Service, cluster []corev1.IPFamily) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName || keepsPreferDualStack(svc, old) {
		return nil
	}
	if spec.IPFamilyPolicy == nil {
		spec.IPFamilyPolicy = ptr.To(defaultIPFamilyPolicy(svc, old))
	}
	// Loose validation first, so that what follows sees well-formed IPs.
	if errs := validateClusterIPs(spec, field.NewPath("spec")); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, downgrade(svc, old)...)
	}
	errs = append(errs, singleStackErrors(spec)...)
	errs = append(errs, inferIPFamilies(spec, cluster)...)
	if len(errs) > 0 {
		return errs
	}
	if headlessWithoutSelector(spec) {
		// They have no cluster IP: their families only choose which pod
		// addresses DNS returns, so they may name a family the cluster's
		// service CIDRs lack.
		defaultFamilies(spec, cluster[:1], true)
		return nil
	}
	if errs := clusterFamilyErrors(spec, cluster); len(errs) > 0 {
		return errs
	}
	defaultFamilies(spec, cluster, len(cluster) == 2)
	return nil
}

// keepsPreferDualStack is true for an update of a PreferDualStack service
// that keeps its type, cluster IPs and families: such a service is neither
// upgraded nor downgraded because the cluster gained or lost a family.
func keepsPreferDualStack(svc, old *corev1.Service) bool {
	if old == nil || svc.Spec.IPFamilyPolicy == nil || old.Spec.Type != svc.Spec.Type {
		return false
	}
	prefer := func(p *corev1.IPFamilyPolicy) bool { return p == nil || *p == corev1.IPFamilyPolicyPreferDualStack }
	return svc.Spec.Type != corev1.ServiceTypeExternalName &&
		*svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyPreferDualStack && prefer(old.Spec.IPFamilyPolicy) &&
		slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) && slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies)
}

// defaultIPFamilyPolicy is the policy of a service that names none: the
// stored one on an update (so that a write never changes how many stacks a
// service has unless it says so), RequireDualStack for a headless service
// without a selector, SingleStack otherwise.
func defaultIPFamilyPolicy(svc, old *corev1.Service) corev1.IPFamilyPolicy {
	switch {
	case old != nil && old.Spec.IPFamilyPolicy != nil:
		return *old.Spec.IPFamilyPolicy
	case headlessWithoutSelector(&svc.Spec):
		return corev1.IPFamilyPolicyRequireDualStack
	}
	return corev1.IPFamilyPolicySingleStack
}

// downgrade drops the second cluster IP and family of an update to
// SingleStack that left them as they were, and refuses an update that
// drops them without saying SingleStack.
func downgrade(svc, old *corev1.Service) field.ErrorList {
	spec, policyPath := &svc.Spec, field.NewPath("spec", "ipFamilyPolicy")
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) > 1 && slices.Equal(spec.ClusterIPs, old.Spec.ClusterIPs) {
			spec.ClusterIPs = spec.ClusterIPs[:1]
		}
		if len(spec.IPFamilies) > 1 && slices.Equal(spec.IPFamilies, old.Spec.IPFamilies) {
			spec.IPFamilies = spec.IPFamilies[:1]
		}
		return nil
	}
	var errs field.ErrorList
	if len(spec.ClusterIPs) > 0 && len(spec.ClusterIPs) < len(old.Spec.ClusterIPs) {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"))
	}
	if len(spec.IPFamilies) > 0 && len(spec.IPFamilies) < len(old.Spec.IPFamilies) {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
	}
	return errs
}

// singleStackErrors refuses two cluster IPs or families under SingleStack.
func singleStackErrors(spec *corev1.ServiceSpec) field.ErrorList {
	if *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		return nil
	}
	var errs field.ErrorList
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	if len(spec.ClusterIPs) == 2 {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
	}
	if len(spec.IPFamilies) == 2 {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	return errs
}

// inferIPFamilies names the family of each given cluster IP that
// ipFamilies does not name yet; an IP of a family the cluster lacks is
// refused here, where the error can point at the IP the client gave.
func inferIPFamilies(spec *corev1.ServiceSpec, cluster []corev1.IPFamily) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i < len(spec.IPFamilies) {
			continue // validation has matched the IP against it
		}
		family := cidr.FamilyOf(ip)
		if !slices.Contains(cluster, family) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs,
				fmt.Sprintf("%s is not configured on this cluster", family)))
			continue
		}
		// Clip: the slice may be the stored service's.
		spec.IPFamilies = append(slices.Clip(spec.IPFamilies), family)
	}
	return errs
}

// clusterFamilyErrors refuses what the cluster's service CIDRs cannot
// give: dual stack on a single-stack cluster, or a family it lacks.
func clusterFamilyErrors(spec *corev1.ServiceSpec, cluster []corev1.IPFamily) field.ErrorList {
	var errs field.ErrorList
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack && len(cluster) < 2 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, family := range spec.IPFamilies {
		if !slices.Contains(cluster, family) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), family, "not configured on this cluster"))
		}
	}
	return errs
}

// defaultFamilies gives a service without families the first of
// available, and a service that is not SingleStack the other family too
// when dual is true.
func defaultFamilies(spec *corev1.ServiceSpec, available []corev1.IPFamily, dual bool) {
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{available[0]}
	}
	if dual && len(spec.IPFamilies) == 1 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		spec.IPFamilies = append(slices.Clip(spec.IPFamilies), otherFamily(spec.IPFamilies[0]))
	}
}

func headlessWithoutSelector(spec *corev1.ServiceSpec) bool {
	return spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
