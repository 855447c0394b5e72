// Package validatingadmissionpolicies is the registry entry for
// admissionregistration.k8s.io/v1 validatingadmissionpolicies and their
// status subresource, with upstream's defaults, validation (CEL expressions
// compiled in upstream's admission environments) and table. Evaluating the
// policies, and the type checking upstream's controller writes into their
// status, are done elsewhere.
package validatingadmissionpolicies

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/admissionregutil"
)

// Resource returns the validatingadmissionpolicies entry. Validate is nil:
// a create and an update are checked by two complete functions, as upstream
// does, and a write through /status only checks the status.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:         admissionregistrationv1.SchemeGroupVersion,
		Resource:             "validatingadmissionpolicies",
		Kind:                 "ValidatingAdmissionPolicy",
		SingularName:         "validatingadmissionpolicy",
		Categories:           []string{"api-extensions"},
		New:                  func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		NewList:              func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		HasStatus:            true,
		StatusMeta:           registry.StatusKeepsMeta,
		Default:              setDefaults,
		PrepareForCreate:     prepareForCreate,
		ValidateCreate:       validateCreate,
		ValidateUpdate:       validateUpdate,
		ValidateStatusUpdate: validateStatusUpdate,
		Columns: []metav1.TableColumnDefinition{
			admissionregutil.NameColumn,
			{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
			admissionregutil.ParamKindColumn,
			admissionregutil.AgeColumn,
		},
		Row: row,
	}
}

// setDefaults is upstream's: failurePolicy Fail, and the defaults of the
// match constraints (matchPolicy Equivalent, selectors that match
// everything, rules of any scope).
func setDefaults(obj runtime.Object) {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	admissionregutil.DefaultFailurePolicy(&p.Spec.FailurePolicy)
	admissionregutil.DefaultMatchResources(p.Spec.MatchConstraints)
}

// prepareForCreate starts a policy with an empty status; the handlers set
// generation 1 and move it on when the spec changes.
func prepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
}

// row is upstream's: name, number of validations, paramKind, age.
func row(obj runtime.Object, now time.Time) []interface{} {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	return []interface{}{p.Name, int64(len(p.Spec.Validations)), admissionregutil.ParamKindCell(p.Spec.ParamKind), registry.Age(p.CreationTimestamp, now)}
}
