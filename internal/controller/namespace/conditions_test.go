package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

func TestConditionUpdater(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	allOK := func(at time.Time) []corev1.NamespaceCondition {
		var out []corev1.NamespaceCondition
		for _, ct := range conditionTypes {
			out = append(out, corev1.NamespaceCondition{Type: ct, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at), Reason: okReasons[ct], Message: okMessages[ct]})
		}
		return out
	}
	type want struct {
		status          corev1.ConditionStatus
		reason, message string
		transition      time.Time
	}
	tests := []struct {
		name    string
		before  []corev1.NamespaceCondition
		process func(u *conditionUpdater)
		changed bool
		want    map[corev1.NamespaceConditionType]want
	}{
		{
			name:    "all well on a fresh namespace",
			process: func(u *conditionUpdater) {},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceContentRemaining: {corev1.ConditionFalse, "ContentRemoved", "All content successfully removed", t1},
			},
		},
		{
			name:    "nothing new",
			before:  allOK(t0),
			process: func(u *conditionUpdater) {},
			changed: false,
		},
		{
			name:   "content and finalizers remain",
			before: allOK(t0),
			process: func(u *conditionUpdater) {
				u.processContentTotals(contentTotals{
					remaining: map[schema.GroupVersionResource]int{
						{Group: "apps", Version: "v1", Resource: "deployments"}: 1,
						{Version: "v1", Resource: "configmaps"}:                 2,
					},
					finalizers: map[string]int{"b.io/x": 1, "a.io/y": 2},
				})
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceContentRemaining: {corev1.ConditionTrue, "SomeResourcesRemain",
					"Some resources are remaining: configmaps. has 2 resource instances, deployments.apps has 1 resource instances", t1},
				corev1.NamespaceFinalizersRemaining: {corev1.ConditionTrue, "SomeFinalizersRemain",
					"Some content in the namespace has finalizers remaining: a.io/y in 2 resource instances, b.io/x in 1 resource instances", t1},
				corev1.NamespaceDeletionContentFailure: {corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization", t0},
			},
		},
		{
			name:   "delete errors",
			before: allOK(t0),
			process: func(u *conditionUpdater) {
				u.processDeleteContentErr(errors.New("b failed"))
				u.processDeleteContentErr(errors.New("a failed"))
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceDeletionContentFailure: {corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: a failed, b failed", t1},
			},
		},
		{
			name:   "partial discovery",
			before: allOK(t0),
			process: func(u *conditionUpdater) {
				u.processDiscoverResourcesErr(&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("boom")}})
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionTrue, "DiscoveryFailed",
					"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: boom", t1},
			},
		},
		{
			name: "message changes, status does not: transition time kept",
			before: []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(t0), Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 2 resource instances"}},
			process: func(u *conditionUpdater) {
				u.processContentTotals(contentTotals{remaining: map[schema.GroupVersionResource]int{{Version: "v1", Resource: "pods"}: 1}})
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceContentRemaining: {corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances", t0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &conditionUpdater{now: func() time.Time { return t1 }}
			tt.process(u)
			status := corev1.NamespaceStatus{Conditions: tt.before}
			if changed := u.update(&status); changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if len(status.Conditions) != len(conditionTypes) {
				t.Errorf("%d conditions, want %d", len(status.Conditions), len(conditionTypes))
			}
			for ct, w := range tt.want {
				c := getCondition(status.Conditions, ct)
				if c == nil {
					t.Fatalf("no %s condition", ct)
				}
				got := want{c.Status, c.Reason, c.Message, c.LastTransitionTime.Time}
				if !got.transition.Equal(w.transition) || got.status != w.status || got.reason != w.reason || got.message != w.message {
					t.Errorf("%s = %+v, want %+v", ct, got, w)
				}
			}
		})
	}
}
