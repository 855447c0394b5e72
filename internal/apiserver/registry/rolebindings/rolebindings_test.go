package rolebindings

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

func binding(kind, name string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: kind, Name: name}, Subjects: subjects}
}

func TestDefaultAndValidate(t *testing.T) {
	r := Resource()
	b := binding("Role", "reader", rbacv1.Subject{Kind: "User", Name: "alice"})
	registrytest.ExpectErrors(t, registrytest.Validate(r, b, nil))
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("defaults not applied: %+v", b)
	}

	tests := []struct {
		name string
		b    *rbacv1.RoleBinding
		want []string
	}{
		{"cluster role", binding("ClusterRole", "view", rbacv1.Subject{Kind: "ServiceAccount", Name: "default"}), nil},
		{"bad kind", binding("Pod", "x"), []string{"FieldValueNotSupported roleRef.kind"}},
		{"no name", binding("Role", ""), []string{"FieldValueRequired roleRef.name"}},
		{"bad subject", binding("Role", "r", rbacv1.Subject{Kind: "ServiceAccount", Name: "a/b"}), []string{"FieldValueInvalid subjects[0].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.b, nil), tt.want...)
		})
	}
}

func TestRoleRefImmutable(t *testing.T) {
	r := Resource()
	old := binding("Role", "a")
	r.Default(old)
	errs := registrytest.Validate(r, binding("Role", "b"), old)
	registrytest.ExpectErrors(t, errs, "FieldValueInvalid roleRef")
	registrytest.ExpectDetail(t, errs, "roleRef", "cannot change roleRef")
	registrytest.ExpectErrors(t, registrytest.Validate(r, binding("Role", "a", rbacv1.Subject{Kind: "Group", Name: "g"}), old))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	b := binding("Role", "reader", rbacv1.Subject{Kind: "User", Name: "alice"}, rbacv1.Subject{Kind: "ServiceAccount", Namespace: "default", Name: "builder"})
	b.Name = "read-pods"
	b.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	row := r.Row(b, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"read-pods", "Role/reader", "90s", "alice", "", "default/builder"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %v, want %v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
}
