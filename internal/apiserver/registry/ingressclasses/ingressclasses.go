// Package ingressclasses is the registry entry for networking.k8s.io/v1
// ingressclasses.
package ingressclasses

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

const maxControllerLength = 250

var scopes = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}

// Resource returns the ingressclasses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: networkingv1.SchemeGroupVersion,
		Resource:     "ingressclasses",
		Kind:         "IngressClass",
		SingularName: "ingressclass",
		New:          func() runtime.Object { return &networkingv1.IngressClass{} },
		NewList:      func() runtime.Object { return &networkingv1.IngressClassList{} },
		Default: func(obj runtime.Object) {
			params := obj.(*networkingv1.IngressClass).Spec.Parameters
			if params != nil && params.Scope == nil {
				scope := networkingv1.IngressClassParametersReferenceScopeCluster
				params.Scope = &scope
			}
		},
		Validate: validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			c, oldC := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
			return apivalidation.ValidateImmutableField(c.Spec.Controller, oldC.Spec.Controller, field.NewPath("spec", "controller"))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
			{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			c := obj.(*networkingv1.IngressClass)
			params := "<none>"
			if p := c.Spec.Parameters; p != nil {
				params = p.Kind
				if p.APIGroup != nil {
					params += "." + *p.APIGroup
				}
				params += "/" + p.Name
			}
			return []interface{}{c.Name, c.Spec.Controller, params, registry.Age(c.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*networkingv1.IngressClass).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if len(spec.Controller) > maxControllerLength {
		errs = append(errs, field.TooLong(p.Child("controller"), "", maxControllerLength))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(p.Child("controller"), spec.Controller)...)
	if spec.Parameters != nil {
		errs = append(errs, validateParameters(spec.Parameters, p.Child("parameters"))...)
	}
	return errs
}

func validateParameters(params *networkingv1.IngressClassParametersReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if params.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*params.APIGroup) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), *params.APIGroup, msg))
		}
	}
	errs = append(errs, requiredSegment(params.Kind, p.Child("kind"), "kind is required")...)
	errs = append(errs, requiredSegment(params.Name, p.Child("name"), "name is required")...)
	switch {
	case params.Scope == nil:
		errs = append(errs, field.Required(p.Child("scope"), ""))
	case *params.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(p.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.NameIsDNSLabel(*params.Namespace, false) {
				errs = append(errs, field.Invalid(p.Child("namespace"), *params.Namespace, msg))
			}
		}
	case *params.Scope == networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(p.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("scope"), *params.Scope, scopes))
	}
	return errs
}

func requiredSegment(value string, p *field.Path, missing string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(p, missing)}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}
