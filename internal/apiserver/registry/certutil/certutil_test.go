package certutil

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/registrytest"
)

func TestValidateSignerName(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		name   string
		signer string
		want   []registrytest.Want
	}{
		{"well-known", "kubernetes.io/kube-apiserver-client", nil},
		{"namespaced path", "example.com/team-a.my-signer", nil},
		{"empty", "", []registrytest.Want{{"FieldValueRequired spec.signerName", ""}}},
		{"no slash", "example.com", []registrytest.Want{{"FieldValueInvalid spec.signerName", "of the form 'example.com/signer-name'"}}},
		{"two slashes", "example.com/a/b", []registrytest.Want{{"FieldValueInvalid spec.signerName", "of the form"}}},
		{"one-label domain", "example/signer", []registrytest.Want{{"FieldValueInvalid spec.signerName", "at least two segments"}}},
		{"bad domain label", "Example.com/signer", []registrytest.Want{{"FieldValueInvalid spec.signerName", `validating label "Example"`}}},
		{"bad path", "example.com/Signer", []registrytest.Want{{"FieldValueInvalid spec.signerName", `validating label "Signer"`}}},
		{"empty path", "example.com/", []registrytest.Want{{"FieldValueInvalid spec.signerName", `validating label ""`}}},
		{"only the first bad domain label", "a_b.c_d.com/s", []registrytest.Want{{"FieldValueInvalid spec.signerName", `validating label "a_b"`}}},
		{"domain too long", strings.Repeat(long+".", 4) + "com/s", []registrytest.Want{{"FieldValueTooLong spec.signerName", "253"}}},
		{"whole name too long", "example.com/" + strings.Repeat(long+".", 9) + "a", []registrytest.Want{{"FieldValueTooLong spec.signerName", "571"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateSignerName(field.NewPath("spec", "signerName"), tt.signer), tt.want...)
		})
	}
}
