// Package leases is the registry entry for coordination.k8s.io/v1 leases.
package leases

import (
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// strategies are the lease strategies Kubernetes defines; others must be
// prefixed names such as example.com/mine.
var strategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// Resource returns the leases entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: coordinationv1.SchemeGroupVersion,
		Resource:     "leases",
		Kind:         "Lease",
		SingularName: "lease",
		Namespaced:   true,
		New:          func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:      func() runtime.Object { return &coordinationv1.LeaseList{} },
		Validate:     validate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			l := obj.(*coordinationv1.Lease)
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []interface{}{l.Name, holder, registry.Age(l.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*coordinationv1.Lease).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, validateStrategy(*spec.Strategy, p.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

func validateStrategy(s coordinationv1.CoordinatedLeaseStrategy, p *field.Path) field.ErrorList {
	if !strings.Contains(string(s), "/") {
		if !slices.Contains(strategies, s) {
			return field.ErrorList{field.NotSupported(p, s, strategies)}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(s)) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}
