package eventsk8sio

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConversionRoundTrips(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	micro := metav1.NewMicroTime(now.Time)
	full := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:               metav1.ObjectMeta{Name: "e1", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		EventTime:                micro,
		Series:                   &eventsv1.EventSeries{Count: 3, LastObservedTime: micro},
		ReportingController:      "example.com/ctl",
		ReportingInstance:        "ctl-1",
		Action:                   "Scale",
		Reason:                   "Scaled",
		Regarding:                corev1.ObjectReference{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u1", APIVersion: "apps/v1"},
		Related:                  &corev1.ObjectReference{Kind: "ReplicaSet", Name: "web-1"},
		Note:                     "scaled to 3",
		Type:                     corev1.EventTypeNormal,
		DeprecatedSource:         corev1.EventSource{Component: "ctl", Host: "n1"},
		DeprecatedFirstTimestamp: now,
		DeprecatedLastTimestamp:  now,
		DeprecatedCount:          3,
	}
	core := ToCore(full)
	if core.Message != "scaled to 3" || core.InvolvedObject.Name != "web" || core.Count != 3 || core.Source.Host != "n1" ||
		core.Series == nil || core.Series.Count != 3 || core.Related.Name != "web-1" || core.APIVersion != "v1" {
		t.Errorf("ToCore = %+v", core)
	}
	if diff := cmp.Diff(full, FromCore(core)); diff != "" {
		t.Errorf("events.k8s.io → core → events.k8s.io changed (-want +got):\n%s", diff)
	}
	core.Related.Name = "changed"
	if full.Related.Name != "web-1" {
		t.Error("ToCore shares Related with its argument")
	}
	if back := ToCore(FromCore(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})); back.Series != nil || back.Related != nil || back.Name != "bare" {
		t.Errorf("a bare event came back as %+v", back)
	}
}
