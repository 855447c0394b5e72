// Package resourcequotas is the registry entry for core/v1 resourcequotas.
package resourcequotas

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

// standardQuotaResources are the quota names without a domain that
// upstream accepts (hugepages-* and requests.hugepages-* are also allowed).
var standardQuotaResources = []string{
	"configmaps", "cpu", "ephemeral-storage", "limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"memory", "persistentvolumeclaims", "pods", "replicationcontrollers", "requests.cpu",
	"requests.ephemeral-storage", "requests.memory", "requests.storage", "resourcequotas", "secrets",
	"services", "services.loadbalancers", "services.nodeports",
}

var supportedScopes = []string{
	string(corev1.ResourceQuotaScopeBestEffort), string(corev1.ResourceQuotaScopeCrossNamespacePodAffinity),
	string(corev1.ResourceQuotaScopeNotBestEffort), string(corev1.ResourceQuotaScopeNotTerminating),
	string(corev1.ResourceQuotaScopePriorityClass), string(corev1.ResourceQuotaScopeTerminating),
	string(corev1.ResourceQuotaScopeVolumeAttributesClass),
}

var supportedScopeOperators = []string{
	string(corev1.ScopeSelectorOpDoesNotExist), string(corev1.ScopeSelectorOpExists),
	string(corev1.ScopeSelectorOpIn), string(corev1.ScopeSelectorOpNotIn),
}

// Resource returns the resourcequotas entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "resourcequotas",
		Kind:             "ResourceQuota",
		SingularName:     "resourcequota",
		Namespaced:       true,
		ShortNames:       []string{"quota"},
		New:              func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList:          func() runtime.Object { return &corev1.ResourceQuotaList{} },
		HasStatus:        true,
		Default:          func(obj runtime.Object) { Default(obj.(*corev1.ResourceQuota)) },
		PrepareForCreate: func(obj runtime.Object) { obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{} },
		Validate:         func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.ResourceQuota)) },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
			{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} { return row(obj.(*corev1.ResourceQuota), now) },
	}
}

// Default rounds every quantity up to milli precision.
func Default(q *corev1.ResourceQuota) {
	podspec.RoundResourceList(q.Spec.Hard)
	podspec.RoundResourceList(q.Status.Hard)
	podspec.RoundResourceList(q.Status.Used)
}

func validate(q *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	for name, qty := range q.Spec.Hard {
		p := specPath.Child("hard").Key(string(name))
		errs = append(errs, validateQuotaResourceName(name, p)...)
		errs = append(errs, podspec.ValidateResourceQuantity(name, qty, p)...)
	}
	for _, list := range []struct {
		name  string
		items corev1.ResourceList
	}{{"hard", q.Status.Hard}, {"used", q.Status.Used}} {
		for name, qty := range list.items {
			p := field.NewPath("status", list.name).Key(string(name))
			errs = append(errs, validateQuotaResourceName(name, p)...)
			errs = append(errs, podspec.ValidateResourceQuantity(name, qty, p)...)
		}
	}

	scopes := map[corev1.ResourceQuotaScope]bool{}
	for _, s := range q.Spec.Scopes {
		if !slices.Contains(supportedScopes, string(s)) {
			errs = append(errs, field.NotSupported(specPath.Child("scopes"), s, supportedScopes))
		}
		scopes[s] = true
	}
	if sel := q.Spec.ScopeSelector; sel != nil {
		for i, req := range sel.MatchExpressions {
			p := specPath.Child("scopeSelector", "matchExpressions").Index(i)
			errs = append(errs, validateScopedSelectorRequirement(req, p)...)
			scopes[req.ScopeName] = true
		}
	}
	if (scopes[corev1.ResourceQuotaScopeTerminating] && scopes[corev1.ResourceQuotaScopeNotTerminating]) ||
		(scopes[corev1.ResourceQuotaScopeBestEffort] && scopes[corev1.ResourceQuotaScopeNotBestEffort]) {
		errs = append(errs, field.Invalid(specPath.Child("scopes"), q.Spec.Scopes, "conflicting scopes"))
	}
	if scopes[corev1.ResourceQuotaScopeBestEffort] {
		for name := range q.Spec.Hard {
			if name != corev1.ResourcePods {
				errs = append(errs, field.Invalid(specPath.Child("hard").Key(string(name)), name, "unsupported scope applied to resource"))
			}
		}
	}
	return errs
}

func validateQuotaResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	if errs := podspec.ValidateResourceName(name, p); len(errs) > 0 {
		return errs
	}
	s := string(name)
	if strings.Contains(s, "/") || slices.Contains(standardQuotaResources, s) ||
		strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, name, "must be a standard resource type or fully qualified")}
}

func validateScopedSelectorRequirement(req corev1.ScopedResourceSelectorRequirement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(supportedScopes, string(req.ScopeName)) {
		errs = append(errs, field.NotSupported(p.Child("scopeName"), req.ScopeName, supportedScopes))
	}
	switch req.Operator {
	case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
		}
	case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
		if len(req.Values) != 0 {
			errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), req.Operator, supportedScopeOperators))
	}
	return errs
}

// row lists "resource: used/hard" pairs, limits.* in the Limit column and
// everything else in the Request column, sorted by name.
func row(q *corev1.ResourceQuota, now time.Time) []interface{} {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used := q.Status.Used[corev1.ResourceName(name)]
		hard := q.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return []interface{}{q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), registry.Age(q.CreationTimestamp, now)}
}
