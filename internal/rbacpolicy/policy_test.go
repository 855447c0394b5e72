package rbacpolicy_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/rbacutil"
	"orch/internal/rbacpolicy"
)

// object is what every test here reads of a policy object.
type object struct {
	kind string
	meta metav1.ObjectMeta
}

func allObjects() []object {
	var out []object
	for _, r := range rbacpolicy.ClusterRoles() {
		out = append(out, object{"ClusterRole", r.ObjectMeta})
	}
	for _, b := range rbacpolicy.ClusterRoleBindings() {
		out = append(out, object{"ClusterRoleBinding", b.ObjectMeta})
	}
	for _, r := range rbacpolicy.Roles() {
		out = append(out, object{"Role", r.ObjectMeta})
	}
	for _, b := range rbacpolicy.RoleBindings() {
		out = append(out, object{"RoleBinding", b.ObjectMeta})
	}
	return out
}

func TestNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range allObjects() {
		key := o.kind + " " + o.meta.Namespace + "/" + o.meta.Name
		if seen[key] {
			t.Errorf("%s is in the policy twice", key)
		}
		seen[key] = true
	}
}

func TestEveryObjectIsMarkedAsUpstreamDoes(t *testing.T) {
	for _, o := range allObjects() {
		if got := o.meta.Labels[rbacpolicy.BootstrappingLabel]; got != rbacpolicy.BootstrappingValue {
			t.Errorf("%s %s: label %s = %q, want %q", o.kind, o.meta.Name, rbacpolicy.BootstrappingLabel, got, rbacpolicy.BootstrappingValue)
		}
		if got := o.meta.Annotations[rbacv1.AutoUpdateAnnotationKey]; got != "true" {
			t.Errorf("%s %s: annotation %s = %q, want \"true\"", o.kind, o.meta.Name, rbacv1.AutoUpdateAnnotationKey, got)
		}
		switch {
		case (o.kind == "Role" || o.kind == "RoleBinding") && o.meta.Namespace != metav1.NamespaceSystem && o.meta.Namespace != metav1.NamespacePublic &&
			o.meta.Namespace != metav1.NamespaceDefault:
			t.Errorf("%s %s is in namespace %q, want kube-system, kube-public or default (the kubernetes Endpoints)", o.kind, o.meta.Name, o.meta.Namespace)
		case (o.kind == "ClusterRole" || o.kind == "ClusterRoleBinding") && o.meta.Namespace != "":
			t.Errorf("%s %s has namespace %q", o.kind, o.meta.Name, o.meta.Namespace)
		}
	}
}

// TestRulesPassTheAPIServersValidation runs the apiserver's own checks of
// rules, role references and subjects on every object.
func TestRulesPassTheAPIServersValidation(t *testing.T) {
	for _, r := range rbacpolicy.ClusterRoles() {
		if errs := rbacutil.ValidatePolicyRules(r.Rules, false); len(errs) > 0 {
			t.Errorf("ClusterRole %s: %v", r.Name, errs.ToAggregate())
		}
		if r.AggregationRule != nil {
			for _, sel := range r.AggregationRule.ClusterRoleSelectors {
				if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
					t.Errorf("ClusterRole %s: aggregation selector: %v", r.Name, err)
				}
			}
		}
	}
	for _, r := range rbacpolicy.Roles() {
		if errs := rbacutil.ValidatePolicyRules(r.Rules, true); len(errs) > 0 {
			t.Errorf("Role %s/%s: %v", r.Namespace, r.Name, errs.ToAggregate())
		}
	}
	for _, b := range rbacpolicy.ClusterRoleBindings() {
		errs := append(rbacutil.ValidateRoleRef(b.RoleRef, []string{"ClusterRole"}), rbacutil.ValidateSubjects(b.Subjects, false)...)
		if len(errs) > 0 {
			t.Errorf("ClusterRoleBinding %s: %v", b.Name, errs.ToAggregate())
		}
	}
	for _, b := range rbacpolicy.RoleBindings() {
		errs := append(rbacutil.ValidateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"}), rbacutil.ValidateSubjects(b.Subjects, true)...)
		if len(errs) > 0 {
			t.Errorf("RoleBinding %s/%s: %v", b.Namespace, b.Name, errs.ToAggregate())
		}
	}
}

