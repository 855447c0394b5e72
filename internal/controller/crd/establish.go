package crd

import (
	"k8s.io/client-go/transport"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The reasons and messages of the Established condition, upstream's.
const (
	reasonNotAccepted           = "NotAccepted"
	messageNotAccepted          = "not all names are accepted"
	reasonInitialNamesAccepted  = "InitialNamesAccepted"
	messageInitialNamesAccepted = "the initial names have been accepted"
	reasonInvalidCABundle       = "InvalidCABundle"
	messageInvalidCABundle      = "The conversion webhook CABundle is invalid"
)

// established is crd's Established condition once namesAccepted is its
// NamesAccepted condition: True as soon as the names are accepted, and
// True for good once it is (a later clash of new names leaves the
// accepted ones served); until then False. A CRD whose conversion webhook
// has a caBundle that is not PEM certificates is not established.
//
// Upstream's apiextensions-apiserver sets it in two steps (False with
// reason Installing, then True up to five seconds later, once every
// apiserver of an HA cluster serves the names); orch's apiserver serves a
// CRD from its watch cache as soon as the condition is True, so it is set
// at once.
func established(crd *apiextensionsv1.CustomResourceDefinition, namesAccepted apiextensionsv1.CustomResourceDefinitionCondition) apiextensionsv1.CustomResourceDefinitionCondition {
	if old := apiextensionshelpers.FindCRDCondition(crd, apiextensionsv1.Established); old != nil && old.Status == apiextensionsv1.ConditionTrue {
		return *old
	}
	if namesAccepted.Status == apiextensionsv1.ConditionTrue && !validCABundle(crd) {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: reasonInvalidCABundle, Message: messageInvalidCABundle,
		}
	}
	if namesAccepted.Status == apiextensionsv1.ConditionTrue {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: reasonInitialNamesAccepted, Message: messageInitialNamesAccepted,
		}
	}
	if old := apiextensionshelpers.FindCRDCondition(crd, apiextensionsv1.Established); old != nil {
		return *old
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: reasonNotAccepted, Message: messageNotAccepted,
	}
}

// validCABundle tells whether the caBundle of crd's conversion webhook,
// if it has one, is one a client can trust.
func validCABundle(crd *apiextensionsv1.CustomResourceDefinition) bool {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return true
	}
	_, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{CAData: conv.Webhook.ClientConfig.CABundle}})
	return err == nil
}
