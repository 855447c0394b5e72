// Package servicecidrs is the registry entry for networking.k8s.io/v1
// servicecidrs and their status subresource, with upstream's validation
// (one or two canonical CIDRs, one of each IP family; an update may only
// add the second family's) and table. Allocating Service IPs from the
// ranges and the controllers that keep them are not done here.
package servicecidrs

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"orch/internal/apiserver/registry"
)

// Resource returns the servicecidrs entry. As upstream's, the spec is
// validated in full on create only: an update is checked by what it
// changes, and a write through /status only by its metadata.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     networkingv1.SchemeGroupVersion,
		Resource:         "servicecidrs",
		Kind:             "ServiceCIDR",
		SingularName:     "servicecidr",
		New:              func() runtime.Object { return &networkingv1.ServiceCIDR{} },
		NewList:          func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		HasStatus:        true,
		PrepareForCreate: func(obj runtime.Object) { obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateCIDRs(obj.(*networkingv1.ServiceCIDR).Spec.CIDRs)
		},
		ValidateUpdate:       validateUpdate,
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList { return nil },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			c := obj.(*networkingv1.ServiceCIDR)
			return []interface{}{c.Name, strings.Join(c.Spec.CIDRs, ","), registry.Age(c.CreationTimestamp, now)}
		},
	}
}

var cidrsPath = field.NewPath("spec", "cidrs")

// validateCIDRs wants one or two CIDRs in canonical form, of different IP
// families when there are two.
func validateCIDRs(cidrs []string) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(cidrsPath, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(cidrsPath, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, cidr := range cidrs {
		errs = append(errs, validation.IsValidCIDR(cidrsPath.Index(i), cidr)...)
	}
	if len(cidrs) == 2 {
		family := netutils.IPFamilyOfCIDRString(cidrs[0])
		if family != netutils.IPFamilyUnknown && family == netutils.IPFamilyOfCIDRString(cidrs[1]) {
			errs = append(errs, field.Invalid(cidrsPath, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// validateUpdate lets the CIDRs stay as they are, or a single-family range
// become dual-stack by gaining a valid second CIDR; nothing else.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	cidrs, oldCIDRs := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, old.(*networkingv1.ServiceCIDR).Spec.CIDRs
	switch {
	case len(cidrs) == len(oldCIDRs):
		var errs field.ErrorList
		for i := range oldCIDRs {
			if cidrs[i] != oldCIDRs[i] {
				errs = append(errs, field.Invalid(cidrsPath.Index(i), cidrs[i], apivalidation.FieldImmutableErrorMsg))
			}
		}
		return errs
	case len(oldCIDRs) == 1 && len(cidrs) == 2:
		var errs field.ErrorList
		if cidrs[0] != oldCIDRs[0] {
			errs = append(errs, field.Invalid(cidrsPath.Index(0), cidrs[0], apivalidation.FieldImmutableErrorMsg))
		}
		return append(errs, validateCIDRs(cidrs)...)
	}
	return field.ErrorList{field.Invalid(cidrsPath, cidrs, apivalidation.FieldImmutableErrorMsg)}
}
