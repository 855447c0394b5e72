// Package events is the registry entry for core/v1 events (the legacy event
// API that `kubectl get events` and client-go's event recorder use).
package events

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Length limits of the fields of events that carry eventTime.
const (
	maxReportingInstance = 128
	maxAction            = 128
	maxReason            = 128
	maxNote              = 1024
)

// Resource returns the events entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "events",
		Kind:         "Event",
		SingularName: "event",
		Namespaced:   true,
		ShortNames:   []string{"ev"},
		New:          func() runtime.Object { return &corev1.Event{} },
		NewList:      func() runtime.Object { return &corev1.EventList{} },
		Validate:     func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Event)) },
		// The name is the last column here, as upstream prints events.
		Columns: []metav1.TableColumnDefinition{
			{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
			{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
			{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
			{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
			{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
			{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
			{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
			{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
			{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
			{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		},
		Row:              func(obj runtime.Object, now time.Time) []interface{} { return row(obj.(*corev1.Event), now) },
		SelectableFields: func(obj runtime.Object) fields.Set { return selectableFields(obj.(*corev1.Event)) },
	}
}

// validate applies upstream's rules for core/v1 events: old-style events
// (no eventTime) must sit in their object's namespace; new-style events
// must name their reporter, action and reason.
func validate(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			// Cluster-scoped objects: "default" is accepted for old clients.
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		rcPath := field.NewPath("reportingComponent")
		if ev.ReportingController == "" {
			errs = append(errs, field.Required(rcPath, ""))
		} else {
			for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
				errs = append(errs, field.Invalid(rcPath, ev.ReportingController, msg))
			}
		}
		errs = append(errs, requiredWithLimit(ev.ReportingInstance, maxReportingInstance, field.NewPath("reportingInstance"))...)
		errs = append(errs, requiredWithLimit(ev.Action, maxAction, field.NewPath("action"))...)
		errs = append(errs, requiredWithLimit(ev.Reason, maxReason, field.NewPath("reason"))...)
		if len(ev.Message) > maxNote {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", maxNote)))
		}
	}
	for _, msg := range content.IsDNS1123Subdomain(ev.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return errs
}

func requiredWithLimit(value string, limit int, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(value) > limit {
		return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}

func selectableFields(ev *corev1.Event) fields.Set {
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	o := ev.InvolvedObject
	return fields.Set{
		"involvedObject.kind":            o.Kind,
		"involvedObject.namespace":       o.Namespace,
		"involvedObject.name":            o.Name,
		"involvedObject.uid":             string(o.UID),
		"involvedObject.apiVersion":      o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion,
		"involvedObject.fieldPath":       o.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

func row(ev *corev1.Event, now time.Time) []interface{} {
	first := registry.Age(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = microAge(ev.EventTime, now)
	}
	last := registry.Age(ev.LastTimestamp, now)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = microAge(ev.Series.LastObservedTime, now)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1 // events of the new API do not count singletons
	}
	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}
	return []interface{}{
		last, ev.Type, ev.Reason, object, ev.InvolvedObject.FieldPath,
		eventSource(ev), strings.TrimSpace(ev.Message), first, int64(count), ev.Name,
	}
}

// eventSource is "component, host", falling back to the reporting
// controller and instance of new-style events.
func eventSource(ev *corev1.Event) string {
	component := firstNonEmpty(ev.Source.Component, ev.ReportingController)
	host := firstNonEmpty(ev.Source.Host, ev.ReportingInstance)
	if host == "" {
		return component
	}
	return component + ", " + host
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func microAge(t metav1.MicroTime, now time.Time) string {
	return registry.Age(metav1.NewTime(t.Time), now)
}
