package crd

import (
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// desired returns a copy of crd (not being deleted) with the status the
// controller wants it to have, given group, the CRDs of its API group
// (itself among them): its accepted names and the NamesAccepted,
// Established and NonStructuralSchema conditions. Other conditions are
// kept as they are.
func desired(crd *apiextensionsv1.CustomResourceDefinition, group []*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	names, accepted := acceptNames(crd, group)
	out.Status.AcceptedNames = names
	setCondition(out, accepted)
	setCondition(out, established(crd, accepted))
	if c := nonStructural(crd); c != nil {
		setCondition(out, *c)
	} else {
		apiextensionshelpers.RemoveCRDCondition(out, apiextensionsv1.NonStructuralSchema)
	}
	return out
}

// statusDiffers tells whether want's accepted names or the conditions
// the controller keeps differ from crd's (the times of the conditions
// aside).
func statusDiffers(crd, want *apiextensionsv1.CustomResourceDefinition) bool {
	if !apiequality.Semantic.DeepEqual(crd.Status.AcceptedNames, want.Status.AcceptedNames) {
		return true
	}
	for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{
		apiextensionsv1.NamesAccepted, apiextensionsv1.Established, apiextensionsv1.NonStructuralSchema,
	} {
		if !apiextensionshelpers.IsCRDConditionEquivalent(apiextensionshelpers.FindCRDCondition(crd, t), apiextensionshelpers.FindCRDCondition(want, t)) {
			return true
		}
	}
	return false
}

// setCondition sets c on crd unless an equivalent condition is there
// already (which keeps its time); the time of a condition changes when
// its status does.
func setCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	if apiextensionshelpers.IsCRDConditionEquivalent(apiextensionshelpers.FindCRDCondition(crd, c.Type), &c) {
		return
	}
	apiextensionshelpers.SetCRDCondition(crd, c)
}

// conditionStatus is the status of crd's condition t, "" without one.
func conditionStatus(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.ConditionStatus {
	if c := apiextensionshelpers.FindCRDCondition(crd, t); c != nil {
		return c.Status
	}
	return ""
}
