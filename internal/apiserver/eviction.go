package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"orch/internal/storage"
)

// Eviction follows upstream's pods/eviction (pkg/registry/core/pod/storage/
// eviction.go): a pod that is pending, finished or already terminating is
// deleted without looking at budgets; otherwise the one PodDisruptionBudget
// selecting the pod must allow a disruption, which is taken from it
// (disruptionsAllowed decremented, the pod recorded in disruptedPods) in a
// conditional write of the budget's status before the pod gets a
// DisruptionTarget condition and is deleted.

const (
	// evictionRetries bounds the retries after write conflicts.
	evictionRetries = 20
	// maxDisruptedPods is upstream's limit on status.disruptedPods: past it
	// evictions are refused until the disruption controller catches up.
	maxDisruptedPods = 2000
	// evictionManager is the field manager of the budget status writes.
	evictionManager = "kube-apiserver"
	// violationMessage is upstream's refusal, word for word.
	violationMessage = "Cannot evict pod as it would violate the pod's disruption budget."
)

// evict is pods/eviction.
func (s *Server) evict(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	eviction, opts, err := s.readEviction(r, info)
	if err == nil {
		// Admission extensions see the Eviction; the pod's update and
		// delete that carry it out are the server's, as upstream's.
		err = s.admitExt(r.Context(), admissionRequest{rs: rs, kind: eviction.GroupVersionKind(), op: admission.Create,
			subresource: "eviction", obj: eviction, namespace: info.Namespace, name: info.Name, dryRun: len(opts.DryRun) > 0,
			options: &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: opts.DryRun}})
	}
	if err == nil {
		var failure *metav1.Status
		if failure, err = s.evictPod(withExtAdmitted(r.Context()), rs, info, opts); failure != nil {
			s.respond(w, r, int(failure.Code), failure)
			return
		}
	}
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// readEviction decodes the Eviction (typed) and returns it with its
// DeleteOptions, the request's dryRun merged in (they must agree when both are given).
func (s *Server) readEviction(r *http.Request, info requestInfo) (*policyv1.Eviction, metav1.DeleteOptions, error) {
	wr, err := parseWriteRequest(r)
	if err != nil {
		return nil, metav1.DeleteOptions{}, err
	}
	data, err := readBody(r)
	if err != nil {
		return nil, metav1.DeleteOptions{}, err
	}
	eviction := &policyv1.Eviction{}
	if err := s.decodeInto(r, data, eviction); err != nil {
		return nil, metav1.DeleteOptions{}, err
	}
	eviction.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("Eviction"))
	if eviction.Name != info.Name {
		return nil, metav1.DeleteOptions{}, badRequest("name in URL does not match name in Eviction object")
	}
	var queryDryRun []string
	if wr.dryRun {
		queryDryRun = []string{metav1.DryRunAll}
	}
	opts := metav1.DeleteOptions{}
	if eviction.DeleteOptions != nil {
		opts = *eviction.DeleteOptions
	}
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = queryDryRun
	case len(queryDryRun) > 0 && !reflect.DeepEqual(queryDryRun, opts.DryRun):
		return nil, opts, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", queryDryRun, opts.DryRun)
	}
	for _, d := range opts.DryRun {
		if d != metav1.DryRunAll {
			return nil, opts, badRequest("dryRun must be %q, not %q", metav1.DryRunAll, d)
		}
	}
	return eviction, opts, nil
}

