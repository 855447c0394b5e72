package disruption

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newStatus is the status pdb should have; conditions other than
// DisruptionAllowed are kept.
func newStatus(pdb *policyv1.PodDisruptionBudget, c counts, healthy int32, disrupted map[string]metav1.Time) policyv1.PodDisruptionBudgetStatus {
	status := policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy: healthy, DesiredHealthy: c.desired, ExpectedPods: c.expected,
		DisruptionsAllowed: disruptionsAllowed(c, healthy), DisruptedPods: disrupted,
		ObservedGeneration: pdb.Generation,
		Conditions:         append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	if status.DisruptionsAllowed > 0 {
		setCondition(&status, metav1.ConditionTrue, policyv1.SufficientPodsReason, "")
	} else {
		setCondition(&status, metav1.ConditionFalse, policyv1.InsufficientPodsReason, "")
	}
	return status
}

// setCondition sets the DisruptionAllowed condition, moving its transition
// time only when its status changes.
func setCondition(status *policyv1.PodDisruptionBudgetStatus, value metav1.ConditionStatus, reason, message string) {
	if status.Conditions == nil {
		status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: value, Reason: reason, Message: message,
		ObservedGeneration: status.ObservedGeneration,
	})
}

// upToDate is true when pdb already has status (the condition is compared
// by status, reason and generation only, so a transition time never forces
// a write).
func upToDate(pdb *policyv1.PodDisruptionBudget, status policyv1.PodDisruptionBudgetStatus) bool {
	cur := pdb.Status
	cond := apimeta.FindStatusCondition(cur.Conditions, policyv1.DisruptionAllowedCondition)
	want := apimeta.FindStatusCondition(status.Conditions, policyv1.DisruptionAllowedCondition)
	return cur.CurrentHealthy == status.CurrentHealthy && cur.DesiredHealthy == status.DesiredHealthy &&
		cur.ExpectedPods == status.ExpectedPods && cur.DisruptionsAllowed == status.DisruptionsAllowed &&
		cur.ObservedGeneration == status.ObservedGeneration &&
		apiequality.Semantic.DeepEqual(nonNil(cur.DisruptedPods), nonNil(status.DisruptedPods)) &&
		cond != nil && cond.Status == want.Status && cond.Reason == want.Reason
}

func nonNil(m map[string]metav1.Time) map[string]metav1.Time {
	if m == nil {
		return map[string]metav1.Time{}
	}
	return m
}

// writeStatus writes status unless pdb already has it.
func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, status policyv1.PodDisruptionBudgetStatus) error {
	if upToDate(pdb, status) {
		return nil
	}
	updated := pdb.DeepCopy()
	updated.Status = status
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}
