package ingressclasses

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func class(controller string, params *networkingv1.IngressClassParametersReference) *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "traefik"}, Spec: networkingv1.IngressClassSpec{Controller: controller, Parameters: params}}
}

func TestDefaultAndValidate(t *testing.T) {
	r := Resource()
	params := &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "p"}
	c := class("example.com/ingress", params)
	registrytest.ExpectErrors(t, registrytest.Validate(r, c, nil))
	if params.Scope == nil || *params.Scope != "Cluster" {
		t.Errorf("scope = %v", params.Scope)
	}

	tests := []struct {
		name string
		c    *networkingv1.IngressClass
		want []string
	}{
		{"no controller", class("", nil), []string{"FieldValueRequired spec.controller"}},
		{"controller without domain", class("traefik", nil), []string{"FieldValueInvalid spec.controller"}},
		{"namespace scope without namespace", class("a.io/b", &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n", Scope: ptr.To("Namespace")}), []string{"FieldValueRequired spec.parameters.namespace"}},
		{"cluster scope with namespace", class("a.io/b", &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n", Scope: ptr.To("Cluster"), Namespace: ptr.To("x")}), []string{"FieldValueForbidden spec.parameters.namespace"}},
		{"bad scope", class("a.io/b", &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n", Scope: ptr.To("Galaxy")}), []string{"FieldValueNotSupported spec.parameters.scope"}},
		{"no kind", class("a.io/b", &networkingv1.IngressClassParametersReference{Name: "n"}), []string{"FieldValueRequired spec.parameters.kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.c, nil), tt.want...)
		})
	}
	registrytest.ExpectErrors(t, registrytest.Validate(r, class("a.io/c", nil), class("a.io/b", nil)), "FieldValueInvalid spec.controller")
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	c := class("traefik.io/ingress-controller", &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "p"})
	c.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	row := r.Row(c, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"traefik", "traefik.io/ingress-controller", "IngressParameters.k8s.example.com/p", "60s"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
	if row := r.Row(class("a.io/b", nil), now); row[2] != "<none>" {
		t.Errorf("no parameters: %v", row[2])
	}
}