// evictPod runs the eviction. A non-nil Status is upstream's 500 answer
// for a pod that more than one budget selects.
func (s *Server) evictPod(ctx context.Context, rs *resourceStore, info requestInfo, opts metav1.DeleteOptions) (*metav1.Status, error) {
	pod, deleted, err := s.deleteIfBudgetIrrelevant(ctx, rs, info, opts)
	if err != nil || deleted {
		return nil, err
	}
	budgets, err := s.budgetsSelecting(ctx, pod)
	if err != nil {
		return nil, err
	}
	if len(budgets) > 1 {
		return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}, nil
	}
	if len(budgets) == 0 {
		return nil, s.markAndDelete(ctx, rs, pod, opts)
	}
	pdb := budgets[0]
	if unhealthyMayGo(pod, pdb) {
		// The pod counts for nothing in the budget; delete it only if it is
		// still the unready pod judged here.
		guarded := withResourceVersion(opts, pod.ResourceVersion)
		err := s.markAndDelete(ctx, rs, pod, guarded)
		if isConflict(err) && resourceVersionUnset(opts) {
			return nil, budgetBusy(pdb.Name)
		}
		return nil, err
	}
	if err := s.takeDisruption(ctx, pdb, pod.Name, len(opts.DryRun) > 0); err != nil {
		return nil, err
	}
	return nil, s.markAndDelete(ctx, rs, pod, opts)
}

// deleteIfBudgetIrrelevant deletes a pod that budgets do not protect
// (pending, finished or terminating) and otherwise returns the pod. The
// delete is conditional on the pod not having changed since it was read,
// unless the pod is finished or terminating.
func (s *Server) deleteIfBudgetIrrelevant(ctx context.Context, rs *resourceStore, info requestInfo, opts metav1.DeleteOptions) (*corev1.Pod, bool, error) {
	for attempt := 0; ; attempt++ {
		obj, err := rs.get(ctx, info.Namespace, info.Name)
		if err != nil {
			return nil, false, err
		}
		pod := obj.(*corev1.Pod)
		if !budgetIrrelevant(pod) {
			return pod, false, nil
		}
		guarded := opts
		if pod.Status.Phase == corev1.PodPending && pod.DeletionTimestamp == nil && resourceVersionUnset(opts) {
			guarded = withResourceVersion(opts, pod.ResourceVersion)
		}
		err = s.markAndDelete(ctx, rs, pod, guarded)
		if isConflict(err) && resourceVersionUnset(opts) && attempt < evictionRetries {
			continue
		}
		return pod, err == nil, err
	}
}

// budgetIrrelevant is upstream's canIgnorePDB.
func budgetIrrelevant(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// unhealthyMayGo is true for an unready pod that the budget lets go without
// taking a disruption: always with AlwaysAllow, and with IfHealthyBudget (the
// default) while the budget has all the healthy pods it wants.
func unhealthyMayGo(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) bool {
	if podReady(pod) {
		return false
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// budgetsSelecting lists the budgets of the pod's namespace whose selector
// matches it (an empty selector matches every pod, as in policy/v1).
func (s *Server) budgetsSelecting(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	store := s.resources[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]
	if store == nil {
		return nil, nil
	}
	sel, err := store.newSelection("", "")
	if err != nil {
		return nil, err
	}
	list, err := s.listObjects(ctx, store, pod.Namespace, metav1.ListOptions{}, sel)
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	eachItem(list, func(obj runtime.Object) {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && pdb.Namespace == pod.Namespace && selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	})
	return out, nil
}

// takeDisruption checks that the budget allows a disruption and, unless
// dryRun, takes it: one conditional write of the budget's status that
// decrements disruptionsAllowed and records the pod in disruptedPods,
// re-read and retried on conflicts.
func (s *Server) takeDisruption(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	store := s.resources[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]
	info := requestInfo{Namespace: pdb.Namespace, Name: pdb.Name}
	_, err := s.retryUpdate(ctx, store, info, true, func(old runtime.Object) (runtime.Object, error) {
		current := old.(*policyv1.PodDisruptionBudget)
		if err := disruptionAllowed(current); err != nil {
			return nil, err
		}
		updated := current.DeepCopy()
		updated.Status.DisruptionsAllowed--
		if updated.Status.DisruptionsAllowed == 0 {
			apimeta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
				Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
				Reason: policyv1.InsufficientPodsReason, ObservedGeneration: updated.Status.ObservedGeneration,
			})
		}
		if updated.Status.DisruptedPods == nil {
			updated.Status.DisruptedPods = map[string]metav1.Time{}
		}
		updated.Status.DisruptedPods[podName] = metav1.NewTime(time.Now())
		return updated, nil
	}, "status", writeRequest{manager: evictionManager, dryRun: dryRun})
	if errors.Is(err, storage.ErrConflict) {
		return apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdb.Name), 10)
	}
	return err
}

