package roles

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

func TestValidate(t *testing.T) {
	r := Resource()
	if r.NameValidation != registry.NamePathSegment || !r.Namespaced {
		t.Errorf("name rule %v, namespaced %v", r.NameValidation, r.Namespaced)
	}
	tests := []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  []string
	}{
		{"valid", []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, nil},
		{"no rules", nil, nil},
		{"missing verbs", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}, []string{"FieldValueRequired rules[0].verbs"}},
		{"missing apiGroups", []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}, []string{"FieldValueRequired rules[0].apiGroups"}},
		{"nonResourceURLs", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}, []string{"FieldValueInvalid rules[0].nonResourceURLs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := registrytest.Validate(r, &rbacv1.Role{Rules: tt.rules}, nil)
			registrytest.ExpectErrors(t, errs, tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	row := r.Row(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", CreationTimestamp: created}}, created.Add(time.Hour))
	registrytest.CheckTable(t, r, row)
	if row[0] != "reader" || row[1] != "2025-01-02T03:04:05Z" || r.Columns[1].Name != "Created At" {
		t.Errorf("row = %v", row)
	}
}
