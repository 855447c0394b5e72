package rbac

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/authz"
)

func TestUpdateReplacesAndDeleteRemoves(t *testing.T) {
	jane := user("jane", "devs")
	getPods := resourceRequest(jane, "get", "ns1", "", "pods", "", "p")
	getSecrets := resourceRequest(jane, "get", "ns1", "", "secrets", "", "s")
	updateCMs := resourceRequest(jane, "update", "ns1", "", "configmaps", "", "c")

	type check struct {
		attrs authz.Attributes
		want  authz.Decision
	}
	steps := []struct {
		name   string
		update any
		delete any
		checks []check
	}{
		{"nothing", nil, nil, []check{{getPods, authz.NoOpinion}}},
		{"binding before its role", clusterBinding("devs", "reader", groupSubject("devs")), nil,
			[]check{{getPods, authz.NoOpinion}}},
		{"role arrives", clusterRole("reader", rule(l("get"), l(""), l("pods"))), nil,
			[]check{{getPods, authz.Allow}, {getSecrets, authz.NoOpinion}}},
		{"role replaced", clusterRole("reader", rule(l("get"), l(""), l("secrets"))), nil,
			[]check{{getPods, authz.NoOpinion}, {getSecrets, authz.Allow}}},
		{"binding replaced with other subjects", clusterBinding("devs", "reader", groupSubject("ops")), nil,
			[]check{{getSecrets, authz.NoOpinion}}},
		{"binding replaced back", clusterBinding("devs", "reader", userSubject("jane")), nil,
			[]check{{getSecrets, authz.Allow}}},
		{"cluster role deleted", nil, clusterRole("reader"),
			[]check{{getSecrets, authz.NoOpinion}}},
		{"cluster role back", clusterRole("reader", rule(l("get"), l(""), l("secrets"))), nil,
			[]check{{getSecrets, authz.Allow}}},
		{"cluster binding deleted", nil, clusterBinding("devs", ""),
			[]check{{getSecrets, authz.NoOpinion}}},
		{"role", role("ns1", "edit", rule(l("update"), l(""), l("configmaps"))), nil,
			[]check{{updateCMs, authz.NoOpinion}}},
		{"role binding", roleBinding("ns1", "edit", "Role", "edit", groupSubject("devs")), nil,
			[]check{{updateCMs, authz.Allow}}},
		{"second role binding", roleBinding("ns1", "edit2", "Role", "edit", userSubject("jane")), nil,
			[]check{{updateCMs, authz.Allow}}},
		{"role binding replaced", roleBinding("ns1", "edit", "Role", "edit", groupSubject("ops")), nil,
			[]check{{updateCMs, authz.Allow}}}, // still edit2
		{"role binding deleted", nil, roleBinding("ns1", "edit2", "", ""),
			[]check{{updateCMs, authz.NoOpinion}}},
		{"role binding replaced back", roleBinding("ns1", "edit", "Role", "edit", groupSubject("devs")), nil,
			[]check{{updateCMs, authz.Allow}}},
		{"role deleted", nil, role("ns1", "edit"),
			[]check{{updateCMs, authz.NoOpinion}}},
		{"role of another namespace", role("ns2", "edit", rule(l("update"), l(""), l("configmaps"))), nil,
			[]check{{updateCMs, authz.NoOpinion}}},
		{"other types ignored", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "edit"}}, &corev1.ConfigMap{},
			[]check{{updateCMs, authz.NoOpinion}}},
		{"deleting what is not there", nil, roleBinding("ns3", "x", "", ""),
			[]check{{updateCMs, authz.NoOpinion}}},
	}
	a := New()
	for _, s := range steps {
		if s.update != nil {
			a.Update(s.update)
		}
		if s.delete != nil {
			a.Delete(s.delete)
		}
		for _, c := range s.checks {
			if d, _, _ := a.Authorize(context.Background(), c.attrs); d != c.want {
				t.Errorf("after %q: %s %s = %v, want %v", s.name, c.attrs.Verb, c.attrs.Resource, d, c.want)
			}
		}
	}
	if len(a.bindings) != 1 || len(a.bindings["ns1"]) != 1 || len(a.clusterBindings) != 0 {
		t.Errorf("left bindings %v and cluster bindings %v, want one in ns1 and none", a.bindings, a.clusterBindings)
	}
}

// Run with -race: updates and deletes while requests are authorized.
func TestConcurrentUse(t *testing.T) {
	a := newAuthorizer(clusterRole("reader", rule(l("get"), l(""), l("pods"))))
	attrs := resourceRequest(user("jane"), "get", "ns1", "", "pods", "", "p")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if _, _, err := a.Authorize(context.Background(), attrs); err != nil {
					t.Error(err)
				}
				_, _ = a.RulesFor(attrs.User, "ns1")
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			a.Update(clusterBinding("b", "reader", userSubject("jane")))
			a.Update(roleBinding("ns1", "b", "ClusterRole", "reader", userSubject("jane")))
			a.Delete(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
		}
	})
	wg.Wait()
	if d, _, _ := a.Authorize(context.Background(), attrs); d != authz.Allow {
		t.Errorf("after the updates: %v, want allow by the role binding", d)
	}
}
