package clusterroleaggregation

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregating(name string, labels map[string]string, selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r := role(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
	return r
}

func matching(key, value string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
}

func TestRules(t *testing.T) {
	x := map[string]string{"x": "true"}
	y := map[string]string{"y": "true"}
	xy := map[string]string{"x": "true", "y": "true"}
	tests := []struct {
		name  string
		role  *rbacv1.ClusterRole
		all   []*rbacv1.ClusterRole
		rules []rbacv1.PolicyRule
	}{
		{
			name: "roles in name order, rules in order",
			role: aggregating("agg", nil, matching("x", "true")),
			all: []*rbacv1.ClusterRole{
				role("b", x, rule("get", "pods"), rule("list", "pods")),
				role("a", x, rule("get", "secrets")),
				role("c", nil, rule("delete", "nodes")),
			},
			rules: []rbacv1.PolicyRule{rule("get", "secrets"), rule("get", "pods"), rule("list", "pods")},
		},
		{
			name: "each rule once",
			role: aggregating("agg", nil, matching("x", "true")),
			all: []*rbacv1.ClusterRole{
				role("a", x, rule("get", "pods"), rule("get", "pods")),
				role("b", x, rule("list", "pods"), rule("get", "pods")),
			},
			rules: []rbacv1.PolicyRule{rule("get", "pods"), rule("list", "pods")},
		},
		{
			name: "selector by selector; a role matching two counts once",
			role: aggregating("agg", nil, matching("y", "true"), matching("x", "true")),
			all: []*rbacv1.ClusterRole{
				role("a", x, rule("get", "a")),
				role("b", xy, rule("get", "b")),
				role("c", y, rule("get", "c")),
			},
			rules: []rbacv1.PolicyRule{rule("get", "b"), rule("get", "c"), rule("get", "a")},
		},
		{
			name: "not itself, even when it matches",
			role: aggregating("agg", x, matching("x", "true")),
			all: []*rbacv1.ClusterRole{
				aggregating("agg", x, matching("x", "true")),
				role("a", x, rule("get", "a")),
			},
			rules: []rbacv1.PolicyRule{rule("get", "a")},
		},
		{
			name: "another aggregated role's rules are taken in",
			role: aggregating("admin", nil, matching("to-admin", "true")),
			all: []*rbacv1.ClusterRole{
				func() *rbacv1.ClusterRole {
					r := aggregating("edit", map[string]string{"to-admin": "true"}, matching("to-edit", "true"))
					r.Rules = []rbacv1.PolicyRule{rule("update", "pods")}
					return r
				}(),
			},
			rules: []rbacv1.PolicyRule{rule("update", "pods")},
		},
		{
			name:  "nothing matches",
			role:  aggregating("agg", nil, matching("x", "true")),
			all:   []*rbacv1.ClusterRole{role("a", y, rule("get", "a"))},
			rules: []rbacv1.PolicyRule{},
		},
	}
	for _, tt := range tests {
		got, err := Rules(tt.role, tt.all)
		if err != nil || !reflect.DeepEqual(got, tt.rules) {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.rules)
		}
	}

	bad := aggregating("agg", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Sometimes"}}})
	if _, err := Rules(bad, nil); err == nil {
		t.Errorf("an invalid selector was accepted")
	}
}

// TestAggregation: agg selects x=true and takes in the rules of the
// labelled roles, follows their changes, and lets go of a role that loses
// its label.
func TestAggregation(t *testing.T) {
	env := controllertest.New(t)
	roles := env.Context.Client.RbacV1().ClusterRoles()
	x := map[string]string{"x": "true"}
	envtest.Create(t, roles.Create, aggregating("agg", nil, matching("x", "true")))
	envtest.Create(t, roles.Create, role("pod-reader", x, rule("get", "pods"), rule("list", "pods")))
	envtest.Create(t, roles.Create, role("node-reader", x, rule("get", "nodes")))
	envtest.Create(t, roles.Create, role("unlabelled", nil, rule("delete", "pods")))
	env.Start(t, New(env.Context))

	want := func(rules ...rbacv1.PolicyRule) func() (bool, error) {
		return func() (bool, error) {
			agg, err := roles.Get(context.Background(), "agg", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return reflect.DeepEqual(agg.Rules, rules), nil
		}
	}
	envtest.Eventually(t, "agg has the rules of both labelled roles",
		want(rule("get", "nodes"), rule("get", "pods"), rule("list", "pods")))
	agg := envtest.Get(t, roles.Get, "agg")
	if !managedBy(agg, FieldManager) {
		t.Errorf("agg's rules are not managed by %s: %+v", FieldManager, agg.ManagedFields)
	}

	envtest.Update(t, "pod-reader", roles.Get, roles.Update, func(r *rbacv1.ClusterRole) {
		r.Rules = []rbacv1.PolicyRule{rule("watch", "pods")}
	})
	envtest.Eventually(t, "agg follows pod-reader's new rules", want(rule("get", "nodes"), rule("watch", "pods")))

	envtest.Update(t, "node-reader", roles.Get, roles.Update, func(r *rbacv1.ClusterRole) { r.Labels = nil })
	envtest.Eventually(t, "node-reader's rules leave agg with its label", want(rule("watch", "pods")))

	if err := roles.Delete(context.Background(), "pod-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "agg has no rules once no role matches", want())
}

func managedBy(obj metav1.Object, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
