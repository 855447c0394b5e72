package rbacutil

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePolicyRule(t *testing.T) {
	tests := []struct {
		name       string
		rule       rbacv1.PolicyRule
		namespaced bool
		want       []string // "type field" of each error
	}{
		{"resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true, nil},
		{"non-resource rule in cluster role", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, false, nil},
		{"no verbs", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}, true, []string{"FieldValueRequired r.verbs"}},
		{"no api groups", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}, true, []string{"FieldValueRequired r.apiGroups"}},
		{"no resources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}}, true, []string{"FieldValueRequired r.resources"}},
		{"non-resource URL in role", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}, true, []string{"FieldValueInvalid r.nonResourceURLs"}},
		{"both kinds", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}}, false, []string{"FieldValueInvalid r.nonResourceURLs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidatePolicyRule(tt.rule, tt.namespaced, field.NewPath("r"))
			if got := describe(errs); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateRoleRefAndSubjects(t *testing.T) {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}
	if errs := ValidateRoleRef(ref, []string{"Role", "ClusterRole"}); len(errs) != 0 {
		t.Errorf("valid roleRef: %v", errs)
	}
	if errs := ValidateRoleRef(ref, []string{"ClusterRole"}); !equal(describe(errs), []string{"FieldValueNotSupported roleRef.kind"}) {
		t.Errorf("Role in cluster binding: %v", errs)
	}
	if errs := ValidateRoleRef(rbacv1.RoleRef{Kind: "Role"}, []string{"Role"}); !equal(describe(errs), []string{"FieldValueNotSupported roleRef.apiGroup", "FieldValueRequired roleRef.name"}) {
		t.Errorf("empty roleRef: %v", describe(errs))
	}
	if errs := ValidateRoleRefUpdate(ref, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "other"}); !equal(describe(errs), []string{"FieldValueInvalid roleRef"}) {
		t.Errorf("changed roleRef: %v", errs)
	}

	subjects := []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "default"},
		{Kind: "User", Name: "alice", APIGroup: rbacv1.GroupName},
		{Kind: "Robot", Name: "r2"},
	}
	got := describe(ValidateSubjects(subjects, false))
	want := []string{"FieldValueRequired subjects[0].namespace", "FieldValueNotSupported subjects[2].kind"}
	if !equal(got, want) {
		t.Errorf("subjects: got %v, want %v", got, want)
	}
	if got := describe(ValidateSubjects(subjects[:2], true)); len(got) != 0 {
		t.Errorf("namespaced subjects: %v", got)
	}
}

func TestDefaultBinding(t *testing.T) {
	ref := rbacv1.RoleRef{Kind: "Role", Name: "r"}
	subjects := []rbacv1.Subject{{Kind: "User", Name: "a"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Name: "sa"}}
	DefaultBinding(&ref, subjects)
	if ref.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef.apiGroup = %q", ref.APIGroup)
	}
	for i, want := range []string{rbacv1.GroupName, rbacv1.GroupName, ""} {
		if subjects[i].APIGroup != want {
			t.Errorf("subjects[%d].apiGroup = %q, want %q", i, subjects[i].APIGroup, want)
		}
	}
}

func TestCells(t *testing.T) {
	role, users, groups, sas := BindingCells(rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, []rbacv1.Subject{
		{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "devs"},
		{Kind: "ServiceAccount", Namespace: "ns", Name: "sa"},
	})
	if role != "ClusterRole/view" || users != "alice, bob" || groups != "devs" || sas != "ns/sa" {
		t.Errorf("cells = %q %q %q %q", role, users, groups, sas)
	}
	created := metav1.NewTime(time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600)))
	row := CreatedAtRow(metav1.ObjectMeta{Name: "r", CreationTimestamp: created})
	if row[0] != "r" || row[1] != "2024-05-06T06:08:09Z" {
		t.Errorf("row = %v", row)
	}
}

func describe(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
