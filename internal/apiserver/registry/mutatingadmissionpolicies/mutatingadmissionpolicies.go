// Package mutatingadmissionpolicies is the registry entry for
// admissionregistration.k8s.io/v1 mutatingadmissionpolicies (served by
// default since upstream 1.36), with upstream's defaults, validation (CEL
// expressions compiled in upstream's admission environments) and table.
// Applying the mutations is done elsewhere.
package mutatingadmissionpolicies

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/admissionregutil"
)

// Resource returns the mutatingadmissionpolicies entry. Validate is nil: a
// create and an update are checked by two complete functions, as upstream
// does.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     admissionregistrationv1.SchemeGroupVersion,
		Resource:         "mutatingadmissionpolicies",
		Kind:             "MutatingAdmissionPolicy",
		SingularName:     "mutatingadmissionpolicy",
		Categories:       []string{"api-extensions"},
		New:              func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate:   validateCreate,
		ValidateUpdate:   validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			admissionregutil.NameColumn,
			{Name: "Mutations", Type: "integer", Description: "Mutation indicates the number of mutations rules defined in this configuration"},
			admissionregutil.ParamKindColumn,
			admissionregutil.AgeColumn,
		},
		Row: row,
	}
}

// setDefaults is upstream's: failurePolicy Fail, and the defaults of the
// match constraints (matchPolicy Equivalent, selectors that match
// everything, rules of any scope). reinvocationPolicy has no default.
func setDefaults(obj runtime.Object) {
	p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	admissionregutil.DefaultFailurePolicy(&p.Spec.FailurePolicy)
	admissionregutil.DefaultMatchResources(p.Spec.MatchConstraints)
}

// prepareForCreate starts the generation at 1, as upstream does for this
// resource although it has no status.
func prepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Generation = 1
}

// prepareForUpdate moves the generation on when the spec changes.
func prepareForUpdate(obj, old runtime.Object) {
	p, oldP := obj.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy)
	if !apiequality.Semantic.DeepEqual(p.Spec, oldP.Spec) {
		p.Generation = oldP.Generation + 1
	}
}

// row is upstream's: name, number of mutations, paramKind, age.
func row(obj runtime.Object, now time.Time) []interface{} {
	p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	return []interface{}{p.Name, int64(len(p.Spec.Mutations)), admissionregutil.ParamKindCell(p.Spec.ParamKind), registry.Age(p.CreationTimestamp, now)}
}
