package eventsk8sio

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// storedAs keeps events.k8s.io Events as the core Events they are another
// version of, as upstream does (the two share one store).
func storedAs() *registry.StoredVersion {
	return &registry.StoredVersion{
		GroupVersion: corev1.SchemeGroupVersion, Kind: "Event", Resource: "events",
		New: func() runtime.Object { return &corev1.Event{} },
		ToStored: func(obj runtime.Object) (runtime.Object, error) {
			e, ok := obj.(*eventsv1.Event)
			if !ok {
				return nil, fmt.Errorf("not an events.k8s.io Event: %T", obj)
			}
			return ToCore(e), nil
		},
		FromStored: func(obj runtime.Object) (runtime.Object, error) {
			e, ok := obj.(*corev1.Event)
			if !ok {
				return nil, fmt.Errorf("not a core Event: %T", obj)
			}
			return FromCore(e), nil
		},
	}
}

// ToCore is e as a core/v1 Event: regarding is the involved object, the
// note the message, the deprecated fields the core ones.
func ToCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metaOf(corev1.SchemeGroupVersion.String()),
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	return out
}

// FromCore is the core Event e as an events.k8s.io/v1 Event.
func FromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metaOf(eventsv1.SchemeGroupVersion.String()),
		ObjectMeta:               *e.ObjectMeta.DeepCopy(),
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	return out
}

func metaOf(apiVersion string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: "Event"}
}
