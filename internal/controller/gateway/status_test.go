package gateway

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"orch/internal/gateway"
)

func TestMerge(t *testing.T) {
	then := metav1.NewTime(time.Unix(1e9, 0))
	w := &writer{now: time.Unix(2e9, 0)}
	old := []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, LastTransitionTime: then},
		{Type: "ResolvedRefs", Status: metav1.ConditionTrue, LastTransitionTime: then},
		{Type: "Gone", Status: metav1.ConditionTrue, LastTransitionTime: then},
	}
	got := w.merge(old, []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound"},
		{Type: "Programmed", Status: metav1.ConditionTrue},
	})
	if len(got) != 3 {
		t.Fatalf("conditions %+v, want the three asked for", got)
	}
	if !got[0].LastTransitionTime.Equal(&then) {
		t.Errorf("an unchanged condition's time moved: %v", got[0].LastTransitionTime)
	}
	for _, c := range got[1:] {
		if c.LastTransitionTime.Unix() != 2e9 {
			t.Errorf("%s changed or is new: time %v, want now", c.Type, c.LastTransitionTime)
		}
	}
}

func TestRouteParents(t *testing.T) {
	w := &writer{now: time.Unix(2e9, 0)}
	theirs := gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "other"}, ControllerName: "example.com/other"}
	stale := gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "removed"}, ControllerName: gateway.ControllerName}
	r := &gwv1.HTTPRoute{Status: gwv1.HTTPRouteStatus{RouteStatus: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{theirs, stale}}}}
	ours := gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: gateway.ControllerName,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}}
	got := w.routeParents(r, []gwv1.RouteParentStatus{ours})
	if len(got) != 2 || got[0].ControllerName != "example.com/other" || got[1].ParentRef.Name != "gw" {
		t.Fatalf("parents %+v, want the other controller's kept, ours replaced (the stale one gone)", got)
	}
	if got[1].Conditions[0].LastTransitionTime.IsZero() {
		t.Error("our condition has no lastTransitionTime")
	}
	// A route of no orch Gateway, without status: none is written.
	if got := w.routeParents(&gwv1.HTTPRoute{}, nil); got != nil {
		t.Errorf("parents %+v for a route with none", got)
	}
}
