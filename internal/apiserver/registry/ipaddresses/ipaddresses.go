// Package ipaddresses is the registry entry for networking.k8s.io/v1
// ipaddresses, with upstream's validation (the name an IP address in
// canonical form; a reference to the owning object, with a resource and a
// name, that never changes) and table. Allocating addresses is not done
// here.
package ipaddresses

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the ipaddresses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   networkingv1.SchemeGroupVersion,
		Resource:       "ipaddresses",
		Kind:           "IPAddress",
		SingularName:   "ipaddress",
		ShortNames:     []string{"ip"},
		NameValidation: registry.NameIP,
		New:            func() runtime.Object { return &networkingv1.IPAddress{} },
		NewList:        func() runtime.Object { return &networkingv1.IPAddressList{} },
		Validate:       validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			ref, oldRef := obj.(*networkingv1.IPAddress).Spec.ParentRef, old.(*networkingv1.IPAddress).Spec.ParentRef
			return apivalidation.ValidateImmutableField(ref, oldRef, field.NewPath("spec", "parentRef"))
		},
		// Upstream's table has no Age column, but its rows carry the age
		// as a third cell, which kubectl does not print.
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
		},
		Row: row,
	}
}

// validate wants a parent reference with a resource and a name, each safe
// as a path segment, as are the group (a DNS subdomain) and namespace when
// given.
func validate(obj runtime.Object) field.ErrorList {
	ref := obj.(*networkingv1.IPAddress).Spec.ParentRef
	p := field.NewPath("spec", "parentRef")
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	errs = append(errs, pathSegment(ref.Resource, true, p.Child("resource"))...)
	errs = append(errs, pathSegment(ref.Name, true, p.Child("name"))...)
	return append(errs, pathSegment(ref.Namespace, false, p.Child("namespace"))...)
}

func pathSegment(value string, required bool, p *field.Path) field.ErrorList {
	if value == "" {
		if required {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

// row gives the parent as resource.group[/namespace]/name, in lower case.
func row(obj runtime.Object, now time.Time) []interface{} {
	ip := obj.(*networkingv1.IPAddress)
	parent := "<none>"
	if ref := ip.Spec.ParentRef; ref != nil {
		parent = strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
		if ref.Namespace != "" {
			parent += "/" + ref.Namespace
		}
		parent += "/" + ref.Name
	}
	return []interface{}{ip.Name, parent, registry.Age(ip.CreationTimestamp, now)}
}
