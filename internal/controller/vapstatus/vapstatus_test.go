package vapstatus_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/vapstatus"
	"orch/internal/envtest"
)

func policy(expression string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression}},
		}}
}

// TestTypeChecking: a policy's expressions are checked for its
// generation: a sound one gets an empty typeChecking, one naming a field
// Deployments do not have gets a warning for that expression.
func TestTypeChecking(t *testing.T) {
	env := controllertest.New(t)
	c := vapstatus.New(env.Context)
	ctx := env.Start(t, c)
	policies := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	checked := func(what string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		t.Helper()
		var got *admissionregistrationv1.ValidatingAdmissionPolicy
		envtest.Eventually(t, what, func() (bool, error) {
			p, err := policies.Get(ctx, "replicas", metav1.GetOptions{})
			got = p
			return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil, err
		})
		return got
	}
	if _, err := policies.Create(ctx, policy("object.spec.replicas > 1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := checked("the sound policy type checked"); len(got.Status.TypeChecking.ExpressionWarnings) != 0 {
		t.Errorf("typeChecking = %+v, want no warnings", got.Status.TypeChecking)
	}

	envtest.Update(t, "replicas", policies.Get, policies.Update, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		p.Spec.Validations[0].Expression = "object.spec.replicas > 1 && object.spec.nope == 2"
	})
	got := checked("the broken policy type checked")
	if len(got.Status.TypeChecking.ExpressionWarnings) != 1 {
		t.Fatalf("typeChecking = %+v, want one warning", got.Status.TypeChecking)
	}
	w := got.Status.TypeChecking.ExpressionWarnings[0]
	if w.FieldRef != "spec.validations[0].expression" || !strings.Contains(w.Warning, "undefined field 'nope'") {
		t.Errorf("warning = %+v, want spec.validations[0].expression: undefined field 'nope'", w)
	}
}