func TestEveryBindingRefersToARoleOfThePolicy(t *testing.T) {
	clusterRoles := map[string]bool{}
	for _, r := range rbacpolicy.ClusterRoles() {
		clusterRoles[r.Name] = true
	}
	roles := map[string]bool{}
	for _, r := range rbacpolicy.Roles() {
		roles[r.Namespace+"/"+r.Name] = true
	}
	for _, b := range rbacpolicy.ClusterRoleBindings() {
		if b.RoleRef.Kind != "ClusterRole" || !clusterRoles[b.RoleRef.Name] {
			t.Errorf("ClusterRoleBinding %s refers to %s %q, which the policy lacks", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
	}
	for _, b := range rbacpolicy.RoleBindings() {
		ok := (b.RoleRef.Kind == "Role" && roles[b.Namespace+"/"+b.RoleRef.Name]) ||
			(b.RoleRef.Kind == "ClusterRole" && clusterRoles[b.RoleRef.Name])
		if !ok {
			t.Errorf("RoleBinding %s/%s refers to %s %q, which the policy lacks", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
	}
}

// TestEveryControllerHasARoleAndABinding: the role is a ClusterRole or a
// Role of kube-system named system:controller:SA, bound (under the same
// name) to the service account.
func TestEveryControllerHasARoleAndABinding(t *testing.T) {
	clusterRoles, roles := map[string]bool{}, map[string]bool{}
	for _, r := range rbacpolicy.ClusterRoles() {
		clusterRoles[r.Name] = true
	}
	for _, r := range rbacpolicy.Roles() {
		if r.Namespace == rbacpolicy.ControllerNamespace {
			roles[r.Name] = true
		}
	}
	bound := map[string]bool{}
	for _, b := range rbacpolicy.ClusterRoleBindings() {
		for _, s := range b.Subjects {
			if b.Name == b.RoleRef.Name && s.Kind == rbacv1.ServiceAccountKind && s.Namespace == rbacpolicy.ControllerNamespace {
				bound[b.Name+" "+s.Name] = true
			}
		}
	}
	for _, b := range rbacpolicy.RoleBindings() {
		for _, s := range b.Subjects {
			if b.Namespace == rbacpolicy.ControllerNamespace && b.Name == b.RoleRef.Name &&
				s.Kind == rbacv1.ServiceAccountKind && s.Namespace == rbacpolicy.ControllerNamespace {
				bound[b.Name+" "+s.Name] = true
			}
		}
	}
	for controller, sa := range rbacpolicy.ControllerServiceAccounts {
		name := rbacpolicy.ControllerRoleName(sa)
		if !clusterRoles[name] && !roles[name] {
			t.Errorf("controller %s (service account %s) has no role %s", controller, sa, name)
		}
		if !bound[name+" "+sa] {
			t.Errorf("controller %s: no binding %s to service account %s/%s", controller, name, rbacpolicy.ControllerNamespace, sa)
		}
		if !strings.HasPrefix(rbacpolicy.ControllerUser(sa), "system:serviceaccount:kube-system:") {
			t.Errorf("ControllerUser(%q) = %q", sa, rbacpolicy.ControllerUser(sa))
		}
	}
}

func TestAggregatedRolesSelectTheirSources(t *testing.T) {
	byName := map[string]rbacv1.ClusterRole{}
	for _, r := range rbacpolicy.ClusterRoles() {
		byName[r.Name] = r
	}
	tests := []struct {
		role, label, source string
		// aggregatedInto is the label the role carries itself.
		aggregatedInto string
	}{
		{"admin", rbacpolicy.AggregateToAdmin, "system:aggregate-to-admin", ""},
		{"edit", rbacpolicy.AggregateToEdit, "system:aggregate-to-edit", rbacpolicy.AggregateToAdmin},
		{"view", rbacpolicy.AggregateToView, "system:aggregate-to-view", rbacpolicy.AggregateToEdit},
	}
	for _, tt := range tests {
		r := byName[tt.role]
		if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 ||
			r.AggregationRule.ClusterRoleSelectors[0].MatchLabels[tt.label] != "true" {
			t.Errorf("%s: aggregationRule = %+v, want one selector %s=true", tt.role, r.AggregationRule, tt.label)
		}
		if len(r.Rules) != 0 {
			t.Errorf("%s has rules of its own: %v", tt.role, r.Rules)
		}
		if tt.aggregatedInto != "" && r.Labels[tt.aggregatedInto] != "true" {
			t.Errorf("%s lacks the label %s=true", tt.role, tt.aggregatedInto)
		}
		if src := byName[tt.source]; src.Labels[tt.label] != "true" || len(src.Rules) == 0 {
			t.Errorf("%s: labels %v, %d rules; want %s=true and rules", tt.source, src.Labels, len(src.Rules), tt.label)
		}
	}
}
