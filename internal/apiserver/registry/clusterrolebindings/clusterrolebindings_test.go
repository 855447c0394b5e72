package clusterrolebindings

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

func binding(kind, name string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: kind, Name: name}, Subjects: subjects}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name string
		b    *rbacv1.ClusterRoleBinding
		want []string
	}{
		{"valid", binding("ClusterRole", "admin", rbacv1.Subject{Kind: "Group", Name: "system:masters"}), nil},
		{"role not allowed", binding("Role", "r"), []string{"FieldValueNotSupported roleRef.kind"}},
		{"service account needs namespace", binding("ClusterRole", "x", rbacv1.Subject{Kind: "ServiceAccount", Name: "sa"}), []string{"FieldValueRequired subjects[0].namespace"}},
		{"subject without name", binding("ClusterRole", "x", rbacv1.Subject{Kind: "User"}), []string{"FieldValueRequired subjects[0].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.b, nil), tt.want...)
		})
	}
	old := binding("ClusterRole", "admin")
	r.Default(old)
	registrytest.ExpectErrors(t, registrytest.Validate(r, binding("ClusterRole", "edit"), old), "FieldValueInvalid roleRef")
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	b := binding("ClusterRole", "cluster-admin", rbacv1.Subject{Kind: "Group", Name: "system:masters"})
	b.ObjectMeta = metav1.ObjectMeta{Name: "cluster-admin", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))}
	row := r.Row(b, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"cluster-admin", "ClusterRole/cluster-admin", "3h", "", "system:masters", ""}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %v, want %v", i, row[i], want[i])
		}
	}
}
