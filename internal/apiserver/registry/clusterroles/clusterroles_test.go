package clusterroles

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
	if r.NameValidation != registry.NamePathSegment || r.Namespaced {
		t.Errorf("name rule %v, namespaced %v", r.NameValidation, r.Namespaced)
	}
	tests := []struct {
		name string
		role rbacv1.ClusterRole
		want []string
	}{
		{"non-resource URLs allowed", rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}}, nil},
		{"resources and URLs", rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}, NonResourceURLs: []string{"/x"}}}}, []string{"FieldValueInvalid rules[0].nonResourceURLs"}},
		{"aggregation", rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}, nil},
		{"empty aggregation", rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}}, []string{"FieldValueRequired aggregationRule.clusterRoleSelectors"}},
		{"bad aggregation selector", rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b c"}}}}},
			[]string{"FieldValueInvalid aggregationRule.clusterRoleSelectors[0].matchLabels", "FieldValueInvalid aggregationRule.clusterRoleSelectors[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, &tt.role, nil), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	row := r.Row(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}}, time.Now())
	registrytest.CheckTable(t, r, row)
	if row[0] != "admin" {
		t.Errorf("row = %v", row)
	}
}
