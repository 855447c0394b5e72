package customresourcedefinitions

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// approvalPath is where upstream reports a missing or invalid
// api-approved.kubernetes.io annotation of a CRD in a protected group: the one
// metadata error that is about the CRD rather than about ObjectMeta.
var approvalPath = field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation).String()

// validateCreate runs upstream's validation of a new CRD, and its rule that
// the name is <spec.names.plural>.<spec.group>.
func validateCreate(obj runtime.Object) field.ErrorList {
	crd, errs := toInternal(obj)
	if errs != nil {
		return errs
	}
	return append(nameErrors(crd), withoutObjectMeta(validation.ValidateCustomResourceDefinition(context.Background(), crd))...)
}

// nameErrors is upstream's rule, on create only, that metadata.name (and so
// any generateName, which can then never work) is
// <spec.names.plural>.<spec.group>. The handlers check that it is a DNS
// subdomain; an empty name they report as missing.
func nameErrors(crd *apiextensions.CustomResourceDefinition) field.ErrorList {
	const msg = `must be spec.names.plural+"."+spec.group`
	want := crd.Spec.Names.Plural + "." + crd.Spec.Group
	var errs field.ErrorList
	if crd.GenerateName != "" && crd.GenerateName != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "generateName"), crd.GenerateName, msg))
	}
	if crd.Name != "" && crd.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, msg))
	}
	return errs
}

// validateUpdate runs upstream's validation of an updated CRD, which also
// holds what a CRD may no longer change (names once established, schemas
// that must stay structural, CEL rules that were already there).
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	crd, errs := toInternal(obj)
	if errs != nil {
		return errs
	}
	oldCRD, errs := toInternal(old)
	if errs != nil {
		return errs
	}
	return withoutObjectMeta(validation.ValidateCustomResourceDefinitionUpdate(context.Background(), crd, oldCRD))
}

// validateStatusUpdate runs upstream's validation of a write through /status:
// only status.acceptedNames is checked.
func validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	crd, errs := toInternal(obj)
	if errs != nil {
		return errs
	}
	oldCRD, errs := toInternal(old)
	if errs != nil {
		return errs
	}
	return withoutObjectMeta(validation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), crd, oldCRD))
}

// toInternal converts a v1 CRD to the internal type upstream's validation
// takes, as upstream's apiserver does before it validates (so errors about a
// schema that every version shares name spec.validation, as upstream's do).
func toInternal(obj runtime.Object) (*apiextensions.CustomResourceDefinition, field.ErrorList) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition), out, nil); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), "", fmt.Sprintf("cannot be read: %v", err))}
	}
	return out, nil
}

// withoutObjectMeta drops the errors upstream's CRD validation reports about
// ObjectMeta (name, labels, annotations, immutable metadata, ...), which the
// handlers already report from the same generic checks; the API approval
// annotation check stays.
func withoutObjectMeta(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if (e.Field == "metadata" || strings.HasPrefix(e.Field, "metadata.")) && e.Field != approvalPath {
			continue
		}
		out = append(out, e)
	}
	return out
}