// disruptionAllowed is upstream's check before a disruption is taken, with
// its refusals and their DisruptionBudget causes.
func disruptionAllowed(pdb *policyv1.PodDisruptionBudget) error {
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		return budgetBusy(pdb.Name)
	case pdb.Status.DisruptionsAllowed < 0:
		return budgetForbids(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		return budgetForbids(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	case pdb.Status.DisruptionsAllowed == 0:
		err := apierrors.NewTooManyRequests(violationMessage, 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: noDisruptionCause(pdb)})
		return err
	}
	return nil
}

// noDisruptionCause explains why a budget allows no disruption: a failed
// sync first (its counts cannot be trusted then), then the counts.
func noDisruptionCause(pdb *policyv1.PodDisruptionBudget) string {
	cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	explained := cond != nil && cond.Status == metav1.ConditionFalse && cond.Message != ""
	switch {
	case explained && cond.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, cond.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case explained:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, cond.Reason, cond.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}

// budgetForbids is the 403 for a budget in a state that allows nothing.
func budgetForbids(name, reason, cause string) error {
	err := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), name, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", name, cause)})
	return err
}

// budgetBusy is the 429 for a budget the controller has not caught up with.
func budgetBusy(name string) error {
	err := apierrors.NewTooManyRequests(violationMessage, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// markAndDelete gives the pod the DisruptionTarget condition (unless dry
// run) and deletes it with opts. A resourceVersion precondition is checked
// against the pod before the condition is written and then moved to the
// version that write produced.
func (s *Server) markAndDelete(ctx context.Context, rs *resourceStore, pod *corev1.Pod, opts metav1.DeleteOptions) error {
	if len(opts.DryRun) == 0 {
		info := requestInfo{Namespace: pod.Namespace, Name: pod.Name}
		marked, err := s.retryUpdate(ctx, rs, info, true, func(old runtime.Object) (runtime.Object, error) {
			if err := checkPreconditions(rs, old, opts.Preconditions); err != nil {
				return nil, err
			}
			updated := old.DeepCopyObject().(*corev1.Pod)
			setDisruptionTarget(updated)
			return updated, nil
		}, "status", writeRequest{manager: evictionManager})
		if err != nil {
			return err
		}
		if !resourceVersionUnset(opts) {
			opts = withResourceVersion(opts, mustAccessor(marked).GetResourceVersion())
		}
	}
	_, _, err := s.deleteObject(ctx, rs, pod.Namespace, pod.Name, opts)
	return err
}

// setDisruptionTarget sets DisruptionTarget=True as the eviction API does,
// moving the transition time only when the status changes.
func setDisruptionTarget(pod *corev1.Pod) {
	want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.Now().Rfc3339Copy()}
	for i, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
		want.LastProbeTime, want.ObservedGeneration = c.LastProbeTime, c.ObservedGeneration
		pod.Status.Conditions[i] = want
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
}

func withResourceVersion(opts metav1.DeleteOptions, rv string) metav1.DeleteOptions {
	pre := metav1.Preconditions{}
	if opts.Preconditions != nil {
		pre = *opts.Preconditions
	}
	pre.ResourceVersion = &rv
	opts.Preconditions = &pre
	return opts
}

func resourceVersionUnset(opts metav1.DeleteOptions) bool {
	return opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil
}

func isConflict(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, storage.ErrConflict)
}
