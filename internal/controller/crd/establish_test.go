package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestEstablished(t *testing.T) {
	accepted := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}
	clash := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse}
	crd := func() *apiextensionsv1.CustomResourceDefinition {
		return newCRD("example.com", names("widgets", "Widget"))
	}
	badCABundle := func() *apiextensionsv1.CustomResourceDefinition {
		c := crd()
		c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte("not a certificate")}},
		}
		return c
	}
	tests := []struct {
		name          string
		crd           *apiextensionsv1.CustomResourceDefinition
		namesAccepted apiextensionsv1.CustomResourceDefinitionCondition
		status        apiextensionsv1.ConditionStatus
		reason        string
	}{
		{"names not accepted yet", crd(), clash, apiextensionsv1.ConditionFalse, reasonNotAccepted},
		{"names accepted", crd(), accepted, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted},
		{"names accepted after a clash",
			withCondition(crd(), apiextensionsv1.Established, apiextensionsv1.ConditionFalse, reasonNotAccepted),
			accepted, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted},
		{"established stays so when new names clash",
			withCondition(crd(), apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "SomeReason"),
			clash, apiextensionsv1.ConditionTrue, "SomeReason"},
		{"a conversion webhook's caBundle that is no certificate", badCABundle(), accepted, apiextensionsv1.ConditionFalse, reasonInvalidCABundle},
		{"an established CRD's caBundle is not looked at again",
			withCondition(badCABundle(), apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted),
			accepted, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := established(tt.crd, tt.namesAccepted)
			if got.Type != apiextensionsv1.Established || got.Status != tt.status || got.Reason != tt.reason {
				t.Errorf("got %+v, want %s %s", got, tt.status, tt.reason)
			}
		})
	}
}
