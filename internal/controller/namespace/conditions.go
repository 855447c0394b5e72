package namespace

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// conditionTypes are the namespace conditions the controller maintains, in
// upstream's order.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// okReasons and okMessages are the conditions' False (all is well) forms.
var (
	okReasons = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	okMessages = map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "All content successfully removed",
		corev1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
)

// conditionUpdater collects what went wrong in one deletion pass and turns
// it into the namespace's conditions.
type conditionUpdater struct {
	now           func() time.Time
	newConditions []corev1.NamespaceCondition
	deleteErrors  []error
}

func (u *conditionUpdater) failed(t corev1.NamespaceConditionType, reason, message string) {
	u.newConditions = append(u.newConditions, corev1.NamespaceCondition{
		Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(u.now()), Reason: reason, Message: message,
	})
}

// processDiscoverResourcesErr records a discovery failure.
func (u *conditionUpdater) processDiscoverResourcesErr(err error) {
	msg := err.Error()
	var groupErr *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &groupErr) {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groupErr.Groups), err)
	}
	u.failed(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

// processGroupVersionErr records a group version discovery could not parse.
func (u *conditionUpdater) processGroupVersionErr(err error) {
	u.failed(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

// processDeleteContentErr records a resource whose content could not be
// deleted.
func (u *conditionUpdater) processDeleteContentErr(err error) {
	u.deleteErrors = append(u.deleteErrors, err)
}

// processContentTotals records the content and finalizers that remain.
func (u *conditionUpdater) processContentTotals(totals contentTotals) {
	if len(totals.remaining) > 0 {
		var parts []string
		for gvr, n := range totals.remaining {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
			}
		}
		sort.Strings(parts)
		u.failed(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(totals.finalizers) > 0 {
		var parts []string
		for f, n := range totals.finalizers {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
			}
		}
		sort.Strings(parts)
		u.failed(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+strings.Join(parts, ", "))
	}
}

// update writes the conditions into status: a failure for each problem
// recorded, the ok form for the others. It reports whether status changed.
func (u *conditionUpdater) update(status *corev1.NamespaceStatus) bool {
	if len(u.deleteErrors) > 0 && getCondition(u.newConditions, corev1.NamespaceDeletionContentFailure) == nil {
		msgs := make([]string, 0, len(u.deleteErrors))
		for _, err := range u.deleteErrors {
			msgs = append(msgs, err.Error())
		}
		sort.Strings(msgs)
		u.failed(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(u.deleteErrors), strings.Join(msgs, ", ")))
	}
	changed := false
	for _, t := range conditionTypes {
		want := getCondition(u.newConditions, t)
		if want == nil {
			want = &corev1.NamespaceCondition{
				Type: t, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(u.now()), Reason: okReasons[t], Message: okMessages[t],
			}
		}
		have := getCondition(status.Conditions, t)
		switch {
		case have == nil:
			status.Conditions = append(status.Conditions, *want)
			changed = true
		case have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message:
			if have.Status != want.Status {
				have.LastTransitionTime = want.LastTransitionTime
			}
			have.Status, have.Reason, have.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func getCondition(conditions []corev1.NamespaceCondition, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
