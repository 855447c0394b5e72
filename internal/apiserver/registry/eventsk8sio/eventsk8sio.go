// Package eventsk8sio is the registry entry for events.k8s.io/v1 events, the
// newer API over the same events as core/v1 (package events): they are
// stored as core Events and converted (conversion.go). It validates as
// upstream does for requests made through events.k8s.io and prints the same
// table as core events.
package eventsk8sio

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// Resource returns the events.k8s.io events entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     eventsv1.SchemeGroupVersion,
		Resource:         "events",
		Kind:             "Event",
		SingularName:     "event",
		Namespaced:       true,
		ShortNames:       []string{"ev"},
		New:              func() runtime.Object { return &eventsv1.Event{} },
		NewList:          func() runtime.Object { return &eventsv1.EventList{} },
		Validate:         validate,
		ValidateUpdate:   validateUpdate,
		Columns:          columns(),
		Row:              row,
		SelectableFields: selectableFields,
		StoredAs:         storedAs(),
	}
}

// selectableFields are the fields upstream lets events.k8s.io clients select
// on, under their events.k8s.io names.
func selectableFields(obj runtime.Object) fields.Set {
	e := obj.(*eventsv1.Event)
	r := e.Regarding
	return fields.Set{
		"reason":                    e.Reason,
		"type":                      e.Type,
		"reportingController":       e.ReportingController,
		"regarding.kind":            r.Kind,
		"regarding.namespace":       r.Namespace,
		"regarding.name":            r.Name,
		"regarding.uid":             string(r.UID),
		"regarding.apiVersion":      r.APIVersion,
		"regarding.resourceVersion": r.ResourceVersion,
		"regarding.fieldPath":       r.FieldPath,
	}
}

// columns are those of core events: upstream prints both APIs from the same
// internal type. The name comes last, as a wide column.
func columns() []metav1.TableColumnDefinition {
	ev := corev1.Event{}.SwaggerDoc()
	ref := corev1.ObjectReference{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: ev["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: ev["type"]},
		{Name: "Reason", Type: "string", Description: ev["reason"]},
		{Name: "Object", Type: "string", Description: ev["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: ref["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: ev["source"]},
		{Name: "Message", Type: "string", Description: ev["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: ev["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: ev["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	e := obj.(*eventsv1.Event)
	first := registry.Age(e.DeprecatedFirstTimestamp, now)
	if e.DeprecatedFirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := registry.Age(e.DeprecatedLastTimestamp, now)
	if e.DeprecatedLastTimestamp.IsZero() {
		last = first
	}
	count := e.DeprecatedCount
	if e.Series != nil {
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // a singleton event of the new API has no count
	}
	target := strings.ToLower(e.Regarding.Kind)
	if e.Regarding.Name != "" {
		target = fmt.Sprintf("%s/%s", target, e.Regarding.Name)
	}
	return []interface{}{
		last, e.Type, e.Reason, target, e.Regarding.FieldPath,
		source(e), strings.TrimSpace(e.Note), first, int64(count), e.Name,
	}
}

// source is "component, host", falling back to the reporting controller and
// instance when the deprecated source is empty.
func source(e *eventsv1.Event) string {
	component, host := e.DeprecatedSource.Component, e.DeprecatedSource.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

func microAge(t metav1.MicroTime, now time.Time) string {
	return registry.Age(metav1.Time{Time: t.Time}, now)
}
