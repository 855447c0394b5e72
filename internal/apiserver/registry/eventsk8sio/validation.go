package eventsk8sio

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Length limits of event fields.
const (
	reportingInstanceLimit = 128
	actionLimit            = 128
	reasonLimit            = 128
	noteLimit              = 1024
)

// validate applies upstream's checks for events written through
// events.k8s.io. Field paths use the internal (core) field names, as
// upstream's messages do.
func validate(obj runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	errs := validateCommon(e)
	errs = append(errs, validateSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	unset := func(set bool, name string) {
		if set {
			errs = append(errs, field.Invalid(field.NewPath(name), "", "needs to be unset"))
		}
	}
	unset(!e.DeprecatedFirstTimestamp.IsZero(), "deprecatedFirstTimestamp")
	unset(!e.DeprecatedLastTimestamp.IsZero(), "deprecatedLastTimestamp")
	unset(e.DeprecatedCount != 0, "deprecatedCount")
	unset(e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "", "deprecatedSource")
	return errs
}

// validateCommon holds the checks every event passes, whichever API wrote it.
func validateCommon(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		switch {
		case e.Regarding.Namespace == "" && e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault:
			errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		case e.Regarding.Namespace != "" && e.Namespace != e.Regarding.Namespace:
			errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.Regarding.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
	}
	rc := field.NewPath("reportingController")
	if e.ReportingController == "" {
		errs = append(errs, field.Required(rc, ""))
	}
	for _, msg := range validation.IsQualifiedName(e.ReportingController) {
		errs = append(errs, field.Invalid(rc, e.ReportingController, msg))
	}
	required := func(value, name string, limit int) {
		if value == "" {
			errs = append(errs, field.Required(field.NewPath(name), ""))
		}
		if len(value) > limit {
			errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", limit)))
		}
	}
	required(e.ReportingInstance, "reportingInstance", reportingInstanceLimit)
	required(e.Action, "action", actionLimit)
	required(e.Reason, "reason", reasonLimit)
	if len(e.Note) > noteLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLimit)))
	}
	return errs
}

func validateSeries(e *eventsv1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// validateUpdate keeps what an event reports fixed; only its series (and
// metadata) may change.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	e, o := obj.(*eventsv1.Event), old.(*eventsv1.Event)
	var errs field.ErrorList
	immutable := func(a, b interface{}, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(a, b, field.NewPath(name))...)
	}
	immutable(e.Regarding, o.Regarding, "involvedObject")
	immutable(e.Reason, o.Reason, "reason")
	immutable(e.Note, o.Note, "message")
	immutable(e.DeprecatedSource, o.DeprecatedSource, "source")
	immutable(e.DeprecatedFirstTimestamp, o.DeprecatedFirstTimestamp, "firstTimestamp")
	immutable(e.DeprecatedLastTimestamp, o.DeprecatedLastTimestamp, "lastTimestamp")
	immutable(e.DeprecatedCount, o.DeprecatedCount, "count")
	immutable(e.Type, o.Type, "type")
	// Sub-microsecond differences come from clients that serialize with
	// nanosecond precision; they are not changes.
	if !e.EventTime.Truncate(time.Microsecond).Equal(o.EventTime.Truncate(time.Microsecond)) {
		errs = append(errs, field.Invalid(field.NewPath("eventTime"), e.EventTime, apivalidation.FieldImmutableErrorMsg))
	}
	immutable(e.Action, o.Action, "action")
	immutable(e.Related, o.Related, "related")
	immutable(e.ReportingController, o.ReportingController, "reportingController")
	immutable(e.ReportingInstance, o.ReportingInstance, "reportingInstance")
	return errs
}
